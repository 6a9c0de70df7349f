/**
 * Serialising a request for an OpenAI-style chat completions endpoint.
 *
 * @module
 */

import {
  type ContentBlock,
  type GenerateOptions,
  type ImageBlock,
  LlmFailure,
  type Message,
  type ToolResultBlock,
} from "../sdk/llm/mod.ts";

/** How a dialect differs on the request side. */
export interface ChatRequestDialect {
  /** The provider, for messages. */
  readonly provider: string;
  /** Send `reasoning_content` back on assistant turns that had reasoning. */
  readonly sendReasoningContent: boolean;
  /**
   * Accept image blocks (as `image_url` parts). Otherwise an image in the
   * request's newest user message fails the call with `UNSUPPORTED_FEATURE`,
   * and one in older history is sent as a note that it was left out, so that
   * the session's later requests still go through.
   */
  readonly images: boolean;
  /** Add the reasoning fields for a requested effort. */
  readonly reasoning: (body: Record<string, unknown>, effort: string) => void;
}

/** A chat message as the endpoint expects it. */
export type WireMessage = Record<string, unknown>;

/** The JSON body of a streaming chat completions request. */
export function chatRequestBody(options: GenerateOptions, dialect: ChatRequestDialect): Record<string, unknown> {
  const config = options;
  const messages: WireMessage[] = [];
  if (options.system !== undefined && options.system !== "") messages.push({ role: "system", content: options.system });
  // The newest user input (context a hook entered after it, as a system message, does not make it older).
  let newest = options.messages.length - 1;
  for (; newest >= 0; newest--) {
    const m = options.messages[newest];
    if (m.role === "user" && m.content.some((b) => b.type !== "tool-result")) break;
  }
  options.messages.forEach((message, i) => messages.push(...wireMessages(message, dialect, i === newest)));
  const body: Record<string, unknown> = {
    model: config.model,
    messages,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (config.reasoningEffort !== undefined) dialect.reasoning(body, config.reasoningEffort);
  if (options.tools !== undefined && options.tools.length > 0) {
    body.tools = options.tools.map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
  }
  if (config.temperature !== undefined) body.temperature = config.temperature;
  if (config.maxTokens !== undefined) body.max_tokens = config.maxTokens;
  if (config.stop !== undefined && config.stop.length > 0) body.stop = [...config.stop];
  return body;
}

function wireMessages(message: Message, dialect: ChatRequestDialect, newest: boolean): WireMessage[] {
  // A turn cancelled while the model was still reasoning leaves a reasoning-only message: with no reasoning to send
  // back it is still sent, as an assistant message with empty content, so that user and assistant keep alternating
  // (chat templates of Mistral, Gemma or Llama 2 served by vLLM or TGI refuse two user messages in a row).
  if (message.role === "assistant") return [assistantMessage(message.content, dialect)];
  if (message.role === "system") {
    // Logged context (prompt contexts, hook and tool context) goes in the system role, where it was logged.
    const text = message.content.map((b) => (b.type === "text" ? b.text : "")).filter((t) => t !== "").join("\n");
    return [{ role: "system", content: text }];
  }
  // A user-side message: tool results become `tool` messages, the rest one `user` message.
  const out: WireMessage[] = [];
  const rest: ContentBlock[] = [];
  for (const block of message.content) {
    if (block.type === "tool-result") out.push(toolMessage(block));
    else rest.push(block);
  }
  if (rest.length > 0 || out.length === 0) out.push({ role: "user", content: userContent(rest, dialect, newest) });
  return out;
}

function assistantMessage(content: readonly ContentBlock[], dialect: ChatRequestDialect): WireMessage {
  let text = "";
  let reasoning: string | undefined;
  const toolCalls: Record<string, unknown>[] = [];
  for (const block of content) {
    if (block.type === "text") text += block.text;
    else if (block.type === "reasoning") reasoning = (reasoning ?? "") + block.text;
    else if (block.type === "tool-call") {
      // A call streamed with no arguments at all is sent back as an empty object, which is what it was run with.
      const args = block.arguments.trim() === "" ? "{}" : block.arguments;
      toolCalls.push({ id: block.id, type: "function", function: { name: block.name, arguments: args } });
    }
  }
  // The content is always a string, even next to tool calls.
  const wire: WireMessage = { role: "assistant", content: text };
  if (reasoning !== undefined && dialect.sendReasoningContent) wire.reasoning_content = reasoning;
  if (toolCalls.length > 0) wire.tool_calls = toolCalls;
  return wire;
}

function toolMessage(block: ToolResultBlock): WireMessage {
  let text = "";
  for (const part of block.content) {
    // A tool message carries text only: an image the tool returned is named, not dropped without a word.
    const line = part.type === "text"
      ? part.text
      : part.type === "image"
      ? omittedImage("tool messages carry text only")
      : "";
    if (line !== "") text += (text === "" ? "" : "\n") + line;
  }
  return { role: "tool", tool_call_id: block.toolCallId, content: text === "" ? "(no output)" : text };
}

function userContent(blocks: readonly ContentBlock[], dialect: ChatRequestDialect, newest: boolean): unknown {
  const parts: Record<string, unknown>[] = [];
  for (const block of blocks) {
    if (block.type === "text") parts.push({ type: "text", text: block.text });
    else if (block.type === "image") {
      if (dialect.images) parts.push({ type: "image_url", image_url: { url: imageUrl(block) } });
      else if (newest) unsupportedImage(dialect);
      else {parts.push({
          type: "text",
          text: omittedImage(`provider "${dialect.provider}" does not accept image input`),
        });}
    }
    // Reasoning and tool-call blocks have no user-side form; they are not sent.
  }
  if (parts.every((p) => p.type === "text")) return parts.map((p) => p.text).join("\n");
  return parts;
}

function omittedImage(why: string): string {
  return `[image not sent: ${why}]`;
}

function imageUrl(block: ImageBlock): string {
  return block.url ?? `data:${block.mediaType};base64,${block.data ?? ""}`;
}

function unsupportedImage(dialect: ChatRequestDialect): never {
  throw new LlmFailure("UNSUPPORTED_FEATURE", `Provider "${dialect.provider}" does not accept image input`);
}
