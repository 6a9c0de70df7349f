import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHarness, fileStorage, memoryStorage, type SessionStorage } from "../mod.ts";
import { scriptedAdapter, textResponse } from "../testing/mod.ts";
import { notesOf, pinNote, traceTiming } from "./plugin_event.ts";

const route = { provider: "scripted", model: "scripted-model" };

/** Write a session with a note and a trace through a live agent, then dispose the harness. */
async function writeSession(storage: SessionStorage): Promise<string> {
  const harness = await createHarness({ adapters: [scriptedAdapter(textResponse("Noted."))], model: route, storage });
  const agent = await harness.createAgent({ id: "reviewed" });
  pinNote(agent.session, "check the totals", "ana");
  await agent.run("Summarise the invoice");
  traceTiming(agent.session, "summary", 12);
  await harness.dispose();
  return agent.id;
}

describe("a plugin-contributed log-only event type", () => {
  for (const kind of ["file", "memory"] as const) {
    it(`is persisted by ${kind}Storage without registration, loaded back, and resumed`, async () => {
      const dir = await mkdtemp(join(tmpdir(), "dsh-plugin-event-"));
      try {
        const storage = kind === "file" ? fileStorage(dir) : memoryStorage();
        const id = await writeSession(storage);
        // A new storage object over the same files (file), or the same store (memory).
        const reader = kind === "file" ? fileStorage(dir) : storage;
        const { events } = await reader.load(id);
        assert.deepEqual(notesOf(events), ["ana: check the totals"]);
        const trace = events.find((e) => e.type === "acme/trace");
        assert.deepEqual(trace && { data: trace.data, ignorable: trace.ignorable }, {
          data: { label: "summary", ms: 12 },
          ignorable: true,
        });
        const harness = await createHarness({
          adapters: [scriptedAdapter(textResponse("Still noted."))],
          model: route,
          storage: reader,
        });
        const agent = await harness.resumeAgent(id);
        assert.deepEqual(notesOf(agent.session.events), ["ana: check the totals"]);
        await agent.run("And the tax?");
        await harness.dispose();
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }

  it("a reader that does not know the types refuses the required one and loads the ignorable one", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-plugin-event-"));
    try {
      const id = await writeSession(fileStorage(dir));
      await assert.rejects(fileStorage(dir, { eventTypes: [] }).load(id), (error: Error & { code?: string }) => {
        assert.equal(error.code, "SESSION_UNKNOWN_EVENT_TYPE");
        return true;
      });
      // The same reader loads a log whose only unknown event is ignorable.
      const harness = await createHarness({
        adapters: [scriptedAdapter(textResponse("ok"))],
        model: route,
        storage: fileStorage(dir),
      });
      const agent = await harness.createAgent({ id: "traced" });
      traceTiming(agent.session, "startup", 3);
      await agent.run("hi");
      await harness.dispose();
      const loaded = await fileStorage(dir, { eventTypes: [] }).load("traced");
      assert.equal(loaded.events.filter((e) => e.type === "acme/trace").length, 1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
