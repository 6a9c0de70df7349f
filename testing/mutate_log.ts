/**
 * Turning a valid session log into an invalid one of a known kind.
 *
 * @module
 */

import fc from "fast-check";
import type { Arbitrary } from "fast-check";
import type { SessionEvent } from "../mod.ts";
import { arbSessionLog, type ArbSessionLogOptions } from "./arb_session_log.ts";
import { assistantMessage, toolResultMessage, userMessage } from "./_log_builder.ts";

/** Each mutation kind and the violation code `checkInvariants` must report first for it. */
export const LOG_MUTATIONS: Readonly<Record<string, string>> = Object.freeze({
  "seq-gap": "SEQ_NOT_CONTIGUOUS",
  "seq-swap": "SEQ_NOT_CONTIGUOUS",
  "turn-number": "TURN_NUMBER",
  "nested-turn": "TURN_NESTED",
  "turn-end-mismatch": "TURN_END_MISMATCH",
  "step-open-at-turn-end": "STEP_OPEN_AT_TURN_END",
  "step-outside-turn": "STEP_OUTSIDE_TURN",
  "nested-step": "STEP_NESTED",
  "step-number": "STEP_NUMBER",
  "step-end-mismatch": "STEP_END_MISMATCH",
  "event-outside-step": "EVENT_OUTSIDE_STEP",
  "tool-result-without-call": "TOOL_RESULT_WITHOUT_CALL",
  "tool-call-without-result": "TOOL_CALL_WITHOUT_RESULT",
  "tool-result-duplicate": "TOOL_RESULT_DUPLICATE",
  "tool-call-id-unknown": "TOOL_CALL_ID_UNKNOWN",
  "tool-pair-split": "TOOL_PAIR_SPLIT",
  "request-outside-turn": "EVENT_OUTSIDE_TURN",
  "surface-op-missing": "SURFACE_OP_MISSING",
  "surface-op-forbidden": "SURFACE_OP_FORBIDDEN",
  "replace-off-surface": "REPLACE_RANGE_INVALID",
  "compaction-nested": "COMPACTION_NESTED",
  "compaction-unpaired": "COMPACTION_UNPAIRED",
  "assistant-chunks-mismatch": "ASSISTANT_MESSAGE_CHUNKS_MISMATCH",
});

/** A mutation kind: a key of {@linkcode LOG_MUTATIONS}. */
export type LogMutationKind = keyof typeof LOG_MUTATIONS & string;

/** A mutated log and the violation it must show. */
export interface MutatedLog {
  /** The mutation applied. */
  readonly kind: LogMutationKind;
  /** The invalid log. */
  readonly events: readonly SessionEvent[];
  /** The code of the first violation `checkInvariants` must report. */
  readonly code: string;
  /** The seq at or after which that violation shows. */
  readonly fromSeq: number;
}

type Draft = { type: string; seq: number; time: number; data: unknown; surfaceOp?: unknown; sourceEventSeqs?: unknown };

/**
 * Mutate a valid log that ends outside a turn (as {@linkcode arbSessionLog}
 * generates) into one that breaks exactly one invariant, by appending events
 * at its end (or, for `seq-swap`, by swapping two seqs).
 *
 * @param log A valid log ending outside every turn (inside a compaction is fine: it is closed first, with a
 *   `compaction/end` before the mutation).
 * @param kind The mutation.
 * @returns The mutated log and the code its first violation must have.
 * @throws {TypeError} For an unknown kind.
 *
 * @example
 * ```ts
 * import { checkInvariants, mutateLog } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * const { events, code } = mutateLog([], "nested-turn");
 * assert.equal(checkInvariants(events)[0].code, code);
 * ```
 */
