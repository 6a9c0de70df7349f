import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { dumpConfig, resolveConfig } from "./mod.ts";

describe("dumpConfig()", () => {
  it("prints one aligned line per leaf with the layer it came from", () => {
    const loaded = resolveConfig([
      {
        name: "profiles/base.jsonc",
        value: {
          model: { model: "deepseek-reasoner" },
          adapters: { deepseek: null },
          tools: ["add", "read_file"],
          storage: { kind: "file", dir: ".dsh/sessions" },
        },
      },
      { name: "overrides", value: { invariants: false, adapters: { "my.proxy": { kind: "deepseek" } } } },
    ]);
    assert.deepEqual(dumpConfig(loaded).split("\n"), [
      'model.provider = "deepseek"              # from default',
      'model.model = "deepseek-reasoner"        # from profiles/base.jsonc',
      'adapters["my.proxy"].kind = "deepseek"   # from overrides',
      "permissions = []                         # from default",
      'storage.kind = "file"                    # from profiles/base.jsonc',
      'storage.dir = ".dsh/sessions"            # from profiles/base.jsonc',
      "plugins = []                             # from default",
      "maxParallelToolCalls = 10                # from default",
      "invariants = false                       # from overrides",
      'tools = ["add","read_file"]              # from profiles/base.jsonc',
    ]);
  });

  it("prints an emptied object as a leaf, and does not align on very long lines", () => {
    const long = Array.from({ length: 12 }, (_, i) => `tool_number_${i}`);
    const loaded = resolveConfig([{ name: "patch", value: { adapters: { deepseek: null }, tools: long } }]);
    const lines = dumpConfig(loaded).split("\n");
    assert.ok(lines.includes("adapters = {}                   # from patch"));
    assert.ok(lines.includes(`tools = ${JSON.stringify(long)}   # from patch`));
  });
});
