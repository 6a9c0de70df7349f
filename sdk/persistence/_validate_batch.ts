// Argument checks shared by every backend's create/append.

import type { SessionEvent } from "../session/session_events.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import { invalidArgs } from "./_errors.ts";
import { isEventTypeText, validateEnvelope, validateEventData } from "../session/_validate_event.ts";

/**
 * Check the shape of a batch (bad arguments, thrown at once): an array of
 * envelopes with a type, a finite time and data. Throws `INVALID_ARGS`.
 */
export function validateBatchShape(events: readonly SessionEvent[]): void {
  if (!Array.isArray(events)) throw invalidArgs("The events to append must be an array");
  for (let i = 0; i < events.length; i++) {
    const event = events[i] as { type?: unknown; time?: unknown; data?: unknown } | null;
    if (typeof event !== "object" || event === null) throw invalidArgs(`Event ${i} of the batch is not an object`);
    if (typeof event.type !== "string" || event.type === "") throw invalidArgs(`Event ${i} of the batch has no type`);
    if (!isEventTypeText(event.type)) {
      throw invalidArgs(`Event ${i} of the batch has a type with a control character or a lone surrogate`);
    }
    if (!Number.isFinite(event.time)) throw invalidArgs(`Event ${i} of the batch has no finite time`);
    if (!("data" in event) || event.data === undefined) throw invalidArgs(`Event ${i} of the batch has no data`);
  }
}

/**
 * Check that a well-shaped batch is contiguous from `firstSeq`, and check each
 * event with the session's validator. Types are not checked: a storage
 * persists every well-formed event the session accepted. Throws
 * `SESSION_SEQ_MISMATCH` or `INVALID_EVENT`.
 */
export function checkBatchContent(sessionId: string, events: readonly SessionEvent[], firstSeq: number): void {
  for (let i = 0; i < events.length; i++) {
    const event = events[i];
    if (event.seq !== firstSeq + i) {
      throw new HarnessError(
        "SESSION_SEQ_MISMATCH",
        `Event ${i} of the batch for session ${JSON.stringify(sessionId)} has seq ${event.seq}, not ${firstSeq + i}`,
        { details: { sessionId, expectedSeq: firstSeq + i, seq: event.seq } },
      );
    }
    // The validator Session.append() and every load use: a record no load would accept is never written.
    // The batch's shape, type text included, was checked by validateBatchShape before this.
    validateEnvelope(event, event.seq, false);
    validateEventData(event.type, event.data, event.seq);
  }
}

/** Check an `expectedSeq` argument. */
export function validateExpectedSeq(expectedSeq: unknown): asserts expectedSeq is number {
  if (!Number.isSafeInteger(expectedSeq) || (expectedSeq as number) < 0) {
    throw invalidArgs(`expectedSeq must be a non-negative integer, got ${String(expectedSeq)}`);
  }
}
