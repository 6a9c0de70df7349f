// Test support (not published): a load as resume does it, under the writer lease, so that a repair is written.

import type { LoadedSession, SessionStorage } from "./session_storage.ts";

/** Take the writer lease, load (repairing and committing) under it, give the lease up. */
export async function loadUnderLease(storage: SessionStorage, sessionId: string): Promise<LoadedSession> {
  const writer = await storage.acquireWriter(sessionId);
  try {
    return await storage.load(sessionId, { writer });
  } finally {
    await writer.release();
  }
}
