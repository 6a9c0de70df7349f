/**
 * The agent loop's plain helpers: turning agent input into an inbox message,
 * summing usage, comparing header inputs by value, the names of logged prompt
 * contexts, the message of a refused tool call, the result of a call the tools
 * service rejected, the failure data of a call
 * that could not be prepared, and the default action after a failed request.
 * None of them touches the loop's state.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { ContentBlock, MessageSource, SystemMessage, ToolCallBlock, UserMessage } from "../llm/messages.ts";
import type { TokenUsage } from "../llm/stream_chunk.ts";
import { LlmFailure, type LlmFailureData } from "../llm/llm_failure.ts";
import { isRetryableFailure, retryDelayMs, type RetryPolicy } from "../llm/retry_policy.ts";
import type { EpochHeader } from "../session/session_events.ts";
import { messageOf, nameOf } from "../tools/_tool_outcome.ts";
import type { AgentInput } from "./agent.ts";
import type { RequestErrorAction } from "./agent_events.ts";

// The longest delay a timer takes: past it, setTimeout fires after 1 ms on every runtime.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Sleep `ms` (a retry's delay), or until `signal` aborts. A delay longer than
 * a timer takes (2^31-1 ms, about 24.8 days: a long Retry-After under an
 * unbounded cap) is slept in timers of at most that, one after another; an
 * infinite one until the signal aborts.
 */
export const defaultSleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted || !(ms > 0)) return resolve();
    let left = ms;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      const wait = Math.min(left, MAX_TIMER_MS);
      left -= wait;
      timer = setTimeout(left > 0 ? arm : done, wait);
    };
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
    arm();
  });

export function toInboxMessage(input: AgentInput, id: string): UserMessage | SystemMessage {
  if (typeof input === "string") {
    return { id, role: "user", content: [{ type: "text", text: input }], source: { kind: "user" } };
  }
  if (Array.isArray(input)) {
    checkInputBlocks(input);
    return { id, role: "user", content: input as ContentBlock[], source: { kind: "user" } };
  }
  const message = input as UserMessage | SystemMessage | null | undefined;
  if (
    typeof message !== "object" || message === null || (message.role !== "user" && message.role !== "system") ||
    !Array.isArray(message.content) || typeof message.id !== "string"
  ) {
    throw new HarnessError("INVALID_ARGS", "Agent input must be a string, content blocks, or a user or system message");
  }
  const source = message.source as { kind?: unknown } | null | undefined;
  if (typeof source !== "object" || source === null || typeof source.kind !== "string") {
    throw new HarnessError("INVALID_ARGS", "A message given as agent input needs a source with a kind");
  }
  if (
    message.role === "system" &&
    (message.content.length === 0 || !message.content.every((b) => b.type === "text" && b.text !== ""))
  ) {
    // Checked here, not when the step enters it: a system message holds non-empty text only.
    throw new HarnessError("INVALID_ARGS", "A system message given as agent input holds non-empty text blocks only");
  }
  if (message.role === "user") checkInputBlocks(message.content);
  return message;
}

// What a user puts in a message: text, images with a media type and either data or a URL, and block types of
// plugins (ContentBlockMap is open; an adapter refuses what it cannot send). Never a tool call or a tool result,
// which would enter the history without its other half, and every later request would carry it.
function checkInputBlocks(blocks: readonly unknown[]): void {
  blocks.forEach((value, i) => {
    const block = value as Record<string, unknown> | null;
    let ok = typeof block === "object" && block !== null && typeof block.type === "string" && block.type !== "";
    if (ok && block!.type === "text") ok = typeof block!.text === "string";
    else if (ok && block!.type === "image") {
      ok = typeof block!.mediaType === "string" && block!.mediaType !== "" &&
        (typeof block!.data === "string") !== (typeof block!.url === "string") &&
        (block!.data === undefined || typeof block!.data === "string") &&
        (block!.url === undefined || typeof block!.url === "string");
    } else if (ok) ok = block!.type !== "tool-call" && block!.type !== "tool-result";
    if (!ok) {
      throw new HarnessError(
        "INVALID_ARGS",
        `Agent input block ${i} is not a text block, an image block (mediaType, and data or url) or a plugin's ` +
          "block (tool calls and results are the loop's own)",
        { details: { index: i } },
      );
    }
  });
}

