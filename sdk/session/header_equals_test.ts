import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { canonicalHeader, headerEquals } from "./header_equals.ts";
import type { EpochHeader } from "./session_events.ts";

const config = { provider: "deepseek", model: "deepseek-chat" };
const tool = { name: "add", description: "Add", parameters: { type: "object", properties: { a: { type: "number" } } } };

describe("canonicalHeader()", () => {
  it("drops an empty system prompt, empty tools, empty adapter defaults and undefined fields", () => {
    assert.deepEqual(
      canonicalHeader({ config: { ...config, temperature: undefined }, system: "", tools: [], adapterDefaults: {} }),
      { config },
    );
    const full: EpochHeader = { config, system: "Be brief", tools: [tool], adapterDefaults: { maxTokens: true } };
    assert.deepEqual(canonicalHeader(full), full);
  });
});

describe("headerEquals()", () => {
  it("treats canonical-equivalent headers as equal and ignores key order in tool schemas", () => {
    assert.equal(headerEquals({ config, system: "", tools: [] }, { config }), true);
    const reordered = { ...tool, parameters: { properties: { a: { type: "number" } }, type: "object" } };
    assert.equal(headerEquals({ config, tools: [tool] }, { config, tools: [reordered] }), true);
  });

  it("tells apart every field", () => {
    const base: EpochHeader = { config: { ...config, stop: ["x"] }, system: "s", tools: [tool] };
    const variants: EpochHeader[] = [
      { ...base, config: { ...base.config, provider: "other" } },
      { ...base, config: { ...base.config, model: "other" } },
      { ...base, config: { ...base.config, reasoningEffort: "high" } },
      { ...base, config: { ...base.config, temperature: 0.5 } },
      { ...base, config: { ...base.config, maxTokens: 10 } },
      { ...base, config: { ...base.config, stop: ["y"] } },
      { ...base, adapterDefaults: { reasoningEffort: true } },
      { ...base, system: "t" },
      { ...base, tools: [{ ...tool, description: "Sum" }] },
      { ...base, tools: [tool, tool] },
    ];
    assert.equal(headerEquals(base, { ...base }), true);
    for (const variant of variants) assert.equal(headerEquals(base, variant), false, JSON.stringify(variant));
  });
});
