/**
 * The agent loop: the one place where inbox input becomes turns and steps.
 *
 * This file is longer than the house limit on purpose: the loop is one state
 * machine (turn → claim → pre-step → step → request → stream → tools → step end
 * → turn end) and reads best in one place; what holds no loop state lives beside
 * it (`_loop_values.ts`, `_update_queue.ts`). The order of events it writes is
 * the specification of `CONTRACTS.md` §Loop:
 *
 * ```
 * turn/start
 *   claim (turn boundary: all next-step input + one next-turn entry; later steps: next-step only)
 *   agent/pre-step (waterfall)        reject → turn/end blocked; empty first step → turn/end completed
 *   step/start
 *   agent/request (waterfall) → prepareCall → system-prompt assembly
 *   user/message (system/message for a system input) × entered
 *   request/header (initial | resume | change) [+ request/context when the route changed]
 *   frozen request == derivation of the log (checked when invariants are on)
 *   assistant/chunk × k (appended as they stream, folded by a BlockAssembler)
 *     error finish → agent/request-error (waterfall) → llm/retry + new attempt in the same step, or fail
 *   assistant/message (sourceEventSeqs = the attempt's chunk seqs; interrupted on cancel)
 *   tool/call when each call starts; tool/result in model order
 *   step/end
 *   more steps while tools owe a request or next-step input waits
 *   agent/turn-stopping (serial; listeners may steer)
 * turn/end
 * ```
 *
 * @module
 */

import { type HarnessContext, type ScopeInfo, unheard } from "../kernel/harness_context.ts";
import type { HarnessCtx } from "../harness.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { AssistantMessage, ContentBlock, SystemMessage, ToolCallBlock, UserMessage } from "../llm/messages.ts";
import type { StreamChunk, TokenUsage } from "../llm/stream_chunk.ts";
import { BlockAssembler } from "../llm/block_assembler.ts";
import { callConfigOf, type GenerateOptions, type LlmCallConfig } from "../llm/llm_adapter.ts";
import type { LlmFailureData } from "../llm/llm_failure.ts";
import type { LlmRuntime, PreparedCall } from "../llm/llm_runtime.ts";
import type { RetryPolicy } from "../llm/retry_policy.ts";
import { canonicalHeader, headerEquals } from "../session/header_equals.ts";
import type {
  EpochHeader,
  InboxEntry,
  InboxTarget,
  SessionEvent,
  TurnEndCancelCause,
  TurnEndReason,
} from "../session/session_events.ts";
import type { Session } from "../session/session.ts";
import { FLUSHED, type SessionStore } from "../session/session_store.ts";
import { scheduleToolCalls } from "../tools/schedule_tool_calls.ts";
import { jsonSchemaValidatorPending } from "../tools/_json_schema.ts";
import type { ToolRuntime } from "../tools/tool_runtime.ts";
import type { ToolExecutionResult } from "../tools/tool_execution_result.ts";
import type { SystemPrompt } from "../prompt/system_prompt.ts";
import { assembleForRequest } from "../prompt/system_prompt.ts";
import type {
  Agent,
  AgentInput,
  AgentOptions,
  AgentStatus,
  AgentUpdate,
  CancelOptions,
  RunResult,
  SubscribeOptions,
} from "./agent.ts";
import type { AgentEvents, PreStepDecision } from "./agent_events.ts";
import { Inbox } from "./inbox.ts";
import { RequestChecker } from "./_request_check.ts";
import { forEachChunk } from "../llm/_guard_stream.ts";
import { appendBracket, appendChunk, isPublishing } from "../session/session.ts";
import { seqList } from "../session/_copy_event_data.ts";
import { type FailedRunResult, TurnFailedError } from "./turn_failed_error.ts";
import {
  addUsage,
  checkedFailure,
  checkPreStep,
  checkRequestErrorAction,
  clearedContextText,
  defaultRequestErrorAction,
  defaultSleep,
  failureOf,
  PROMPT_CONTEXT_PREFIX,
  promptContextName,
  sameHeaderInput,
  toInboxMessage,
  toolErrorMessage,
  toolExecuteFailed,
  unanswerableCall,
  ZERO_USAGE,
} from "./_loop_values.ts";
import { flushWithRetries } from "./_retry_flush.ts";
import { UpdateListener, UpdateQueue, type UpdateSink } from "./_update_queue.ts";
import { ABORTED, untilAborted } from "../kernel/_until_aborted.ts";
import { abortAnnounced, announcedController } from "../kernel/_on_abort.ts";

/** Services and events the loop uses. */
export interface LoopServices {
  sessions: SessionStore;
  llm: LlmRuntime;
  tools: ToolRuntime;
  systemPrompt: SystemPrompt;
}

/** The context type the loop runs on. */
// deno-lint-ignore no-explicit-any
export type LoopContext = HarnessContext<AgentEvents & Record<string, any>, LoopServices>;

/** Everything a loop agent is built from. */
export interface LoopAgentInit {
  /** The agent's scoped context. */
  readonly ctx: LoopContext;
  /** The live session it drives. */
  readonly session: Session;
  readonly options: AgentOptions;
  /** `create` for a new session, `resume` for one loaded from a log. */
  readonly origin: "create" | "resume";
  readonly now: () => number;
  readonly newId: () => string;
  readonly maxParallelToolCalls: number;
  /** The most model steps of one turn (`Infinity`: no bound). */
  readonly maxSteps: number;
  readonly retryPolicy: RetryPolicy;
  /** Check every request against the log's derivation. */
  readonly invariants: boolean;
  /** Sleep that honours a signal; injectable so tests and benchmarks need no timers. */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

interface StepOutcome {
  readonly kind: "ok" | "aborted" | "error" | "max-tokens";
  readonly failure?: LlmFailureData;
  /** Tool calls ran: the model is owed another request. */
  readonly owesRequest?: boolean;
  readonly concluded?: boolean;
}

/** The `subscribe()` update of a tool call's delta: `name` only on the delta that carries it. */
function toolCallDelta(
  seq: number,
  turn: number,
  step: number,
  attempt: number,
  chunk: Extract<StreamChunk, { type: "tool-call-delta" }>,
): AgentUpdate {
  const { index, id, name, argumentsDelta: text } = chunk;
  return name === undefined
    ? { kind: "delta", seq, turn, step, attempt, index, blockType: "tool-call", text, id }
    : { kind: "delta", seq, turn, step, attempt, index, blockType: "tool-call", text, id, name };
}

// Thrown by a chunk sink to end a call whose finish it logged itself (see #unloggable).
const CALL_ENDED: unique symbol = Symbol("call ended");

/**
 * The loop's `Agent` implementation.
 *
 * Internal to the SDK: agents are made by `ctx.agents.create()` or `harness.createAgent()`.
 */
export class LoopAgent implements Agent {
  readonly id: string;
  readonly options: AgentOptions;
  readonly session: Session;
  readonly inbox: Inbox;
  readonly ctx: HarnessCtx;

