// Helpers that build well-formed payloads for generated logs.

import type { AssistantMessage, ContentBlock, StreamChunk, SystemMessage, TokenUsage, UserMessage } from "../mod.ts";

export function userMessage(id: string, text: string, plugin?: string): UserMessage {
  return {
    id,
    role: "user",
    content: [{ type: "text", text }],
    source: plugin === undefined ? { kind: "user" } : { kind: "plugin", plugin },
  };
}

export function assistantMessage(id: string, content: ContentBlock[], replayState?: unknown): AssistantMessage {
  return {
    id,
    role: "assistant",
    content,
    source: {
      kind: "model",
      provider: "test",
      model: "test-model",
      ...(replayState !== undefined ? { replayState } : {}),
    },
  };
}

export function toolResultMessage(id: string, callId: string, text: string, isError?: boolean): UserMessage {
  return {
    id,
    role: "user",
    content: [{
      type: "tool-result",
      toolCallId: callId,
      content: [{ type: "text", text }],
      ...(isError ? { isError: true } : {}),
    }],
    source: { kind: "tool", callId },
  };
}

/** Pick index `a mod n`, or undefined when n is 0. */
export function pick(a: number, n: number): number | undefined {
  return n === 0 ? undefined : a % n;
}

export function systemMessage(id: string, text: string, plugin = "test-context", form?: string): SystemMessage {
  return {
    id,
    role: "system",
    content: [{ type: "text", text }],
    source: { kind: "plugin", plugin, ...(form !== undefined ? { form } : {}) },
  };
}

/** One block of a planned model answer: its type, the deltas it streams, and for a tool call its id. */
export interface StreamedBlock {
  readonly type: "text" | "reasoning" | "tool-call";
  readonly deltas: readonly string[];
  readonly callId?: string;
}

/**
 * The chunks a provider adapter streams for `blocks` (block-start, deltas, block-end with the whole block, in index
 * order), then usage when given; and the blocks the message holds (what `BlockAssembler.blocks()` gives), written
 * out here rather than folded, so that the generated messages do not lean on the fold the invariants use.
 */
export function streamOf(
  blocks: readonly StreamedBlock[],
  usage: TokenUsage | undefined,
): { chunks: StreamChunk[]; content: ContentBlock[] } {
  const chunks: StreamChunk[] = [];
  const content: ContentBlock[] = [];
  blocks.forEach((block, index) => {
    chunks.push({ type: "block-start", index, blockType: block.type });
    const whole = block.deltas.join("");
    let done: ContentBlock;
    if (block.type === "tool-call") {
      const id = block.callId!;
      block.deltas.forEach((argumentsDelta, i) =>
        chunks.push({ type: "tool-call-delta", index, id, ...(i === 0 ? { name: "add" } : {}), argumentsDelta })
      );
      done = { type: "tool-call", id, name: "add", arguments: whole };
    } else {
      const type = block.type === "text" ? "text-delta" : "reasoning-delta";
      for (const text of block.deltas) chunks.push({ type, index, text });
      done = { type: block.type, text: whole };
    }
    chunks.push({ type: "block-end", index, block: done });
    content.push(done);
  });
  if (usage !== undefined) chunks.push({ type: "usage", usage });
  return { chunks, content };
}

/**
 * What a stream cut after its first `kept` chunks leaves of its blocks, as the loop keeps them in an interrupted
 * message (`BlockAssembler.interruptedBlocks()`): the text and reasoning blocks started so far, closed or not, with
 * the deltas that arrived, when their text is not blank; tool calls are dropped.
 */
export function interruptedContent(chunks: readonly StreamChunk[], kept: number): ContentBlock[] {
  const texts = new Map<number, { type: "text" | "reasoning"; text: string }>();
  for (const chunk of chunks.slice(0, kept)) {
    if (chunk.type === "block-start" && chunk.blockType !== "tool-call") {
      texts.set(chunk.index, { type: chunk.blockType, text: "" });
    } else if (chunk.type === "text-delta" || chunk.type === "reasoning-delta") {
      texts.get(chunk.index)!.text += chunk.text;
    }
  }
  return [...texts.values()].filter((b) => b.text.trim() !== "").map((b) => ({ type: b.type, text: b.text }));
}
