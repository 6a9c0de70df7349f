/**
 * The session invariants: what every well-formed log satisfies beyond the
 * rules `Session.append()` enforces on each event alone.
 *
 * This file is longer than the house limit on purpose: the checker is one
 * pass over the log whose checks share its state (the open turn and step, the
 * step's tool pairing, the surface), and reads best in one place; the check
 * that needs none of it (an assistant message against its chunks) lives
 * beside it, in `_message_chunks.ts`.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionEvent } from "../session/session_events.ts";
import { SurfaceManager } from "../session/surface_manager.ts";
import { messageChunksMismatch } from "./_message_chunks.ts";

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
 * - `TOOL_CALL_ID_UNKNOWN`: a `tool/call` or appended `tool/result` whose call id no tool-call block of
 *   its step's `assistant/message` has (checked at `step/end`, in a step that appended one).
 * - `TOOL_CALL_WITHOUT_RESULT`: at `step/end`, a tool-call block of the step's `assistant/message` with no
 *   appended `tool/result` in the step.
 * - `TOOL_RESULT_DUPLICATE`: a second appended `tool/result` for one call id in a step.
 * - `TOOL_RESULT_ID_MISMATCH`: a `tool/result` whose tool-result block names another call id than
 *   its message's `source.callId`.
 * - `TOOL_PAIR_SPLIT`: a replacing event shadows an assistant message's tool-call blocks but leaves a result
 *   of them on the surface, or shadows a result but leaves its call (a replacing `tool/result` of the same call
 *   id takes its result's place).
 * - `TOOL_CALL_ID_REPEATED`: an assistant message on the surface holds two tool-call blocks with one id.
 * - `TOOL_RESULTS_INTERRUPTED`: on the surface, a message that is not a result of the calls (a user, system or
 *   assistant message) follows an assistant message's tool calls before each of them has its result: the request
 *   derived from the surface would not have a call's results right after it, as providers require.
 * - `TOOL_RESULT_OUT_OF_PLACE`: on the surface, a tool-result block (of a `tool/result`, or of a `user/message`)
 *   answers no call of the assistant message it follows, or one already answered: a result before its call, or
 *   for a call that does not exist.
 * - `EVENT_OUTSIDE_TURN`: `request/header`, `request/context`, `todo/write`, `hook/*`, `subagent/spawned` or a replacing
 *   `tool/result` outside an open turn.
 * - `HOOK_RESULT_WITHOUT_INVOKE`: a `hook/result` whose `handlerId` no earlier `hook/invoked` of the same turn has.
 * - `COMPACTION_NESTED`: `compaction/start` while a compaction is open (started and not ended).
 * - `COMPACTION_UNPAIRED`: `compaction/summary` or `compaction/end` with no open compaction.
 * - `ASSISTANT_MESSAGE_CHUNKS_MISMATCH`: an appended `assistant/message` is not what the `assistant/chunk` events its
 *   `sourceEventSeqs` name assemble (with `BlockAssembler`, the loop's fold): another content (a block changed,
 *   missing or extra; an `interrupted` message is held to the partial text and reasoning blocks), a named seq that is
 *   not a chunk of the message's step, a stream that ended with an `error` or `aborted` finish behind a message that
 *   is not interrupted, or, where both carry them, another usage or replay state. A message that names no chunk
 *   (no `sourceEventSeqs`, or an empty list) is not checked. Checked unless
 *   {@linkcode CheckInvariantsOptions.messageChunks} is false.
 * - `MESSAGE_ID_REPEATED`: a message appended to the surface (`user/message`, `system/message`, `assistant/message`,
 *   `tool/result`) has the id of one appended before it: message ids are unique within a session. (A replacing
 *   event may keep the id of what it replaces.)
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
  "TOOL_CALL_ID_UNKNOWN",
  "TOOL_CALL_WITHOUT_RESULT",
  "TOOL_RESULT_DUPLICATE",
  "TOOL_RESULT_ID_MISMATCH",
  "TOOL_PAIR_SPLIT",
  "TOOL_CALL_ID_REPEATED",
  "TOOL_RESULTS_INTERRUPTED",
  "TOOL_RESULT_OUT_OF_PLACE",
  "EVENT_OUTSIDE_TURN",
  "HOOK_RESULT_WITHOUT_INVOKE",
  "COMPACTION_NESTED",
  "COMPACTION_UNPAIRED",
  "ASSISTANT_MESSAGE_CHUNKS_MISMATCH",
  "MESSAGE_ID_REPEATED",
  "INVALID_EVENT",
]);

/** The id of the message a surface event appends (its data, or the message it carries), if it has one. */
function appendedMessageId(event: SessionEvent): string | undefined {
  const data = event.data as { id?: unknown; message?: { id?: unknown } };
  const id = event.type === "user/message" || event.type === "system/message" ? data.id : data.message?.id;
  return typeof id === "string" ? id : undefined;
}