  readonly #ctx: LoopContext;
  readonly #init: LoopAgentInit;
  readonly #sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  #status: AgentStatus = "idle";
  #pumping: Promise<void> | undefined;
  #wakePending = false;
  #controller: AbortController | undefined;
  /** A cancel made while the pump was about to open its first turn (no controller yet): applied to that turn. */
  #cancelBeforeTurn: { readonly cause: TurnEndCancelCause; readonly keepInbox: boolean } | undefined;
  /** From the pump's start until its first turn has a controller. */
  #openingFirstTurn = false;
  #cancelCause: TurnEndCancelCause | undefined;
  // Whether the cancel of the running turn kept the inbox.
  #cancelKeepsInbox = false;
  #disposed = false;
  #maintenance: Promise<unknown> | undefined;
  #maintenanceController: AbortController | undefined;
  #idleWaiters: (() => void)[] = [];
  #firstRequestOfLoop = true;
  #turn: number;
  /** A defect whose turn could not be closed (see #afterDefect). */
  #unclosed: { readonly error: unknown } | undefined;
  /** The request-reconstruction invariant, when invariants are on. */
  #checker: RequestChecker | undefined;
  /** What the last step's header was built from, and the header in force it matched. */
  #headerMemo: { input: EpochHeader; logged: EpochHeader } | undefined;
  /** The text last logged for each prompt context, by name; read from the log on first use. */
  #contextTexts: Map<string, string> | undefined;
  #contextGeneration = -1;
  /** The agent's scope and the services (once per turn): a kernel read goes through Cordis's tracing proxies. */
  readonly #scope: ScopeInfo | undefined;
  #svc!: LoopServices;
  /** Usage of every model call of the running turn (failed attempts included). */
  #turnUsage: TokenUsage = ZERO_USAGE;
  /** The request attempt of the running step (1, then 2 after a retry…): delta updates carry it. */
  #attempt = 1;
  /** The text of the turn's latest assistant message that had text. */
  #turnText = "";
  // The subscribers' queues and the listeners. Replaced, never changed in place (a publish iterates the list it
  // started with).
  #sinks: readonly UpdateSink[] = [];
  readonly #claimedBy = new Map<string, number>();
  // The entries the current step claimed whose messages have not entered yet (the first `steered` are next-step
  // entries, the rest the next-turn one): a rejected step parks its steers again, and a disposal puts them all back.
  #entering: { readonly claimed: readonly InboxEntry[]; readonly steered: number } | undefined;
  readonly #runWaiters = new Map<string, { resolve: (r: RunResult) => void; reject: (e: unknown) => void }>();

  /**
   * Create the agent. It starts idle; queue input to wake it.
   *
   * @param init The agent's context, session and settings.
   */
  constructor(init: LoopAgentInit) {
    this.#init = init;
    this.#ctx = init.ctx;
    this.ctx = init.ctx as unknown as HarnessCtx;
    this.session = init.session;
    this.id = init.session.id;
    this.options = Object.freeze({ ...init.options });
    this.#sleep = init.sleep ?? defaultSleep;
    this.#scope = init.ctx.scope;
    this.#turn = init.session.events.reduce((n, e) => (e.type === "turn/start" ? e.data.turn : n), 0);
    this.#firstRequestOfLoop = true;
    this.inbox = Inbox.fromLog(
      init.session.events,
      (splice) => this.session.append("agent/inbox/spliced", splice).data,
    );
  }

  get status(): AgentStatus {
    return this.#status;
  }

  /** Whether the agent was disposed. */
  get disposed(): boolean {
    return this.#disposed;
  }

  followup(input: AgentInput): InboxEntry {
    return this.send(input, "next-turn", true);
  }

  steer(input: AgentInput): InboxEntry {
    return this.send(input, "next-step", true);
  }

  inject(input: AgentInput): InboxEntry {
    return this.send(input, "next-step", false);
  }

