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
      const text =
        `${options.model} max=${options.maxTokens} effort=${options.reasoningEffort} t=${options.temperature}`;
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
      adapters: [
        echo("p", [{
          id: "m",
          reasoningEfforts: ["low", "high"],
          defaultReasoningEffort: "low",
          defaultMaxTokens: 64000,
        }]),
      ],
    });
    const agent = await before.createAgent({ id: "s" });
    assert.equal((await agent.run("one")).text, "m max=64000 effort=low t=undefined");
    await before.dispose();
    // The adapter's model now takes other efforts and fewer tokens.
    const after = await createHarness({
      storage,
      adapters: [
        echo("p", [{
          id: "m",
          reasoningEfforts: ["medium", "high"],
          defaultReasoningEffort: "medium",
          defaultMaxTokens: 8192,
        }]),
      ],
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
    const models: ModelInfo[] = [{
      id: "m",
      reasoningEfforts: ["low", "high"],
      defaultReasoningEffort: "low",
      defaultMaxTokens: 64000,
    }];
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

describe("the harness's default route under an agent's own", () => {
  const adapters =
    () => [echo("p", [{ id: "m", reasoningEfforts: ["low", "high"] }, { id: "m2" }]), echo("q", [{ id: "qm" }])];
  const model = { provider: "p", model: "m", reasoningEffort: "high", temperature: 0.2 } as const;

  it("is taken field by field by an agent on the same route", async () => {
    const harness = await createHarness({ adapters: adapters(), model });
    try {
      const agent = await harness.createAgent({ temperature: 0.7 });
      assert.equal((await agent.run("hi")).text, "m max=undefined effort=high t=0.7");
      const same = await harness.createAgent({ provider: "p", model: "m", maxTokens: 10 });
      assert.equal((await same.run("hi")).text, "m max=10 effort=high t=0.2");
    } finally {
      await harness.dispose();
    }
  });

  it("gives none of its settings to an agent that names another provider or model", async () => {
    const storage = memoryStorage();
    const harness = await createHarness({ storage, adapters: adapters(), model });
    try {
      const other = await harness.createAgent({ id: "q", provider: "q", model: "qm" });
      assert.deepEqual(other.options, { provider: "q", model: "qm" });
      assert.equal((await other.run("hi")).text, "qm max=undefined effort=undefined t=undefined");
      // Another provider alone does not take the default's model.
      await assert.rejects(harness.createAgent({ provider: "q" }), /provider "q" without a model/);
      // Another model of the default provider keeps the provider.
      const sibling = await harness.createAgent({ model: "m2", temperature: 0.5 });
      assert.deepEqual(sibling.options, { provider: "p", model: "m2", temperature: 0.5 });
      await harness.disposeAgent("q");
      // Resumed, its recorded route stays its own.
      const resumed = await harness.resumeAgent("q");
      assert.deepEqual(resumed.options, { provider: "q", model: "qm" });
      assert.equal((await resumed.run("again")).text, "qm max=undefined effort=undefined t=undefined");
    } finally {
      await harness.dispose();
    }
  });

  it("resumeAgent overrides that name another route replace the recorded one whole", async () => {
    const storage = memoryStorage();
    const harness = await createHarness({ storage, adapters: adapters() });
    try {
      const agent = await harness.createAgent({
        id: "s",
        provider: "p",
        model: "m",
        reasoningEffort: "low",
        maxTokens: 5,
      });
      assert.equal((await agent.run("hi")).text, "m max=5 effort=low t=undefined");
      await harness.disposeAgent("s");
      const moved = await harness.resumeAgent("s", { provider: "q", model: "qm" });
      assert.equal((await moved.run("again")).text, "qm max=undefined effort=undefined t=undefined");
      await harness.disposeAgent("s");
      const tuned = await harness.resumeAgent("s", { temperature: 0.3 });
      assert.equal((await tuned.run("more")).text, "qm max=undefined effort=undefined t=0.3");
    } finally {
      await harness.dispose();
    }
  });
});
