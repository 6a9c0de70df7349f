/**
 * The human transcript of a session: the log rendered as markdown for
 * people (golden tests, support tickets, the HTTP transcript view).
 *
 * @module
 */

import type { ContentBlock, Message } from "../llm/messages.ts";
import type { TokenUsage } from "../llm/stream_chunk.ts";
import type { EpochHeader, SessionEvent, TurnEndReason } from "./session_events.ts";
import { usageTotals, type UsageTotalsState } from "../projections/usage_totals.ts";
import { renderTodoList } from "../projections/todos.ts";

/** Options of {@linkcode renderTranscript}. */
export interface TranscriptOptions {
  /** A first-level heading to open the transcript with; none when absent. */
  readonly title?: string;
  /**
   * Render the model's reasoning (as a quote before its answer).
   *
   * @default {true}
   */
  readonly reasoning?: boolean;
  /**
   * Render one line per `request/header` (reason, route and tool names).
   *
   * @default {true}
   */
  readonly requests?: boolean;
  /**
   * Render the system prompt text under the `request/header` lines (only with `requests`): under
   * each one (`true`), under the first one and those where it changed (`"changes"`), or never.
   *
   * @default {false}
   */
  readonly system?: boolean | "changes";
  /**
   * Render the tool schemas (name, description, parameters) as JSON under the `request/header`
   * lines (only with `requests`): under each one (`true`), under the first one and those where they
   * changed (`"changes"`), or never.
   *
   * @default {false}
   */
  readonly toolSchemas?: boolean | "changes";
}

/**
 * Render a session log as a markdown transcript for people: user input,
 * reasoning, answers, tool calls with their arguments, tool results, retries,
 * turn ends with the turn's summed usage, and (optionally) request headers.
 *
 * The rendering is a pure function of the events and contains no times and no
 * generated message ids, so two runs that differ only in clock and id
 * generator render the same text. Stream chunks, step boundaries and inbox
 * bookkeeping are not shown (the assembled `assistant/message` is). Tool call
 * ids are shown, as the model produced them. A request header stored before
 * append checked its `system` and `tools` is rendered as it is (a system that
 * is not text as JSON, tools that are not a list as JSON, a tool without a
 * name as `(no name)`).
 *
 * @param events The log (or any part of it).
 * @param options Title and what to include.
 * @returns The markdown text, ending with a newline.
 *
 * @example
 * ```ts
 * import { renderTranscript, type SessionEvent } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const events: SessionEvent[] = [
 *   { type: "turn/start", seq: 0, time: 5, data: { turn: 1 } },
 *   {
 *     type: "user/message",
 *     seq: 1,
 *     time: 5,
 *     data: { id: "u1", role: "user", content: [{ type: "text", text: "Hi" }], source: { kind: "user" } },
 *     surfaceOp: "append",
 *   },
 *   {
 *     type: "assistant/message",
 *     seq: 2,
 *     time: 6,
 *     data: {
 *       turn: 1,
 *       step: 1,
 *       message: {
 *         id: "a1",
 *         role: "assistant",
 *         content: [{ type: "text", text: "Hello!" }],
 *         source: { kind: "model", provider: "p", model: "m" },
 *       },
 *       usage: { inputTokens: 3, outputTokens: 2 },
 *     },
 *     surfaceOp: "append",
 *   },
 *   { type: "turn/end", seq: 3, time: 7, data: { turn: 1, reason: { kind: "completed" } } },
 * ];
 * const text = renderTranscript(events);
 * assert.match(text, /## Turn 1/);
 * assert.match(text, /\*\*User\*\*\n\nHi/);
 * assert.match(text, /\*\*Assistant\*\*\n\nHello!/);
 * assert.match(text, /Turn 1 ended: completed · usage: 3 input, 2 output/);
 * ```
 */
