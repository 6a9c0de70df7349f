/**
 * The `Agent` handle: the live driver of one session.
 *
 * @module
 */

import type { HarnessCtx } from "../harness.ts";
import type { ContentBlock, SystemMessage, UserMessage } from "../llm/messages.ts";
import type { LlmCallConfig } from "../llm/llm_adapter.ts";
import type { TokenUsage } from "../llm/stream_chunk.ts";
import type {
  InboxEntry,
  InboxTarget,
  Session,
  SessionEvent,
  TurnEndCancelCause,
  TurnEndReason,
} from "../session/mod.ts";
import type { Inbox } from "./inbox.ts";

/** `idle` when no turn runs, `running` while one does. */
export type AgentStatus = "idle" | "running";

/** What an agent talks to and how. */
export interface AgentOptions {
  /** The provider route, e.g. `deepseek`. */
  readonly provider: string;
  /** The model id. */
  readonly model: string;
  /** Call settings recorded in the request header. */
  readonly reasoningEffort?: LlmCallConfig["reasoningEffort"];
  readonly temperature?: number;
  readonly maxTokens?: number;
  readonly stop?: readonly string[];
}

/**
 * Input accepted by `followup`, `steer`, `inject` and `run`: text, blocks, or
 * a full message. A system message (text only) is context the harness or a
 * plugin adds for the model, such as a hook's; it enters the step as
 * `system/message`, the rest as `user/message`.
 */
export type AgentInput = string | readonly ContentBlock[] | UserMessage | SystemMessage;

/** Options of {@linkcode Agent.cancel}. */
export interface CancelOptions {
  /**
   * Keep queued input instead of discarding it.
   *
   * @default {false}
   */
  keepInbox?: boolean;
}

/** Options of {@linkcode Agent.subscribe}. */
export interface SubscribeOptions {
  /**
   * The most updates buffered for a consumer that does not keep up. Past it
   * the subscription is dropped: its next read rejects with
   * `SUBSCRIBER_OVERFLOW` (the log is intact; resume from
   * `agent.session.slice(lastSeq + 1)`), so a slow consumer never slows the agent.
   *
   * @default {10000}
   */
  readonly maxBuffered?: number;
}

/** What {@linkcode Agent.run} resolves to. */
export interface RunResult {
  /** The final assistant text of the turn (text blocks of the last assistant message). */
  readonly text: string;
  /** Why the turn ended. */
  readonly reason: TurnEndReason;
  /** Token usage summed over the turn's model calls, a compaction's summary calls inside the turn included. */
  readonly usage: TokenUsage;
  /** The turn number. */
  readonly turn: number;
}

/** One item of {@linkcode Agent.subscribe}. */
export type AgentUpdate =
  | { readonly kind: "event"; readonly event: SessionEvent }
  | {
    /**
     * A streamed delta, sent besides its `assistant/chunk` event: the text to
     * append to block `index` of the step's request `attempt` (a tool call's
     * arguments, with the call's `id`, and its `name` on the delta that first
     * carries it). A failed request that is retried (an `llm/retry` event)
     * discards what its attempt streamed: the next attempt's blocks start
     * again from index 0, so a consumer keys blocks by step, attempt and index
     * (or starts the step's text again at `llm/retry`).
     */
    readonly kind: "delta";
    /** The seq of the `assistant/chunk` event it comes from. */
    readonly seq: number;
    readonly turn: number;
    readonly step: number;
    /** The request attempt of the step: 1, then 2 after the first `llm/retry`, and so on. */
    readonly attempt: number;
    /** The block it belongs to, as the stream numbers them. */
    readonly index: number;
    readonly blockType: "text" | "reasoning" | "tool-call";
    readonly text: string;
    /** The tool call's id (`tool-call` deltas only). */
    readonly id?: string;
    /** The tool's name, on the tool call's delta that carries it. */
    readonly name?: string;
  }
  | { readonly kind: "status"; readonly status: AgentStatus };

/**
 * A live agent.
 *
 * `followup` queues a message that gets a turn of its own and wakes the agent;
 * `steer` queues a message for the next step boundary (starting a turn when
 * idle); `inject` queues model-facing context for the next step without waking.
 * The three commit the input to the log at once; with storage, `await
 * agent.flushed()` afterwards is the point from which it survives a crash.
 */
