import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { createHarness, type HarnessCtx } from "./harness.ts";
import { resolveConfig } from "./config/mod.ts";
import { defineTool, programmaticApprover } from "./tools/mod.ts";
import { scriptedAdapter, textResponse, toolCallResponse } from "../testing/scripted_adapter.ts";
import { counterClock, counterIds } from "./agent/_test_support.ts";
import { TurnFailedError } from "./agent/mod.ts";
import { HarnessError } from "./kernel/mod.ts";
import { fileStorage, fileStorageKind } from "./persistence/mod.ts";

const echo = (name: string) =>
  defineTool({
    name,
    description: `The ${name} tool`,
    parameters: z.object({}),
    output: { schema: z.string(), render: (_a, v) => v },
    execute: () => `${name} ran`,
  });

const kinds = (script: Parameters<typeof scriptedAdapter>[0]) => ({
  scripted: (input: { provider: string; apiKey: string | undefined }) => {
    seenKeys.push(input.apiKey);
    return scriptedAdapter(script, { provider: input.provider, models: [{ id: "m1" }] });
  },
});
const seenKeys: (string | undefined)[] = [];

type Rule = { tool: string; action: "allow" | "deny" | "ask" };

const DEFAULT_ASK_WORDS = "the tool changes files or runs commands, which asks for approval by default";

/** A configuration with the local scripted route and these permission rules. */
const withRules = (permissions: Rule[]) =>
  resolveConfig([{
    name: "p",
    value: {
      model: { provider: "local", model: "m1" },
      adapters: { deepseek: null, local: { kind: "scripted" } },
      permissions,
    },
  }]);

