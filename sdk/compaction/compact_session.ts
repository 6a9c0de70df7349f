/**
 * Context compaction through a surface replace: older turns are summarised
 * by a model call (purpose `compaction`) and one summary message replaces
 * them on the surface. Nothing is deleted: the log keeps every event, the
 * human transcript still shows them, and only the model's derived history
 * sees the summary in their place.
 *
 * Events written: `compaction/start`, `compaction/summary`, a `user/message`
 * with `surfaceOp: {op: "replace", start, end}` whose `sourceEventSeqs` are
 * every shadowed node, and `compaction/end`. On failure: `compaction/start`
 * (perhaps `compaction/summary`) and `compaction/end` with outcome `failed`,
 * and the surface is unchanged. A summary counts only when the call finished
 * with `stop`, gave text and called no tool: a cut-off answer (`max-tokens`)
 * or a tool call is a failure. A retryable failure of the summary call is
 * retried as the agent loop retries a step's call (`defaultRequestErrorAction`
 * over a {@linkcode RetryPolicy}, a sleep on the signal), without `llm/retry`
 * events (a compaction may run outside a turn).
 *
 * @module
 */

import { defaultRequestErrorAction, defaultSleep } from "../agent/_loop_values.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import { BlockAssembler } from "../llm/block_assembler.ts";
import { callConfigOf, type GenerateOptions, type LlmCallConfig } from "../llm/llm_adapter.ts";
import type { LlmRuntime } from "../llm/llm_runtime.ts";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "../llm/retry_policy.ts";
import type { LlmFailureData } from "../llm/llm_failure.ts";
import type { Message, UserMessage } from "../llm/messages.ts";
import { deriveEventMessage } from "../session/derive_event_message.ts";
import type { TokenUsage } from "../llm/stream_chunk.ts";
import { addUsage } from "../projections/usage_totals.ts";
import type { Session } from "../session/session.ts";

/** The default instruction given to the summarising model. */
export const DEFAULT_COMPACTION_INSTRUCTIONS: string =
  "Summarize the conversation above so that it can continue without it: keep the user's goals, decisions taken, " +
  "facts learned, tool results that still matter, and open questions. Write plain prose, no preamble.";

