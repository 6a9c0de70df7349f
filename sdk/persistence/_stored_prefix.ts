// Internal: what the persistence plugin knows of each live session it writes — the prefix of its log it has stored,
// and whether its writer lost the lease — for readers that must not take a storage-wide answer for it (after another
// writer took the session over, `stat()` counts that writer's log, not this session's stored prefix) —, and whether
// its start was abandoned (its log is removed when it is let go of, not kept).

import { HarnessError } from "../kernel/harness_error.ts";
import type { Session } from "../session/session.ts";

const prefixes = new WeakMap<Session, number>();
const lost = new WeakSet<Session>();
const abandoned = new WeakSet<Session>();

/** The persistence plugin stored `session`'s events below `nextSeq`. */
export function noteStored(session: Session, nextSeq: number): void {
  if (nextSeq > (prefixes.get(session) ?? 0)) prefixes.set(session, nextSeq);
}

/**
 * The end (exclusive) of the prefix of `session` the persistence plugin has stored; `undefined` when it has announced
 * none (it stored nothing of it yet, or does not write it).
 */
export function storedPrefix(session: Session): number | undefined {
  return prefixes.get(session);
}

/** A write of `session` failed with `error`: a lost lease is kept (the session can never be written again). */
export function noteWriteFailed(session: Session, error: unknown): void {
  if (HarnessError.isInstance(error, "SESSION_LEASE_LOST")) lost.add(session);
}

/** Whether a write of `session` failed because its writer lost the lease. */
export function writerLost(session: Session): boolean {
  return lost.has(session);
}

/**
 * `session` was started and is let go of before it was used (a delegation's child whose parent was cancelled while it
 * started): when the persistence plugin releases it, the log it stored for it is deleted instead of kept.
 */
export function noteAbandoned(session: Session): void {
  abandoned.add(session);
}

/** Whether `session`'s start was abandoned (see noteAbandoned). */
export function wasAbandoned(session: Session): boolean {
  return abandoned.has(session);
}
