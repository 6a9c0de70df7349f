import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { SessionHeader } from "../session/session.ts";
import { memoryStorage } from "./memory_storage.ts";
import type { SessionStorage } from "./session_storage.ts";
import { deleteSessionTree, liveAndStoredDescendants, subagentDescendants } from "./_delete_tree.ts";

const child = (id: string, parent: string) => ({ id, createdAt: 2, parentSession: parent, origin: "subagent" });

/**
 * A memory storage that finds descendants by itself (from its own headers, as a query would) and records which
 * sessions it was asked about; `list()` counts its calls.
 */
function queryingStorage(): { storage: SessionStorage; asked: string[]; lists: () => number } {
  const inner = memoryStorage();
  const asked: string[] = [];
  let lists = 0;
  const storage = new Proxy(inner, {
    get(target, key) {
      if (key === "list") {
        return () => {
          lists++;
          return target.list();
        };
      }
      if (key === "listSubagentDescendants") {
        return async (id: string) => {
          asked.push(id);
          const headers = await target.list();
          const found = new Set(subagentDescendants(id, headers));
          return headers.filter((h) => found.has(h.id));
        };
      }
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as SessionStorage;
  return { storage, asked, lists: () => lists };
}

describe("liveAndStoredDescendants()", () => {
  it("asks the storage about the session and about descendants only live headers name, never list()", async () => {
    const { storage, asked, lists } = queryingStorage();
    await storage.create({ id: "r", createdAt: 1 });
    await storage.create(child("r.c", "r"));
    await storage.create(child("r.c.e", "r.c"));
    await storage.create(child("r.a.b", "r.a")); // its parent r.a is live, not stored
    await storage.create(child("s.x", "s"));
    const live = [
      { version: 1, id: "r.a", createdAt: 2, parentSession: "r", origin: "subagent" },
      { version: 1, id: "r.c.d", createdAt: 3, parentSession: "r.c", origin: "subagent" },
    ] as SessionHeader[];
    const order = await liveAndStoredDescendants(storage, "r", live);
    assert.deepEqual([...order].sort(), ["r.a", "r.a.b", "r.c", "r.c.d", "r.c.e"]);
    for (const [id, parent] of [["r.a.b", "r.a"], ["r.c.d", "r.c"], ["r.c.e", "r.c"]]) {
      assert.ok(order.indexOf(id) < order.indexOf(parent), `${id} before ${parent}: ${order}`);
    }
    // r.c.e came with the answer about r; r.a and r.c.d are known from live headers only.
    assert.deepEqual(asked.sort(), ["r", "r.a", "r.c.d"]);
    assert.equal(lists(), 0);
  });

  it("reads every header of a storage that cannot find descendants by itself", async () => {
    const storage = memoryStorage();
    await storage.create({ id: "r", createdAt: 1 });
    await storage.create(child("r.a.b", "r.a"));
    const live = [{ version: 1, id: "r.a", createdAt: 2, parentSession: "r", origin: "subagent" }] as SessionHeader[];
    assert.deepEqual(await liveAndStoredDescendants(storage, "r", live), ["r.a.b", "r.a"]);
  });
});

describe("deleteSessionTree()", () => {
  it("finds the descendants through the storage's listSubagentDescendants() when it has one", async () => {
    const { storage, asked, lists } = queryingStorage();
    await storage.create({ id: "r", createdAt: 1 });
    await storage.create(child("r.a", "r"));
    await storage.create(child("r.a.b", "r.a"));
    await storage.create({ id: "r-fork", createdAt: 3, parentSession: "r" });
    assert.equal(await deleteSessionTree(storage, "r"), true);
    assert.deepEqual(asked, ["r"]);
    assert.equal(lists(), 0);
    assert.deepEqual((await storage.list()).map((h) => h.id), ["r-fork"]);
  });
});
