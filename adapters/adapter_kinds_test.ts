import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { adapterKinds } from "./adapter_kinds.ts";
import { DEEPSEEK_MODELS } from "./deepseek_adapter.ts";

describe("adapterKinds", () => {
  it("deepseek serves the configured models instead of its catalogue, keeping what the catalogue knows", () => {
    const build = (models?: string[]) =>
      adapterKinds.deepseek({
        kind: "deepseek",
        provider: "deepseek",
        apiKey: "k",
        ...(models !== undefined ? { models } : {}),
      });
    assert.deepEqual(build().models, DEEPSEEK_MODELS);
    assert.deepEqual(build(["deepseek-v4", "deepseek-chat"]).models, [{ id: "deepseek-v4" }, DEEPSEEK_MODELS[0]]);
  });

  it("openai-compatible serves the configured models", () => {
    const adapter = adapterKinds["openai-compatible"]({
      kind: "openai-compatible",
      provider: "x",
      apiKey: undefined,
      baseURL: "https://example.com/v1",
      models: ["m1"],
    });
    assert.deepEqual(adapter.models.map((m) => m.id), ["m1"]);
  });
});