/** Options of {@linkcode compactSession}. */
export interface CompactSessionOptions {
  /** The model runtime that makes the summary call. */
  readonly llm: LlmRuntime;
  /**
   * The route of the summary call. The compaction plugin passes the agent's route (`agent.options`).
   *
   * @default {the session's last request header config}
   */
  readonly config?: LlmCallConfig;
  /** Why compaction runs; recorded on `compaction/start`. */
  readonly reason: "manual" | "threshold" | "overflow";
  /**
   * How many of the latest turns stay verbatim (an open turn counts).
   *
   * @default {1}
   */
  readonly keepTurns?: number;
  /** The instruction appended after the compacted messages. @default {DEFAULT_COMPACTION_INSTRUCTIONS} */
  readonly instructions?: string;
  /** Id of the summary message. */
  readonly newId: () => string;
  /** Aborts the summary call (and the wait before a retry). */
  readonly signal?: AbortSignal;
  /** How a summary call that failed is retried. @default {`llm.retryPolicy` (the harness's `retryPolicy`)} */
  readonly retryPolicy?: RetryPolicy;
  /** Sleep before a retry. @default {`llm.sleep` (the harness's `sleep`), else a timer that honours the signal} */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** What {@linkcode compactSession} did. */
export type CompactionOutcome =
  | { readonly kind: "completed"; readonly start: number; readonly end: number; readonly summary: string }
  | { readonly kind: "skipped"; readonly reason: string }
  | { readonly kind: "failed"; readonly error: string };

/**
 * The surface nodes that compaction would replace: every node before the
 * `turn/start` of the last `keepTurns` turns (so tool calls and their results
 * are never split), always an unbroken run from the front of the surface.
 *
 * A node that replaced others (an earlier summary, a tool result rewritten
 * later) counts where the first node it replaced was written: a summary
 * written during a kept turn stands for older turns, sits at the front, and
 * is compacted with them.
 *
 * @param session The session.
 * @param keepTurns How many latest turns stay.
 * @returns The seqs of the nodes to replace, in surface order.
 */
export function compactionRange(session: Session, keepTurns = 1): number[] {
  // The `keepTurns`-th last turn/start, found from the end: a copy and a scan of the whole log per compaction had
  // made a long session's compactions O(log) each (37 ms at 1.8M events).
  let cutoff = keepTurns <= 0 ? session.seq : 0;
  for (let seq = session.seq - 1, found = 0; keepTurns > 0 && seq >= 0; seq--) {
    if (session.at(seq)!.type === "turn/start" && ++found === keepTurns) {
      cutoff = seq;
      break;
    }
  }
  // Where each node's content was first written, read from the end: along the surface these positions increase (a
  // replace takes the place, and the position, of its first node), so the nodes to replace are the ones before the
  // last node written before the cutoff. Picking nodes by their own seq had left a gap at an earlier summary (its
  // seq is late, its place is first), and the surface refused the replace (REPLACE_SOURCES_INCOMPLETE).
  const nodes = session.surface.nodes;
  let last = nodes.length - 1;
  while (last >= 0 && writtenAt(session, nodes[last]) >= cutoff) last--;
  return nodes.slice(0, last + 1);
}

/** The seq where the content of surface node `seq` was first written: through replaces, to an appended node. */
function writtenAt(session: Session, seq: number): number {
  for (;;) {
    const op = session.at(seq)!.surfaceOp;
    if (op === undefined || op === "append") return seq;
    seq = op.start;
  }
}

/**
 * Compact a session's older turns into one summary message.
 *
 * @param session The live session (its log is appended to).
 * @param options The model runtime, route, reason and how much to keep.
 * @returns What happened; a failure of the summary call, and anything thrown once `compaction/start` is written,
 *   is a `failed` outcome (with `compaction/end`), not a throw.
 * @throws {HarnessError} `INVALID_ARGS` when no route is known; the error itself when even `compaction/end` cannot be
 *   written (the log takes nothing more).
 */
export async function compactSession(session: Session, options: CompactSessionOptions): Promise<CompactionOutcome> {
  const range = compactionRange(session, options.keepTurns ?? 1);
  if (range.length < 2) return { kind: "skipped", reason: "fewer than two messages to compact" };
  const config = options.config ?? session.requestHeader()?.config;
  if (config === undefined) {
    throw new HarnessError("INVALID_ARGS", "Cannot compact a session that has no request header and no config");
  }
  session.append("compaction/start", { reason: options.reason });
  // Whatever fails from here on closes the bracket: a throw that left `compaction/start` open made every later
  // compaction nested, and a turn that compacted failed with it.
  let outcome: CompactionOutcome;
  const calls: SummaryCalls = { made: 0, streaming: false };
  try {
    outcome = await summarize(session, options, config, range, calls);
  } catch (error) {
    outcome = {
      kind: "failed",
      error: HarnessError.isInstance(error) ? `${error.code}: ${error.message}` : String(error),
    };
    // As many summary calls as were made (a replay answers as many); a call that threw because the signal aborted
    // it ended cancelled, as one that ended with an aborted finish.
    const cancelled = calls.streaming && options.signal?.aborted === true;
    try {
      session.append("compaction/end", {
        outcome: "failed",
        error: outcome.error,
        attempts: calls.made,
        ...(cancelled ? { failure: { code: "ABORTED", message: outcome.error, cancelled: true } } : {}),
        ...(calls.usage !== undefined ? { usage: calls.usage } : {}),
      });
    } catch {
      // The log takes nothing more (disposed, lease lost): the first error says why.
      throw error;
    }
  }
  return outcome;
}

async function summarize(
  session: Session,
  options: CompactSessionOptions,
  config: LlmCallConfig,
  range: readonly number[],
  calls: SummaryCalls,
): Promise<CompactionOutcome> {
  const messages: Message[] = [];
  for (const seq of range) {
    const message = deriveEventMessage(session.at(seq)!);
    if (message !== null) messages.push(message);
  }
  messages.push({
    id: "compaction-instruction",
    role: "user",
    content: [{ type: "text", text: options.instructions ?? DEFAULT_COMPACTION_INSTRUCTIONS }],
    source: { kind: "plugin", plugin: "compaction", form: "instruction" },
  });
  const request: GenerateOptions = {
    ...callConfigOf(config),
    messages,
    purpose: "compaction",
    sessionId: session.id,
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
  };
  let attempt = 1;
  // `attempts` and `failure` record the calls as data (a replay answers as many calls, and rebuilds the failure,
  // without parsing `error`, which is for people).
  const error = (text: string, failure?: LlmFailureData, cancelled = false): CompactionOutcome => {
    session.append("compaction/end", {
      outcome: "failed",
      error: text,
      attempts: attempt,
      ...(failure !== undefined
        ? { failure: { code: failure.code, message: failure.message, ...(cancelled ? { cancelled: true } : {}) } }
        : {}),
      ...(calls.usage !== undefined ? { usage: calls.usage } : {}),
    });
    return { kind: "failed", error: text };
  };
  // A runtime built without options (or a stand-in for one) may carry no policy: the default then.
  const policy = options.retryPolicy ?? options.llm.retryPolicy ?? DEFAULT_RETRY_POLICY;
  const sleep = options.sleep ?? options.llm.sleep ?? defaultSleep;
  let assembler: BlockAssembler;
  for (;; attempt++) {
    assembler = new BlockAssembler();
    // Each attempt gets a messages array of its own: an adapter may change the one it was given (GenerateOptions).
    calls.made = attempt;
    calls.streaming = true;
    for await (const chunk of options.llm.stream({ ...request, messages: [...messages] })) assembler.push(chunk);
    calls.streaming = false;
    const reported = assembler.usage;
    if (reported !== undefined) calls.usage = calls.usage === undefined ? reported : addUsage(calls.usage, reported);
    const finish = assembler.finish;
    if (finish.kind === "aborted") {
      return error(`${finish.failure.code}: ${finish.failure.message}`, finish.failure, true);
    }
    if (finish.kind !== "error") break;
    const failure = finish.failure;
    const action = defaultRequestErrorAction(policy, attempt, failure);
    const signal = options.signal;
    if (action.kind !== "retry" || signal?.aborted) return error(`${failure.code}: ${failure.message}`, failure);
    try {
      await sleep(action.delayMs, signal ?? NEVER);
    } catch (thrown) {
      // A sleep that rejects on abort (node:timers/promises style) is a cancel before the retry, as one that resolves.
      if (!signal?.aborted) throw thrown;
    }
    if (signal?.aborted) return error(`${failure.code}: ${failure.message}${ABORTED_BEFORE_RETRY}`, failure);
  }
  const finish = assembler.finish;
  const blocks = assembler.blocks();
  const summary = blocks.filter((b) => b.type === "text").map((b) => b.text).join("").trim();
  // Only a finished answer is a summary: a cut-off one would drop what it had not reached, and a tool call is not
  // an answer at all (a max-tokens finish drops its tool-call blocks, so the finish is checked first).
  if (finish.kind !== "stop") return error(`the summary call ended with ${finish.kind}, not stop`);
  if (blocks.some((b) => b.type === "tool-call")) return error("the model called a tool instead of summarizing");
  if (summary === "") return error("the model returned no summary");
  const start = range[0];
  const end = range[range.length - 1];
  session.append("compaction/summary", { summary, start, end });
  const message: UserMessage = {
    id: options.newId(),
    role: "user",
    content: [{ type: "text", text: `Summary of the earlier conversation:\n\n${summary}` }],
    source: { kind: "plugin", plugin: "compaction", form: "summary" },
  };
  session.append("user/message", message, { surfaceOp: { op: "replace", start, end }, sourceEventSeqs: range });
  session.append("compaction/end", {
    outcome: "completed",
    attempts: attempt,
    ...(calls.usage !== undefined ? { usage: calls.usage } : {}),
  });
  return { kind: "completed", start, end, summary };
}

/**
 * How many summary calls a compaction made, whether one is streaming, and the usage they reported, summed (failed
 * attempts' too, as usageTotals counts a step's): what `compaction/end` records, also after a throw.
 */
interface SummaryCalls {
  made: number;
  streaming: boolean;
  usage?: TokenUsage;
}

/**
 * What the `error` text of a compaction whose summary call failed, and was cancelled before its retry, ends with
 * (the replay adapter reads it back from logs that hold no `failure`). Internal.
 */
export const ABORTED_BEFORE_RETRY = " (aborted before a retry)";

/** The signal of a sleep that nothing aborts. */
const NEVER: AbortSignal = new AbortController().signal;
