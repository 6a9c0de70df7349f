// Internal: deleting a stored session together with its subagent descendants (`harness.deleteSession`, the HTTP
// `DELETE /sessions/:id`). A child log names its parent only in its header (`parentSession`, `origin: "subagent"`;
// its id is not always `<parent>.<call id>`: see childIdBase), so the descendants are found by reading the headers (or
// by the storage's own query, `listSubagentDescendants`). A child log left behind would be taken for a child of the
// next session created with its parent's id.

import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionHeader } from "../session/session.ts";
import { writerBusy } from "./_errors.ts";
import type { SessionStorage, SessionWriter } from "./session_storage.ts";

/**
 * The subagent descendants of `root` among `headers` (a session whose header has `origin: "subagent"` and names,
 * up its `parentSession` chain of such sessions, `root`), each after all of its own descendants: the order to delete
 * them in. Forks (a `parentSession` without `origin: "subagent"`) are sessions of their own, not descendants.
 */
export function subagentDescendants(root: string, headers: Iterable<SessionHeader>): string[] {
  const children = new Map<string, string[]>();
  for (const h of headers) {
    if (h.origin !== "subagent" || h.parentSession === undefined) continue;
    const list = children.get(h.parentSession);
    if (list === undefined) children.set(h.parentSession, [h.id]);
    else if (!list.includes(h.id)) list.push(h.id);
  }
  const order: string[] = [];
  const seen = new Set<string>([root]);
  const visit = (id: string) => {
    for (const child of children.get(id) ?? []) {
      if (seen.has(child)) continue; // a header naming its own descendant as parent: no loop
      seen.add(child);
      visit(child);
      order.push(child);
    }
  };
  visit(root);
  return order;
}

/**
 * Headers among which `subagentDescendants(sessionId, …)` finds every stored descendant of `sessionId`: those the
 * storage finds by itself when it can (`listSubagentDescendants`, an indexed query on PostgreSQL), else every stored
 * header.
 */
export function storedDescendantHeaders(storage: SessionStorage, sessionId: string): Promise<SessionHeader[]> {
  return storage.listSubagentDescendants !== undefined ? storage.listSubagentDescendants(sessionId) : storage.list();
}

/**
 * The subagent descendants of `root` among the `live` headers and the stored ones, in the order of
 * {@linkcode subagentDescendants}. A storage that finds descendants by itself is asked about `root`, then about each
 * descendant found through a live header only (a chain may pass through a session not stored), never for every header.
 */
export async function liveAndStoredDescendants(
  storage: SessionStorage,
  root: string,
  live: readonly SessionHeader[],
): Promise<string[]> {
  if (storage.listSubagentDescendants === undefined) {
    return subagentDescendants(root, [...live, ...await storage.list()]);
  }
  const headers = [...live];
  // Ids whose stored descendants are among `headers`: the ones asked about, and every stored descendant of those (its
  // own stored descendants came with the answer that named it).
  const covered = new Set<string>();
  for (let pending = [root]; pending.length > 0;) {
    for (const id of pending) {
      covered.add(id);
      for (const header of await storage.listSubagentDescendants(id)) {
        headers.push(header);
        covered.add(header.id);
      }
    }
    pending = subagentDescendants(root, headers).filter((id) => !covered.has(id));
  }
  return subagentDescendants(root, headers);
}

/**
 * Delete the stored log of `sessionId` and those of its subagent descendants, every child before its parent: a
 * delete that fails midway (a descendant's writer lease held elsewhere, a storage failure) leaves no child whose
 * parent is gone. The session's own lease is held while its descendants are deleted, so a session written elsewhere
 * (a live parent, which may be delegating) is refused before anything is deleted, and no child is made meanwhile.
 * Descendants whose parent is no longer stored (left by an earlier delete) are deleted with it as well.
 *
 * @returns Whether the session or a descendant was stored.
 * @throws {HarnessError} `SESSION_WRITER_BUSY` when the session's or a descendant's lease is held.
 */
export async function deleteSessionTree(storage: SessionStorage, sessionId: string): Promise<boolean> {
  const stored = (await storage.stat(sessionId)) !== undefined;
  let lease: SessionWriter | undefined;
  if (stored) {
    try {
      lease = await storage.acquireWriter(sessionId);
    } catch (error) {
      throw HarnessError.isInstance(error, "SESSION_WRITER_BUSY") ? writerBusy(sessionId, "delete it") : error;
    }
  }
  let deleted = false;
  try {
    for (const id of subagentDescendants(sessionId, await storedDescendantHeaders(storage, sessionId))) {
      if (await storage.delete(id)) deleted = true;
    }
  } finally {
    // Given up before the session's own delete: a file log's delete under its lease would leave the folder behind.
    await lease?.release().catch(() => {/* then the delete below reports the lease */});
  }
  if (stored && await storage.delete(sessionId)) deleted = true;
  return deleted;
}