export function addUsage(total: TokenUsage, usage: TokenUsage): TokenUsage {
  return {
    inputTokens: total.inputTokens + usage.inputTokens,
    outputTokens: total.outputTokens + usage.outputTokens,
    cacheReadTokens: (total.cacheReadTokens ?? 0) + (usage.cacheReadTokens ?? 0),
    cacheWriteTokens: (total.cacheWriteTokens ?? 0) + (usage.cacheWriteTokens ?? 0),
    reasoningTokens: (total.reasoningTokens ?? 0) + (usage.reasoningTokens ?? 0),
  };
}

export const ZERO_USAGE: TokenUsage = { inputTokens: 0, outputTokens: 0 };

// Whether two header inputs are the same values: the six config fields (the
// stop list item by item), the adapter-default markers, the system text, and
// the tool schemas as the same objects.
export function sameHeaderInput(a: EpochHeader, b: EpochHeader): boolean {
  const c = a.config, d = b.config;
  if (
    a.system !== b.system || c.provider !== d.provider || c.model !== d.model ||
    c.reasoningEffort !== d.reasoningEffort || c.temperature !== d.temperature || c.maxTokens !== d.maxTokens ||
    !sameList(c.stop, d.stop) || !sameDefaults(a.adapterDefaults, b.adapterDefaults)
  ) {
    return false;
  }
  return sameList(a.tools, b.tools);
}

