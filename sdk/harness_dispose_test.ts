import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHarness } from "./harness.ts";
import { memoryStorage } from "./persistence/memory_storage.ts";
import { scriptedAdapter } from "../testing/scripted_adapter.ts";

/** A harness over memory storage whose agent is in a turn that waits for the model for ever. */
async function hangingTurn() {
  const storage = memoryStorage();
  const harness = await createHarness({ adapters: [scriptedAdapter({ hang: true })], storage });
  const agent = await harness.createAgent({ id: "a" });
  const run = agent.run("hello").then((result) => result.reason.kind);
  while (!agent.session.events.some((e) => e.type === "request/header")) await new Promise((r) => setTimeout(r, 1));
  return { storage, harness, agent, run };
}

describe("harness.dispose() while a disposeAgent() is under way", () => {
  it("waits for that agent's teardown: its last events reach storage before persistence is undone", async () => {
    const { storage, harness, agent, run } = await hangingTurn();
    const leaving = harness.disposeAgent(agent);
    await harness.dispose();
    await leaving;
    assert.equal(await run, "aborted");
    const live = agent.session.events.map((e) => e.type);
    assert.deepEqual(live.slice(-2), ["step/end", "turn/end"]);
    // Stored whole: no repair needed to load it.
    assert.deepEqual((await storage.load("a")).events.map((e) => e.type), live);
  });
});
