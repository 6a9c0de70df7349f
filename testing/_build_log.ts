// Writing the log of an arbSessionLog plan, in the order the agent loop, compaction and the hook bridge write it (the
// order of CONTRACTS.md §Loop, as the header of agent_loop.ts draws it):
//
//   compaction (manual, between turns)
//   turn/start
//     hook/invoked + hook/result (UserPromptSubmit, in agent/pre-step), compaction over the threshold
//     step/start
//       system/message contexts, user/message input, the hook's context; request/header + request/context
//       per failed attempt: assistant/chunk × k (an error finish) [+ compaction on overflow], llm/retry
//       last attempt: assistant/chunk × k, assistant/message naming them (interrupted on cancel, none on failure)
//       per call: tool/call, PreToolUse hook, subagent/spawned, PostToolUse hook, tool/result; then tool contexts
//     step/end
//     hook/invoked + hook/result (Stop, in agent/turn-stopping)
//   turn/end

import {
  compactionRange,
  type ContentBlock,
  type LlmFailureData,
  Session,
  type SessionEvent,
  type StreamChunk,
  type TurnEndReason,
} from "../mod.ts";
import {
  assistantMessage,
  interruptedContent,
  pick,
  type StreamedBlock,
  streamOf,
  systemMessage,
  toolResultMessage,
  userMessage,
} from "./_log_builder.ts";
import { type CompactionPlan, REASONS, type StepPlan, type TurnPlan } from "./_log_plan.ts";

const SERVER: LlmFailureData = { message: "The provider failed", code: "SERVER", status: 500 };
const RATE_LIMIT: LlmFailureData = { message: "Rate limited", code: "RATE_LIMIT", status: 429 };
const OVERFLOW: LlmFailureData = { message: "Too long", code: "CONTEXT_WINDOW_EXCEEDED", status: 400 };
const CANCELLED: LlmFailureData = { message: "Model call was aborted: Turn cancelled: user", code: "ABORTED" };

type At = { readonly turn: number; readonly step: number };

/** The argument deltas of the `c`-th tool call of an answer. */
const callDeltas = (c: number): string[] => [`{"a":`, `${c}}`];

/** Build a log from a plan. */
export function buildLog(plans: readonly TurnPlan[]): readonly SessionEvent[] {
  const writer = new LogWriter();
  plans.forEach((plan, t) => writer.turn(plan, t + 1));
  return writer.session.events;
}

class LogWriter {
  readonly session: Session = Session.create("generated", undefined, { now: () => 0 });
  #id = 0;
  #headerSeen = false;
  // Tool pairs on the surface: each node's tool-call message (itself for the message), so a replace never splits one.
  readonly #pairOf = new Map<number, number>();

