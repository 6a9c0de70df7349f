import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { memoryStorage } from "../../mod.ts";
import { scriptedAdapter, textResponse, toolCallResponse } from "../../testing/mod.ts";
import { scenarioHarness } from "./_test_scenario.ts";

const delegateTo = (...ids: string[]) =>
  toolCallResponse(ids.map((id) => ({
    id,
    name: "task",
    arguments: JSON.stringify({ agent: "worker", description: "x", prompt: `task ${id}` }),
  })));

describe("the link of a child to its parent", () => {
  it("is stored before the child runs (a crash then leaves no child with a turn that its parent does not link)", async () => {
    const storage = memoryStorage();
    const storedLinks: string[][] = [];
    const model = scriptedAdapter(async (request) => {
      if (request.sessionId === "parent") {
        return request.messages.some((m) => m.role === "assistant") ? textResponse("done") : delegateTo("c1", "c2");
      }
      // What storage holds of the parent when the child calls its model (its own turn is stored by then).
      const { events } = await storage.inspect("parent");
      storedLinks.push(events.flatMap((e) => e.type === "subagent/spawned" ? [String(e.data.session)] : []));
      return textResponse("child answer");
    });
    const harness = await scenarioHarness(model, { storage });
    const parent = await harness.createAgent({ id: "parent" });
    assert.equal((await parent.run("go")).reason.kind, "completed");
    await harness.dispose();
    assert.equal(storedLinks.length, 2);
    for (const links of storedLinks) assert.ok(links.includes("parent.c1"), JSON.stringify(storedLinks));
    assert.ok(storedLinks.some((links) => links.includes("parent.c2")), JSON.stringify(storedLinks));
  });
});
