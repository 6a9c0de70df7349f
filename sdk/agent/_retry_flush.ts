// Internal: `agent.flushed()` tries a failed write again before it reports it. The persistence plugin keeps a failed
// batch and writes it whole at the next flush, so a write that failed for a moment (a dropped connection, a busy
// disk) is often on storage a moment later; reporting the first failure would tell a caller — an HTTP client that
// then sends its message again — that input was not stored which is stored a moment after. A storage that refused
// the write for good (the lease is another writer's, the log is not this session's any more, the data is invalid) is
// not asked again.

import { HarnessError } from "../kernel/harness_error.ts";
import type { Session } from "../session/session.ts";

/** The codes of a write storage will refuse again: reported at once. */
const FINAL = new Set([
  "SESSION_LEASE_LOST",
  "SESSION_WRITER_BUSY",
  "SESSION_SEQ_MISMATCH",
  "SESSION_NOT_FOUND",
  "SESSION_ALREADY_EXISTS",
  "SESSION_CORRUPT",
  "SESSION_REPAIR_REQUIRED",
  "SESSION_FORMAT_UNSUPPORTED",
  "STORAGE_SCHEMA_UNSUPPORTED",
  "INVALID_SESSION_ID",
  "INVALID_ARGS",
  "INVALID_EVENT",
  "NOT_LOSSLESS_JSON",
]);

/** How long to wait before each new try of a failed flush, in ms. */
export const FLUSH_RETRY_DELAYS: readonly number[] = [50, 250];

/**
 * A failure that took longer than this (a storage that answered only at its deadline) is reported as it is: trying
 * again would report it minutes late.
 */
const RETRY_WITHIN_MS = 2_000;

/** Whether a failed flush (`SESSION_FLUSH_FAILED`, its cause the storage's error) may succeed if tried again. */
function mayPass(error: unknown): boolean {
  if (!HarnessError.isInstance(error, "SESSION_FLUSH_FAILED")) return false;
  const cause = (error as Error).cause;
  return !(HarnessError.isInstance(cause) && FINAL.has(cause.code));
}

/**
 * `flush()`, tried again after each of `delays` while it fails quickly with an error storage may not give again; the
 * last failure is the one reported. `flush()` answers `false` when the session is no longer live (disposed while a
 * try waited): that is no success after a failure, which is then reported.
 */
export async function flushWithRetries(
  flush: () => Promise<boolean>,
  delays: readonly number[] = FLUSH_RETRY_DELAYS,
): Promise<void> {
  const started = Date.now();
  let failure: unknown;
  for (let attempt = 0;; attempt++) {
    let live: boolean;
    try {
      live = await flush();
    } catch (error) {
      failure = error;
      if (attempt >= delays.length || !mayPass(error) || Date.now() - started > RETRY_WITHIN_MS) throw error;
      await new Promise((resolve) => setTimeout(resolve, delays[attempt]));
      continue;
    }
    if (!live && failure !== undefined) throw failure;
    return;
  }
}

const retriedOut = new WeakSet<Session>();

/**
 * A new agent's durable start (`durableStart`) waited out the retries of `session`'s first flush and failed: the
 * agent's teardown does not try that write again (its release still writes once, and reports that).
 */
export function noteStartFailed(session: Session): void {
  retriedOut.add(session);
}

/** Whether `session`'s durable start failed after its retries (see noteStartFailed). */
export function startFailed(session: Session): boolean {
  return retriedOut.has(session);
}