  send(input: AgentInput, target: InboxTarget, wakeup: boolean): InboxEntry {
    if (this.#disposed) throw new HarnessError("AGENT_DISPOSED", `Agent "${this.id}" is disposed`);
    if (target !== "next-turn" && target !== "next-step") {
      throw new HarnessError("INVALID_ARGS", `Unknown inbox target "${String(target)}"`);
    }
    const message = toInboxMessage(input, this.#init.newId());
    const entry: InboxEntry = { id: this.#init.newId(), message };
    this.inbox.push(target, entry);
    this.#ctx.emit("agent/inbox/inserted", this, entry, target);
    if (wakeup) {
      this.#wakePending = true;
      this.#schedule();
    }
    return entry;
  }

  wake(): void {
    if (this.#disposed) throw new HarnessError("AGENT_DISPOSED", `Agent "${this.id}" is disposed`);
    // From inside an append (a listen() listener) the turn it would start could append nothing: it failed there with
    // APPEND_REENTERED, and the run() waiting for the queued input was told it failed while the input stayed queued.
    // A wake appends nothing itself, so it is made once the append is done.
    if (isPublishing(this.session)) {
      queueMicrotask(() => {
        if (!this.#disposed) this.#wakeQueued();
      });
      return;
    }
    this.#wakeQueued();
  }

  // Start what the inbox holds, next-step input too. Nothing queued: nothing to wake, and no wake left pending for
  // input that comes later (an inject waits).
  #wakeQueued(): void {
    if (this.inbox.size === 0) return;
    this.#wakePending = true;
    this.#schedule();
  }

  cancel(cause: TurnEndCancelCause, options: CancelOptions = {}): void {
    if (typeof cause !== "string" || (cause as string) === "") {
      throw new HarnessError("INVALID_ARGS", `cancel() takes a cause such as "user", not ${String(cause)}`);
    }
    if (!options.keepInbox) {
      const discarded = this.inbox.clear();
      for (const entry of discarded) {
        this.#ctx.emit("agent/inbox/discarded", this, entry);
        const waiter = this.#runWaiters.get(entry.id);
        if (waiter) {
          this.#runWaiters.delete(entry.id);
          waiter.reject(new HarnessError("INPUT_DISCARDED", `Input "${entry.id}" was discarded by cancel(${cause})`));
        }
      }
      this.#wakePending = false;
    }
    if (this.#controller && !this.#controller.signal.aborted) {
      this.#cancelCause = cause;
      this.#cancelKeepsInbox = options.keepInbox === true;
      abortAnnounced(this.#controller, new HarnessError("ABORTED", `Turn cancelled: ${cause}`));
    } else if (this.#openingFirstTurn && this.#hasWork()) {
      // The pump is about to open its first turn (a status listener hearing `running`): that turn is the one
      // cancelled. Between two turns of a pump a cancel finds no turn, as a cancel of an idle agent does.
      this.#cancelBeforeTurn = { cause, keepInbox: options.keepInbox === true };
    }
    // A maintenance task (a manual compaction) is what the agent is doing while it runs: it stops too.
    if (this.#maintenanceController && !this.#maintenanceController.signal.aborted) {
      this.#maintenanceController.abort(new HarnessError("ABORTED", `Maintenance cancelled: ${cause}`));
    }
  }

  /**
   * After a resume holds its writer lease: put back the input a crash stranded between its claim and its step's
   * messages (see `Inbox.strandedClaims`), and with `wake`, run what waits in the inbox, as `wake()` does.
   *
   * @param agent The resumed agent.
   * @param wake Start the queued input now (else it waits for the next wake, as any queued input).
   */
  static wakeResumed(agent: Agent, wake: boolean): void {
    if (!(agent instanceof LoopAgent) || agent.#disposed) return;
    const stranded = Inbox.strandedClaims(agent.session.events);
    // Each goes to the front of its queue: the latest first, so that the earliest ends up first.
    for (let i = stranded.length - 1; i >= 0; i--) agent.inbox.restore(stranded[i].target, stranded[i].entries);
    // As wake() does: steering and injected context (next-step input) start a turn too.
    if (wake) agent.#wakeQueued();
  }

  whenIdle(): Promise<void> {
    // Idle with work queued that nothing will start (next-step input waiting for a wake): that is idle too.
    if (!this.#pumping && (!this.#hasWork() || this.#maintenance === undefined)) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async runMaintenance<T>(task: (signal: AbortSignal) => Promise<T> | T): Promise<T> {
    if (typeof task !== "function") throw new HarnessError("INVALID_ARGS", "runMaintenance() takes a function");
    const disposed = () => new HarnessError("AGENT_DISPOSED", `Agent "${this.id}" was disposed`);
    if (this.#disposed) throw disposed();
    while (this.#pumping || this.#maintenance) {
      await (this.#pumping ?? this.#maintenance)?.catch(() => {});
      if (this.#disposed) throw disposed();
    }
    const controller = new AbortController();
    this.#maintenanceController = controller;
    const running = (async () => await task(controller.signal))();
    this.#maintenance = running;
    try {
      return await running;
    } finally {
      this.#maintenance = undefined;
      this.#maintenanceController = undefined;
      this.#schedule();
      // Nothing to run after it (queued input was cancelled meanwhile): whenIdle() callers are released here.
      if (this.#pumping === undefined) this.#releaseIdle();
    }
  }

  async run(input: AgentInput): Promise<RunResult> {
    const entry = this.followup(input);
    const result = await new Promise<RunResult>((resolve, reject) =>
      this.#runWaiters.set(entry.id, { resolve, reject })
    );
    // As documented: the promise settles once the agent is idle again (after any work queued meanwhile)
    // and the turn's end is durable.
    await this.whenIdle();
    await this.flushed();
    if (result.reason.kind === "error") throw new TurnFailedError(result as FailedRunResult);
    return result;
  }

  async flushed(): Promise<void> {
    const sessions = this.#ctx.get("sessions");
    // Disposed with its harness: the session was released (its last write made, a failure reported by dispose()).
    if (sessions === undefined && this.#disposed) return;
    const store = this.#ctx.service("sessions");
    // A write that failed for a moment is tried again before it is reported (see _retry_flush.ts).
    await flushWithRetries(() => store.flush(this.session));
  }

  subscribe(options: SubscribeOptions = {}): AsyncIterable<AgentUpdate> {
    const max = options.maxBuffered ?? 10_000;
    if (!Number.isInteger(max) || max <= 0) {
      throw new HarnessError("INVALID_ARGS", "maxBuffered must be a positive integer");
    }
    const queue: UpdateQueue = new UpdateQueue(() => this.#drop(queue), max);
    if (this.#disposed) queue.close();
    else this.#sinks = [...this.#sinks, queue];
    return queue;
  }

  listen(listener: (update: AgentUpdate) => void): () => void {
    if (typeof listener !== "function") {
      throw new HarnessError("INVALID_ARGS", "listen() takes a function");
    }
    const sink = new UpdateListener(listener, this.id);
    if (this.#disposed) sink.close();
    else this.#sinks = [...this.#sinks, sink];
    return () => {
      sink.close();
      this.#drop(sink);
    };
  }

  #drop(sink: UpdateSink): void {
    if (this.#sinks.includes(sink)) this.#sinks = this.#sinks.filter((s) => s !== sink);
  }

  /**
   * Publish a committed event to subscribers (the factory wires this to an observer of the session).
   *
   * @param event The committed event.
   */
  publish(event: SessionEvent): void {
    // A compaction inside the turn (threshold, overflow) made model calls of the turn: its summary calls' usage is
    // the turn's too (a manual one runs between turns).
    if (event.type === "compaction/end" && this.#controller !== undefined && event.data.usage !== undefined) {
      this.#turnUsage = addUsage(this.#turnUsage, event.data.usage);
    }
    const sinks = this.#sinks;
    if (sinks.length === 0) return;
    for (let i = 0; i < sinks.length; i++) sinks[i].push({ kind: "event", event });
    if (event.type === "assistant/chunk") {
      const { turn, step, chunk } = event.data;
      const type = chunk.type, seq = event.seq, attempt = this.#attempt;
      const delta: AgentUpdate | undefined = type === "text-delta"
        ? { kind: "delta", seq, turn, step, attempt, index: chunk.index, blockType: "text", text: chunk.text }
        : type === "reasoning-delta"
        ? { kind: "delta", seq, turn, step, attempt, index: chunk.index, blockType: "reasoning", text: chunk.text }
        : type === "tool-call-delta"
        ? toolCallDelta(seq, turn, step, attempt, chunk)
        : undefined;
      if (delta !== undefined) { for (let i = 0; i < sinks.length; i++) sinks[i].push(delta); }
    }
  }

  /**
   * Stop the loop: cancel the running turn and wait for it to close.
   *
   * @returns Resolves once the driver has stopped.
   */
  async stop(): Promise<void> {
    if (this.#disposed) return;
    // Queued input stays in the (durable) inbox, so that a resumed agent finds it.
    this.cancel("disposed", { keepInbox: true });
    this.#disposed = true;
    await this.#pumping;
    // A maintenance task (a manual compaction) stops too, and writes what it writes before the session goes.
    this.#maintenanceController?.abort(new HarnessError("ABORTED", `Agent "${this.id}" is being disposed`));
    await this.#maintenance?.catch(() => {/* its caller gets the failure */});
    for (const [id, waiter] of this.#runWaiters) {
      waiter.reject(new HarnessError("AGENT_DISPOSED", `Agent "${this.id}" was disposed before input "${id}" ran`));
    }
    this.#runWaiters.clear();
    const sinks = this.#sinks;
    this.#sinks = [];
    for (const sink of sinks) sink.close();
    this.#releaseIdle();
  }

  #hasWork(): boolean {
    if (this.#disposed) return false;
    return this.inbox.count("next-turn") > 0 ||
      (this.#wakePending && this.inbox.count("next-step") > 0);
  }

  #schedule(): void {
    if (this.#pumping || this.#maintenance || this.#disposed || !this.#hasWork()) return;
    // Set before the pump runs: its first stretch is synchronous (status, turn/start, the claim and their
    // listeners), and a dispose(), whenIdle() or runMaintenance() called from there must see a turn running.
    let ended!: () => void;
    this.#pumping = new Promise<void>((resolve) => ended = resolve);
    this.#openingFirstTurn = true;
    this.#pump().then(ended, ended);
  }

  async #pump(): Promise<void> {
    this.#setStatus("running");
    try {
      while (this.#hasWork()) {
        const turnsBefore = this.#turn;
        try {
          // A turn a defect left open (its close failed too) is closed before the next one.
          const unclosed = this.#unclosed;
          this.#unclosed = undefined;
          if (unclosed !== undefined) this.#closeTurnAfterDefect(unclosed.error);
          await this.#runTurn();
        } catch (error) {
          // A defect outside model calls (a throwing listener, a broken service, a bad clock): report it, stop this
          // turn. One before any turn could open would repeat on every try: stop until the next wake.
          if (!this.#afterDefect(error) || this.#turn === turnsBefore) {
            this.#failWaiters(error);
            break;
          }
        }
      }
    } finally {
      this.#pumping = undefined;
      this.#cancelBeforeTurn = undefined;
      this.#openingFirstTurn = false;
      this.#setStatus("idle");
      // A status listener may have queued input and started the next pump: the waiters wait for that one to end.
      if (this.#pumping === undefined) this.#releaseIdle();
    }
  }

  #releaseIdle(): void {
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  #setStatus(status: AgentStatus): void {
    if (this.#status === status) return;
    this.#status = status;
    this.#ctx.emit("agent/status", this, status);
    // A status change is not made inside an append, so a listener may act on it (queue input: the next pump starts and
    // announces `running` at once). The sinks not reached by then hear the newer status only, never a stale one after it.
    const sinks = this.#sinks;
    for (let i = 0; i < sinks.length && this.#status === status; i++) sinks[i].push({ kind: "status", status });
  }

  // Out of line (rare). Report a defect and close what it left open; false when even that failed (the log takes no
  // append now): the turn is then closed at the next wake.
  #afterDefect(error: unknown): boolean {
    this.#ctx.emit("agent/error", this, error);
    try {
      this.#closeTurnAfterDefect(error);
      return true;
    } catch (closing) {
      this.#ctx.emit("agent/error", this, closing);
      this.#unclosed = { error };
      return false;
    }
  }

  // The loop stops until the next wake with no turn to end: every run() waiting learns why, rather than never.
  #failWaiters(error: unknown): void {
    const waiters = [...this.#runWaiters.values()];
    this.#runWaiters.clear();
    this.#claimedBy.clear();
    for (const waiter of waiters) waiter.reject(error);
  }

  /** After a defect, close whatever step and turn are open so the log stays well-formed. */
  #closeTurnAfterDefect(error: unknown): void {
    let openTurn: number | undefined;
    let openStep: number | undefined;
    for (const event of this.session.events) {
      if (event.type === "turn/start") openTurn = event.data.turn;
      else if (event.type === "turn/end") openTurn = undefined;
      else if (event.type === "step/start") openStep = event.data.step;
      else if (event.type === "step/end") openStep = undefined;
    }
    if (openTurn === undefined) return;
    if (openStep !== undefined) this.session.append("step/end", { turn: openTurn, step: openStep });
    const failure: LlmFailureData = {
      code: HarnessError.isInstance(error) ? error.code : "UNKNOWN",
      message: error instanceof Error ? error.message : String(error),
    };
    this.#endTurn(openTurn, { kind: "error", error: failure });
  }

  async #runTurn(): Promise<void> {
    const controller = announcedController();
    this.#controller = controller;
    this.#openingFirstTurn = false;
    this.#cancelCause = undefined;
    this.#cancelKeepsInbox = false;
    // A cancel made before this turn had a controller: it takes effect once the turn has claimed its input, as a
    // cancel right after the claim would (the turn's followup is spent; kept steering goes back to the inbox).
    let early = this.#cancelBeforeTurn;
    this.#cancelBeforeTurn = undefined;
    const signal = controller.signal;
    this.#svc = {
      sessions: this.#ctx.service("sessions"),
      llm: this.#ctx.service("llm"),
      tools: this.#ctx.service("tools"),
      systemPrompt: this.#ctx.service("systemPrompt"),
    };
    const turn = this.#turn + 1;
    this.#turnUsage = ZERO_USAGE;
    this.#turnText = "";
    this.#wakePending = false;
    appendBracket(this.session, "turn/start", turn);
    // Counted once logged: a turn/start that could not be appended opened no turn.
    this.#turn = turn;
    let step = 0;
    let owesRequest = false;
    let reason: TurnEndReason | undefined;
    let discard: readonly string[] | undefined;

    while (reason === undefined) {
      if (signal.aborted) {
        reason = this.#aborted();
        break;
      }
      const first = step === 0;
      // The step bound: nothing is claimed for a step that will not run (steering waits for the next turn). The turn
      // is blocked when the model still owes an answer (its tool calls ran); one that answered, with input only
      // waiting for a next step (context injected meanwhile), completed.
      if (step >= this.#init.maxSteps) {
        reason = owesRequest ? { kind: "blocked" } : { kind: "completed" };
        break;
      }
      const claimed = this.inbox.claim("next-step");
      const steered = claimed.length;
      // The wake that steering asked for is served by this claim.
      this.#wakePending = false;
      if (first) claimed.push(...this.inbox.claim("next-turn", 1));
      this.#entering = claimed.length === 0 ? undefined : { claimed, steered };
      if (early !== undefined) {
        this.#cancelCause = early.cause;
        this.#cancelKeepsInbox = early.keepInbox;
        abortAnnounced(controller, new HarnessError("ABORTED", `Turn cancelled: ${early.cause}`));
        early = undefined;
      }
      // A literal filled by push, not `claimed.map()`: an inlined map makes a holey array, a deopt at the first read.
      const proposed: (UserMessage | SystemMessage)[] = [];
      for (const entry of claimed) {
        this.#claimedBy.set(entry.id, turn);
        this.#ctx.emit("agent/inbox/claimed", this, entry, turn);
        proposed.push(entry.message);
      }
      if (!first && claimed.length === 0 && !owesRequest) break;
      await this.#checkpoint(signal);
      // Cancelled already (before the step, or while its claim was made durable): no listener starts work for it
      // (a threshold compaction would start and be logged as failed).
      if (signal.aborted) {
        reason = this.#aborted();
        break;
      }
      // Listener chains are waited for until the turn is cancelled, not longer: one may ignore the signal. With no
      // listener, the proposal is the decision (what the chain's fallback answers), without a race to build.
      const decision: PreStepDecision | typeof ABORTED = unheard(this.#ctx, "agent/pre-step")
        ? { kind: "enter", messages: proposed }
        : await untilAborted<PreStepDecision>(
          this.#ctx.waterfall(
            "agent/pre-step",
            this,
            { turn, step: step + 1, messages: proposed, signal },
            () => Promise.resolve({ kind: "enter", messages: proposed }),
          ),
          signal,
        );
      if (decision !== ABORTED) checkPreStep(decision);
      if (decision === ABORTED || signal.aborted) {
        // A listener that cancelled the turn and rejected the step (a hook's `continue: false`) still discards.
        if (decision !== ABORTED && decision.kind === "reject") discard = decision.discard;
        reason = this.#aborted();
        break;
      }
      if (decision.kind === "reject") {
        // A rejected step leaves its steering parked in the inbox until the next wake (its followup is spent), but
        // for what the decision discards.
        this.#putBack(true, decision.discard);
        reason = { kind: "blocked" };
        break;
      }
      if (first && decision.messages.length === 0) {
        this.#entering = undefined;
        reason = { kind: "completed" };
        break;
      }
      step++;
      appendBracket(this.session, "step/start", turn, step);
      const outcome = await this.#runStep(turn, step, decision.messages, signal);
      appendBracket(this.session, "step/end", turn, step);
      if (outcome.kind === "aborted") reason = this.#aborted();
      else if (outcome.kind === "error") reason = { kind: "error", error: outcome.failure! };
      else if (outcome.kind === "max-tokens") reason = { kind: "max-tokens" };
      else if (signal.aborted) reason = this.#aborted();
      if (reason !== undefined) break;
      owesRequest = outcome.owesRequest === true && outcome.concluded !== true;
      if (outcome.concluded) {
        reason = { kind: "completed" };
        break;
      }
      if (owesRequest || this.inbox.count("next-step") > 0) continue;
      // Nobody listening: no chain to wait for, and no race against the signal to build.
      if (!unheard(this.#ctx, "agent/turn-stopping")) {
        await untilAborted(this.#ctx.serialEach("agent/turn-stopping", this, turn, signal), signal);
      }
      if (signal.aborted) reason = this.#aborted();
      else if (this.inbox.count("next-step") === 0) reason = { kind: "completed" };
    }
    // A cancel that caught the step before its messages entered: with the inbox kept, its steering goes back (and
    // on disposal its followup too, for a resumed agent); the turn's own followup is spent by a cancel.
    if (this.#entering !== undefined) {
      if (reason?.kind === "aborted" && reason.reason === "disposed") this.#putBack(false, discard);
      else if (reason?.kind === "aborted" && this.#cancelKeepsInbox) this.#putBack(true, discard);
      this.#entering = undefined;
    }
    this.#endTurn(turn, reason ?? { kind: "completed" });
  }

  // Return the current step's claimed entries to the front of their queues (only the steering with `steersOnly`);
  // their run() waiters then wait for the turn that serves them.
  #putBack(steersOnly: boolean, discard?: readonly string[]): void {
    const entering = this.#entering;
    this.#entering = undefined;
    if (entering === undefined) return;
    const { claimed, steered } = entering;
    const kept = (entry: InboxEntry) => discard === undefined || !discard.includes(entry.message.id);
    const steers = claimed.slice(0, steered).filter(kept);
    for (const entry of steers) this.#claimedBy.delete(entry.id);
    if (!steersOnly) {
      const turns = claimed.slice(steered);
      for (const entry of turns) this.#claimedBy.delete(entry.id);
      this.inbox.restore("next-turn", turns);
    }
    this.inbox.restore("next-step", steers);
  }

  #aborted(): TurnEndReason {
    return { kind: "aborted", reason: this.#cancelCause ?? "user" };
  }

  #endTurn(turn: number, reason: TurnEndReason): void {
    this.session.append("turn/end", { turn, reason });
    this.#controller = undefined;
    for (const [entryId, claimedTurn] of this.#claimedBy) {
      if (claimedTurn !== turn) continue;
      this.#claimedBy.delete(entryId);
      const waiter = this.#runWaiters.get(entryId);
      if (waiter) {
        this.#runWaiters.delete(entryId);
        waiter.resolve(this.#turnResult(turn, reason));
      }
    }
  }

  #turnResult(turn: number, reason: TurnEndReason): RunResult {
    return { text: this.#turnText, reason, usage: this.#turnUsage, turn };
  }

  async #runStep(
    turn: number,
    step: number,
    entered: readonly (UserMessage | SystemMessage)[],
    signal: AbortSignal,
  ): Promise<StepOutcome> {
    const draft = callConfigOf(this.options);
    const config = unheard(this.#ctx, "agent/request") ? draft : await untilAborted(
      this.#ctx.waterfall("agent/request", this, { turn, step, config: draft }, () => Promise.resolve(draft)),
      signal,
    );
    if (config === ABORTED || signal.aborted) return { kind: "aborted" };
    let prepared;
    let assembly;
    try {
      prepared = this.#svc.llm.prepareCall(config);
      // Synchronous and cached while nothing in the prompt is dynamic (see assembleForRequest).
      const assembled = assembleForRequest(this.#svc.systemPrompt, { scope: this.#scope, signal });
      assembly = assembled instanceof Promise ? await assembled : assembled;
    } catch (error) {
      if (signal.aborted) return { kind: "aborted" };
      // The step's input was taken: it enters the conversation before the step fails, as it does when the model call
      // fails, instead of being claimed and never seen again.
      this.#enter(entered);
      return { kind: "error", failure: failureOf(error) };
    }
    if (signal.aborted) return { kind: "aborted" };

    this.#logContexts(assembly.contexts ?? []);
    this.#enter(entered);
    this.#recordHeader(prepared, assembly);

    let request = this.#buildRequest(signal);

    let attempt = 0;
    let assembler: BlockAssembler;
    let chunkSeqs: number[];
    let blocks: ContentBlock[];
    while (true) {
      this.#attempt = ++attempt;
      ({ assembler, seqs: chunkSeqs } = await this.#stream(turn, step, prepared, request));
      const finish = assembler.finish ?? { kind: "error", failure: { code: "STREAM_CLOSED", message: "No finish" } };
      if (signal.aborted) return this.#interrupted(turn, step, assembler, prepared.config, chunkSeqs);
      let failure = finish.kind === "error" || finish.kind === "aborted" ? checkedFailure(finish.failure) : undefined;
      if (failure === undefined) {
        blocks = assembler.blocks();
        // A call that cannot be logged (and answered) fails the request rather than the session's next ones.
        failure = unanswerableCall(blocks);
        if (failure === undefined) break;
      }
      const next = await this.#afterFailedRequest(turn, step, attempt, failure, signal);
      if (next !== "retry" && next !== "rebuild") return next;
      // A listener that changed the log (compaction after an overflow) asks for a request derived anew.
      // Its contexts are logged again first where a compaction summarised them away.
      if (next === "rebuild") this.#logContexts(assembly.contexts ?? []);
      // Each attempt is sent a request of its own, derived from the log again: the adapter may have changed the
      // last one's messages array, which is its own (GenerateOptions.messages).
      request = this.#buildRequest(signal);
    }

    const { usage, replayState } = assembler;
    this.#appendAssistant(turn, step, blocks, prepared.config, chunkSeqs, usage, false, replayState);
    if (assembler.finish?.kind === "max-tokens") return { kind: "max-tokens" };
    const calls = blocks.filter((b): b is ToolCallBlock => b.type === "tool-call");
    if (calls.length === 0) return { kind: "ok" };
    const concluded = await this.#runTools(turn, step, calls, signal);
    return { kind: signal.aborted ? "aborted" : "ok", owesRequest: true, concluded };
  }

  // One attempt's stream, in a function of its own: V8 may pretenure the seq list's allocation site mid-session, and
  // the code it then throws away is this small function's, not #runStep's.
  async #stream(turn: number, step: number, prepared: PreparedCall, request: GenerateOptions) {
    const blocks = new BlockAssembler();
    // Filled here and handed to one append, which freezes it in place.
    const seqs = seqList();
    // One usage per attempt, the first, as the assembler keeps (a second breaks the stream grammar).
    let usageSeen = false;
    await this.#checkpoint(request.signal!);
    // Each chunk is logged from the reaction to the adapter's own promise (push mode), with no extra hop. (The two
    // try blocks cost nothing while nothing throws.)
    try {
      await forEachChunk(prepared.stream(request, { context: this.#ctx as never }), (chunk) => {
        let event;
        try {
          event = appendChunk(this.session, turn, step, chunk);
        } catch (error) {
          // A chunk the log refuses ends the call (the drain closes the stream), failed, in its place.
          throw this.#unloggable(turn, step, error, blocks, seqs);
        }
        seqs.push(event.seq);
        // The logged copy: the assistant message then shares its frozen blocks and usage.
        blocks.push(event.data.chunk);
        if (chunk.type === "usage" && !usageSeen) {
          usageSeen = true;
          this.#turnUsage = addUsage(this.#turnUsage, chunk.usage);
        }
      });
    } catch (error) {
      if (error !== CALL_ENDED) throw error;
    }
    return { assembler: blocks, seqs };
  }

  // Out of line (rare): a chunk the log refused for its data (a value that is not lossless JSON, NaN usage from a
  // parseInt, or a chunk of no type) is replaced by an `error` finish, MALFORMED_RESPONSE with the reason, so that
  // the call is closed in the log (a call without a finish cannot be replayed) and the step fails as for any failed
  // call, instead of the turn with the call left open. Any other failure (a clock gone bad), or one that refuses the
  // finish too, is thrown as it was.
  #unloggable(turn: number, step: number, error: unknown, blocks: BlockAssembler, seqs: number[]): unknown {
    if (!HarnessError.isInstance(error) || (error.code !== "NOT_LOSSLESS_JSON" && error.code !== "INVALID_EVENT")) {
      return error;
    }
    let event;
    try {
      event = appendChunk(this.session, turn, step, {
        type: "finish",
        reason: {
          kind: "error",
          failure: {
            code: "MALFORMED_RESPONSE",
            message: `Model stream sent a chunk the log cannot hold: ${error.message}`,
          },
        },
      });
    } catch {
      return error;
    }
    seqs.push(event.seq);
    blocks.push(event.data.chunk);
    return CALL_ENDED;
  }

  // Out of line (rare): the hot #runStep stays small for TurboFan.
  #interrupted(turn: number, step: number, assembler: BlockAssembler, config: LlmCallConfig, seqs: number[]) {
    const partial = assembler.interruptedBlocks();
    if (partial.length > 0) this.#appendAssistant(turn, step, partial, config, seqs, undefined, true);
    return { kind: "aborted" } as const;
  }

  // A failed request (rare, out of line): the request-error hook decides between a retry (after its delay; "rebuild"
  // when a listener changed the log) and the step's end.
  async #afterFailedRequest(
    turn: number,
    step: number,
    attempt: number,
    failure: LlmFailureData,
    signal: AbortSignal,
  ): Promise<StepOutcome | "retry" | "rebuild"> {
    const policy = this.#init.retryPolicy;
    const fallback = () => Promise.resolve(defaultRequestErrorAction(policy, attempt, failure));
    const info = { turn, step, attempt, failure, signal };
    const action = await untilAborted(this.#ctx.waterfall("agent/request-error", this, info, fallback), signal);
    if (action === ABORTED) return { kind: "aborted" };
    checkRequestErrorAction(action);
    if (action.kind !== "retry" || signal.aborted) {
      return signal.aborted ? { kind: "aborted" } : { kind: "error", failure };
    }
    this.session.append("llm/retry", { turn, step, attempt, delayMs: action.delayMs, failure });
    await this.#sleep(action.delayMs, signal);
    if (signal.aborted) return { kind: "aborted" };
    return action.rebuild === true ? "rebuild" : "retry";
  }

  #buildRequest(signal: AbortSignal): GenerateOptions {
    const header = this.session.requestHeader()!;
    // The request object is frozen; the messages, config and tools come from the log, where every event is deep-frozen
    // on append. The messages array itself is the request's own fresh copy and is not frozen: JavaScriptCore freezes
    // an array element by element (about 1 µs per message on Bun, 4 ms a request at 4,000 messages), which made every
    // step cost O(history) there. Changing the copy cannot reach the log.
    const built: GenerateOptions = Object.freeze({
      ...header.config,
      messages: this.session.deriveMessages(),
      ...(header.system !== undefined ? { system: header.system } : {}),
      ...(header.tools !== undefined ? { tools: header.tools } : {}),
      signal,
      sessionId: this.id,
    });
    if (this.#init.invariants) (this.#checker ??= new RequestChecker(this.session)).check(built);
    return built;
  }

  /**
   * Log each prompt context whose text changed since it was last logged as a
   * `system/message`, so that what the model sees is in the log (and derived
   * from it) rather than added to the request on the side.
   */
  #logContexts(contexts: readonly { readonly name: string; readonly text: string }[]): void {
    // The snapshots the model still sees: those on the surface. A compaction that replaced one (its summary
    // shadows it) changes the surface's replace generation, and the snapshots are read again from the surface.
    const surface = this.session.surface;
    if (this.#contextTexts === undefined || this.#contextGeneration !== surface.replaceGeneration) {
      this.#contextTexts = new Map();
      this.#contextGeneration = surface.replaceGeneration;
      for (const seq of surface.nodes) {
        const event = this.session.at(seq);
        if (event?.type !== "system/message") continue;
        const name = promptContextName(event.data.source);
        const block = event.data.content[0];
        if (name !== undefined && block?.type === "text") this.#contextTexts.set(name, block.text);
      }
    }
    for (const { name, text } of contexts) {
      if (this.#contextTexts.get(name) !== text) this.#appendContext(name, text);
    }
    // A context the model saw that is gone now (removed, or empty): it is told so, once.
    if (this.#contextTexts.size > contexts.length) this.#logClearedContexts(contexts);
  }

  // Out of line (rare): a context that went away since its last snapshot.
  #logClearedContexts(contexts: readonly { readonly name: string }[]): void {
    for (const [name, text] of this.#contextTexts!) {
      const cleared = clearedContextText(name);
      if (text === cleared || contexts.some((c) => c.name === name)) continue;
      this.#appendContext(name, cleared);
    }
  }

  #appendContext(name: string, text: string): void {
    this.session.append("system/message", {
      id: this.#init.newId(),
      role: "system",
      content: [{ type: "text", text }],
      source: { kind: "plugin", plugin: `${PROMPT_CONTEXT_PREFIX}${name}`, form: "snapshot" },
    }, { surfaceOp: "append" });
    this.#contextTexts!.set(name, text);
  }

  // The step's input enters the conversation.
  #enter(entered: readonly (UserMessage | SystemMessage)[]): void {
    for (const message of entered) {
      if (message.role === "system") this.session.append("system/message", message, { surfaceOp: "append" });
      else this.session.append("user/message", message, { surfaceOp: "append" });
    }
    this.#entering = undefined;
  }

  /**
   * A durability checkpoint: every event committed so far is durable before
   * the loop goes on. A failed checkpoint fails the turn (fail closed). A
   * cancel does not wait for it (storage may be slow or stalled): the loop
   * goes on as after a checkpoint that returned with the signal aborted, and
   * the events it then logs are flushed after these (a late failure shows at
   * the next flush, `agent.flushed()` included).
   */
  #checkpoint(signal: AbortSignal): unknown {
    const flushed = this.#svc.sessions.flush(this.session);
    // Nothing listens to session/flush (no storage): the shared settled promise, with nothing to race a cancel against.
    return flushed === FLUSHED ? flushed : untilAborted(flushed, signal);
  }

  #recordHeader(
    prepared: { config: LlmCallConfig; adapterDefaults?: EpochHeader["adapterDefaults"]; contextWindow?: number },
    assembly: { system?: string; tools?: EpochHeader["tools"] },
  ): void {
    const previous = this.session.requestHeader();
    const input: EpochHeader = {
      config: prepared.config,
      adapterDefaults: prepared.adapterDefaults,
      system: assembly.system,
      tools: assembly.tools,
    };
    // The same inputs as the step that last found (or logged) the header in
    // force, which is still in force: no change, without canonicalising and
    // comparing the tool schemas as JSON (the prompt gives the same schema
    // objects while the tools do not change).
    const memo = this.#headerMemo;
    let reason: "initial" | "resume" | "change" | undefined;
    if (previous === undefined) reason = "initial";
    else if (this.#firstRequestOfLoop) reason = "resume";
    else if (memo !== undefined && memo.logged === previous && sameHeaderInput(memo.input, input)) reason = undefined;
    else reason = headerEquals(previous, canonicalHeader(input)) ? undefined : "change";
    this.#firstRequestOfLoop = false;
    if (reason !== undefined) this.session.append("request/header", { header: canonicalHeader(input), reason });
    this.#headerMemo = { input, logged: this.session.requestHeader()! };
    const context = {
      provider: prepared.config.provider,
      model: prepared.config.model,
      ...(prepared.contextWindow !== undefined ? { contextWindow: prepared.contextWindow } : {}),
    };
    const previousContext = this.session.requestContext();
    if (
      previousContext === undefined || previousContext.provider !== context.provider ||
      previousContext.model !== context.model || previousContext.contextWindow !== context.contextWindow
    ) {
      this.session.append("request/context", context);
    }
  }

  #appendAssistant(
    turn: number,
    step: number,
    content: ContentBlock[],
    config: LlmCallConfig,
    chunkSeqs: number[],
    usage: TokenUsage | undefined,
    interrupted: boolean,
    replayState?: unknown,
  ): void {
    let text = "";
    for (const block of content) if (block.type === "text") text += block.text;
    if (text.length > 0) this.#turnText = text;
    const message: AssistantMessage = {
      id: this.#init.newId(),
      role: "assistant",
      content,
      source: {
        kind: "model",
        provider: config.provider,
        model: config.model,
        ...(replayState !== undefined ? { replayState } : {}),
      },
    };
    this.session.append(
      "assistant/message",
      {
        turn,
        step,
        message,
        ...(usage !== undefined ? { usage } : {}),
        ...(interrupted ? { interrupted: true as const } : {}),
      },
      { surfaceOp: "append", sourceEventSeqs: chunkSeqs },
    );
  }

  async #runTools(turn: number, step: number, calls: ToolCallBlock[], signal: AbortSignal): Promise<boolean> {
    const tools = this.#svc.tools;
    const scope = this.#scope;
    const callSeqs = new Map<string, number>();
    let concluded = false;
    const run = async (call: ToolCallBlock) => {
      const event = this.session.append("tool/call", {
        turn,
        step,
        callId: call.id,
        name: call.name,
        arguments: call.arguments,
      });
      callSeqs.set(call.id, event.seq);
      // A tool runs only once its call is durable: a cancel during the checkpoint starts none.
      if (!signal.aborted) await this.#checkpoint(signal);
      if (signal.aborted) {
        return {
          message: toolErrorMessage(this.#init.newId(), call.id, "The turn was cancelled before this tool started"),
          error: { name: "ToolAborted", code: "ABORTED_BEFORE_DISPATCH" },
          contexts: [] as UserMessage[],
        };
      }
      try {
        return await tools.execute({
          callId: call.id,
          name: call.name,
          arguments: call.arguments,
          signal,
          scope,
          sessionId: this.id,
          turn,
          step,
        });
      } catch (error) {
        // The pipeline answers every call; a tools service that rejects anyway still answers this one: a call left
        // unanswered in the history would fail every later request.
        return toolExecuteFailed(this.#init.newId(), call, error);
      }
    };
    const deferred: { context: UserMessage; resultSeq: number }[] = [];
    // One call has nothing to schedule (no classification, no pool, no async iteration): it runs and is taken at once.
    if (calls.length === 1) {
      const result = await run(calls[0]);
      concluded = this.#takeResult(turn, step, callSeqs.get(calls[0].id)!, result, deferred);
    } else {
      // Classifying a call parses its arguments with the tool's schema: a raw schema's validator loads on first use,
      // and a call classified before it has loaded would run exclusive (the first step of a process, one at a time).
      const validatorLoad = jsonSchemaValidatorPending();
      if (validatorLoad !== undefined) await validatorLoad;
      const results = scheduleToolCalls(calls, {
        maxParallel: this.#init.maxParallelToolCalls,
        isParallel: (call) => {
          try {
            return tools.executionMode({ name: call.name, arguments: call.arguments, scope }) === "parallel";
          } catch {
            return false;
          }
        },
        run,
      });
      for await (const { item, result } of results) {
        if (this.#takeResult(turn, step, callSeqs.get(item.id)!, result, deferred)) concluded = true;
      }
    }
    // Tool contexts follow every result of the step (providers want a call's results contiguous). Text
    // contexts are logged as system/message; one with other blocks (an image) waits in the inbox as user input.
    for (const { context, resultSeq } of deferred) {
      if (context.content.length > 0 && context.content.every((b) => b.type === "text" && b.text !== "")) {
        this.session.append("system/message", {
          id: this.#init.newId(),
          role: "system",
          content: context.content,
          source: context.source,
        }, { surfaceOp: "append", sourceEventSeqs: [resultSeq] });
      } else {
        this.inbox.push("next-step", { id: this.#init.newId(), message: context });
      }
    }
    return concluded;
  }

  // Log one call's result; its contexts wait in `deferred` for the step's last result. True when it concludes the turn.
  #takeResult(
    turn: number,
    step: number,
    callSeq: number,
    result: Pick<ToolExecutionResult, "message" | "error" | "meta" | "concludeTurn" | "contexts">,
    deferred: { context: UserMessage; resultSeq: number }[],
  ): boolean {
    const resultEvent = this.session.append(
      "tool/result",
      {
        turn,
        step,
        message: result.message,
        ...(result.error !== undefined ? { error: result.error } : {}),
        ...(result.meta !== undefined ? { meta: result.meta } : {}),
      },
      { surfaceOp: "append", sourceEventSeqs: [callSeq] },
    );
    for (const context of result.contexts ?? []) deferred.push({ context, resultSeq: resultEvent.seq });
    return result.concludeTurn === true;
  }
}