function sameList<T>(x: readonly T[] | undefined, y: readonly T[] | undefined): boolean {
  if (x === y) return true;
  if (x === undefined || y === undefined || x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

function onlyDefaultKeys(value: object): boolean {
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) if (keys[i] !== "reasoningEffort" && keys[i] !== "maxTokens") return false;
  return true;
}

function sameDefaults(x: EpochHeader["adapterDefaults"], y: EpochHeader["adapterDefaults"]): boolean {
  if (x === y) return true;
  if (x === undefined || y === undefined) return false;
  if (x.reasoningEffort !== y.reasoningEffort || x.maxTokens !== y.maxTokens) return false;
  // Nothing else in either (the header compares the whole object).
  return onlyDefaultKeys(x) && onlyDefaultKeys(y);
}

/** The source plugin name of a logged prompt context is this prefix and the context's name. */
export const PROMPT_CONTEXT_PREFIX = "system-prompt/context:";

export function promptContextName(source: MessageSource): string | undefined {
  return source.kind === "plugin" && source.plugin.startsWith(PROMPT_CONTEXT_PREFIX)
    ? source.plugin.slice(PROMPT_CONTEXT_PREFIX.length)
    : undefined;
}

/**
 * The snapshot logged for a prompt context that is gone (removed, or now empty): the model saw its text, and is told
 * that it no longer applies instead of seeing it as current for good.
 */
export function clearedContextText(name: string): string {
  return `(The context "${name}" given earlier no longer applies.)`;
}

export function toolErrorMessage(id: string, callId: string, text: string): UserMessage {
  return {
    id,
    role: "user",
    content: [{ type: "tool-result", toolCallId: callId, content: [{ type: "text", text }], isError: true }],
    source: { kind: "tool", callId },
  };
}

/**
 * The result of a call whose tools service rejected (the pipeline itself never
 * does): an error result with the stable code `TOOL_EXECUTE_FAILED` and the
 * rejection's message, so that the call is still answered.
 */
export function toolExecuteFailed(
  id: string,
  call: ToolCallBlock,
  error: unknown,
): { message: UserMessage; error: { name: string; code: string }; contexts: UserMessage[] } {
  return {
    message: toolErrorMessage(id, call.id, `Tool call ${call.name} failed: ${messageOf(error) || "no reason given"}`),
    error: { name: nameOf(error), code: "TOOL_EXECUTE_FAILED" },
    contexts: [],
  };
}

/**
 * The failure of a model response with a tool call that cannot be logged and
 * answered: one without a name (its stream never gave one), without an id, or
 * with the id of another call of the same response (a result names its call by
 * id). A call left unanswered in the history, or two calls one result could
 * answer, would fail every later request.
 */
export function unanswerableCall(blocks: readonly ContentBlock[]): LlmFailureData | undefined {
  let ids: Set<string> | undefined;
  for (let i = 0; i < blocks.length; i++) {
    const block = blocks[i];
    if (block.type !== "tool-call") continue;
    const what = block.name === ""
      ? "without a tool name"
      : block.id === ""
      ? "without a call id"
      : ids?.has(block.id)
      ? "with the id of an earlier call of the same response"
      : undefined;
    if (what !== undefined) {
      return {
        code: "MALFORMED_RESPONSE",
        message: `Model response has tool call ${JSON.stringify(block.id)} (block ${i}) ${what}`,
      };
    }
    (ids ??= new Set()).add(block.id);
  }
  return undefined;
}

/**
 * A finish's failure as the loop reports it: the adapter's own when it has
 * a string `code` and `message`; else a `MALFORMED_RESPONSE` saying what was
 * missing (a failed finish with no failure data, a numeric code).
 */
export function checkedFailure(failure: unknown): LlmFailureData {
  const given = failure as { code?: unknown; message?: unknown } | null | undefined;
  if (
    typeof given === "object" && given !== null && typeof given.code === "string" && given.code !== "" &&
    typeof given.message === "string"
  ) {
    return failure as LlmFailureData;
  }
  return {
    code: "MALFORMED_RESPONSE",
    message: "Model stream finished with an error but no failure data (a string code and message)",
  };
}

/** What an `agent/pre-step` listener returned, checked; `INVALID_ARGS` for anything else. */
export function checkPreStep(decision: unknown): void {
  const d = decision as { kind?: unknown; messages?: unknown; reason?: unknown; discard?: unknown } | null | undefined;
  const ok = typeof d === "object" && d !== null &&
    ((d.kind === "enter" && Array.isArray(d.messages)) ||
      (d.kind === "reject" && (d.reason === undefined || typeof d.reason === "string") &&
        (d.discard === undefined || (Array.isArray(d.discard) && d.discard.every((id) => typeof id === "string")))));
  if (!ok) {
    throw new HarnessError(
      "INVALID_ARGS",
      `agent/pre-step gave ${JSON.stringify(decision) ?? String(decision)}, not { kind: "enter", messages } ` +
        `or { kind: "reject", reason?, discard? }`,
    );
  }
}

/** What an `agent/request-error` listener returned, checked; `INVALID_ARGS` for anything else. */
export function checkRequestErrorAction(action: unknown): void {
  const a = action as { kind?: unknown; delayMs?: unknown; rebuild?: unknown } | null | undefined;
  const ok = typeof a === "object" && a !== null &&
    (a.kind === "fail" ||
      (a.kind === "retry" && typeof a.delayMs === "number" && Number.isFinite(a.delayMs) && a.delayMs >= 0 &&
        (a.rebuild === undefined || typeof a.rebuild === "boolean")));
  if (!ok) {
    throw new HarnessError(
      "INVALID_ARGS",
      `agent/request-error gave ${JSON.stringify(action) ?? String(action)}, not { kind: "retry", delayMs, ` +
        `rebuild? } or { kind: "fail" }`,
    );
  }
}

export function failureOf(error: unknown): LlmFailureData {
  return error instanceof LlmFailure ? error.toData() : {
    code: HarnessError.isInstance(error) ? error.code : "UNKNOWN",
    message: error instanceof Error ? error.message : String(error),
  };
}

/**
 * What a failed request does when no `agent/request-error` listener decides: retry after the policy's delay while the
 * failure is retryable and retries are left, else fail.
 */
export function defaultRequestErrorAction(
  policy: RetryPolicy,
  attempt: number,
  failure: LlmFailureData,
): RequestErrorAction {
  if (isRetryableFailure(failure) && attempt <= policy.maxRetries) {
    return { kind: "retry", delayMs: retryDelayMs(policy, attempt, failure) };
  }
  return { kind: "fail" };
}
