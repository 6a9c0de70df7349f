// Internal: a new agent over storage is handed out once its session is there.

import { HarnessError } from "../kernel/harness_error.ts";
import type { AgentHandle } from "./agent.ts";
import { noteStartFailed } from "./_retry_flush.ts";

/**
 * Wait until the new agent's session holds its writer lease and is on
 * storage. When it cannot be (another process holds the lease, the storage
 * fails), the agent is disposed and the storage's own error thrown (a
 * `SESSION_WRITER_BUSY`, say, rather than the flush's wrapper): no agent is
 * left running in memory that could never write, and nothing is reported
 * created before it is durable.
 *
 * @param handle The agent just created, resumed or forked.
 */
export async function durableStart(handle: AgentHandle): Promise<void> {
  try {
    await handle.agent.flushed();
  } catch (error) {
    // The write was tried, and tried again (`flushed()`), and failed: the teardown does not wait out those retries a
    // second time (a failed create would take twice as long to answer). Its release still writes once: a storage that
    // recovered by then stores the session's events, one that did not refuses at once (a start that never got its
    // lease or log fails every write without asking storage).
    noteStartFailed(handle.agent.session);
    await handle.dispose().catch(() => {/* the first error is the one to report */});
    throw storageError(error);
  }
}

/** The storage's own error behind a failed flush (`SESSION_WRITER_BUSY`, say), else the error itself. */
export function storageError(error: unknown): unknown {
  const cause = HarnessError.isInstance(error, "SESSION_FLUSH_FAILED") ? (error as Error).cause : undefined;
  return HarnessError.isInstance(cause) ? cause : error;
}