export interface Agent {
  /** The agent's id, shared with its session. */
  readonly id: string;
  /** The route and call settings. */
  readonly options: AgentOptions;
  /** The live session; its log is the source of truth. */
  readonly session: Session;
  /** The durable projection of pending input. */
  readonly inbox: Inbox;
  /** `idle` or `running`; every change is announced on `agent/status`. */
  readonly status: AgentStatus;
  /**
   * The agent's scoped context: registrations made here are undone on
   * dispose, and listeners see only this agent's events (and global ones).
   * It is typed like `harness.ctx` (every harness event and service, and
   * whatever an application adds to `HarnessEvents` / `HarnessServices`), so
   * `agent.ctx.on("agent/pre-step", …)` needs no cast.
   */
  readonly ctx: HarnessCtx;
  /** Queue a message for a turn of its own and wake the agent. */
  followup(input: AgentInput): InboxEntry;
  /** Queue a message for the next step boundary and wake the agent. */
  steer(input: AgentInput): InboxEntry;
  /** Queue context for the next step without waking the agent. */
  inject(input: AgentInput): InboxEntry;
  /** Route input to an inbox, optionally waking the agent. */
  send(input: AgentInput, target: InboxTarget, wakeup: boolean): InboxEntry;
  /**
   * Start a turn for the input that waits for a wake, as `send(…, true)`
   * does: the queued followups of a resumed agent (a resume starts none
   * unless asked), steering a rejected step left, injected context. Nothing
   * starts while a turn or a maintenance task runs (the queued input is taken
   * after it), or when nothing is queued. Called from inside an append (a
   * `listen()` listener hearing an event), the wake is made once that append
   * is done.
   *
   * @throws {HarnessError} `AGENT_DISPOSED` once the agent is disposed.
   */
  wake(): void;
  /**
   * Discard queued input (unless `keepInbox`) and abort the running turn, or
   * the running maintenance task (its `signal` aborts with `ABORTED`).
   */
  cancel(cause: TurnEndCancelCause, options?: CancelOptions): void;
  /**
   * Resolves when the agent has no turn running and none about to start
   * (after a maintenance task, queued followups run first). Input that waits
   * for a wake (injected context, steering left by a rejected step) does not
   * keep it pending.
   */
  whenIdle(): Promise<void>;
  /**
   * Run `task` from a true idle phase: no turn starts until it settles. Its
   * `signal` aborts on `cancel()` and when the agent is disposed, and disposal waits for the
   * task to settle (so it writes nothing after the session is released).
   *
   * @throws {HarnessError} `AGENT_DISPOSED` once the agent is disposed.
   */
  runMaintenance<T>(task: (signal: AbortSignal) => Promise<T> | T): Promise<T>;
  /**
   * A durability barrier: resolves once every event committed before the call
   * (queued input included) is on storage, at once when the harness has no
   * storage. It waits for the current write batch instead of writing per
   * event. A write that fails quickly is tried again, 50 and 250 ms later,
   * unless storage refused it for good (a lost lease, another writer, a log
   * that is not this session's any more, an invalid id); it then rejects with
   * `SESSION_FLUSH_FAILED`, the last failure (also when the agent is disposed
   * while a try waits). After
   * the agent is disposed it resolves at once: disposal made the session's
   * last write, and `dispose()` reports its failure.
   */
  flushed(): Promise<void>;
  /**
   * Queue a followup, wait for idle, and settle with that turn's outcome once
   * its `turn/end` is durable (with storage).
   *
   * Design: a turn that ends in `error` (an unknown route, a refused
   * connection, an auth failure, retries spent, a strict replay that
   * diverged…) rejects, so code that prints `result.text` never prints an
   * empty answer for a failure. Every other outcome resolves, because the
   * caller asked for it or the harness decided it on purpose: `completed`,
   * `aborted` (`cancel()`), `blocked` (a pre-step listener), `max-tokens`.
   * The rejection is a {@linkcode TurnFailedError} (code `TURN_FAILED`;
   * the model-call failure's own code is on `error.failure.code`) whose
   * `result` is what this promise would have resolved to. The failed turn is
   * logged and closed like any other, so the agent takes the next input.
   * `subscribe()` and the log see every outcome alike; `run()` is the
   * convenience for the caller who waits for one answer.
   *
   * @param input The user's message.
   * @returns The turn's text, end reason, usage and number.
   * @throws {TurnFailedError} `TURN_FAILED` when the turn ends in `error`.
   * @throws {HarnessError} `INPUT_DISCARDED` when `cancel()` discards the
   *   input before a turn takes it; `AGENT_DISPOSED` when the agent is or
   *   gets disposed.
   * @throws The defect itself (also announced on `agent/error`) when the loop
   *   could not open or close a turn: a throwing listener or service, a clock
   *   that returns a bad time. The loop then waits for the next input; input
   *   still queued stays queued, and a turn left open is closed first.
   *
   * @example A failed turn rejects; its result rides on the error
   * ```ts
   * import { createHarness, TurnFailedError } from "@dsh/harness";
   * import { scriptedAdapter, textResponse } from "@dsh/harness/testing";
   * import assert from "node:assert/strict";
   *
   * const harness = await createHarness({
   *   adapters: [scriptedAdapter(textResponse("Hi!"))],
   *   model: { provider: "scripted", model: "scripted-model" },
   * });
   * const agent = await harness.createAgent();
   * assert.equal((await agent.run("Hello")).text, "Hi!");
   *
   * const lost = await harness.createAgent({ provider: "nowhere", model: "m" });
   * const error = await lost.run("Hello").catch((e) => e);
   * assert.ok(error instanceof TurnFailedError);
   * assert.equal(error.failure.code, "NO_ADAPTER");
   * assert.equal(error.result.reason.kind, "error");
   * await harness.dispose();
   * ```
   */
  run(input: AgentInput): Promise<RunResult>;
  /**
   * Live committed events, streaming deltas and status changes; ends on
   * dispose. A consumer more than `maxBuffered` updates behind is dropped with
   * `SUBSCRIBER_OVERFLOW`.
   *
   * An event is delivered once it is committed to the session's log: with
   * storage, before it is on storage. `flushed()` resolves (and the kernel's
   * `session/durable` event is emitted) once it is; `run()` settles only then.
   */
  subscribe(options?: SubscribeOptions): AsyncIterable<AgentUpdate>;
  /**
   * Hear what `subscribe()` yields — committed events, streaming deltas and
   * status changes, in the same order — synchronously, as each happens: an
   * event and its delta from inside the session's append, a status change when
   * it is made. Nothing is buffered, so nothing is dropped and no promise is
   * made per update: the cheap way to follow an agent (in the peer benchmark's
   * conversation 3–32 % less CPU than a `for await` over `subscribe()`, median
   * 13 %; see bench/PROFILE.md).
   *
   * Events and deltas are heard from inside the append, so the listener must
   * not append to the session there: `followup`, `steer`, `inject`, `send` and
   * `run` throw `APPEND_REENTERED`, and so does `cancel` when it has queued
   * input to discard (`wake` waits for the append to end). Status changes are heard outside any append, while the
   * agent is between turns: input queued then starts the next turn at once,
   * and the listeners not yet reached hear only the newer status. Queue such
   * work with `queueMicrotask()` to keep it out of the delivery. A listener
   * that throws is reported on the console and keeps listening; the agent and
   * the other listeners go on. Disposing the agent ends every listener. As with
   * `subscribe()`, an event is heard when it is committed to the log, before
   * storage has it: `flushed()` and `session/durable` say when it has.
   *
   * @param listener Called with each update.
   * @returns Stops the listener; calling it again does nothing.
   * @throws {HarnessError} `INVALID_ARGS` when `listener` is not a function.
   *
   * @example Count the streamed text as it arrives
   * ```ts
   * import { createHarness } from "@dsh/harness";
   * import { scriptedAdapter, textResponse } from "@dsh/harness/testing";
   * import assert from "node:assert/strict";
   *
   * const harness = await createHarness({
   *   adapters: [scriptedAdapter(textResponse("Hello there"))],
   *   model: { provider: "scripted", model: "scripted-model" },
   * });
   * const agent = await harness.createAgent();
   * let streamed = "";
   * const stop = agent.listen((update) => {
   *   if (update.kind === "delta" && update.blockType === "text") streamed += update.text;
   * });
   * const result = await agent.run("Hi");
   * stop();
   * assert.equal(streamed, result.text);
   * await harness.dispose();
   * ```
   */
  listen(listener: (update: AgentUpdate) => void): () => void;
}

/** A created agent plus the capability to dispose it. */
export interface AgentHandle {
  readonly agent: Agent;
  /**
   * Stop the loop, wait for it, unregister the agent and its session, unwind its scope. Every call settles with the
   * first, once it is done; but one made from code that teardown runs (an undo of the agent's scope, a
   * `session/release` listener, before its first `await`) settles at once, as it would otherwise wait for itself.
   */
  dispose(): Promise<void>;
}
