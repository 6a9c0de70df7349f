import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../kernel/harness_error.ts";
import { DEFAULT_CONFIG, type HarnessConfigLayer, resolveConfig } from "./mod.ts";

/** The error `fn` throws, asserted to be a HarnessError with `code`. */
function errorOf(fn: () => unknown, code: string): HarnessError {
  try {
    fn();
  } catch (error) {
    assert.ok(HarnessError.isInstance(error), `expected a HarnessError, got ${error}`);
    assert.equal(error.code, code, error.message);
    return error;
  }
  assert.fail(`expected ${code}`);
}

describe("resolveConfig()", () => {
  it("with no layers gives the defaults, every leaf from default, deep-frozen", () => {
    const { config, origins } = resolveConfig([]);
    assert.deepEqual(config, DEFAULT_CONFIG);
    assert.deepEqual(origins, {
      "model.provider": "default",
      "model.model": "default",
      "adapters.deepseek.kind": "default",
      "adapters.deepseek.apiKeyEnv": "default",
      "adapters.deepseek.baseURL": "default",
      "permissions": "default",
      "storage.kind": "default",
      "plugins": "default",
      "maxParallelToolCalls": "default",
      "invariants": "default",
    });
    assert.ok(Object.isFrozen(config) && Object.isFrozen(config.model) && Object.isFrozen(config.adapters.deepseek));
    assert.ok(Object.isFrozen(origins));
  });

  it("applies layers in order: later layers win, objects merge deeply", () => {
    const { config, origins } = resolveConfig([
      {
        name: "profiles/base.jsonc",
        value: { model: { model: "deepseek-reasoner", temperature: 0.2 }, invariants: false },
      },
      { name: "profiles/web.jsonc", value: { model: { temperature: 0.7, maxTokens: 4096 } } },
      { name: "patch.jsonc", value: { model: { maxTokens: 8192 }, maxParallelToolCalls: 3 } },
      { name: "overrides", value: { maxParallelToolCalls: 1 } },
    ]);
    assert.deepEqual(config.model, {
      provider: "deepseek",
      model: "deepseek-reasoner",
      temperature: 0.7,
      maxTokens: 8192,
    });
    assert.equal(config.maxParallelToolCalls, 1);
    assert.equal(config.invariants, false);
    assert.equal(origins["model.provider"], "default");
    assert.equal(origins["model.model"], "profiles/base.jsonc");
    assert.equal(origins["model.temperature"], "profiles/web.jsonc");
    assert.equal(origins["model.maxTokens"], "patch.jsonc");
    assert.equal(origins["maxParallelToolCalls"], "overrides");
    assert.equal(origins["invariants"], "profiles/base.jsonc");
  });

  it("removes an inherited value when a later layer sets it to null", () => {
    const { config, origins } = resolveConfig([
      { name: "base", value: { model: { temperature: 0.2 }, tools: ["add"] } },
      { name: "patch", value: { model: { temperature: null }, tools: null, adapters: { deepseek: null } } },
    ]);
    assert.equal("temperature" in config.model, false);
    assert.equal("tools" in config, false);
    assert.deepEqual(config.adapters, {});
    assert.equal(origins["model.temperature"], undefined);
    assert.equal(origins["tools"], undefined);
    assert.equal(origins["adapters.deepseek.kind"], undefined);
    assert.equal(origins["adapters"], "patch", "an emptied object is a leaf");
  });

  it("replaces arrays instead of merging them", () => {
    const { config, origins } = resolveConfig([
      {
        name: "base",
        value: { tools: ["add", "read_file", "rm"], permissions: [{ tool: "fs_*", action: "ask" }] },
      },
      { name: "patch", value: { tools: ["add"], permissions: [{ tool: "rm", action: "deny", reason: "no" }] } },
    ]);
    assert.deepEqual(config.tools, ["add"]);
    assert.deepEqual(config.permissions, [{ tool: "rm", action: "deny", reason: "no" }]);
    assert.equal(origins["tools"], "patch");
    assert.equal(origins["permissions"], "patch");
    assert.equal(origins["permissions[0].tool"], undefined, "arrays are leaves");
  });

  it("replaces an object whose kind changes instead of merging it", () => {
    const { config, origins } = resolveConfig([
      { name: "base", value: { storage: { kind: "file", dir: ".dsh/sessions", compression: "zstd" } } },
      { name: "patch", value: { storage: { kind: "memory" } } },
    ]);
    assert.deepEqual(config.storage, { kind: "memory" });
    assert.equal(origins["storage.kind"], "patch");
    assert.equal(origins["storage.dir"], undefined);

    const same = resolveConfig([
      { name: "base", value: { storage: { kind: "file", dir: "a" } } },
      { name: "patch", value: { storage: { kind: "file", compression: "none" } } },
    ]);
    assert.deepEqual(same.config.storage, { kind: "file", dir: "a", compression: "none" });
    assert.equal(same.origins["storage.dir"], "base");
  });

  it("merges adapters by name and names unusual keys with brackets in origins", () => {
    const { config, origins } = resolveConfig([
      {
        name: "base",
        value: {
          adapters: {
            "xai": { kind: "openai-compatible", baseURL: "https://api.x.ai/v1", apiKeyEnv: "XAI_API_KEY" },
            "my.proxy": { kind: "openai-compatible", baseURL: "http://127.0.0.1:8080/v1" },
          },
        },
      },
      { name: "patch", value: { adapters: { xai: { models: ["grok-3-mini"] } } } },
    ]);
    assert.deepEqual(config.adapters.xai, {
      kind: "openai-compatible",
      baseURL: "https://api.x.ai/v1",
      apiKeyEnv: "XAI_API_KEY",
      models: ["grok-3-mini"],
    });
    assert.equal(config.adapters.deepseek.kind, "deepseek");
    assert.equal(origins["adapters.xai.baseURL"], "base");
    assert.equal(origins["adapters.xai.models"], "patch");
    assert.equal(origins['adapters["my.proxy"].kind'], "base");
  });

  it("parses JSONC text when no value is given: comments and trailing commas are allowed", () => {
    const text = `// base profile
{
  /* the model */
  "model": { "model": "deepseek-reasoner", },
  "tools": ["add",],
}
`;
    const { config } = resolveConfig([{ name: "base.jsonc", text }]);
    assert.equal(config.model.model, "deepseek-reasoner");
    assert.deepEqual(config.tools, ["add"]);
    const empty = resolveConfig([{ name: "empty.jsonc", text: "// nothing yet\n" }]);
    assert.deepEqual(empty.config, DEFAULT_CONFIG);
  });

  it("reports a syntax error with file, line and column", () => {
    const text = `{
  "model": {
    "model": "deepseek-chat"
    "temperature": 0.2
  }
}`;
    const error = errorOf(() => resolveConfig([{ name: "profiles/base.jsonc", text }]), "CONFIG_SYNTAX");
    assert.deepEqual(error.details, { file: "profiles/base.jsonc", line: 4, column: 5 });
    assert.match(error.message, /profiles\/base\.jsonc:4:5/);
    assert.match(error.message, /expected a comma/);
  });

  it("refuses a programmatic value nested past 256 levels (or cyclic) with CONFIG_SYNTAX, not a stack overflow", () => {
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const value of [{ tools: deep }, { hooks: cyclic }]) {
      const error = errorOf(() => resolveConfig([{ name: "o", value }]), "CONFIG_SYNTAX");
      assert.match(error.message, /^Invalid configuration in o: values nest deeper than 256 levels$/);
    }
  });

  it("reports a schema error at the offending value, with file, line and column", () => {
    const text = `{
  "model": {
    "temperature": "hot"
  }
}`;
    const error = errorOf(() => resolveConfig([{ name: "base.jsonc", text }]), "CONFIG_SCHEMA");
    assert.equal(error.details?.file, "base.jsonc");
    assert.equal(error.details?.line, 3);
    assert.equal(error.details?.column, 20);
    assert.equal(error.details?.path, "model.temperature");
    assert.match(error.message, /^Invalid configuration in base\.jsonc:3:20: model\.temperature: /);
  });

  it("reports an unknown key at the key itself, and array elements by index", () => {
    const unknown = errorOf(
      () => resolveConfig([{ name: "a.jsonc", text: '{\n  "model": { "temprature": 1 }\n}' }]),
      "CONFIG_SCHEMA",
    );
    assert.deepEqual([unknown.details?.line, unknown.details?.column], [2, 14]);
    assert.equal(unknown.details?.path, "model.temprature");
    assert.match(unknown.message, /unknown key "temprature"/);

    const text = '{ "permissions": [\n  { "tool": "a", "action": "allow" },\n  { "tool": "b", "action": "maybe" }\n] }';
    const element = errorOf(() => resolveConfig([{ name: "b.jsonc", text }]), "CONFIG_SCHEMA");
    assert.equal(element.details?.path, "permissions[1].action");
    assert.deepEqual([element.details?.line, element.details?.column], [3, 28]);
  });

  it("refuses a tool listed twice at the repeat, and a hook matcher that is not a regular expression", () => {
    const twice = errorOf(
      () => resolveConfig([{ name: "t.jsonc", text: '{\n  "tools": ["add", "rm", "add"]\n}' }]),
      "CONFIG_SCHEMA",
    );
    assert.equal(twice.details?.path, "tools[2]");
    assert.deepEqual([twice.details?.line, twice.details?.column], [2, 26]);
    assert.match(twice.message, /"add" is listed twice/);
    const text = '{ "hooks": { "PreToolUse": [{ "matcher": "Edit(", "hooks": [] }] } }';
    const matcher = errorOf(() => resolveConfig([{ name: "h.jsonc", text }]), "CONFIG_SCHEMA");
    assert.equal(matcher.details?.path, "hooks.PreToolUse[0].matcher");
    assert.deepEqual([matcher.details?.line, matcher.details?.column], [1, 42]);
    for (const ok of ["", "*", "Edit|Write", "mcp__.*"]) {
      resolveConfig([{ name: "h", value: { hooks: { PreToolUse: [{ matcher: ok, hooks: [] }] } } }]);
    }
  });

  it("points at the last of repeated keys, the one that takes effect", () => {
    const text = (a: number, b: number) =>
      `{\n  "maxParallelToolCalls": 4,\n  "model": { "temperature": 1 },\n  "maxParallelToolCalls": ${a},\n` +
      `  "model": { "temperature": ${b} }\n}`;
    const error = errorOf(() => resolveConfig([{ name: "dup.jsonc", text: text(0, 1) }]), "CONFIG_SCHEMA");
    assert.equal(error.details?.path, "maxParallelToolCalls");
    assert.deepEqual([error.details?.line, error.details?.column], [4, 27]);
    const deeper = errorOf(() => resolveConfig([{ name: "dup.jsonc", text: text(2, 9) }]), "CONFIG_SCHEMA");
    assert.equal(deeper.details?.path, "model.temperature");
    assert.deepEqual([deeper.details?.line, deeper.details?.column], [5, 29]);
  });

  it("lists every schema issue in details", () => {
    const error = errorOf(
      () => resolveConfig([{ name: "c", value: { maxParallelToolCalls: 0, invariants: "yes" } }]),
      "CONFIG_SCHEMA",
    );
    const issues = error.details?.issues as { path: string }[];
    assert.deepEqual(issues.map((i) => i.path).sort(), ["invariants", "maxParallelToolCalls"]);
    assert.equal(error.details?.line, undefined, "a layer without text has no position");
  });

  it("refuses a hook timeout under 1 ms, which hookBridge() would refuse at start", () => {
    const hooks = (timeout: number) => ({
      hooks: { Stop: [{ hooks: [{ type: "command", command: "true", timeout }] }] },
    });
    const error = errorOf(() => resolveConfig([{ name: "c", value: hooks(0.0004) }]), "CONFIG_SCHEMA");
    assert.match(JSON.stringify(error.details?.issues), /timeout/);
    assert.equal(resolveConfig([{ name: "c", value: hooks(0.001) }]).config.hooks?.Stop?.[0]?.hooks[0]?.timeout, 0.001);
  });

  it("refuses a layer that is not an object", () => {
    const error = errorOf(() => resolveConfig([{ name: "list.jsonc", text: "[1, 2]" }]), "CONFIG_SCHEMA");
    assert.deepEqual([error.details?.line, error.details?.column], [1, 1]);
  });

  it("checks the effective configuration and blames the layer that broke it", () => {
    const text = '{\n  "adapters": {\n    "xai": { "kind": "openai-compatible" }\n  }\n}';
    const missing = errorOf(() => resolveConfig([{ name: "xai.jsonc", text }]), "CONFIG_SCHEMA");
    assert.equal(missing.details?.file, "xai.jsonc");
    assert.equal(missing.details?.path, "adapters.xai.baseURL");
    assert.deepEqual([missing.details?.line, missing.details?.column], [3, 12]);

    const removed = errorOf(
      () => resolveConfig([{ name: "patch.jsonc", text: '{ "model": { "provider": null } }' }]),
      "CONFIG_SCHEMA",
    );
    assert.equal(removed.details?.file, "patch.jsonc");
    assert.equal(removed.details?.path, "model.provider");
    assert.deepEqual([removed.details?.line, removed.details?.column], [1, 26]);

    const leftover = errorOf(
      () => resolveConfig([{ name: "patch", value: { storage: { dir: "x" } } }]),
      "CONFIG_SCHEMA",
    );
    assert.equal(leftover.details?.path, "storage.dir", "a memory store has no dir");

    // A layer that replaces an object (another kind, or null then set again) is blamed for what is missing in it,
    // not the layer whose value it discarded.
    const rekinded = errorOf(
      () =>
        resolveConfig([{
          name: "user.jsonc",
          text: '{\n  "adapters": {\n    "deepseek": { "kind": "openai-compatible" }\n  }\n}',
        }]),
      "CONFIG_SCHEMA",
    );
    assert.deepEqual([rekinded.details?.file, rekinded.details?.path], ["user.jsonc", "adapters.deepseek.baseURL"]);
    for (
      const middle of ['{ "storage": { "kind": "memory" } }', '{ "storage": null }']
    ) {
      const layered = errorOf(
        () =>
          resolveConfig([
            { name: "a.jsonc", text: '{ "storage": { "kind": "file", "dir": "d" } }' },
            { name: "b.jsonc", text: middle },
            { name: "c.jsonc", text: '{\n  "storage": { "kind": "file" }\n}' },
          ]),
        "CONFIG_SCHEMA",
      );
      assert.deepEqual([layered.details?.file, layered.details?.path], ["c.jsonc", "storage.dir"], middle);
    }
  });

  it("refuses an inline secret by key, naming file, line and column but not the secret", () => {
    const secret = "abc123-not-a-real-key";
    const text = `{\n  "adapters": {\n    "deepseek": { "apiKey": "${secret}" }\n  }\n}`;
    const error = errorOf(() => resolveConfig([{ name: "base.jsonc", text }]), "CONFIG_INLINE_SECRET");
    assert.equal(error.details?.file, "base.jsonc");
    assert.equal(error.details?.path, "adapters.deepseek.apiKey");
    assert.deepEqual([error.details?.line, error.details?.column], [3, 29]);
    assert.match(error.message, /base\.jsonc:3:29/);
    assert.ok(!error.message.includes(secret) && !JSON.stringify(error.details).includes(secret));
  });

  it("refuses a key inside a longer value (a hook command, a URL's query), not naming the secret", () => {
    const secret = "sk-abcdefghijklmnopqrstuvwx";
    const text =
      `{ "hooks": { "Stop": [{ "hooks": [{ "type": "command", "command": "curl -H 'Authorization: Bearer ${secret}' x" }] }] } }`;
    const error = errorOf(() => resolveConfig([{ name: "h.jsonc", text }]), "CONFIG_INLINE_SECRET");
    assert.equal(error.details?.path, "hooks.Stop[0].hooks[0].command");
    assert.ok(!error.message.includes(secret));
    const url = "https://gw.example.com/v1?key=q7Hk2mZp9XvB4nL8sT1wR6yC3dF5gJ0a";
    const value = { adapters: { p: { kind: "openai-compatible", baseURL: url } } };
    assert.equal(
      errorOf(() => resolveConfig([{ name: "p", value }]), "CONFIG_INLINE_SECRET").details?.path,
      "adapters.p.baseURL",
    );
  });

  it("refuses a value that looks like a provider key, wherever it is", () => {
    const key = "sk-0123456789abcdef0123456789abcdef";
    const text = `{ "adapters": { "deepseek": { "apiKeyEnv": "${key}" } } }`;
    const error = errorOf(() => resolveConfig([{ name: "a.jsonc", text }]), "CONFIG_INLINE_SECRET");
    assert.equal(error.details?.path, "adapters.deepseek.apiKeyEnv");
    assert.deepEqual([error.details?.line, error.details?.column], [1, 44]);
    assert.ok(!error.message.includes(key));

    const overrides = errorOf(
      () => resolveConfig([{ name: "overrides", value: { plugins: ["./a.ts", key] } }]),
      "CONFIG_INLINE_SECRET",
    );
    assert.equal(overrides.details?.file, "overrides");
    assert.equal(overrides.details?.path, "plugins[1]");
    for (const token of ["token", "password", "secret", "clientSecret", "access_token"]) {
      errorOf(() => resolveConfig([{ name: "o", value: { model: { [token]: "x" } } }]), "CONFIG_INLINE_SECRET");
    }
  });

  it("resolves relative plugin specifiers against the layer's URL and keeps the others", () => {
    const { config, origins } = resolveConfig([
      {
        name: "profiles/base.jsonc",
        url: "file:///home/me/.dsh/profiles/base.jsonc",
        value: { plugins: ["./plugins/audit.ts", "../common/log.ts", "npm:dsh-plugin", "@acme/plugin"] },
      },
    ]);
    assert.deepEqual(config.plugins, [
      "file:///home/me/.dsh/profiles/plugins/audit.ts",
      "file:///home/me/.dsh/common/log.ts",
      "npm:dsh-plugin",
      "@acme/plugin",
    ]);
    assert.equal(origins["plugins"], "profiles/base.jsonc");
    const bare = resolveConfig([{ name: "overrides", value: { plugins: ["./local.ts"] } }]);
    assert.deepEqual(bare.config.plugins, ["./local.ts"]);
  });

  it("resolves a relative storage.dir against the layer's URL to a path, and keeps an absolute one", () => {
    const url = "file:///srv/dsh/profiles/base.jsonc";
    const dir = (value: string, at: string | null = url) => {
      const layer = {
        name: "p",
        ...(at !== null ? { url: at } : {}),
        value: { storage: { kind: "file", dir: value } },
      };
      const { config } = resolveConfig([layer]);
      return config.storage.kind === "file" ? config.storage.dir : undefined;
    };
    assert.equal(dir("sessions"), "/srv/dsh/profiles/sessions");
    assert.equal(dir("../data dir/s"), "/srv/dsh/data dir/s");
    assert.equal(dir("/var/s"), "/var/s");
    assert.equal(dir("C:\\s"), "C:\\s");
    assert.equal(dir("s", "file:///C:/cfg/a.jsonc"), "C:/cfg/s");
    assert.equal(dir("s", "https://example.com/a.jsonc"), "s");
    assert.equal(dir("s", null), "s");
  });

  it("refuses a layer url that is not a URL with INVALID_ARGS", () => {
    const error = errorOf(() => resolveConfig([{ name: "p", url: "not a url", value: {} }]), "INVALID_ARGS");
    assert.match(error.message, /"p" has an invalid url/);
  });

  it("leaves the given layer values untouched", () => {
    const layer: HarnessConfigLayer = { model: { temperature: 1 }, tools: ["a"] };
    const snapshot = structuredClone(layer);
    const { config } = resolveConfig([{ name: "o", value: layer }]);
    assert.deepEqual(layer, snapshot);
    assert.notEqual(config.tools, layer.tools);
    assert.equal(Object.isFrozen(layer.tools), false);
  });

  it("refuses malformed arguments with INVALID_ARGS", () => {
    errorOf(() => resolveConfig({} as never), "INVALID_ARGS");
    errorOf(() => resolveConfig([{ name: "", value: {} }]), "INVALID_ARGS");
  });

  it("treats undefined fields of a programmatic layer as not set", () => {
    const { config, origins } = resolveConfig([{ name: "o", value: { invariants: undefined } }]);
    assert.equal(config.invariants, true);
    assert.equal(origins["invariants"], "default");
  });
});