  turn(plan: TurnPlan, turn: number): void {
    const session = this.session;
    for (const kind of plan.noise) {
      if (kind === 0) {
        session.append("agent/inbox/spliced", {
          target: "next-turn",
          start: 0,
          inserted: [{ id: this.#next("e"), message: userMessage(this.#next("m"), "queued") }],
        });
      } else {
        // A compaction that changed nothing, paired as compactSession() writes it (crash repair closes an open one).
        session.append("compaction/start", { reason: "manual" });
        session.append(
          "compaction/end",
          kind === 1 ? { outcome: "skipped" } : { outcome: "failed", error: "SERVER: no summary" },
        );
      }
    }
    if (plan.compaction !== null) this.#compact(plan.compaction, "manual");
    if (plan.replace !== null) this.#replace(plan.replace, turn);
    session.append("turn/start", { turn });
    // agent/pre-step, before the first step: a UserPromptSubmit hook, compaction over the threshold.
    if (plan.promptHook === 2) {
      // Cancelled while the hook ran: no hook/result, no step.
      this.#hook("UserPromptSubmit", undefined);
      session.append("turn/end", { turn, reason: { kind: "aborted", reason: "user" } });
      return;
    }
    const promptContext = plan.promptHook === 1 && plan.steps.length > 0;
    if (plan.promptHook !== null) this.#hook("UserPromptSubmit", promptContext ? "context" : "continue");
    if (plan.threshold !== null && plan.steps.length > 0) this.#compact(plan.threshold, "threshold");
    let ended: TurnEndReason | undefined;
    for (let s = 0; s < plan.steps.length && ended === undefined; s++) {
      ended = this.#step(plan.steps[s], { turn, step: s + 1 }, s === 0 && promptContext);
    }
    const reason = ended ?? REASONS[plan.end];
    // agent/turn-stopping: a Stop hook, cancelled with the turn when the turn ends aborted.
    if (ended === undefined && plan.stopHook) this.#hook("Stop", reason.kind === "aborted" ? undefined : "continue");
    session.append("turn/end", { turn, reason });
  }

  /** One step; the turn's end when the step ends it (cancelled, failed, cut at max-tokens). */
  #step(step: StepPlan, at: At, promptContext: boolean): TurnEndReason | undefined {
    const session = this.session;
    session.append("step/start", at);
    for (let c = 0; c < step.contexts; c++) {
      session.append("system/message", systemMessage(this.#next("m"), `context ${c}`), { surfaceOp: "append" });
    }
    for (let u = 0; u < step.users; u++) {
      session.append("user/message", userMessage(this.#next("m"), `hello ${u}`), { surfaceOp: "append" });
    }
    if (promptContext) {
      const context = systemMessage(this.#next("m"), "UserPromptSubmit context", "hooks:UserPromptSubmit", "notice");
      session.append("system/message", context, { surfaceOp: "append" });
    }
    if (step.header > 0) {
      const config = { provider: "test", model: step.header === 3 ? "other-model" : "test-model" };
      session.append("request/header", {
        header: { config, ...(step.header === 2 ? { system: "Be brief" } : {}) },
        reason: this.#headerSeen ? "change" : "initial",
      });
      this.#headerSeen = true;
      session.append("request/context", { provider: "test", model: config.model, contextWindow: 1000 });
    }
    const stream = (chunk: StreamChunk): number => session.append("assistant/chunk", { ...at, chunk }).seq;
    // Failed attempts, each retried in the same step (after a compaction when the context overflowed).
    step.retries.forEach((retry, k) => {
      if (retry.deltas > 0) stream({ type: "block-start", index: 0, blockType: "text" });
      for (let d = 0; d < retry.deltas; d++) stream({ type: "text-delta", index: 0, text: `r${d}` });
      const failure = retry.overflow && compactionRange(session, 1).length >= 2 ? OVERFLOW : RATE_LIMIT;
      stream({ type: "finish", reason: { kind: "error", failure } });
      if (failure === OVERFLOW) this.#compact({ keep: 1, completed: true, retried: false, usage: true }, "overflow");
      session.append("llm/retry", { ...at, attempt: k + 1, delayMs: failure === OVERFLOW ? 0 : 500, failure });
    });
    // The last attempt: one grammar-valid model answer, or the part of it that came before a cancel or a failure.
    const { answer } = step;
    const blocks: StreamedBlock[] = [];
    const deltas = (n: number, text: (d: number) => string) => Array.from({ length: n }, (_, d) => text(d));
    if (answer.reasoning > 0) {
      blocks.push({
        type: "reasoning",
        deltas: deltas(answer.reasoning, (d) => `Think ${d}.`),
      });
    }
    if (answer.text > 0) blocks.push({ type: "text", deltas: deltas(answer.text, (d) => `t${d}`) });
    const callIds = deltas(answer.calls, () => this.#next("call_"));
    callIds.forEach((callId, c) => blocks.push({ type: "tool-call", deltas: callDeltas(c), callId }));
    // A call the model made that never started (no tool/call): crash repair answers it TOOL_NOT_STARTED.
    const notStarted = step.notStarted ? this.#next("call_") : undefined;
    if (notStarted !== undefined) blocks.push({ type: "tool-call", deltas: ["{}"], callId: notStarted });
    const usage = answer.usage ? { inputTokens: 5 + at.step, outputTokens: 1 + blocks.length } : undefined;
    const { chunks, content } = streamOf(blocks, usage);
    if (step.outcome <= 1) {
      // Cancelled mid-stream (the partial text becomes an interrupted message) or failed (no message).
      const kept = step.cut % (chunks.length + 1 - (usage !== undefined ? 1 : 0));
      const seqs = chunks.slice(0, kept).map(stream);
      const cancelled = step.outcome === 0;
      const failure = cancelled ? CANCELLED : SERVER;
      seqs.push(stream({ type: "finish", reason: { kind: cancelled ? "aborted" : "error", failure } }));
      const partial = interruptedContent(chunks, kept);
      if (cancelled && partial.length > 0) {
        session.append(
          "assistant/message",
          { ...at, message: assistantMessage(this.#next("m"), partial), interrupted: true },
          { surfaceOp: "append", sourceEventSeqs: seqs },
        );
      }
      session.append("step/end", at);
      return cancelled ? { kind: "aborted", reason: "user" } : { kind: "error", error: failure };
    }
    const maxTokens = step.outcome === 2;
    const seqs = chunks.map(stream);
    const hasCalls = callIds.length > 0 || notStarted !== undefined;
    const replayState = answer.replay ? { response: this.#next("resp_") } : undefined;
    seqs.push(stream({
      type: "finish",
      reason: { kind: maxTokens ? "max-tokens" : hasCalls ? "tool-calls" : "stop" },
      ...(replayState !== undefined ? { replayState } : {}),
    }));
    // A cut-off answer drops its calls (they never run), and the turn ends.
    const kept: ContentBlock[] = maxTokens ? content.filter((b) => b.type !== "tool-call") : content;
    const message = assistantMessage(this.#next("m"), kept, replayState);
    const assistantSeq = session.append(
      "assistant/message",
      { ...at, message, ...(usage !== undefined ? { usage } : {}) },
      { surfaceOp: "append", sourceEventSeqs: seqs },
    ).seq;
    if (maxTokens) {
      session.append("step/end", at);
      return { kind: "max-tokens" };
    }
    if (hasCalls) this.#pairOf.set(assistantSeq, assistantSeq);
    this.#tools(step, at, assistantSeq, callIds, notStarted);
    if (step.resultReplace !== null) this.#replaceResult(step.resultReplace);
    if (step.todo) {
      const todo = { id: this.#next("todo_"), content: "Write tests", status: "in_progress" as const };
      session.append("todo/write", { todos: [todo] });
    }
    session.append("step/end", at);
    return undefined;
  }

  #tools(step: StepPlan, at: At, assistantSeq: number, callIds: string[], notStarted: string | undefined): void {
    const session = this.session;
    const resultSeqs: number[] = [];
    for (const [c, callId] of callIds.entries()) {
      // The loop logs a call as its block streamed it.
      const callSeq =
        session.append("tool/call", { ...at, callId, name: "add", arguments: callDeltas(c).join("") }).seq;
      const tool = { toolName: "add", callId };
      if (step.toolHooks) this.#hook("PreToolUse", "allow", tool);
      if (step.spawn) {
        session.append("subagent/spawned", {
          ...at,
          callId,
          session: `child-${callId}`,
          mode: "in-process",
          agent: "w",
        });
      }
      if (step.toolHooks) this.#hook("PostToolUse", step.toolContext ? "context" : "continue", tool);
      this.#pairOf.set(session.seq, assistantSeq);
      resultSeqs.push(session.seq);
      session.append("tool/result", { ...at, message: toolResultMessage(this.#next("m"), callId, "3") }, {
        surfaceOp: "append",
        sourceEventSeqs: [callSeq],
      });
    }
    if (notStarted !== undefined) {
      this.#pairOf.set(session.seq, assistantSeq);
      session.append("tool/result", {
        ...at,
        message: toolResultMessage(this.#next("m"), notStarted, "Tool not started", true),
        error: { name: "ToolError", code: "TOOL_NOT_STARTED" },
      }, { surfaceOp: "append", sourceEventSeqs: [assistantSeq] });
    }
    // PostToolUse contexts follow every result of the step, each naming its result.
    if (!step.toolHooks || !step.toolContext) return;
    for (const resultSeq of resultSeqs) {
      const context = systemMessage(this.#next("m"), "PostToolUse context", "hooks:PostToolUse", "notice");
      session.append("system/message", context, { surfaceOp: "append", sourceEventSeqs: [resultSeq] });
    }
  }

  // Hook events as the hook bridge logs them: hook/invoked, then hook/result unless the turn was cancelled meanwhile.
  #hook(event: string, outcome: string | undefined, extra: Record<string, unknown> = {}): void {
    const handlerId = `hook-${this.session.seq}`;
    this.session.append("hook/invoked", { handlerId, event, hook: `function:${event}`, ...extra } as never);
    if (outcome === undefined) return;
    this.session.append("hook/result", {
      handlerId,
      outcome,
      ...(outcome === "context" ? { additionalContext: `${event} context` } : {}),
    } as never);
  }

  // A compaction as compactSession() writes it: the nodes before the kept turns, replaced by one summary message.
  #compact(plan: CompactionPlan, reason: "manual" | "threshold" | "overflow"): void {
    const session = this.session;
    const range = compactionRange(session, plan.keep);
    if (range.length < 2) return; // compactSession() skips it and writes nothing
    const attempts = plan.retried ? 2 : 1;
    const usage = plan.usage ? { usage: { inputTokens: 40 * attempts, outputTokens: 8 } } : {};
    session.append("compaction/start", { reason });
    if (!plan.completed && reason !== "overflow") {
      const failure = { code: "SERVER", message: "The provider failed" };
      session.append("compaction/end", {
        outcome: "failed",
        error: "SERVER: The provider failed",
        attempts,
        failure,
        ...usage,
      });
      return;
    }
    const start = range[0];
    const end = range[range.length - 1];
    session.append("compaction/summary", { summary: "The earlier turns", start, end });
    session.append(
      "user/message",
      {
        ...userMessage(this.#next("m"), "Summary of the earlier conversation:\n\nThe earlier turns"),
        source: { kind: "plugin", plugin: "compaction", form: "summary" },
      },
      { surfaceOp: { op: "replace", start, end }, sourceEventSeqs: range },
    );
    session.append("compaction/end", { outcome: "completed", attempts, ...usage });
  }

  // A plugin's replace of a random range of the surface, widened to whole tool pairs.
  #replace(plan: NonNullable<TurnPlan["replace"]>, turn: number): void {
    const nodes = this.session.surface.nodes;
    if (nodes.length === 0) return;
    let i = pick(plan.a, nodes.length)!;
    let j = i + pick(plan.b, nodes.length - i)!;
    // A call and its results are shadowed together.
    const pair = (k: number) => this.#pairOf.get(nodes[k]);
    while (i > 0 && pair(i) !== undefined && pair(i - 1) === pair(i)) i--;
    while (j + 1 < nodes.length && pair(j) !== undefined && pair(j + 1) === pair(j)) j++;
    const intent = {
      surfaceOp: { op: "replace" as const, start: nodes[i], end: nodes[j] },
      sourceEventSeqs: nodes.slice(i, j + 1),
    };
    if (plan.assistant) {
      const message = assistantMessage(this.#next("m"), [{ type: "text", text: "summary" }]);
      this.session.append("assistant/message", { turn: Math.max(turn - 1, 1), step: 1, message }, intent);
    } else {
      this.session.append("user/message", userMessage(this.#next("m"), "summary", "notes"), intent);
    }
  }

  // A tool result on the surface, its content pruned.
  #replaceResult(at: number): void {
    const session = this.session;
    const results = session.surface.nodes.filter((s) => session.events[s].type === "tool/result");
    const target = results[pick(at, results.length) ?? -1];
    if (target === undefined) return;
    const old = session.events[target] as SessionEvent<"tool/result">;
    if (this.#pairOf.has(target)) this.#pairOf.set(session.seq, this.#pairOf.get(target)!);
    const block = old.data.message.content[0];
    const message = { ...old.data.message, content: [{ ...block, content: [{ type: "text", text: "[pruned]" }] }] };
    session.append("tool/result", { ...old.data, message } as typeof old.data, {
      surfaceOp: { op: "replace", start: target, end: target },
      sourceEventSeqs: [target],
    });
  }

  #next(prefix: string): string {
    return `${prefix}${++this.#id}`;
  }
}