describe("createHarness({ config })", () => {
  it("builds adapters, model, enabled tools and permission rules from configuration", async () => {
    const loaded = resolveConfig([{
      name: "profile",
      value: {
        model: { provider: "local", model: "m1" },
        adapters: { deepseek: null, local: { kind: "scripted", apiKeyEnv: "LOCAL_KEY" } },
        tools: ["read", "rm"],
        permissions: [{ tool: "r*", action: "allow" }, { tool: "rm", action: "deny", reason: "never delete" }],
      },
    }]);
    const harness = await createHarness({
      config: loaded,
      adapterKinds: kinds([
        toolCallResponse([{ id: "c1", name: "read", arguments: "{}" }, { id: "c2", name: "rm", arguments: "{}" }]),
        textResponse("done"),
      ]),
      env: (name) => (name === "LOCAL_KEY" ? "from-env" : undefined),
      tools: [echo("read"), echo("rm"), echo("write")],
      now: counterClock(),
      newId: counterIds(),
    });
    assert.equal(seenKeys.at(-1), "from-env");
    assert.deepEqual(harness.ctx.service("tools").schemas().map((t) => t.name), ["read", "rm"]);
    const agent = await harness.createAgent();
    assert.equal(agent.options.provider, "local");
    await agent.run("go");
    const results = agent.session.events.filter((e) => e.type === "tool/result").map((e) =>
      e.type === "tool/result" ? e.data.error?.code ?? "ok" : ""
    );
    assert.deepEqual(results, ["ok", "DENIED"]);
    await harness.dispose();
  });

  it("asks for write tools by default; an allowing rule overrides that default but not a listener's decision", async () => {
    const writer = (name: string) =>
      defineTool({
        name,
        description: name,
        parameters: z.object({ path: z.string() }),
        output: { schema: z.string(), render: (_a, v) => v },
        access: "write",
        permissionSubject: (args) => args.path,
        execute: ({ path }) => path,
      });
    const calls = [
      { id: "c1", name: "w", arguments: '{"path":"src/a.ts"}' },
      { id: "c2", name: "w", arguments: '{"path":"secret/b"}' },
      { id: "c3", name: "v", arguments: '{"path":"src/c.ts"}' },
    ];
    const run = async (permissions: Rule[], vetoV: boolean) => {
      const harness = await createHarness({
        config: withRules(permissions),
        adapterKinds: kinds([toolCallResponse(calls), textResponse("done")]),
        tools: [writer("w"), writer("v")],
        plugins: [(ctx) => {
          // A listener's own ask, in the very words of the default ask: still its own.
          const own = { kind: "ask" as const, reason: DEFAULT_ASK_WORDS };
          ctx.on("tools/pre-execute", (exec, next) => vetoV && exec.name === "v" ? own : next());
        }],
        now: counterClock(),
        newId: counterIds(),
      });
      const agent = await harness.createAgent();
      await agent.run("go");
      const codes = agent.session.events.flatMap((e) => e.type === "tool/result" ? [e.data.error?.code ?? "ok"] : []);
      await harness.dispose();
      return codes;
    };
    // No approver: every ask is denied.
    assert.deepEqual(await run([], false), ["DENIED", "DENIED", "DENIED"]);
    assert.deepEqual(await run([{ tool: "*(src/*)", action: "allow" }], false), ["ok", "DENIED", "ok"]);
    assert.deepEqual(await run([{ tool: "*(src/*)", action: "allow" }], true), ["ok", "DENIED", "DENIED"]);
  });

  it("an asking rule still consults the other listeners: their denial stands, their allow becomes the ask", async () => {
    const run = async (listener: "deny" | "allow" | "rewrite", approve: boolean) => {
      const seen: unknown[] = [];
      const harness = await createHarness({
        // (No `echo(bad)` rule here: echo names no permission subject, so such a rule could never match.)
        config: withRules([{ tool: "echo", action: "ask" }]),
        adapterKinds: kinds([toolCallResponse([{ id: "c1", name: "echo", arguments: "{}" }]), textResponse("done")]),
        tools: [echo("echo")],
        plugins: [(ctx) => {
          ctx.service("approvals").register(programmaticApprover(() => approve));
          // Registered after the rules' listener, so it runs inside it, as a PreToolUse hook does.
          ctx.on("tools/pre-execute", (exec) => {
            seen.push(exec.name);
            if (listener === "deny") return { kind: "deny", reason: "the hook says no" };
            return listener === "rewrite" ? { kind: "allow", input: {} } : { kind: "allow" };
          });
        }],
        now: counterClock(),
        newId: counterIds(),
      });
      const agent = await harness.createAgent();
      await agent.run("go");
      const result = agent.session.events.find((e) => e.type === "tool/result");
      await harness.dispose();
      assert.deepEqual(seen, ["echo"], "the listener is consulted");
      return result?.type === "tool/result" ? result.data.error?.code ?? "ok" : "none";
    };
    assert.equal(await run("deny", true), "DENIED", "the listener's denial wins over the user's approval");
    assert.equal(await run("allow", true), "ok");
    assert.equal(await run("allow", false), "DENIED", "the listener's allow is still asked");
    assert.equal(await run("rewrite", false), "DENIED", "rewritten input is still asked");
    assert.equal(await run("rewrite", true), "ok");
  });

  it("judges arguments a listener rewrote (a hook's updatedInput) by the rules, as the model's are", async () => {
    const tool = defineTool({
      name: "r",
      description: "r",
      parameters: z.object({ path: z.string() }),
      output: { schema: z.string(), render: (_a, v) => v },
      permissionSubject: (args) => args.path,
      execute: ({ path }) => `read ${path}`,
    });
    const run = async (rewriteTo: string, permissions: Rule[]) => {
      const harness = await createHarness({
        config: withRules(permissions),
        adapterKinds: kinds([
          toolCallResponse([{ id: "c1", name: "r", arguments: '{"path":"docs/a"}' }]),
          textResponse("done"),
        ]),
        tools: [tool],
        // Registered after the rules' listener, so it runs inside it, as the hook bridge does.
        plugins: [(ctx) => {
          ctx.on("tools/pre-execute", () => ({ kind: "allow", input: { path: rewriteTo } }));
        }],
        now: counterClock(),
        newId: counterIds(),
      });
      const agent = await harness.createAgent();
      await agent.run("go");
      const result = agent.session.events.find((e) => e.type === "tool/result");
      await harness.dispose();
      return result?.type === "tool/result" ? result.data.error?.code ?? "ok" : "none";
    };
    assert.equal(await run("secret/key", [{ tool: "r(secret/*)", action: "deny" }]), "DENIED");
    assert.equal(await run("docs/b", [{ tool: "r(secret/*)", action: "deny" }]), "ok");
    // An ask for the rewritten subject: no approver here, so it is denied.
    assert.equal(await run("secret/key", [{ tool: "r(secret/*)", action: "ask" }]), "DENIED");
    // The model's own arguments are still judged first.
    assert.equal(await run("docs/b", [{ tool: "r(docs/a)", action: "deny" }]), "DENIED");
  });

  it("refuses an argument rule on tools that name no permission subject: it could never match", async () => {
    const tool = defineTool({
      name: "r",
      description: "r",
      parameters: z.object({ path: z.string() }),
      output: { schema: z.string(), render: (_a, v) => v },
      permissionSubject: (args) => args.path,
      execute: ({ path }) => `read ${path}`,
    });
    const create = (permissions: Rule[]) =>
      createHarness({ config: withRules(permissions), adapterKinds: kinds([]), tools: [echo("echo"), tool] });
    for (const rule of ["echo(bad)"]) {
      await assert.rejects(
        create([{ tool: rule, action: "deny" }]),
        { code: "CONFIG_RULE_NO_SUBJECT", message: new RegExp(`"echo" names no permission subject`) },
        rule,
      );
    }
    // A plugin's tool counts: the rule is checked once the plugins have registered theirs.
    await assert.rejects(
      createHarness({
        config: withRules([{ tool: "plugged(x)", action: "deny" }]),
        adapterKinds: kinds([]),
        plugins: [(ctx: HarnessCtx) => void ctx.service("tools").register(echo("plugged"), ctx)],
      }),
      { code: "CONFIG_RULE_NO_SUBJECT" },
    );
    // A pattern that names some tool with a subject, a tool no one registered (a scope's), a plain rule, and a name
    // pattern (it may be meant for tools an agent's scope registers, which the check cannot see): accepted.
    for (
      const rules of [[{ tool: "*(secret/*)", action: "deny" }], [{ tool: "other(x)", action: "deny" }], [{
        tool: "echo",
        action: "deny",
      }], [{ tool: "ech*(x)", action: "deny" }]] as Rule[][]
    ) {
      await (await create(rules)).dispose();
    }
  });

  it("takes file storage from configuration", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-config-"));
    try {
      const loaded = resolveConfig([{
        name: "profile",
        value: {
          model: { provider: "local", model: "m1" },
          adapters: { deepseek: null, local: { kind: "scripted" } },
          storage: { kind: "file", dir },
        },
      }]);
      const harness = await createHarness({ config: loaded, adapterKinds: kinds(textResponse("hi")) });
      const agent = await harness.createAgent({ id: "stored" });
      await agent.run("hello");
      await harness.dispose();
      const loadedLog = await harness.storage!.load("stored");
      assert.equal(loadedLog.events.at(-1)?.type, "turn/end");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a configuration object built by hand names file storage through storageKinds: { file: fileStorageKind() }", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-config-"));
    try {
      const { config } = resolveConfig([{
        name: "profile",
        value: {
          model: { provider: "local", model: "m1" },
          adapters: { deepseek: null, local: { kind: "scripted" } },
          storage: { kind: "file", dir, compression: "zstd" },
        },
      }]);
      // The bare HarnessConfig carries no factory: the core does not bundle file storage unless asked to.
      await assert.rejects(
        createHarness({ config, adapterKinds: kinds(textResponse("hi")) }),
        (error: unknown) =>
          HarnessError.isInstance(error, "CONFIG_STORAGE_KIND") &&
          error.message.includes('storageKinds: { file: fileStorageKind() } from "@dsh/harness"'),
      );
      const harness = await createHarness({
        config,
        adapterKinds: kinds(textResponse("hi")),
        storageKinds: { file: fileStorageKind({ compression: "none" }) },
      });
      await (await harness.createAgent({ id: "stored" })).run("hello");
      await harness.dispose();
      assert.deepEqual((await fileStorage(dir).list()).map((h) => h.id), ["stored"]);
      assert.deepEqual(
        await readdir(join(dir, "stored")),
        ["session.v1.jsonl.zstd"],
        "the configured compression wins",
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("explicit options win over configured values", async () => {
    const loaded = resolveConfig([{
      name: "p",
      value: { model: { provider: "local", model: "m1" }, adapters: { deepseek: null, local: { kind: "scripted" } } },
    }]);
    const other = scriptedAdapter(textResponse("x"), { provider: "other", models: [{ id: "m2" }] });
    const harness = await createHarness({
      config: loaded,
      adapterKinds: kinds(textResponse("y")),
      adapters: [other],
      model: { provider: "other", model: "m2" },
    });
    const agent = await harness.createAgent();
    assert.equal((await agent.run("q")).text, "x");
    await harness.dispose();
  });

  it("an explicit adapter replaces a configured provider without building it; a partial model keeps the route", async () => {
    const loaded = resolveConfig([{
      name: "p",
      value: {
        model: { provider: "local", model: "m1", temperature: 0.7, maxTokens: 100 },
        adapters: { deepseek: null, local: { kind: "scripted" } },
      },
    }]);
    const mine = scriptedAdapter(textResponse("mine"), { provider: "local", models: [{ id: "m1" }] });
    // No factory for the configured kind: none is needed, and none is called.
    const harness = await createHarness({ config: loaded, adapters: [mine], model: { temperature: 0 } });
    const agent = await harness.createAgent();
    assert.deepEqual(
      { ...agent.options },
      { provider: "local", model: "m1", temperature: 0, maxTokens: 100 },
    );
    assert.equal((await agent.run("q")).text, "mine");
    await harness.dispose();
    let built = 0;
    const counted = await createHarness({
      config: loaded,
      adapters: [scriptedAdapter(textResponse("x"), { provider: "local", models: [{ id: "m1" }] })],
      adapterKinds: { scripted: () => (built++, mine) },
    });
    assert.equal(built, 0);
    await counted.dispose();
    // A model naming another route takes none of the configured route's settings (they were the other model's).
    const other = scriptedAdapter(textResponse("other"), { provider: "elsewhere", models: [{ id: "m2" }] });
    const moved = await createHarness({
      config: loaded,
      adapters: [mine, other],
      model: { provider: "elsewhere", model: "m2" },
    });
    assert.deepEqual({ ...(await moved.createAgent()).options }, { provider: "elsewhere", model: "m2" });
    await moved.dispose();
    // A model alone keeps the configured provider, not its other settings.
    const sibling = scriptedAdapter(textResponse("sibling"), {
      provider: "local",
      models: [{ id: "m1" }, { id: "m3" }],
    });
    const other3 = await createHarness({ config: loaded, adapters: [sibling], model: { model: "m3" } });
    assert.deepEqual({ ...(await other3.createAgent()).options }, { provider: "local", model: "m3" });
    await other3.dispose();
  });

  it("refuses a configured adapter kind with no factory, and an unknown enabled tool", async () => {
    await assert.rejects(createHarness({ config: resolveConfig([]) }), { code: "CONFIG_ADAPTER_KIND" });
    const loaded = resolveConfig([{
      name: "p",
      value: { adapters: { deepseek: null, local: { kind: "scripted" } }, tools: ["missing"] },
    }]);
    await assert.rejects(
      createHarness({ config: loaded, adapterKinds: kinds(textResponse("y")) }),
      { code: "CONFIG_UNKNOWN_TOOL" },
    );
  });

  it("the tools list holds for tools that plugins register, and may name them", async () => {
    const config = (tools: string[]) =>
      resolveConfig([{
        name: "p",
        value: {
          model: { provider: "local", model: "m1" },
          adapters: { deepseek: null, local: { kind: "scripted" } },
          tools,
        },
      }]);
    const byPlugin = (ctx: HarnessCtx) => void ctx.service("tools").register(echo("plugged"), ctx);
    const run = async (tools: string[]) => {
      const harness = await createHarness({
        config: config(tools),
        adapterKinds: kinds([toolCallResponse([{ id: "c1", name: "plugged", arguments: "{}" }]), textResponse("done")]),
        tools: [echo("given"), echo("other")],
        plugins: [byPlugin],
      });
      const agent = await harness.createAgent();
      await agent.run("go");
      const result = agent.session.events.find((e) => e.type === "tool/result");
      const seen = harness.ctx.service("tools").schemas(agent.ctx.scope).map((t) => t.name);
      await harness.dispose();
      return { seen, code: result?.type === "tool/result" ? result.data.error?.code ?? "ok" : "none" };
    };
    assert.deepEqual(await run(["given"]), { seen: ["given"], code: "UNKNOWN_TOOL" });
    assert.deepEqual(await run(["plugged"]), { seen: ["plugged"], code: "ok" });
    await assert.rejects(run(["plugged", "nowhere"]), { code: "CONFIG_UNKNOWN_TOOL", message: /"nowhere"/ });
  });

  it("refuses to import a plugin specifier still relative (it would name a file of the SDK)", async () => {
    for (const specifier of ["./plugin.ts", "../plugin.ts"]) {
      await assert.rejects(
        createHarness({
          config: resolveConfig([{ name: "p", value: { adapters: { deepseek: null }, plugins: [specifier] } }]),
        }),
        (error: unknown) =>
          HarnessError.isInstance(error, "CONFIG_PLUGIN_IMPORT") && error.message.includes(`"${specifier}"`) &&
          error.details?.specifier === specifier,
      );
    }
  });

  it("refuses a configuration object that does not fit the schema (CONFIG_SCHEMA), and a malformed permission rule", async () => {
    const whole = resolveConfig([]).config;
    for (const config of [null, "x", {}, { ...whole, model: undefined }, { ...whole, permissions: "all" }]) {
      await assert.rejects(
        createHarness({ config: config as never }),
        { code: "CONFIG_SCHEMA" },
        JSON.stringify(config),
      );
    }
    assert.throws(() => resolveConfig([{ name: "a", text: 5 as never }]), { code: "INVALID_ARGS" });
    for (const tool of ["x(", "x)", "a(b)c", "(x)"]) {
      assert.throws(
        () => resolveConfig([{ name: "p", value: { permissions: [{ tool, action: "deny" }] } }]),
        { code: "CONFIG_SCHEMA" },
        tool,
      );
    }
    resolveConfig([{ name: "p", value: { permissions: [{ tool: "bash(git *)", action: "allow" }] } }]);
  });

  it("takes maxSteps from configuration (an explicit option wins; null removes an inherited bound)", async () => {
    const value = {
      model: { provider: "local", model: "m1" },
      adapters: { deepseek: null, local: { kind: "scripted" } },
      maxSteps: 1,
    };
    const call = (n: number) => toolCallResponse([{ id: `c${n}`, name: "echo", arguments: "{}" }]);
    const steps = async (config: ReturnType<typeof resolveConfig>, maxSteps?: number) => {
      const harness = await createHarness({
        config,
        adapterKinds: kinds([call(1), call(2), textResponse("done")]),
        tools: [echo("echo")],
        ...(maxSteps === undefined ? {} : { maxSteps }),
      });
      const agent = await harness.createAgent();
      const result = await agent.run("q");
      const count = agent.session.events.filter((e) => e.type === "step/start").length;
      await harness.dispose();
      return `${result.reason.kind}/${count}`;
    };
    const loaded = resolveConfig([{ name: "p", value }]);
    assert.equal(loaded.config.maxSteps, 1);
    assert.equal(loaded.origins["maxSteps"], "p");
    assert.equal(await steps(loaded), "blocked/1");
    assert.equal(await steps(loaded, 2), "blocked/2");
    const removed = resolveConfig([{ name: "p", value }, { name: "q", value: { maxSteps: null } }]);
    assert.equal(removed.config.maxSteps, undefined);
    assert.equal(await steps(removed), "completed/3");
    assert.throws(() => resolveConfig([{ name: "p", value: { maxSteps: 0 } }]), { code: "CONFIG_SCHEMA" });
    await assert.rejects(
      createHarness({ config: { ...loaded.config, maxSteps: 1.5 } }),
      { code: "CONFIG_SCHEMA", message: /maxSteps/ },
    );
  });

  it("runs the invariants by default when built from a configuration, and a configuration may turn them off", async () => {
    const value = {
      model: { provider: "local", model: "m1" },
      adapters: { deepseek: null, local: { kind: "scripted" } },
    };
    const outcome = async (config: ReturnType<typeof resolveConfig>) => {
      const harness = await createHarness({ config, adapterKinds: kinds(textResponse("ok")) });
      const agent = await harness.createAgent();
      // A history that drifts from the log: the request-reconstruction invariant must catch it.
      agent.session.deriveMessages = () => [];
      const outcome = await agent.run("q").then(
        (result) => result.reason.kind,
        (error: unknown) => error instanceof TurnFailedError ? error.failure.code : Promise.reject(error),
      );
      await harness.dispose();
      return outcome;
    };
    const defaults = resolveConfig([{ name: "p", value }]);
    assert.equal(defaults.config.invariants, true);
    assert.equal(await outcome(defaults), "INVARIANT_REQUEST_RECONSTRUCTION");
    const off = resolveConfig([{ name: "p", value: { ...value, invariants: false } }]);
    assert.equal(await outcome(off), "completed");
  });
});
