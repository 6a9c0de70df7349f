// The invariants a load enforces on a stored log, shared by every backend.
//
// A storage holds logs written through `Session.append()`, which checks each
// event alone, not only logs the agent loop wrote. A load therefore refuses a
// log whose structure is broken — the things crash repair, history derivation
// and the providers rely on — and accepts one that merely breaks the loop's
// conventions:
// - enforced: seqs contiguous from 0, valid surface operations (a session
//   seeded with the log would refuse it), turns and steps that open and close
//   in order without nesting, chunks / calls / results naming the open step,
//   every appended tool result after its `tool/call` (a provider refuses a
//   result without its call), every hook result after its `hook/invoked`;
// - not enforced: turns and steps numbered 1, 2, 3, … (`TURN_NUMBER`,
//   `STEP_NUMBER`) and bookkeeping events outside a turn
//   (`EVENT_OUTSIDE_TURN`: `todo/write`, `request/*`, `hook/*` written by a
//   script between turns), compaction brackets out of pair
//   (`COMPACTION_NESTED`, `COMPACTION_UNPAIRED`: log-only notes). A log breaking only these reads and derives the
//   same as one that does not. Nor the pairing of tool calls with results
//   (`TOOL_CALL_WITHOUT_RESULT`, `TOOL_RESULT_DUPLICATE`, `TOOL_CALL_ID_UNKNOWN`,
//   `TOOL_PAIR_SPLIT`) and their order on the surface (`TOOL_CALL_ID_REPEATED`,
//   `TOOL_RESULTS_INTERRUPTED`, `TOOL_RESULT_OUT_OF_PLACE`): checked since logs
//   were already stored, so a load does not turn a stored session into an
//   unreadable one over them; nor a message id entered twice
//   (`MESSAGE_ID_REPEATED`: SessionStart context did so on every resume);
//   nor an assistant message against the chunks it names
//   (`ASSISTANT_MESSAGE_CHUNKS_MISMATCH`), which derivation, repair and the
//   providers never read together: that check is not even run (it folds every
//   message's chunks again: 40 to 60 ms more on Node for a 200,000-event
//   session, whose load takes 400 to 600 ms).
// The check runs on the repaired log, so an open final turn that repair
// closes passes, and before the repair is written, so a refused load changes
// nothing.

import { checkInvariants, type InvariantViolation } from "../invariants/check_invariants.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionEvent } from "../session/session_events.ts";
import { repairSessionLog, type RepairSessionLogResult } from "./repair_session_log.ts";
import type { RepairReport } from "./session_storage.ts";

/** The invariant codes a load does not enforce (conventions of the agent loop, not structure). */
export const CONVENTION_CODES: ReadonlySet<string> = new Set([
  "TURN_NUMBER",
  "STEP_NUMBER",
  "EVENT_OUTSIDE_TURN",
  "COMPACTION_NESTED",
  "COMPACTION_UNPAIRED",
  "TOOL_CALL_WITHOUT_RESULT",
  "TOOL_RESULT_DUPLICATE",
  "TOOL_CALL_ID_UNKNOWN",
  "TOOL_PAIR_SPLIT",
  "TOOL_CALL_ID_REPEATED",
  "TOOL_RESULTS_INTERRUPTED",
  "TOOL_RESULT_OUT_OF_PLACE",
  "MESSAGE_ID_REPEATED",
  // Not even computed on load (structuralViolations turns the check off); listed for what a load accepts.
  "ASSISTANT_MESSAGE_CHUNKS_MISMATCH",
]);

/** The violations of a (repaired) log that make a load refuse it, in log order. */
export function structuralViolations(events: readonly SessionEvent[]): InvariantViolation[] {
  return checkInvariants(events, { messageChunks: false }).filter((v) => !CONVENTION_CODES.has(v.code));
}

/**
 * Throw `SESSION_CORRUPT` when a repaired log breaks a structural invariant,
 * naming the first one and its seq.
 *
 * @param sessionId The session.
 * @param where Where the log lives, for the message (a file path, "memory", a table).
 * @param events The log after crash repair.
 */
export function refuseBrokenLog(sessionId: string, where: string, events: readonly SessionEvent[]): void {
  const violations = structuralViolations(events);
  if (violations.length === 0) return;
  const first = violations[0];
  const more = violations.length > 1 ? ` (and ${violations.length - 1} more)` : "";
  throw new HarnessError(
    "SESSION_CORRUPT",
    `Session log ${where} breaks invariant ${first.code} at seq ${first.seq}: ${first.message}${more}`,
    { details: { sessionId, where, seq: first.seq, invariant: first.code, violations } },
  );
}

/**
 * Crash-repair a stored log in memory and refuse it (`SESSION_CORRUPT`) when
 * the repaired log breaks a structural invariant. Writes nothing: the caller
 * writes the synthetic events when it commits the repair.
 *
 * @param sessionId The session.
 * @param where Where the log lives, for the message.
 * @param events The stored events.
 * @param newId Makes the ids of synthetic tool results.
 */
export function repairStoredLog(
  sessionId: string,
  where: string,
  events: readonly SessionEvent[],
  newId: (() => string) | undefined,
): RepairSessionLogResult {
  const repaired = repairSessionLog(events, { newId });
  // A log whose structure is broken is refused before any repair is written.
  refuseBrokenLog(sessionId, where, repaired.events);
  return repaired;
}

/** What a load knows of its repair, to build the {@linkcode RepairReport}. */
export interface RepairFacts {
  /** Whether anything was (or would be) dropped or added. */
  readonly needsRepair: boolean;
  /** Whether this load writes the repair back (`load`) or not (`inspect`). */
  readonly commit: boolean;
  /** The synthetic events as the storage returns them. */
  readonly syntheticEvents: readonly SessionEvent[];
  /** The turn repair closed, if any. */
  readonly closedTurn: number | undefined;
  /** Bytes of a torn tail dropped. @default {0} */
  readonly truncatedBytes?: number;
  /** Where the torn tail began, when there was one. */
  readonly tornTail?: RepairReport["tornTail"];
}

/** The {@linkcode RepairReport} of one load, the same shape in every storage. */
export function repairReport(facts: RepairFacts): RepairReport {
  return {
    repaired: facts.needsRepair,
    committed: facts.commit && facts.needsRepair,
    truncatedBytes: facts.truncatedBytes ?? 0,
    ...(facts.tornTail === undefined ? {} : { tornTail: facts.tornTail }),
    ...(facts.closedTurn === undefined ? {} : { closedTurn: facts.closedTurn }),
    syntheticEvents: facts.syntheticEvents,
  };
}