/** Options of {@linkcode checkInvariants} and {@linkcode assertInvariants}. */
export interface CheckInvariantsOptions {
  /**
   * Compare each appended `assistant/message` with the chunks its `sourceEventSeqs` name
   * (`ASSISTANT_MESSAGE_CHUNKS_MISMATCH`). Costs a fold of each message's chunks: about one more pass over the
   * chunks of the log. Session loads turn it off: derivation, crash repair and the providers read the message, not
   * its chunks, so a load does not refuse a log over it and does not pay for it.
   *
   * @default {true}
   */
  readonly messageChunks?: boolean;
}

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
 * step; at `step/end`, every tool-call block of the step's (last appended)
 * assistant message has exactly one tool result of its id, and every
 * `tool/call` and result names one of those blocks; a replacement never
 * leaves a tool call without its results on the surface or the reverse; the
 * surface (the derived request) has each assistant message's tool calls
 * followed by their results, one per call, before any other message, and no
 * tool result anywhere else (checked on the surface before each replacement
 * and at the end; calls still waiting for results at the end of the surface
 * are `TOOL_CALL_WITHOUT_RESULT`'s to judge, at `step/end`, since a log may
 * end inside a step; a `tool/result` of a step without an assistant message,
 * as hand-built logs have, is left out; a call id may repeat in a later
 * assistant message: results pair with the calls of the message they follow,
 * as the chat adapters send them); `request/*`, `todo/write` and replacing tool results sit inside an
 * open turn; compactions open and close in pairs, one at a time (a log may
 * end inside one, as inside a turn); no message id enters the surface twice; the surface operations are valid (checked with the same
 * `SurfaceManager` as `Session.append()`; after the first surface violation
 * the surface is no longer checked); each appended assistant message is what
 * the chunks its `sourceEventSeqs` name assemble (see
 * {@linkcode CheckInvariantsOptions.messageChunks}).
 *
 * @param events The log.
 * @param options Which optional checks run.
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
export function checkInvariants(
  events: readonly SessionEvent[],
  options: CheckInvariantsOptions = {},
): InvariantViolation[] {
  const checkChunks = options.messageChunks !== false;
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
  // The id of every message appended to the surface, and where it entered first.
  const messageIds = new Map<string, number>();
  // The open step's tool pairing: the last appended assistant message's tool-call ids, then every call and result.
  let blockIds: string[] | undefined;
  let stepCalls: { callId: string; seq: number }[] = [];
  let stepResults = new Map<string, number>();
  // Tool pairs on the surface: the seq of each tool-call assistant message and of each result of its calls.
  const resultsOf = new Map<number, Map<string, number>>();
  // The calls and results TOOL_PAIR_SPLIT, TOOL_RESULT_DUPLICATE, TOOL_RESULT_ID_MISMATCH and TOOL_CALL_ID_UNKNOWN
  // reported: the request order leaves them to those.
  const leftOut = new Set<number>();
  const callerOf = new Map<number, number>();
  let stepCaller: number | undefined;
  const resetStep = (): void => {
    stepCaller = undefined;
    blockIds = undefined;
    stepCalls = [];
    stepResults = new Map();
  };

  // At step/end: every tool-call block of the step's message answered once, every call and result one of them.
  const checkStepPairs = (seq: number): void => {
    if (blockIds === undefined) return; // No assistant message: hand-built logs; TOOL_RESULT_WITHOUT_CALL covers results.
    const ids = new Set(blockIds);
    for (const call of stepCalls) {
      if (!ids.has(call.callId)) {
        report("TOOL_CALL_ID_UNKNOWN", call.seq, `tool/call ${call.callId} names no tool-call block of its step`);
      }
    }
    for (const [callId, at] of stepResults) {
      if (!ids.has(callId)) {
        leftOut.add(at);
        report("TOOL_CALL_ID_UNKNOWN", at, `tool/result for call ${callId} names no tool-call block of its step`);
      }
    }
    for (const id of blockIds) {
      if (!stepResults.has(id)) {
        report("TOOL_CALL_WITHOUT_RESULT", seq, `Tool call ${id} of the step's assistant message has no tool/result`);
      }
    }
  };

  // A replacement shadows a tool-call message and its results together, or replaces a result by one of its call.
  const checkPairs = (
    manager: SurfaceManager,
    event: SessionEvent,
    shadowed: readonly number[],
    seq: number,
  ): void => {
    const ownCall = event.type === "tool/result" && event.data.message?.source?.kind === "tool"
      ? event.data.message.source.callId
      : undefined;
    for (const node of shadowed) {
      const results = resultsOf.get(node);
      if (results !== undefined) {
        for (const [callId, result] of results) {
          if (manager.has(result)) {
            leftOut.add(result);
            report(
              "TOOL_PAIR_SPLIT",
              seq,
              `The replacement shadows the tool-call message at seq ${node} but leaves the result of call ${callId} (seq ${result})`,
            );
          }
        }
        resultsOf.delete(node);
      }
      const caller = callerOf.get(node);
      if (caller === undefined) continue;
      callerOf.delete(node);
      const calls = resultsOf.get(caller);
      const callId = calls === undefined ? undefined : [...calls].find(([, r]) => r === node)?.[0];
      if (calls !== undefined && callId !== undefined && callId === ownCall) {
        calls.set(callId, seq);
        callerOf.set(seq, caller);
      } else if (manager.has(caller)) {
        leftOut.add(caller);
        report(
          "TOOL_PAIR_SPLIT",
          seq,
          `The replacement shadows the result at seq ${node} but leaves its tool-call message (seq ${caller})`,
        );
      }
    }
  };

  // The request order on the surface (see the doc above): each violation is reported once, though the surface is
  // checked before every replacement and at the end.
  const ordered = new Set<string>();
  const reportOnce = (code: string, seq: number, key: string, message: string): void => {
    const id = `${code} ${seq} ${key}`;
    if (ordered.has(id)) return;
    ordered.add(id);
    report(code, seq, message);
  };
  // The step of each tool/result on the surface, and whether it appended an assistant message.
  const resultStep = new Map<number, { assistant: boolean }>();
  let stepInfo: { assistant: boolean } | undefined;
  const checkRequestOrder = (manager: SurfaceManager): void => {
    // The calls of the last assistant message (at seq caller) still waiting for a result.
    let pending: Set<string> | undefined;
    let caller = -1;
    for (const seq of manager.nodes) {
      const event = events[seq];
      if (event.type === "tool/result" && (resultStep.get(seq)?.assistant !== true || leftOut.has(seq))) continue;
      const data = event.data as { message?: { content?: unknown } } & { content?: unknown };
      const message = event.type === "assistant/message" || event.type === "tool/result" ? data.message : data;
      const content: unknown[] = Array.isArray(message?.content) ? message.content : [];
      if (event.type === "assistant/message") {
        if (content.length === 0) continue; // not in the request
        if (pending !== undefined && pending.size > 0) interrupted(seq, event.type, caller, pending);
        const ids = new Set<string>();
        for (const block of content as { type?: unknown; id?: unknown }[]) {
          if (block?.type !== "tool-call") continue;
          const id = String(block.id);
          if (ids.has(id)) {
            reportOnce("TOOL_CALL_ID_REPEATED", seq, id, `assistant/message holds two tool-call blocks with id ${id}`);
          }
          ids.add(id);
        }
        pending = leftOut.has(seq) ? undefined : ids;
        caller = seq;
        continue;
      }
      let answers = 0;
      let other = event.type === "system/message";
      if (!other) {
        for (const block of content as { type?: unknown; toolCallId?: unknown }[]) {
          if (block?.type !== "tool-result") {
            other = true;
            continue;
          }
          answers++;
          const id = String(block.toolCallId);
          if (pending !== undefined && pending.delete(id)) continue;
          reportOnce(
            "TOOL_RESULT_OUT_OF_PLACE",
            seq,
            id,
            `${event.type} holds a result for call ${id}, which no call of the assistant message it follows ${
              caller < 0 ? "(none)" : `(seq ${caller})`
            } waits for`,
          );
        }
      }
      if (answers === 0) other = true;
      if (!other) continue;
      if (pending !== undefined && pending.size > 0) interrupted(seq, event.type, caller, pending);
      pending = undefined;
    }
  };
  const interrupted = (seq: number, type: string, caller: number, pending: ReadonlySet<string>): void =>
    reportOnce(
      "TOOL_RESULTS_INTERRUPTED",
      seq,
      String(caller),
      `${type} comes between the tool calls of the assistant message at seq ${caller} and their results (calls ${
        [...pending].join(", ")
      })`,
    );

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
    const replacing = event.surfaceOp !== undefined && event.surfaceOp !== "append";
    if (surface !== undefined) {
      // What the surface held until now, before the replacement takes part of it away.
      if (replacing) checkRequestOrder(surface);
      try {
        const replacement = surface.commit(event);
        if (replacement !== undefined) {
          checkPairs(surface, event, replacement.shadowedSeqs, i);
          const info = event.type === "tool/result" ? resultStep.get(replacement.shadowedSeqs[0]) : undefined;
          if (info !== undefined) resultStep.set(i, info);
        }
      } catch (error) {
        if (!HarnessError.isInstance(error)) throw error;
        report(error.code, i, error.message);
        surface = undefined;
      }
    }
    if (event.surfaceOp === "append") {
      const id = appendedMessageId(event);
      if (id !== undefined) {
        const first = messageIds.get(id);
        if (first === undefined) messageIds.set(id, i);
        else {report(
            "MESSAGE_ID_REPEATED",
            i,
            `${event.type} enters message id ${JSON.stringify(id)} again (seq ${first})`,
          );}
      }
    }
    switch (event.type) {
      case "turn/start": {
        const turn = event.data.turn;
        if (openTurn !== undefined) report("TURN_NESTED", i, `Turn ${turn} starts while turn ${openTurn} is open`);
        if (turn !== lastTurn + 1) report("TURN_NUMBER", i, `Turn ${turn} follows turn ${lastTurn}`);
        openTurn = turn;
        lastTurn = turn;
        openStep = undefined;
        stepInfo = undefined;
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
        resetStep();
        stepInfo = { assistant: false };
        break;
      }
      case "step/end": {
        const { turn, step } = event.data;
        if (openStep === undefined || turn !== openTurn || step !== openStep) {
          report("STEP_END_MISMATCH", i, `Step ${turn}.${step} ends but the open step is ${openStep ?? "none"}`);
        } else checkStepPairs(i);
        openStep = undefined;
        resetStep();
        stepInfo = undefined;
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
        if (event.type === "tool/call") {
          calls.add(event.data.callId);
          stepCalls.push({ callId: event.data.callId, seq: i });
        }
        break;
      case "assistant/message": {
        if (!replacing && !namesOpenStep(event.data)) {
          report(
            "EVENT_OUTSIDE_STEP",
            i,
            `assistant/message names step ${event.data.turn}.${event.data.step}, not the open step`,
          );
        }
        const content = Array.isArray(event.data.message?.content) ? event.data.message.content : [];
        const ids = content.filter((b) => b?.type === "tool-call").map((b) => (b as { id: string }).id);
        if (!replacing) {
          if (checkChunks) {
            const mismatch = messageChunksMismatch(events, event);
            if (mismatch !== undefined) report("ASSISTANT_MESSAGE_CHUNKS_MISMATCH", i, mismatch);
          }
          if (stepInfo !== undefined) stepInfo.assistant = true;
          blockIds = ids;
          stepCaller = undefined;
          if (ids.length > 0 && event.surfaceOp !== undefined) {
            resultsOf.set(i, new Map());
            stepCaller = i;
          }
        }
        break;
      }
      case "tool/result": {
        const own = event.data.message?.source?.kind === "tool" ? event.data.message.source.callId : undefined;
        const content = Array.isArray(event.data.message?.content) ? event.data.message.content : [];
        for (const block of content) {
          if (block?.type === "tool-result" && own !== undefined && block.toolCallId !== own) {
            leftOut.add(i);
            report(
              "TOOL_RESULT_ID_MISMATCH",
              i,
              `tool/result for call ${own} holds a tool-result block for call ${block.toolCallId}`,
            );
            break;
          }
        }
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
        if (callId !== undefined) {
          const earlier = stepResults.get(callId);
          if (earlier !== undefined) {
            leftOut.add(i);
            report("TOOL_RESULT_DUPLICATE", i, `tool/result for call ${callId} repeats the result at seq ${earlier}`);
          } else stepResults.set(callId, i);
          if (stepInfo !== undefined) resultStep.set(i, stepInfo);
          // Its place on the surface: a result of the step's tool-call message.
          const caller = stepCaller === undefined ? undefined : resultsOf.get(stepCaller);
          if (caller !== undefined && event.surfaceOp !== undefined) {
            caller.set(callId, i);
            callerOf.set(i, stepCaller!);
          }
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
  if (surface !== undefined) checkRequestOrder(surface);
  // Pairing is judged at step/end, after later events: back to log order (a stable sort).
  return violations.sort((a, b) => a.seq - b.seq);
}

/**
 * Throw when a log breaks any session invariant.
 *
 * @param events The log.
 * @param options Which optional checks run (as for {@linkcode checkInvariants}).
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
export function assertInvariants(events: readonly SessionEvent[], options: CheckInvariantsOptions = {}): void {
  const violations = checkInvariants(events, options);
  if (violations.length === 0) return;
  const lines = violations.map((v) => `  seq ${v.seq} ${v.code}: ${v.message}`).join("\n");
  throw new HarnessError("INVARIANT_VIOLATION", `Session log breaks ${violations.length} invariant(s):\n${lines}`, {
    details: { violations },
  });
}