export function renderTranscript(events: readonly SessionEvent[], options: TranscriptOptions = {}): string {
  const showReasoning = options.reasoning ?? true;
  const showRequests = options.requests ?? true;
  const showSystem = options.system ?? false;
  const showToolSchemas = options.toolSchemas ?? false;
  let previousHeader: EpochHeader | undefined;
  const parts: string[] = [];
  const toolNames = new Map<string, string>();
  // Turn usage is the usageTotals projection's, folded along: the same accounting as the HTTP summary.
  let usage: UsageTotalsState = usageTotals.initial();
  let turnUsage: TokenUsage | undefined;

  if (options.title !== undefined) parts.push(`# ${options.title}`);
  for (const event of events) {
    const next = usageTotals.fold(usage, event);
    if (next.turn !== usage.turn && event.type !== "turn/start") turnUsage = next.turn;
    usage = next;
    switch (event.type) {
      case "turn/start":
        turnUsage = undefined;
        parts.push(`## Turn ${event.data.turn}`);
        break;
      case "turn/end":
        parts.push(`_Turn ${event.data.turn} ended: ${describeReason(event.data.reason)}${describeTotal(turnUsage)}_`);
        turnUsage = undefined;
        break;
      case "user/message":
        parts.push(...renderUserMessage(event.data));
        break;
      case "system/message": {
        const source = event.data.source;
        const from = source.kind === "plugin"
          ? `${source.plugin}${source.form ? `, ${source.form}` : ""}`
          : source.kind === "tool"
          ? `tool \`${source.callId}\``
          : source.kind;
        parts.push(`**System context** (${from})`);
        parts.push(quote(contentText(event.data.content)));
        break;
      }
      case "assistant/message": {
        const { message, interrupted } = event.data;
        for (const block of message.content) if (block.type === "tool-call") toolNames.set(block.id, block.name);
        if (message.content.length === 0) break;
        parts.push(`**Assistant**${interrupted ? " (interrupted)" : ""}`);
        parts.push(...renderBlocks(message.content, showReasoning));
        break;
      }
      case "tool/call":
        toolNames.set(event.data.callId, event.data.name);
        break;
      case "tool/result": {
        const { message, error } = event.data;
        const result = message.content.find((b) => b.type === "tool-result");
        const callId = result?.type === "tool-result" ? result.toolCallId : "";
        const name = toolNames.get(callId) ?? "tool";
        const failed = error !== undefined || (result?.type === "tool-result" && result.isError === true);
        const status = error !== undefined ? ` failed (${error.code})` : failed ? " failed" : "";
        parts.push(`**Tool result** \`${name}\` (\`${callId}\`)${status}`);
        const text = result?.type === "tool-result" ? contentText(result.content) : "";
        parts.push(fence(text === "" ? "(no output)" : text, ""));
        break;
      }
      case "request/header":
        if (showRequests) {
          const { header } = event.data;
          parts.push(renderHeaderLine(header, event.data.reason));
          const first = previousHeader === undefined;
          if (shows(showSystem, first, previousHeader?.system, header.system)) {
            if (header.system !== undefined) parts.push(renderSystem(header.system));
            else if (showSystem === "changes") parts.push("_No system prompt_");
          }
          const tools = toolsJson(header);
          if (shows(showToolSchemas, first, previousHeader && toolsJson(previousHeader), tools)) {
            if (hasTools(header)) parts.push(fence(tools, "json"));
            else if (showToolSchemas === "changes") parts.push("_No tools_");
          }
          previousHeader = header;
        }
        break;
      case "llm/retry": {
        const { attempt, delayMs, failure } = event.data;
        parts.push(`_Attempt ${attempt} failed (${failure.code}: ${failure.message}); retrying after ${delayMs} ms_`);
        break;
      }
      case "compaction/start":
        parts.push(`_Compaction started (${event.data.reason})_`);
        break;
      case "compaction/summary":
        parts.push(`**Compaction summary** of events ${event.data.start}–${event.data.end}`);
        parts.push(quote(event.data.summary));
        break;
      case "compaction/end":
        parts.push(`_Compaction ${event.data.outcome}${event.data.error ? `: ${event.data.error}` : ""}_`);
        break;
      case "todo/write":
        parts.push("**Todos**");
        parts.push(renderTodoList(event.data.todos));
        break;
      default:
        break;
    }
  }
  return parts.join("\n\n") + "\n";
}

function renderUserMessage(message: Message): string[] {
  const source = message.source;
  const label = source.kind === "plugin"
    ? `**Context** (${source.plugin}${source.form ? `, ${source.form}` : ""})`
    : source.kind === "tool"
    ? `**Tool context** (\`${source.callId}\`)`
    : "**User**";
  return [label, ...renderBlocks(message.content, true)];
}

