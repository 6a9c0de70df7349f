/**
 * The session invariants: what every well-formed log satisfies beyond the
 * rules `Session.append()` enforces on each event alone.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionEvent } from "../session/session_events.ts";
import { SurfaceManager } from "../session/surface_manager.ts";

/** One broken invariant. */
export interface InvariantViolation {
  /** A stable code from {@linkcode SESSION_INVARIANT_CODES} or a surface rejection code. */
  readonly code: string;
  /** The seq (position) of the event where the violation shows. */
  readonly seq: number;
  /** What is wrong, fact first. */
  readonly message: string;
}

/**
 * The codes {@linkcode checkInvariants} reports, besides the surface rejection
 * codes of `SurfaceManager` (`SURFACE_OP_MISSING`, `REPLACE_RANGE_INVALID`, …)
 * which it reports as they are:
 *
 * - `SEQ_NOT_CONTIGUOUS`: an event's seq is not its position.
 * - `TURN_NESTED`: `turn/start` while a turn is open.
 * - `TURN_NUMBER`: turns are not numbered 1, 2, 3, … in log order.
 * - `TURN_END_MISMATCH`: `turn/end` without an open turn, or naming another turn.
 * - `STEP_OPEN_AT_TURN_END`: `turn/end` while a step is open.
 * - `STEP_OUTSIDE_TURN`: `step/start` without an open turn, or naming another turn.
 * - `STEP_NESTED`: `step/start` while a step is open.
 * - `STEP_NUMBER`: steps of a turn are not numbered 1, 2, 3, ….
 * - `STEP_END_MISMATCH`: `step/end` without an open step, or naming another one.
 * - `EVENT_OUTSIDE_STEP`: an `assistant/chunk`, `tool/call`, appended `assistant/message` or
 *   appended `tool/result` that does not name the open turn and step.
 * - `TOOL_RESULT_WITHOUT_CALL`: an appended `tool/result` with no earlier `tool/call` of its
 *   call id in the same step (allowed only with error code `TOOL_NOT_STARTED`).
 * - `EVENT_OUTSIDE_TURN`: `request/header`, `request/context`, `todo/write`, `hook/*`, `subagent/spawned` or a replacing
 *   `tool/result` outside an open turn.
 * - `HOOK_RESULT_WITHOUT_INVOKE`: a `hook/result` whose `handlerId` no earlier `hook/invoked` of the same turn has.
 * - `COMPACTION_NESTED`: `compaction/start` while a compaction is open (started and not ended).
 * - `COMPACTION_UNPAIRED`: `compaction/summary` or `compaction/end` with no open compaction.
 * - `INVALID_EVENT`: an entry that is not an event object with object data (it is skipped).
 */
export const SESSION_INVARIANT_CODES: readonly string[] = Object.freeze([
  "SEQ_NOT_CONTIGUOUS",
  "TURN_NESTED",
  "TURN_NUMBER",
  "TURN_END_MISMATCH",
  "STEP_OPEN_AT_TURN_END",
  "STEP_OUTSIDE_TURN",
  "STEP_NESTED",
  "STEP_NUMBER",
  "STEP_END_MISMATCH",
  "EVENT_OUTSIDE_STEP",
  "TOOL_RESULT_WITHOUT_CALL",
  "EVENT_OUTSIDE_TURN",
  "HOOK_RESULT_WITHOUT_INVOKE",
  "COMPACTION_NESTED",
  "COMPACTION_UNPAIRED",
  "INVALID_EVENT",
]);

interface StepData {
  readonly turn: number;
  readonly step: number;
}

