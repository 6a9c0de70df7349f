/**
 * A fast-check arbitrary of valid session logs.
 *
 * @module
 */

import fc from "fast-check";
import type { Arbitrary } from "fast-check";
import { type ContentBlock, Session, type SessionEvent, type StreamChunk, type TurnEndReason } from "../mod.ts";
import { assistantMessage, pick, systemMessage, toolResultMessage, userMessage } from "./_log_builder.ts";

/** Options of {@linkcode arbSessionLog}. */
export interface ArbSessionLogOptions {
  /**
   * The most turns a log has.
   *
   * @default {4}
   */
  maxTurns?: number;
  /**
   * The most steps a turn has.
   *
   * @default {3}
   */
  maxSteps?: number;
}

interface StepPlan {
  contexts: number;
  users: number;
  chunks: number;
  text: boolean;
  calls: number;
  notStarted: boolean;
  header: number;
  todo: boolean;
  retry: boolean;
  usageChunk: boolean;
  spawn: boolean;
  resultReplace: number | null;
}

interface TurnPlan {
  noise: number[];
  compaction: { a: number; b: number; assistant: boolean } | null;
  steps: StepPlan[];
  end: number;
}

const REASONS: readonly TurnEndReason[] = [
  { kind: "completed" },
  { kind: "aborted", reason: "user" },
  { kind: "blocked" },
  { kind: "error", error: { message: "The provider failed", code: "SERVER", status: 500 } },
  { kind: "max-tokens" },
  { kind: "interrupted" },
];

function stepPlan(): Arbitrary<StepPlan> {
  return fc.record({
    contexts: fc.nat({ max: 1 }),
    users: fc.nat({ max: 2 }),
    chunks: fc.nat({ max: 4 }),
    text: fc.boolean(),
    calls: fc.nat({ max: 3 }),
    notStarted: fc.boolean(),
    header: fc.nat({ max: 3 }),
    todo: fc.boolean(),
    retry: fc.boolean(),
    usageChunk: fc.boolean(),
    spawn: fc.boolean(),
    resultReplace: fc.option(fc.nat(), { nil: null }),
  });
}

function turnPlan(maxSteps: number): Arbitrary<TurnPlan> {
  return fc.record({
    noise: fc.array(fc.nat({ max: 2 }), { maxLength: 2 }),
    compaction: fc.option(fc.record({ a: fc.nat(), b: fc.nat(), assistant: fc.boolean() }), { nil: null }),
    steps: fc.array(stepPlan(), { maxLength: maxSteps }),
    end: fc.nat({ max: REASONS.length - 1 }),
  });
}