function renderBlocks(blocks: readonly ContentBlock[], showReasoning: boolean): string[] {
  const out: string[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case "text":
        if (block.text.trim() !== "") out.push(block.text.trim());
        break;
      case "reasoning":
        if (showReasoning && block.text.trim() !== "") out.push(quote(`_Reasoning:_ ${block.text.trim()}`));
        break;
      case "image":
        out.push(`[image ${block.mediaType}${block.url ? ` ${block.url}` : ""}]`);
        break;
      case "tool-call":
        out.push(`**Tool call** \`${block.name}\` (\`${block.id}\`)`);
        out.push(fence(prettyArguments(block.arguments), "json"));
        break;
      case "tool-result":
        out.push(`**Tool result** (\`${block.toolCallId}\`)${block.isError ? " failed" : ""}`);
        out.push(fence(contentText(block.content) || "(no output)", ""));
        break;
    }
  }
  return out;
}

/** Whether a header part is rendered: always, never, or on the first header and on change. */
function shows(
  mode: boolean | "changes",
  first: boolean,
  previous: string | undefined,
  current: string | undefined,
): boolean {
  return mode === "changes" ? first || previous !== current : mode;
}

// Headers are read as stored: a log written before append checked `system` and `tools` (a string, an array of
// anything) renders them as they are instead of throwing.
function toolsJson(header: EpochHeader): string {
  return JSON.stringify(header.tools ?? [], null, 2);
}

function hasTools(header: EpochHeader): boolean {
  const tools: unknown = header.tools;
  return tools !== undefined && tools !== null && !(Array.isArray(tools) && tools.length === 0);
}

function describeTools(header: EpochHeader): string {
  const tools: unknown = header.tools;
  if (!hasTools(header)) return "no tools";
  if (!Array.isArray(tools)) return `tools: not a list (${JSON.stringify(tools)})`;
  const name = (tool: unknown) => {
    const value = typeof tool === "object" && tool !== null ? (tool as { name?: unknown }).name : undefined;
    return typeof value === "string" ? value : "(no name)";
  };
  return `tools: ${tools.map(name).join(", ")}`;
}

function renderSystem(system: unknown): string {
  return typeof system === "string" ? fence(system, "") : fence(JSON.stringify(system), "json");
}

function renderHeaderLine(header: EpochHeader, reason: string): string {
  const { provider, model, reasoningEffort, temperature, maxTokens } = header.config;
  const settings = [
    reasoningEffort !== undefined ? `effort ${reasoningEffort}` : undefined,
    temperature !== undefined ? `temperature ${temperature}` : undefined,
    maxTokens !== undefined ? `max ${maxTokens} tokens` : undefined,
  ].filter((s) => s !== undefined);
  return `_Request header (${reason}): ${provider}/${model}${settings.length ? ` (${settings.join(", ")})` : ""}; ${
    describeTools(header)
  }_`;
}

function describeReason(reason: TurnEndReason): string {
  switch (reason.kind) {
    case "aborted":
      return `aborted (${reason.reason})`;
    case "error":
      return `error (${reason.error.code}: ${reason.error.message})`;
    default:
      return reason.kind;
  }
}

function describeTotal(usage: TokenUsage | undefined): string {
  if (usage === undefined) return "";
  const input = `${usage.inputTokens} input${usage.cacheReadTokens ? ` (+${usage.cacheReadTokens} cache read)` : ""}`;
  const output = `${usage.outputTokens} output${usage.reasoningTokens ? ` (${usage.reasoningTokens} reasoning)` : ""}`;
  return ` · usage: ${input}, ${output}`;
}

function contentText(content: readonly ContentBlock[]): string {
  return content
    .map((b) => (b.type === "text" ? b.text : b.type === "image" ? `[image ${b.mediaType}]` : ""))
    .filter((t) => t !== "")
    .join("\n");
}

function prettyArguments(raw: string): string {
  if (raw.trim() === "") return "{}";
  try {
    return JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    return raw;
  }
}

/** A fenced code block whose fence is longer than any backtick run inside. */
function fence(text: string, lang: string): string {
  // A loop, not Math.max(...runs): a text of a hundred thousand runs would pass as many arguments (a RangeError).
  let longest = 2;
  for (const run of text.matchAll(/`+/g)) if (run[0].length > longest) longest = run[0].length;
  const bar = "`".repeat(longest + 1);
  return `${bar}${lang}\n${text}\n${bar}`;
}

function quote(text: string): string {
  return text.split("\n").map((line) => (line === "" ? ">" : `> ${line}`)).join("\n");
}
