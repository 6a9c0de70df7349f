// Test support (not published): deleting a session with its subagent descendants (deleteSessionTree), as one suite
// every backend runs (memory, file, PostgreSQL, PGlite), beside the storage contract.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../kernel/harness_error.ts";
import type { NewSessionHeader, SessionStorage } from "./session_storage.ts";
import { type ContractTarget, onFreshStorage } from "./_test_contract_target.ts";
import {
  deleteSessionTree,
  liveAndStoredDescendants,
  storedDescendantHeaders,
  subagentDescendants,
} from "./_delete_tree.ts";

const code = (c: string) => (error: unknown) => HarnessError.isInstance(error, c);

/** A subagent child's header fields. */
export const child = (id: string, parent: string, depth = 1): NewSessionHeader => ({
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

/** The ids of the stored sessions, sorted. */
export const ids = async (storage: SessionStorage): Promise<string[]> => (await storage.list()).map((h) => h.id).sort();

/** Every stored subagent child's parent is stored. */
export async function assertNoOrphan(storage: SessionStorage): Promise<void> {
  const headers = await storage.list();
  const stored = new Set(headers.map((h) => h.id));
  for (const h of headers) {
    if (h.origin === "subagent") assert.ok(stored.has(h.parentSession!), `${h.id} outlived ${h.parentSession}`);
  }
}

/**
 * While `held`'s lease is held elsewhere, deleting `root`'s tree is refused (SESSION_WRITER_BUSY) with `root` and
 * `held` still stored and no child left without its parent; the lease is released afterwards.
 */
export async function assertHeldLeaseRefusesDelete(storage: SessionStorage, root: string, held: string): Promise<void> {
  const writer = await storage.acquireWriter(held);
  try {
    await assert.rejects(deleteSessionTree(storage, root), code("SESSION_WRITER_BUSY"), held);
    assert.notEqual(await storage.stat(root), undefined, held);
    assert.notEqual(await storage.stat(held), undefined, held);
    await assertNoOrphan(storage);
  } finally {
    await writer.release();
  }
}

/**
 * Forks and subagents mixed: forks of subagent children, subagent children of forks, an origin only spelt like
 * "subagent", two sessions naming each other, one naming itself, children of a session no longer stored, ids with
 * quotes and characters past ASCII, and headers escaping a NUL or a lone surrogate (in a system prompt).
 */
async function mixedTree(storage: SessionStorage): Promise<void> {
  const fork = (id: string, parent: string) =>
    storage.create({ id, createdAt: 3, parentSession: parent, seedLength: 0 });
  await storage.create({ id: "r", createdAt: 1 });
  await storage.create(child("r.a", "r"));
  await storage.create(child("r.a.b", "r.a", 2));
  await fork("r.a-fork", "r.a");
  await storage.create(child("r.a-fork.c", "r.a-fork", 2));
  await fork("r-fork", "r");
  await storage.create(child("r-fork.d", "r-fork"));
  await fork("r-fork.d-fork", "r-fork.d");
  await storage.create({ ...child("r.upper", "r"), origin: "Subagent" });
  await storage.create({ ...child("r.http", "r"), origin: "http" });
  await storage.create({ ...child('r.\u00e9\u{1F642}"q"', "r"), profile: { system: "cut \ud83d, nul \u0000" } });
  await storage.create(child('r.\u00e9\u{1F642}"q".e', 'r.\u00e9\u{1F642}"q"', 2));
  await storage.create({ ...child("r.a.lone", "r.a", 2), profile: { system: "\udc00" } });
  await storage.create(child("x", "y"));
  await storage.create(child("y", "x"));
  await storage.create(child("z", "z"));
  await storage.create(child("z.f", "z"));
  await storage.create(child("gone.g", "gone"));
  await storage.create(child("gone.g.h", "gone.g", 2));
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
      "finds, for every session of a tree of forks and subagents, the descendants a walk over list() finds",
      withStorage(async (storage) => {
        await mixedTree(storage);
        const all = await storage.list();
        assert.equal(all.length, 19);
        const roots = [...all.map((h) => h.id), "gone", "none"];
        const found: Record<string, string[]> = {};
        for (const root of roots) {
          const expected = subagentDescendants(root, all).sort();
          found[root] = expected;
          assert.deepEqual(
            subagentDescendants(root, await storedDescendantHeaders(storage, root)).sort(),
            expected,
            root,
          );
          assert.deepEqual((await liveAndStoredDescendants(storage, root, [])).sort(), expected, root);
        }
        const odd = 'r.\u00e9\u{1F642}"q"';
        assert.deepEqual(found.r, ["r.a", "r.a.b", "r.a.lone", odd, `${odd}.e`].sort());
        assert.deepEqual(found["r.a-fork"], ["r.a-fork.c"]);
        assert.deepEqual(found["r-fork"], ["r-fork.d"]);
        assert.deepEqual(found.x, ["y"]);
        assert.deepEqual(found.z, ["z.f"]);
        assert.deepEqual(found.gone, ["gone.g", "gone.g.h"]);
        assert.equal(await deleteSessionTree(storage, "r"), true);
        assert.equal(await deleteSessionTree(storage, "gone"), true);
        assert.deepEqual(await ids(storage), [
          "r-fork",
          "r-fork.d",
          "r-fork.d-fork",
          "r.a-fork",
          "r.a-fork.c",
          "r.http",
          "r.upper",
          "x",
          "y",
          "z",
          "z.f",
        ]);
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
          await assertHeldLeaseRefusesDelete(storage, "p", held);
        }
        assert.equal(await deleteSessionTree(storage, "p"), true);
        assert.deepEqual(await ids(storage), ["p-fork", "p.lookalike", "q", "q.call_a"]);
      }),
    );
  });
}