export function mutateLog(log: readonly SessionEvent[], kind: LogMutationKind): MutatedLog {
  const code = LOG_MUTATIONS[kind];
  if (code === undefined) throw new TypeError(`Unknown log mutation: ${kind}`);
  const out: Draft[] = log.map((e) => ({ ...e }));
  let lastTurn = 0;
  for (const e of log) if (e.type === "turn/start") lastTurn = e.data.turn;
  const turn = lastTurn + 1;
  const push = (type: string, data: unknown, extra: Partial<Draft> = {}): void =>
    void out.push({ type, seq: out.length, time: 0, data, ...extra });
  // A log may end inside a compaction (a snapshot taken while a manual one runs): it is closed first, so that the
  // mutation's own compaction events (and those it must not break) are not taken for nested or unpaired ones.
  let open = false;
  for (const e of log) {
    if (e.type === "compaction/start") open = true;
    else if (e.type === "compaction/end") open = false;
  }
  if (open) push("compaction/end", { outcome: "skipped" });
  const fromSeq = out.length;
  switch (kind) {
    case "seq-gap":
      out.push({ type: "todo/write", seq: out.length + 1, time: 0, data: { todos: [] } });
      break;
    case "seq-swap":
      push("compaction/start", { reason: "manual" });
      push("compaction/end", { outcome: "skipped" });
      [out[fromSeq].seq, out[fromSeq + 1].seq] = [out[fromSeq + 1].seq, out[fromSeq].seq];
      break;
    case "turn-number":
      push("turn/start", { turn: turn + 1 });
      push("turn/end", { turn: turn + 1, reason: { kind: "completed" } });
      break;
    case "nested-turn":
      push("turn/start", { turn });
      push("turn/start", { turn: turn + 1 });
      break;
    case "turn-end-mismatch":
      push("turn/end", { turn, reason: { kind: "completed" } });
      break;
    case "step-open-at-turn-end":
      push("turn/start", { turn });
      push("step/start", { turn, step: 1 });
      push("turn/end", { turn, reason: { kind: "completed" } });
      break;
    case "step-outside-turn":
      push("step/start", { turn, step: 1 });
      break;
    case "nested-step":
      push("turn/start", { turn });
      push("step/start", { turn, step: 1 });
      push("step/start", { turn, step: 2 });
      break;
    case "step-number":
      push("turn/start", { turn });
      push("step/start", { turn, step: 2 });
      break;
    case "step-end-mismatch":
      push("turn/start", { turn });
      push("step/end", { turn, step: 1 });
      break;
    case "event-outside-step":
      push("turn/start", { turn });
      push("step/start", { turn, step: 1 });
      push("assistant/chunk", { turn, step: 2, chunk: { type: "text-delta", index: 0, text: "x" } });
      break;
    case "tool-result-without-call":
      push("turn/start", { turn });
      push("step/start", { turn, step: 1 });
      push("tool/result", { turn, step: 1, message: toolResultMessage("mutant", "call_none", "?") }, {
        surfaceOp: "append",
      });
      break;
    case "tool-call-without-result":
    case "tool-result-duplicate":
    case "tool-call-id-unknown":
    case "tool-pair-split": {
      const at = { turn, step: 1 };
      const callId = kind === "tool-call-id-unknown" ? "call_other" : "call_mutant";
      push("turn/start", { turn });
      push("step/start", at);
      const message = assistantMessage("mutant-a", [{
        type: "tool-call",
        id: "call_mutant",
        name: "f",
        arguments: "{}",
      }]);
      const assistantSeq = out.length;
      push("assistant/message", { ...at, message }, { surfaceOp: "append" });
      const callSeq = out.length;
      push("tool/call", { ...at, callId, name: "f", arguments: "{}" });
      const answer = toolResultMessage("mutant-r", callId, "?");
      if (kind !== "tool-call-without-result") {
        push("tool/result", { ...at, message: answer }, { surfaceOp: "append", sourceEventSeqs: [callSeq] });
      }
      if (kind === "tool-result-duplicate") {
        push("tool/result", { ...at, message: toolResultMessage("mutant-r2", callId, "?") }, {
          surfaceOp: "append",
          sourceEventSeqs: [callSeq],
        });
      }
      push("step/end", at);
      push("turn/end", { turn, reason: { kind: "completed" } });
      if (kind === "tool-pair-split") {
        push("compaction/start", { reason: "manual" });
        push("user/message", userMessage("mutant-s", "summary", "compaction"), {
          surfaceOp: { op: "replace", start: assistantSeq, end: assistantSeq },
          sourceEventSeqs: [assistantSeq],
        });
      }
      break;
    }
    case "request-outside-turn":
      push("request/header", { header: { config: { provider: "test", model: "m" } }, reason: "change" });
      break;
    case "surface-op-missing":
      push("user/message", userMessage("mutant", "no op"));
      break;
    case "surface-op-forbidden":
      push("compaction/start", { reason: "manual" }, { surfaceOp: "append" });
      break;
    case "replace-off-surface":
      push("compaction/start", { reason: "manual" });
      push("user/message", userMessage("mutant", "summary"), {
        surfaceOp: { op: "replace", start: fromSeq, end: fromSeq },
        sourceEventSeqs: [fromSeq],
      });
      break;
    case "compaction-nested":
      push("compaction/start", { reason: "manual" });
      push("compaction/start", { reason: "threshold" });
      break;
    case "compaction-unpaired":
      push("compaction/end", { outcome: "skipped" });
      break;
    case "assistant-chunks-mismatch": {
      // The model streamed one answer; the message says another.
      const at = { turn, step: 1 };
      push("turn/start", { turn });
      push("step/start", at);
      const seqs: number[] = [];
      for (
        const chunk of [
          { type: "block-start", index: 0, blockType: "text" },
          { type: "text-delta", index: 0, text: "streamed" },
          { type: "block-end", index: 0, block: { type: "text", text: "streamed" } },
          { type: "finish", reason: { kind: "stop" } },
        ]
      ) {
        seqs.push(out.length);
        push("assistant/chunk", { ...at, chunk });
      }
      const message = assistantMessage("mutant-a", [{ type: "text", text: "said" }]);
      push("assistant/message", { ...at, message }, { surfaceOp: "append", sourceEventSeqs: seqs });
      push("step/end", at);
      push("turn/end", { turn, reason: { kind: "completed" } });
      break;
    }
  }
  return { kind, events: out as unknown as SessionEvent[], code, fromSeq };
}

/**
 * An arbitrary of mutated logs: a valid log from {@linkcode arbSessionLog}
 * and one mutation kind, applied with {@linkcode mutateLog}.
 *
 * @param options Size limits of the underlying valid log.
 * @returns The arbitrary.
 */
export function arbMutatedLog(options: ArbSessionLogOptions = {}): Arbitrary<MutatedLog> {
  return fc.tuple(arbSessionLog(options), fc.constantFrom(...Object.keys(LOG_MUTATIONS))).map(([log, kind]) =>
    mutateLog(log, kind)
  );
}