/** Build a log from a plan; exported for the other generators of this module. */
export function buildLog(plans: readonly TurnPlan[]): readonly SessionEvent[] {
  const session = Session.create("generated", undefined, { now: () => 0 });
  let id = 0;
  const next = (prefix: string): string => `${prefix}${++id}`;
  const surfaceOf = (type: string): number[] => session.surface.nodes.filter((s) => session.events[s].type === type);
  let headerSeen = false;
  // Tool pairs on the surface: each node's tool-call message (itself for the message), so a compaction never splits one.
  const pairOf = new Map<number, number>();

  plans.forEach((plan, t) => {
    const turn = t + 1;
    for (const kind of plan.noise) {
      if (kind === 0) {
        session.append("agent/inbox/spliced", {
          target: "next-turn",
          start: 0,
          inserted: [{ id: next("e"), message: userMessage(next("m"), "queued") }],
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
    if (plan.compaction !== null && session.surface.nodes.length > 0) {
      const nodes = session.surface.nodes;
      let i = pick(plan.compaction.a, nodes.length)!;
      let j = i + pick(plan.compaction.b, nodes.length - i)!;
      // Widen the range to whole tool pairs: a call and its results are shadowed together (as real compaction does).
      const pair = (k: number) => pairOf.get(nodes[k]);
      while (i > 0 && pair(i) !== undefined && pair(i - 1) === pair(i)) i--;
      while (j + 1 < nodes.length && pair(j) !== undefined && pair(j + 1) === pair(j)) j++;
      const shadowed = nodes.slice(i, j + 1);
      const intent = {
        surfaceOp: { op: "replace" as const, start: nodes[i], end: nodes[j] },
        sourceEventSeqs: shadowed,
      };
      if (plan.compaction.assistant) {
        session.append(
          "assistant/message",
          {
            turn: Math.max(turn - 1, 1),
            step: 1,
            message: assistantMessage(next("m"), [{ type: "text", text: "summary" }]),
          },
          intent,
        );
      } else {
        session.append("user/message", userMessage(next("m"), "summary", "compaction"), intent);
      }
    }
    session.append("turn/start", { turn });
    plan.steps.forEach((step, s) => {
      const at = { turn, step: s + 1 };
      session.append("step/start", at);
      if (step.header > 0) {
        const config = { provider: "test", model: step.header === 3 ? "other-model" : "test-model" };
        session.append("request/header", {
          header: { config, ...(step.header === 2 ? { system: "Be brief" } : {}) },
          reason: headerSeen ? "change" : "initial",
        });
        headerSeen = true;
        session.append("request/context", { provider: "test", model: config.model, contextWindow: 1000 });
      }
      for (let c = 0; c < step.contexts; c++) {
        session.append("system/message", systemMessage(next("m"), `context ${c}`), { surfaceOp: "append" });
      }
      for (let u = 0; u < step.users; u++) {
        session.append("user/message", userMessage(next("m"), `hello ${u}`), { surfaceOp: "append" });
      }
      if (step.retry) {
        session.append("llm/retry", {
          ...at,
          attempt: 1,
          delayMs: 500,
          failure: { message: "Rate limited", code: "RATE_LIMIT" },
        });
      }
      // One grammar-valid model call (`checkStreamGrammar`): a text block of the deltas, usage, a finish.
      const chunkSeqs: number[] = [];
      const streamed = (chunk: StreamChunk) => {
        chunkSeqs.push(session.seq);
        session.append("assistant/chunk", { ...at, chunk });
      };
      if (step.chunks > 0) {
        streamed({ type: "block-start", index: 0, blockType: "text" });
        let all = "";
        for (let c = 0; c < step.chunks; c++) {
          streamed({ type: "text-delta", index: 0, text: `t${c}` });
          all += `t${c}`;
        }
        streamed({ type: "block-end", index: 0, block: { type: "text", text: all } });
      }
      if (step.usageChunk) streamed({ type: "usage", usage: { inputTokens: 5, outputTokens: 1 } });
      streamed({
        type: "finish",
        reason: step.calls > 0 || step.notStarted ? { kind: "tool-calls" } : { kind: "stop" },
      });
      const content: ContentBlock[] = step.text ? [{ type: "text", text: "answer" }] : [];
      const callIds: string[] = [];
      for (let c = 0; c < step.calls; c++) {
        const callId = next("call_");
        callIds.push(callId);
        content.push({ type: "tool-call", id: callId, name: "add", arguments: `{"a":${c}}` });
      }
      // A call the model made that never started (no tool/call): its result is TOOL_NOT_STARTED.
      const notStartedId = step.notStarted ? next("call_") : undefined;
      if (notStartedId !== undefined) {
        content.push({ type: "tool-call", id: notStartedId, name: "add", arguments: "{}" });
      }
      const assistantSeq = session.seq;
      if (callIds.length > 0 || notStartedId !== undefined) pairOf.set(assistantSeq, assistantSeq);
      session.append(
        "assistant/message",
        { ...at, message: assistantMessage(next("m"), content), usage: { inputTokens: 3, outputTokens: 2 } },
        { surfaceOp: "append", sourceEventSeqs: chunkSeqs },
      );
      for (const callId of callIds) {
        const callSeq = session.seq;
        session.append("tool/call", { ...at, callId, name: "add", arguments: "{}" });
        if (step.spawn) {
          session.append("subagent/spawned", {
            ...at,
            callId,
            session: `child-${callId}`,
            mode: "in-process",
            agent: "w",
          });
        }
        pairOf.set(session.seq, assistantSeq);
        session.append("tool/result", { ...at, message: toolResultMessage(next("m"), callId, "3") }, {
          surfaceOp: "append",
          sourceEventSeqs: [callSeq],
        });
      }
      if (notStartedId !== undefined) {
        const callId = notStartedId;
        pairOf.set(session.seq, assistantSeq);
        session.append("tool/result", {
          ...at,
          message: toolResultMessage(next("m"), callId, "Tool not started", true),
          error: { name: "ToolError", code: "TOOL_NOT_STARTED" },
        }, { surfaceOp: "append" });
      }
      if (step.resultReplace !== null) {
        const results = surfaceOf("tool/result");
        const target = results[pick(step.resultReplace, results.length) ?? -1];
        if (target !== undefined) {
          const old = session.events[target] as SessionEvent<"tool/result">;
          if (pairOf.has(target)) pairOf.set(session.seq, pairOf.get(target)!);
          const block = old.data.message.content[0];
          const message = {
            ...old.data.message,
            content: [{ ...block, content: [{ type: "text", text: "[pruned]" }] }],
          };
          session.append("tool/result", { ...old.data, message } as typeof old.data, {
            surfaceOp: { op: "replace", start: target, end: target },
            sourceEventSeqs: [target],
          });
        }
      }
      if (step.todo) {
        session.append("todo/write", { todos: [{ id: next("todo_"), content: "Write tests", status: "in_progress" }] });
      }
      session.append("step/end", at);
    });
    session.append("turn/end", { turn, reason: REASONS[plan.end] });
  });
  return session.events;
}

/**
 * An arbitrary of valid session logs: complete turns with steps, user
 * messages, one streamed model call per step (a grammar-valid stream, as
 * `checkStreamGrammar` checks: a text block, optional usage, a finish, so every
 * generated log also loads as a replay fixture), assistant messages (some
 * usage-only), tool calls and results (and tool-call blocks that never started,
 * with no `tool/call` and a `TOOL_NOT_STARTED` result), request headers and
 * contexts, todo writes, spawned subagents and retries, interleaved
 * non-surface events between turns, compaction replaces of random surface
 * ranges (widened to whole tool call/result pairs), and tool-result content
 * replaces. Every generated log passes `checkInvariants` and is built through
 * `Session.append`, so it is also accepted by the session's own validation.
 *
 * @param options Size limits.
 * @returns The arbitrary.
 *
 * @example
 * ```ts
 * import fc from "fast-check";
 * import { arbSessionLog, checkInvariants } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * fc.assert(fc.property(arbSessionLog(), (log) => {
 *   assert.deepEqual(checkInvariants(log), []);
 * }), { numRuns: 20 });
 * ```
 */
export function arbSessionLog(options: ArbSessionLogOptions = {}): Arbitrary<readonly SessionEvent[]> {
  const maxTurns = options.maxTurns ?? 4;
  const maxSteps = options.maxSteps ?? 3;
  return fc.array(turnPlan(maxSteps), { maxLength: maxTurns }).map(buildLog);
}
