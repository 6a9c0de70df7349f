import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { memoryStorage } from "./memory_storage.ts";
import { storageContract } from "./_test_storage_contract.ts";
import { deleteTreeSuite } from "./_test_delete_tree.ts";

const memory = {
  name: "memoryStorage()",
  make: () => Promise.resolve({ storage: memoryStorage(), after: () => Promise.resolve() }),
};
storageContract(memory);
deleteTreeSuite(memory);

describe("memoryStorage()", () => {
  it("stores detached frozen copies", async () => {
    const storage = memoryStorage({ now: () => 7 });
    await storage.create({ id: "s" });
    const todos = [{ content: "x", status: "pending" as const }];
    await storage.append("s", [{ type: "todo/write", seq: 0, time: 1, data: { todos } }], { expectedSeq: 0 });
    todos[0].content = "changed";
    const { events, header } = await storage.load("s");
    assert.equal(header.createdAt, 7);
    assert.deepEqual(events[0].data, { todos: [{ content: "x", status: "pending" }] });
    assert.ok(Object.isFrozen(events[0].data));
  });

  it("persists a plugin event type without registration; a strict reader refuses it unless ignorable", async () => {
    const open = memoryStorage();
    await open.create({ id: "s" });
    const event = { type: "app/note", seq: 0, time: 1, data: { text: "hi" } };
    await open.append("s", [event as never], { expectedSeq: 0 });
    assert.deepEqual((await open.load("s")).events, [event]);
    const strict = memoryStorage({ eventTypes: [] });
    await strict.create({ id: "s" });
    await strict.append("s", [event as never], { expectedSeq: 0 });
    await assert.rejects(strict.load("s"), (e: Error & { code?: string }) => e.code === "SESSION_UNKNOWN_EVENT_TYPE");
    const aside = { ...event, seq: 1, ignorable: true };
    const knowing = memoryStorage({ eventTypes: ["app/note"] });
    await knowing.create({ id: "s" }, { events: [event as never, aside as never] });
    assert.deepEqual((await knowing.load("s")).events, [event, aside]);
  });
});
