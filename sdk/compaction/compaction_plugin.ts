/**
 * The compaction plugin: compacts an agent's older turns when the context
 * estimate crosses a threshold of the route's context window (before a
 * turn's first step; the estimate is the larger of the estimator's and the
 * input tokens the provider reported for the latest model call plus what came
 * after it), recovers from `CONTEXT_WINDOW_EXCEEDED` (compact, then retry the
 * step with a request derived anew), and offers manual compaction as
 * `ctx.compaction.compact(agent)`.
 *
 * @module
 */

import type { HarnessContext } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import { callConfigOf, type LlmCallConfig } from "../llm/llm_adapter.ts";
import { requestHeaderSeq } from "../session/session.ts";
import type { LlmRuntime, Message, RetryPolicy } from "../llm/mod.ts";
import type { Session } from "../session/session.ts";
import type { SessionStore } from "../session/session_store.ts";
import type { Agent, AgentEvents } from "../agent/mod.ts";
import { type CompactionOutcome, compactSession } from "./compact_session.ts";

/** Options of {@linkcode compactionPlugin}. */
export interface CompactionOptions {
  /**
   * Compact before a step when the estimate exceeds this share of the context window.
   *
   * @default {0.8}
   */
  readonly threshold?: number;
  /**
   * How many of the latest turns stay verbatim.
   *
   * @default {1}
   */
  readonly keepTurns?: number;
  /** Estimate a request's tokens. @default {estimateTokens} */
  readonly estimate?: (messages: readonly Message[], system: string | undefined) => number;
  /** The summary instruction. */
  readonly instructions?: string;
  /**
   * Id generator for summary messages.
   *
   * @default {the harness's id source, `ctx.sessions.newId()` (the loop's), else crypto.randomUUID}
   */
  readonly newId?: () => string;
  /**
   * How a failed summary call is retried.
   *
   * @default {the harness's `retryPolicy` (`ctx.llm.retryPolicy`)}
   */
  readonly retryPolicy?: RetryPolicy;
  /**
   * Sleep before a retry of the summary call.
   *
   * @default {the harness's `sleep` (`ctx.llm.sleep`), else a timer that honours the signal}
   */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** The `ctx.compaction` service. */
export interface CompactionService {
  /**
   * Compact an agent's older turns now, from an idle phase of the agent. With storage, it settles once the events
   * the compaction logged (a `failed` one's too) are on storage, as `agent.flushed()` does.
   *
   * @param agent The agent.
   * @returns What happened.
   * @throws {HarnessError} `SESSION_FLUSH_FAILED` when the compaction's events could not be written (the write is
   *   tried again at the next flush); `AGENT_DISPOSED` once the agent is disposed.
   */
  compact(agent: Agent): Promise<CompactionOutcome>;
}

/**
 * A rough token estimate: a quarter of the JSON size of the history and system prompt.
 *
 * @param messages The history.
 * @param system The system prompt.
 * @returns Estimated tokens.
 */
export function estimateTokens(messages: readonly Message[], system: string | undefined): number {
  return Math.ceil((JSON.stringify(messages).length + (system?.length ?? 0)) / 4);
}

/**
 * The context the provider reported for the last model call, carried forward: the input tokens of the latest
 * assistant message's request (cache reads and writes included), plus the estimate of that message and of what
 * came after it. `undefined` when there is no such usage, or when a replace since then (a compaction) made it stale.
 * Reads the log back only to that message, and estimates only the messages from it on.
 */
function reportedTokens(
  session: Session,
  messages: readonly Message[],
  estimate: (messages: readonly Message[], system: string | undefined) => number,
): number | undefined {
  for (let seq = session.seq - 1; seq >= 0; seq--) {
    const event = session.at(seq)!;
    if (event.surfaceOp !== undefined && event.surfaceOp !== "append") return undefined;
    if (event.type !== "assistant/message") continue;
    const usage = event.data.usage;
    if (usage === undefined) return undefined;
    const id = event.data.message.id;
    let from = messages.length - 1;
    while (from >= 0 && messages[from].id !== id) from--;
    if (from < 0) return undefined;
    const input = usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0);
    return input + estimate(messages.slice(from), undefined);
  }
  return undefined;
}

/**
 * Whether the route the log last recorded is this run's: a request this process made (after any `agent/request`
 * listener routed it). Before the first one of a resumed agent, the recorded route is the earlier run's, which a
 * resume may have moved off (another provider, whose adapter this process may not have).
 */
function recordedThisRun(agent: Agent): boolean {
  return requestHeaderSeq(agent.session) >= agent.session.firstLiveSeq;
}

/** The summary call's route: the last request's (as routed), else the agent's own, which its next request takes. */
function routeOf(agent: Agent): LlmCallConfig {
  return recordedThisRun(agent) ? agent.session.requestHeader()!.config : callConfigOf(agent.options);
}

