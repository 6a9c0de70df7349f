// Test support (not published): deleting a session with its subagent descendants (deleteSessionTree), as one suite
// every backend runs (memory, file, PostgreSQL, PGlite), beside the storage contract.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionStorage } from "./session_storage.ts";
import { type ContractTarget, onFreshStorage } from "./_test_contract_target.ts";
import { deleteSessionTree } from "./_delete_tree.ts";

const code = (c: string) => (error: unknown) => HarnessError.isInstance(error, c);

/** A subagent child's header fields. */
const child = (id: string, parent: string, depth = 1) => ({
  id,
  createdAt: 10 + depth,
  parentSession: parent,
  origin: "subagent",
  delegationDepth: depth,
});

/**
 * `p` with two children (one named not after it, as a child of a too long parent id is), a grandchild, a fork of
 * `p`, a session whose id only looks like a child's, and another session's child.
 */
async function tree(storage: SessionStorage): Promise<void> {
  await storage.create({ id: "p", createdAt: 1 });
  await storage.create(child("p.call_a", "p"));
  await storage.create(child("p~0123456789ab.call_b", "p"));
  await storage.create(child("p.call_a.call_c", "p.call_a", 2));
  await storage.create({ id: "p-fork", createdAt: 2, parentSession: "p", seedLength: 0 });
  await storage.create({ id: "p.lookalike", createdAt: 3 });
  await storage.create({ id: "q", createdAt: 4 });
  await storage.create(child("q.call_a", "q"));
}

const ids = async (storage: SessionStorage) => (await storage.list()).map((h) => h.id).sort();

/** Every stored subagent child's parent is stored. */
async function assertNoOrphan(storage: SessionStorage): Promise<void> {
  const headers = await storage.list();
  const stored = new Set(headers.map((h) => h.id));
  for (const h of headers) {
    if (h.origin === "subagent") assert.ok(stored.has(h.parentSession!), `${h.id} outlived ${h.parentSession}`);
  }
}

export function deleteTreeSuite(target: ContractTarget): void {
  const withStorage = (fn: (storage: SessionStorage) => Promise<void>) => onFreshStorage(target, fn);

  describe(`deleting a session with its subagent descendants: ${target.name}`, () => {
    it(
      "deletes the children and grandchildren (found by header, not by id), keeps forks and other sessions",
      withStorage(async (storage) => {
        await tree(storage);
        assert.equal(await deleteSessionTree(storage, "p"), true);
        assert.deepEqual(await ids(storage), ["p-fork", "p.lookalike", "q", "q.call_a"]);
        // A new session under the parent's id inherits no child.
        await storage.create({ id: "p", createdAt: 20 });
        const children = (await storage.list()).filter((h) => h.origin === "subagent" && h.parentSession === "p");
        assert.deepEqual(children, []);
        assert.equal(await deleteSessionTree(storage, "p"), true);
        assert.equal(await deleteSessionTree(storage, "p"), false);
        assert.equal(await deleteSessionTree(storage, "none"), false);
      }),
    );

    it(
      "deletes the children a session left stored when it was deleted alone",
      withStorage(async (storage) => {
        await tree(storage);
        assert.equal(await storage.delete("p"), true);
        assert.equal(await deleteSessionTree(storage, "p"), true);
        assert.deepEqual(await ids(storage), ["p-fork", "p.lookalike", "q", "q.call_a"]);
      }),
    );

    it(
      "a session whose lease is held elsewhere is refused before anything is deleted",
      withStorage(async (storage) => {
        await tree(storage);
        const writer = await storage.acquireWriter("p");
        try {
          await assert.rejects(deleteSessionTree(storage, "p"), code("SESSION_WRITER_BUSY"));
          assert.equal((await ids(storage)).length, 8);
        } finally {
          await writer.release();
        }
        assert.equal(await deleteSessionTree(storage, "p"), true);
        assert.deepEqual(await ids(storage), ["p-fork", "p.lookalike", "q", "q.call_a"]);
      }),
    );

    it(
      "a descendant whose lease is held elsewhere stops the delete with every child's parent still stored",
      withStorage(async (storage) => {
        await tree(storage);
        for (const held of ["p.call_a.call_c", "p.call_a", "p~0123456789ab.call_b"]) {
          const writer = await storage.acquireWriter(held);
          try {
            await assert.rejects(deleteSessionTree(storage, "p"), code("SESSION_WRITER_BUSY"), held);
            assert.notEqual(await storage.stat("p"), undefined, held);
            assert.notEqual(await storage.stat(held), undefined, held);
            await assertNoOrphan(storage);
          } finally {
            await writer.release();
          }
        }
        assert.equal(await deleteSessionTree(storage, "p"), true);
        assert.deepEqual(await ids(storage), ["p-fork", "p.lookalike", "q", "q.call_a"]);
      }),
    );
  });
}
