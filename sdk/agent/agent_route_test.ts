import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHarness } from "../harness.ts";
import type { GenerateOptions, LlmAdapter, ModelInfo } from "../llm/mod.ts";
import { memoryStorage } from "../persistence/memory_storage.ts";

// An adapter that answers with the route and sampling settings it was sent.
function echo(provider: string, models: ModelInfo[]): LlmAdapter {
  return {
    provider,
    models,
    async *stream(options: GenerateOptions) {
      const text = `${options.model} max=${options.maxTokens} effort=${options.reasoningEffort} t=${options.temperature}`;
      yield { type: "block-start", index: 0, blockType: "text" };
      yield { type: "text-delta", index: 0, text };
      yield { type: "block-end", index: 0, block: { type: "text", text } };
      yield { type: "finish", reason: { kind: "stop" } };
    },
  };
}

describe("the route of a resumed agent", () => {
  it("leaves out what the adapter filled in, which the adapter now serving the route fills in again", async () => {
    const storage = memoryStorage();
    const before = await createHarness({
      storage,
      adapters: [echo("p", [{ id: "m", reasoningEfforts: ["low", "high"], defaultReasoningEffort: "low", defaultMaxTokens: 64000 }])],
    });
    const agent = await before.createAgent({ id: "s" });
    assert.equal((await agent.run("one")).text, "m max=64000 effort=low t=undefined");
    await before.dispose();
    // The adapter's model now takes other efforts and fewer tokens.
    const after = await createHarness({
      storage,
      adapters: [echo("p", [{ id: "m", reasoningEfforts: ["medium", "high"], defaultReasoningEffort: "medium", defaultMaxTokens: 8192 }])],
    });
    try {
      const resumed = await after.resumeAgent("s");
      assert.equal((await resumed.run("two")).text, "m max=8192 effort=medium t=undefined");
    } finally {
      await after.dispose();
    }
  });

  it("keeps what the caller chose", async () => {
    const storage = memoryStorage();
    const models: ModelInfo[] = [{ id: "m", reasoningEfforts: ["low", "high"], defaultReasoningEffort: "low", defaultMaxTokens: 64000 }];
    const before = await createHarness({ storage, adapters: [echo("p", models)] });
    const agent = await before.createAgent({ id: "s", reasoningEffort: "high", maxTokens: 100, temperature: 0.5 });
    assert.equal((await agent.run("one")).text, "m max=100 effort=high t=0.5");
    await before.dispose();
    const after = await createHarness({ storage, adapters: [echo("p", models)] });
    try {
      const resumed = await after.resumeAgent("s");
      assert.equal((await resumed.run("two")).text, "m max=100 effort=high t=0.5");
    } finally {
      await after.dispose();
    }
  });
});
