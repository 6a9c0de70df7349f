import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { isAbsolute, join, relative } from "node:path";
import { cwd } from "node:process";
import { pathToFileURL } from "node:url";
import { HarnessError } from "../kernel/harness_error.ts";
import { loadConfig } from "./mod.ts";

async function rejection(promise: Promise<unknown>, code: string): Promise<HarnessError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(HarnessError.isInstance(error), `expected a HarnessError, got ${error}`);
    assert.equal(error.code, code, error.message);
    return error;
  }
  assert.fail(`expected ${code}`);
}

describe("loadConfig()", () => {
  let dir = "";
  let base = "";
  let web = "";
  let patch = "";

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "dsh-config-"));
    await mkdir(join(dir, "profiles"));
    base = join(dir, "profiles", "base.jsonc");
    web = join(dir, "profiles", "web.jsonc");
    patch = join(dir, "patch.jsonc");
    await writeFile(
      base,
      `// the team's base profile
{
  "model": { "provider": "deepseek", "model": "deepseek-chat", "reasoningEffort": "high", "temperature": 0.2 },
  "tools": ["add", "read_file"],
  "storage": { "kind": "file", "dir": ".dsh/sessions", "compression": "zstd" },
  "plugins": ["./plugins/audit.ts", "npm:dsh-extra"],
}
`,
    );
    await writeFile(
      web,
      `{
  "adapters": {
    "xai": { "kind": "openai-compatible", "baseURL": "https://api.x.ai/v1", "apiKeyEnv": "XAI_API_KEY", "models": ["grok-3-mini"] },
  },
  "permissions": [{ "tool": "fs_*", "action": "ask" }, { "tool": "rm", "action": "deny", "reason": "Never" }],
}
`,
    );
    await writeFile(patch, `{ "model": { "temperature": null, "model": "deepseek-reasoner" }, "tools": ["add"] }`);
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("a relative cwd is relative to the process's directory: what the files name resolves against it too", async () => {
    // The same folder named absolutely and relatively (no chdir: tests share the process).
    const relativeDir = relative(cwd(), dir);
    assert.ok(!isAbsolute(relativeDir), relativeDir);
    const absolute = await loadConfig({ profiles: ["profiles/base.jsonc"] }, undefined, { cwd: dir });
    const relativeToProcess = await loadConfig({ profiles: ["profiles/base.jsonc"] }, undefined, { cwd: relativeDir });
    const expectedDir = join(dir, "profiles", ".dsh", "sessions");
    for (const { config } of [absolute, relativeToProcess]) {
      assert.equal(config.storage.kind === "file" ? config.storage.dir : undefined, expectedDir);
      assert.equal(config.plugins[0], pathToFileURL(join(dir, "profiles", "plugins", "audit.ts")).href);
    }
    await rejection(loadConfig({ profiles: [] }, undefined, { cwd: "" }), "INVALID_ARGS");
  });

  it("applies defaults, profiles in order, the patch, then overrides, with origins", async () => {
    const { config, origins } = await loadConfig(
      { profiles: [base, web], patch },
      { maxParallelToolCalls: 2, model: { model: "deepseek-chat" } },
    );
    assert.deepEqual(config.model, { provider: "deepseek", model: "deepseek-chat", reasoningEffort: "high" });
    assert.deepEqual(config.tools, ["add"]);
    assert.deepEqual(Object.keys(config.adapters), ["deepseek", "xai"]);
    assert.equal(config.permissions.length, 2);
    // A relative storage directory is relative to the file that names it.
    const sessions = join(dir, "profiles", ".dsh", "sessions").replace(/\\/g, "/");
    assert.deepEqual(config.storage, { kind: "file", dir: sessions, compression: "zstd" });
    assert.equal(config.maxParallelToolCalls, 2);
    assert.equal(origins["model.provider"], base);
    assert.equal(origins["model.reasoningEffort"], base);
    assert.equal(origins["model.model"], "overrides");
    assert.equal(origins["model.temperature"], undefined);
    assert.equal(origins["tools"], patch);
    assert.equal(origins["adapters.deepseek.apiKeyEnv"], "default");
    assert.equal(origins["adapters.xai.models"], web);
    assert.equal(origins["permissions"], web);
    assert.equal(origins["maxParallelToolCalls"], "overrides");
    assert.equal(origins["invariants"], "default");
  });

  it("resolves relative plugin specifiers against the file that names them", async () => {
    const { config } = await loadConfig({ profiles: [base] });
    assert.deepEqual(config.plugins, [
      new URL("plugins/audit.ts", pathToFileURL(join(dir, "profiles") + "/")).href,
      "npm:dsh-extra",
    ]);
  });

  it("resolves relative file paths against cwd", async () => {
    const { config, origins } = await loadConfig({ profiles: ["profiles/base.jsonc"] }, undefined, { cwd: dir });
    assert.equal(config.plugins[0], pathToFileURL(join(dir, "profiles", "plugins", "audit.ts")).href);
    assert.equal(origins["plugins"], "profiles/base.jsonc");
  });

  it("resolves relative plugin specifiers and storage.dir of the overrides against cwd", async () => {
    const { config } = await loadConfig({}, {
      plugins: ["./plugins/p.ts", "../up.ts", "npm:kept"],
      storage: { kind: "file", dir: "./sessions" },
    }, { cwd: dir });
    assert.deepEqual(config.plugins, [
      pathToFileURL(join(dir, "plugins", "p.ts")).href,
      pathToFileURL(join(dir, "..", "up.ts")).href,
      "npm:kept",
    ]);
    assert.equal(config.storage.kind === "file" && config.storage.dir, join(dir, "sessions").replace(/\\/g, "/"));
    const absolute = await loadConfig({}, { storage: { kind: "file", dir: "/var/sessions" } }, { cwd: dir });
    assert.equal(absolute.config.storage.kind === "file" && absolute.config.storage.dir, "/var/sessions");
  });

  it("reads a file named by a file: URL", async () => {
    const { config, origins } = await loadConfig({ profiles: [pathToFileURL(base).href] });
    assert.deepEqual(config.tools, ["add", "read_file"]);
    assert.equal(origins["tools"], pathToFileURL(base).href);
  });

  it("refuses profiles that are not an array with INVALID_ARGS", async () => {
    await rejection(loadConfig({ profiles: "x.jsonc" as never }), "INVALID_ARGS");
  });

  it("reports a missing file with CONFIG_NOT_FOUND naming it", async () => {
    const missing = join(dir, "nope.jsonc");
    const error = await rejection(loadConfig({ profiles: [base], patch: missing }), "CONFIG_NOT_FOUND");
    assert.equal(error.details?.file, missing);
    assert.match(error.message, /nope\.jsonc does not exist$/);
  });

  it("reports a file that cannot be read with CONFIG_UNREADABLE", async () => {
    const error = await rejection(loadConfig({ patch: dir }), "CONFIG_UNREADABLE");
    assert.equal(error.details?.file, dir);
  });

  it("reports syntax and schema errors with the file's path, line and column", async () => {
    const broken = join(dir, "broken.jsonc");
    await writeFile(broken, '{\n  "tools": ["add" "rm"]\n}\n');
    const syntax = await rejection(loadConfig({ profiles: [base, broken] }), "CONFIG_SYNTAX");
    assert.deepEqual(syntax.details, { file: broken, line: 2, column: 19 });
    assert.ok(syntax.message.includes(`${broken}:2:19`));

    const wrong = join(dir, "wrong.jsonc");
    await writeFile(wrong, '{\n  "storage": {\n    "kind": "disk"\n  }\n}\n');
    const schema = await rejection(loadConfig({ patch: wrong }), "CONFIG_SCHEMA");
    assert.equal(schema.details?.file, wrong);
    assert.equal(schema.details?.path, "storage.kind");
    assert.deepEqual([schema.details?.line, schema.details?.column], [3, 13]);
  });

  it("refuses an inline secret in a file", async () => {
    const leaky = join(dir, "leaky.jsonc");
    await writeFile(leaky, '{\n  "adapters": { "deepseek": { "token": "t0p-s3cret" } }\n}\n');
    const error = await rejection(loadConfig({ profiles: [leaky] }), "CONFIG_INLINE_SECRET");
    assert.equal(error.details?.file, leaky);
    assert.deepEqual([error.details?.line, error.details?.column], [2, 40]);
    assert.ok(!error.message.includes("t0p-s3cret"));
  });

  it("reads through the given readFile", async () => {
    const read: string[] = [];
    const files: Record<string, string> = { "/virtual/a.jsonc": '{ "plugins": ["./p.ts"] }' };
    const { config, origins } = await loadConfig({ profiles: ["/virtual/a.jsonc"] }, undefined, {
      readFile: (path) => {
        read.push(path);
        return path in files
          ? Promise.resolve(files[path])
          : Promise.reject(Object.assign(new Error("no"), { code: "ENOENT" }));
      },
    });
    assert.deepEqual(read, ["/virtual/a.jsonc"]);
    assert.deepEqual(config.plugins, ["file:///virtual/p.ts"]);
    assert.equal(origins["plugins"], "/virtual/a.jsonc");
    await rejection(
      loadConfig({ patch: "/virtual/b.jsonc" }, undefined, {
        readFile: (p) => Promise.reject(Object.assign(new Error(p), { code: "ENOENT" })),
      }),
      "CONFIG_NOT_FOUND",
    );
    const thrown = await rejection(
      loadConfig({ patch: "/virtual/c.jsonc" }, undefined, {
        readFile: () => {
          throw new Error("disk on fire");
        },
      }),
      "CONFIG_UNREADABLE",
    );
    assert.match(thrown.message, /^Cannot read configuration file \/virtual\/c\.jsonc: disk on fire$/);
  });

  it("with no files gives the defaults plus overrides", async () => {
    const { config, origins } = await loadConfig({}, { invariants: false });
    assert.equal(config.invariants, false);
    assert.equal(origins["invariants"], "overrides");
    assert.equal(origins["model.provider"], "default");
  });
});