/**
 * Check a whole log against the session invariants.
 *
 * Checked: seqs contiguous from 0; turns numbered 1, 2, … without nesting;
 * `turn/end` with no open step; steps numbered from 1 in each turn without
 * nesting; chunks, calls, appended assistant messages and tool results name
 * the open turn and step; a tool result follows its `tool/call` in the same
 * step; `request/*`, `todo/write` and replacing tool results sit inside an
 * open turn; compactions open and close in pairs, one at a time (a log may
 * end inside one, as inside a turn); the surface operations are valid (checked with the same
 * `SurfaceManager` as `Session.append()`; after the first surface violation
 * the surface is no longer checked).
 *
 * @param events The log.
 * @returns Every violation found, in log order (empty for a valid log).
 *
 * @example
 * ```ts
 * import { checkInvariants, type SessionEvent } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const log: SessionEvent[] = [
 *   { type: "turn/start", seq: 0, time: 0, data: { turn: 1 } },
 *   { type: "step/start", seq: 1, time: 0, data: { turn: 1, step: 1 } },
 *   { type: "turn/end", seq: 2, time: 0, data: { turn: 1, reason: { kind: "completed" } } },
 * ];
 * assert.deepEqual(checkInvariants(log).map((v) => v.code), ["STEP_OPEN_AT_TURN_END"]);
 * ```
 */