/** The context window of the last request's model (as routed), else of the agent's own route. */
function contextWindowOf(llm: LlmRuntime, agent: Agent): number | undefined {
  if (recordedThisRun(agent)) return agent.session.requestContext()?.contextWindow;
  const { provider, model } = agent.options;
  try {
    return llm.resolveModelInfo(provider, model).contextWindow;
  } catch {
    return undefined; // no adapter serves it: its request fails anyway
  }
}

function checkOptions(options: CompactionOptions): void {
  const { threshold, keepTurns, estimate, newId } = options;
  if (threshold !== undefined && !(typeof threshold === "number" && threshold > 0 && threshold <= 1)) {
    throw new HarnessError(
      "INVALID_ARGS",
      `compaction threshold is a share of the context window, above 0 and at most 1, not ${String(threshold)}`,
      { details: { field: "threshold" } },
    );
  }
  if (keepTurns !== undefined && !(Number.isSafeInteger(keepTurns) && keepTurns >= 0)) {
    throw new HarnessError(
      "INVALID_ARGS",
      `compaction keepTurns is a whole number of turns, not ${String(keepTurns)}`,
      {
        details: { field: "keepTurns" },
      },
    );
  }
  for (const [field, value] of [["estimate", estimate], ["newId", newId]] as const) {
    if (value !== undefined && typeof value !== "function") {
      throw new HarnessError("INVALID_ARGS", `compaction ${field} must be a function`, { details: { field } });
    }
  }
}

/** The services the compaction plugin provides (and the one it uses): type `harness.ctx` with `pluginCtx()`. */
export interface CompactionServices {
  /** The model runtime the summaries go through. */
  llm: LlmRuntime;
  /** The compaction service. */
  compaction: CompactionService;
}

/**
 * Install compaction.
 *
 * @param ctx The plugin context (needs `ctx.llm`).
 * @param options Threshold, turns kept, estimator.
 * @throws {HarnessError} `INVALID_ARGS` for a `threshold` that is not above 0 and at most 1, a `keepTurns` that is not
 *   a non-negative integer, or an `estimate` or `newId` that is not a function (`details.field` names it).
 */
export function compactionPlugin(ctx: HarnessContext, options: CompactionOptions = {}): void {
  checkOptions(options);
  const typed = ctx as unknown as HarnessContext<AgentEvents, CompactionServices>;
  const threshold = options.threshold ?? 0.8;
  const estimate = options.estimate ?? estimateTokens;
  // The harness's id source by default, as the loop's message ids: deterministic ids give deterministic summaries.
  const stores = ctx as unknown as HarnessContext<object, { sessions: SessionStore }>;
  const newId = options.newId ?? (() => stores.get("sessions")?.newId() ?? crypto.randomUUID());
  const run = (agent: Agent, reason: "manual" | "threshold" | "overflow", signal?: AbortSignal) =>
    compactSession(agent.session, {
      llm: typed.service("llm"),
      config: routeOf(agent),
      reason,
      keepTurns: options.keepTurns,
      instructions: options.instructions,
      newId,
      signal,
      retryPolicy: options.retryPolicy, // else the harness's, from `llm` (in compactSession)
      sleep: options.sleep,
    });

  typed.on("agent/pre-step", async (agent, proposal, next) => {
    const window = contextWindowOf(typed.service("llm"), agent);
    if (window !== undefined && proposal.step === 1) {
      const messages = agent.session.deriveMessages();
      const used = Math.max(
        estimate(messages, agent.session.requestHeader()?.system),
        reportedTokens(agent.session, messages, estimate) ?? 0,
      );
      // On the turn's signal: a summary call that hangs stops with the turn (cancel, dispose).
      if (used > window * threshold) await run(agent, "threshold", proposal.signal);
    }
    return next();
  });

  const recovered = new WeakMap<Agent, string>();
  typed.on("agent/request-error", async (agent, info, next) => {
    const key = `${info.turn}.${info.step}`;
    if (info.failure.code !== "CONTEXT_WINDOW_EXCEEDED" || recovered.get(agent) === key) return next();
    recovered.set(agent, key);
    const outcome = await run(agent, "overflow", info.signal);
    if (outcome.kind !== "completed") return next();
    return { kind: "retry", delayMs: 0, rebuild: true };
  });

  typed.provide("compaction", {
    // On the maintenance signal: disposing the agent stops a summary call that hangs. Acknowledged means durable: the
    // outcome is reported once the events the compaction logged are on storage (it was reported as soon as they were
    // committed, so a crash right after a `completed` lost the compaction, and a failed write went unreported).
    compact: (agent) =>
      agent.runMaintenance(async (signal) => {
        const outcome = await run(agent, "manual", signal);
        await agent.flushed();
        return outcome;
      }),
  });
}