export function checkInvariants(events: readonly SessionEvent[]): InvariantViolation[] {
  const violations: InvariantViolation[] = [];
  const report = (code: string, seq: number, message: string): void => void violations.push({ code, seq, message });
  let surface: SurfaceManager | undefined = new SurfaceManager();
  let openTurn: number | undefined;
  let lastTurn = 0;
  let openStep: number | undefined;
  let lastStep = 0;
  let calls = new Set<string>();
  let hooks = new Set<string>();
  let compacting = false;

  const namesOpenStep = (data: StepData): boolean =>
    openTurn !== undefined && openStep !== undefined && data.turn === openTurn && data.step === openStep;

  for (let i = 0; i < events.length; i++) {
    const event = events[i];
    if (typeof event !== "object" || event === null || typeof event.data !== "object" || event.data === null) {
      report("INVALID_EVENT", i, `Entry ${i} is not an event with object data`);
      surface = undefined;
      continue;
    }
    if (event.seq !== i) {
      report("SEQ_NOT_CONTIGUOUS", i, `Event at position ${i} has seq ${event.seq}`);
      surface = undefined;
    }
    if (surface !== undefined) {
      try {
        surface.commit(event);
      } catch (error) {
        if (!HarnessError.isInstance(error)) throw error;
        report(error.code, i, error.message);
        surface = undefined;
      }
    }
    const replacing = event.surfaceOp !== undefined && event.surfaceOp !== "append";
    switch (event.type) {
      case "turn/start": {
        const turn = event.data.turn;
        if (openTurn !== undefined) report("TURN_NESTED", i, `Turn ${turn} starts while turn ${openTurn} is open`);
        if (turn !== lastTurn + 1) report("TURN_NUMBER", i, `Turn ${turn} follows turn ${lastTurn}`);
        openTurn = turn;
        lastTurn = turn;
        openStep = undefined;
        lastStep = 0;
        calls = new Set();
        hooks = new Set();
        break;
      }
      case "turn/end": {
        const turn = event.data.turn;
        if (openTurn === undefined || turn !== openTurn) {
          report("TURN_END_MISMATCH", i, `Turn ${turn} ends but the open turn is ${openTurn ?? "none"}`);
        }
        if (openStep !== undefined) {
          report("STEP_OPEN_AT_TURN_END", i, `Turn ${turn} ends while step ${openStep} is open`);
        }
        openTurn = undefined;
        openStep = undefined;
        break;
      }
      case "step/start": {
        const { turn, step } = event.data;
        if (openTurn === undefined || turn !== openTurn) {
          report("STEP_OUTSIDE_TURN", i, `Step ${turn}.${step} starts but the open turn is ${openTurn ?? "none"}`);
        }
        if (openStep !== undefined) report("STEP_NESTED", i, `Step ${step} starts while step ${openStep} is open`);
        if (step !== lastStep + 1) report("STEP_NUMBER", i, `Step ${step} follows step ${lastStep}`);
        openStep = step;
        lastStep = step;
        calls = new Set();
        break;
      }
      case "step/end": {
        const { turn, step } = event.data;
        if (openStep === undefined || turn !== openTurn || step !== openStep) {
          report("STEP_END_MISMATCH", i, `Step ${turn}.${step} ends but the open step is ${openStep ?? "none"}`);
        }
        openStep = undefined;
        break;
      }
      case "assistant/chunk":
      case "tool/call":
        if (!namesOpenStep(event.data)) {
          report(
            "EVENT_OUTSIDE_STEP",
            i,
            `${event.type} names step ${event.data.turn}.${event.data.step}, not the open step`,
          );
        }
        if (event.type === "tool/call") calls.add(event.data.callId);
        break;
      case "assistant/message":
        if (!replacing && !namesOpenStep(event.data)) {
          report(
            "EVENT_OUTSIDE_STEP",
            i,
            `assistant/message names step ${event.data.turn}.${event.data.step}, not the open step`,
          );
        }
        break;
      case "tool/result": {
        if (replacing) {
          if (openTurn === undefined) report("EVENT_OUTSIDE_TURN", i, "A replacing tool/result sits outside a turn");
          break;
        }
        if (!namesOpenStep(event.data)) {
          report(
            "EVENT_OUTSIDE_STEP",
            i,
            `tool/result names step ${event.data.turn}.${event.data.step}, not the open step`,
          );
          break;
        }
        const source = event.data.message?.source;
        const callId = source?.kind === "tool" ? source.callId : undefined;
        if ((callId === undefined || !calls.has(callId)) && event.data.error?.code !== "TOOL_NOT_STARTED") {
          report("TOOL_RESULT_WITHOUT_CALL", i, `tool/result for call ${callId} has no earlier tool/call in its step`);
        }
        break;
      }
      case "compaction/start":
        if (compacting) report("COMPACTION_NESTED", i, "A compaction starts while another one is open");
        compacting = true;
        break;
      case "compaction/summary":
      case "compaction/end":
        if (!compacting) report("COMPACTION_UNPAIRED", i, `${event.type} has no open compaction/start`);
        if (event.type === "compaction/end") compacting = false;
        break;
      case "request/header":
      case "request/context":
      case "todo/write":
      case "hook/invoked":
      case "hook/result":
      case "subagent/spawned":
        if (openTurn === undefined) report("EVENT_OUTSIDE_TURN", i, `${event.type} sits outside a turn`);
        if (event.type === "hook/invoked") hooks.add(event.data.handlerId);
        else if (event.type === "hook/result" && openTurn !== undefined && !hooks.has(event.data.handlerId)) {
          report(
            "HOOK_RESULT_WITHOUT_INVOKE",
            i,
            `hook/result ${event.data.handlerId} has no hook/invoked in its turn`,
          );
        }
        break;
    }
  }
  return violations;
}

/**
 * Throw when a log breaks any session invariant.
 *
 * @param events The log.
 * @throws {HarnessError} `INVARIANT_VIOLATION`, listing every violation in the message and in `details.violations`.
 *
 * @example
 * ```ts
 * import { assertInvariants } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * assert.throws(
 *   () => assertInvariants([{ type: "turn/end", seq: 0, time: 0, data: { turn: 1, reason: { kind: "completed" } } }]),
 *   { code: "INVARIANT_VIOLATION" },
 * );
 * ```
 */
export function assertInvariants(events: readonly SessionEvent[]): void {
  const violations = checkInvariants(events);
  if (violations.length === 0) return;
  const lines = violations.map((v) => `  seq ${v.seq} ${v.code}: ${v.message}`).join("\n");
  throw new HarnessError("INVARIANT_VIOLATION", `Session log breaks ${violations.length} invariant(s):\n${lines}`, {
    details: { violations },
  });
}
