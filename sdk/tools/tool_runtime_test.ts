import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { createKernel, createScope, type HarnessContext, HarnessError, type KernelEvents } from "../kernel/mod.ts";
import { defineTool } from "./define_tool.ts";
import type { ToolEvents } from "./tool_events.ts";
import { ToolRuntime } from "./tool_runtime.ts";
import { echoTool, signal } from "./_test_util.ts";

type Ctx = HarnessContext<ToolEvents & KernelEvents>;

function setup() {
  const ctx: Ctx = createKernel<ToolEvents & KernelEvents>();
  return { ctx, tools: new ToolRuntime(ctx) };
}
const names = (tools: ToolRuntime, scope?: Parameters<ToolRuntime["schemas"]>[0]) =>
  tools.schemas(scope).map((s) => s.name);

describe("ToolRuntime registry", () => {
  it("schemas() carries only name, description and parameters, sorted by name", () => {
    const { tools } = setup();
    tools.register(echoTool("zeta", {
      timeoutMs: 100,
      isConcurrencySafe: () => true,
      presentCall: () => undefined,
      finalizeContent: () => undefined,
    }));
    tools.register(echoTool("alpha"));
    const schemas = tools.schemas();
    assert.deepEqual(schemas.map((s) => s.name), ["alpha", "zeta"]);
    for (const schema of schemas) assert.deepEqual(Object.keys(schema), ["name", "description", "parameters"]);
    assert.equal(JSON.stringify(schemas).includes("timeoutMs"), false);
    assert.equal(Object.isFrozen(schemas[0].parameters), true);
    assert.notEqual(schemas[0].parameters, tools.get("alpha")!.parameters);
  });

  it("a duplicate name in one layer is rejected; the same name in a scope shadows the global tool", async () => {
    const { ctx, tools } = setup();
    const global = echoTool("read");
    tools.register(global);
    assert.throws(() => tools.register(echoTool("read")), (e) => HarnessError.isInstance(e, "TOOL_ALREADY_REGISTERED"));
    const a = createScope(ctx, "a");
    const b = createScope(ctx, "b");
    const child = createScope(a.ctx, "a.child");
    const scoped = echoTool("read");
    tools.register(scoped, a.ctx);
    assert.equal(tools.get("read", a.info), scoped);
    assert.equal(tools.get("read", child.info), scoped);
    assert.equal(tools.get("read", b.info), global);
    assert.equal(tools.get("read"), global);
    await a.dispose();
    assert.equal(tools.get("read", a.info), global);
    await b.dispose();
  });

  it("a scoped registration is visible in the scope and its descendants only, and goes with the scope", async () => {
    const { ctx, tools } = setup();
    const a = createScope(ctx, "a");
    const child = createScope(a.ctx, "child");
    const sibling = createScope(ctx, "sibling");
    tools.register(echoTool("only_a"), a.ctx);
    assert.deepEqual(names(tools, a.info), ["only_a"]);
    assert.deepEqual(names(tools, child.info), ["only_a"]);
    assert.deepEqual(names(tools, sibling.info), []);
    assert.deepEqual(names(tools), []);
    const missing = await tools.execute({
      callId: "c",
      name: "only_a",
      arguments: '{"text":"x"}',
      signal,
      scope: sibling.info,
    });
    assert.equal(missing.error?.code, "UNKNOWN_TOOL");
    await a.dispose();
    assert.deepEqual(names(tools, child.info), []);
  });

  it("the disposer returned by register() removes the tool", async () => {
    const { tools } = setup();
    const off = tools.register(echoTool("x"));
    off();
    await Promise.resolve();
    assert.equal(tools.get("x"), undefined);
  });

  it("restrict() filters inherited tools, restrictions intersect, and the scope's own tools are unaffected", async () => {
    const { ctx, tools } = setup();
    for (const n of ["read", "write", "bash", "grep"]) tools.register(echoTool(n));
    const agent = createScope(ctx, "agent");
    tools.register(echoTool("report"), agent.ctx);
    const ownBash = echoTool("bash");
    tools.register(ownBash, agent.ctx); // own, shadows the global bash
    const offAllow = tools.restrict({ allow: ["read", "write", "grep"] }, agent.ctx);
    tools.restrict({ deny: ["write", "report"] }, agent.ctx);
    assert.deepEqual(names(tools, agent.info), ["bash", "grep", "read", "report"]);
    assert.equal(tools.get("bash", agent.info), ownBash);
    assert.equal(tools.get("write", agent.info), undefined);
    assert.deepEqual(names(tools), ["bash", "grep", "read", "write"]);
    offAllow();
    await Promise.resolve();
    assert.deepEqual(names(tools, agent.info), ["bash", "grep", "read", "report"]);
    const denied = await tools.execute({
      callId: "c",
      name: "write",
      arguments: '{"text":"x"}',
      signal,
      scope: agent.info,
    });
    assert.equal(denied.error?.code, "UNKNOWN_TOOL");
    await agent.dispose();
  });

  it("a child scope inherits its parent's restricted view; a deny-only filter admits later tools", () => {
    const { ctx, tools } = setup();
    tools.register(echoTool("read"));
    tools.register(echoTool("write"));
    const parent = createScope(ctx, "parent");
    const child = createScope(parent.ctx, "child");
    tools.restrict({ deny: ["write"] }, parent.ctx);
    tools.register(echoTool("own"), child.ctx);
    assert.deepEqual(names(tools, child.info), ["own", "read"]);
    tools.register(echoTool("later"));
    assert.deepEqual(names(tools, child.info), ["later", "own", "read"]);
    tools.restrict({ allow: ["read"] }, child.info);
    assert.deepEqual(names(tools, child.info), ["own", "read"]);
  });

  it("restrictGlobal() filters the global tools in every view, not a scope's own, and lifts with its owner", async () => {
    const { ctx, tools } = setup();
    const child = createScope(ctx, "child");
    tools.register(echoTool("read"));
    tools.register(echoTool("write"));
    tools.register(echoTool("own"), child.ctx);
    const lift = tools.restrictGlobal({ allow: ["read"] });
    assert.deepEqual(names(tools), ["read"]);
    assert.deepEqual(names(tools, child.info), ["own", "read"]);
    assert.equal(tools.get("write"), undefined);
    assert.equal(tools.registered("write"), true);
    const result = await tools.execute({ callId: "c1", name: "write", arguments: "{}", signal, scope: child.info });
    assert.equal(result.error?.code, "UNKNOWN_TOOL");
    lift();
    assert.deepEqual(names(tools, child.info), ["own", "read", "write"]);
    assert.throws(() => tools.restrictGlobal({}), (e: unknown) => HarnessError.isInstance(e, "INVALID_ARGS"));
  });

  it("restrict() refuses a filter outside a scope and an empty filter", () => {
    const { ctx, tools } = setup();
    const scope = createScope(ctx, "s");
    const invalid = (e: unknown) => HarnessError.isInstance(e, "INVALID_ARGS");
    assert.throws(() => tools.restrict({ deny: ["x"] }, ctx), invalid);
    assert.throws(() => tools.restrict({}, scope.ctx), invalid);
  });

  it("tools/change is announced on register, dispose and restrict, to scoped listeners too", async () => {
    const { ctx, tools } = setup();
    const scope = createScope(ctx, "s");
    let globalHeard = 0;
    let scopedHeard = 0;
    ctx.on("tools/change", () => void globalHeard++);
    scope.ctx.on("tools/change", () => void scopedHeard++);
    const off = tools.register(echoTool("a"));
    tools.register(echoTool("b"), scope.ctx);
    tools.restrict({ deny: ["a"] }, scope.ctx);
    off();
    await Promise.resolve();
    assert.equal(globalHeard, 4);
    assert.equal(scopedHeard, 4);
  });

  it("executionMode() is parallel only for an exact true", () => {
    const { tools } = setup();
    const classify = (name: string, fn: (args: unknown) => unknown) =>
      tools.register({ ...echoTool(name), isConcurrencySafe: fn as (args: unknown) => boolean });
    classify("yes", () => true);
    classify("truthy", () => 1);
    classify("string", () => "true");
    classify("throws", () => {
      throw new Error("no");
    });
    tools.register(echoTool("undeclared"));
    tools.register(echoTool("zod_checked", { isConcurrencySafe: () => true }));
    const mode = (name: string, args = '{"text":"x"}') => tools.executionMode({ name, arguments: args });
    assert.equal(mode("yes"), "parallel");
    assert.equal(mode("yes", ""), "parallel");
    assert.equal(mode("truthy"), "exclusive");
    assert.equal(mode("string"), "exclusive");
    assert.equal(mode("throws"), "exclusive");
    assert.equal(mode("undeclared"), "exclusive");
    assert.equal(mode("unknown"), "exclusive");
    assert.equal(mode("yes", "{not json"), "exclusive");
    assert.equal(mode("zod_checked"), "parallel");
    assert.equal(mode("zod_checked", '{"text":1}'), "exclusive");
  });

  it("register() refuses an invalid definition", () => {
    const { tools } = setup();
    const tool = defineTool({
      name: "ok",
      description: "",
      parameters: z.object({}),
      output: { schema: z.string(), render: () => "" },
      execute: () => "",
    });
    assert.throws(
      () => tools.register({ ...tool, output: undefined as never }),
      (e) => HarnessError.isInstance(e, "INVALID_TOOL_DEFINITION"),
    );
    assert.throws(
      () => tools.register({ ...tool, name: "bad name" }),
      (e) => HarnessError.isInstance(e, "INVALID_TOOL_DEFINITION"),
    );
  });
});

describe("ToolRuntime subject guards", () => {
  it("a body reaches a subject only when every subject guard lets it; without guards it has no permits()", async () => {
    const { ctx, tools } = setup();
    ctx.on("tools/pre-execute", () => ({ kind: "allow" }));
    const seen: unknown[] = [];
    tools.register(echoTool("probe", {
      execute: (_args: unknown, exec: { permits?: (subject: string) => boolean }) => {
        seen.push(exec.permits === undefined ? "none" : ["src/a", "secret/b", "odd"].map((s) => exec.permits!(s)));
        return "ok";
      },
    }));
    const call = () => tools.execute({ callId: "c", name: "probe", arguments: '{"text":"x"}', signal });
    await call();
    const off = tools.subjectGuard((exec, subject) =>
      exec.name === "probe" && subject.startsWith("secret/") ? "no secrets" : undefined
    );
    tools.subjectGuard((_exec, subject) => {
      if (subject === "odd") throw new Error("cannot tell");
    });
    await call();
    off();
    await call();
    assert.deepEqual(seen, ["none", [true, false, false], [true, true, false]]);
    assert.throws(() => tools.subjectGuard("no" as never), (e) => HarnessError.isInstance(e, "INVALID_ARGS"));
  });
});

describe("ToolRuntime and the turn's signal", () => {
  it("asynchronous calls sharing one signal add one abort listener in all, not one each (Node warns past 10)", async () => {
    const { ctx, tools } = setup();
    ctx.on("tools/pre-execute", () => ({ kind: "allow" }));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => release = resolve);
    tools.register(echoTool("slow", { execute: async () => (await gate, "ok") }));
    const controller = new AbortController();
    let listeners = 0;
    const add = controller.signal.addEventListener.bind(controller.signal);
    controller.signal.addEventListener = ((type: string, ...rest: [never, never]) => {
      if (type === "abort") listeners++;
      return add(type, ...rest);
    }) as typeof controller.signal.addEventListener;
    const calls = Array.from(
      { length: 12 },
      (_, i) => tools.execute({ callId: `c${i}`, name: "slow", arguments: '{"text":"x"}', signal: controller.signal }),
    );
    await new Promise((resolve) => setTimeout(resolve, 10));
    release();
    assert.deepEqual((await Promise.all(calls)).map((r) => r.value), Array(12).fill("ok"));
    assert.ok(listeners <= 1, `${listeners} abort listeners`);
    const stopped = tools.execute({
      callId: "late",
      name: "slow",
      arguments: '{"text":"x"}',
      signal: controller.signal,
    });
    controller.abort();
    assert.equal((await stopped).error?.code, "ABORTED");
  });
});

describe("ToolRuntime result listeners", () => {
  it("an async tools/result listener that rejects is reported like one that throws", async () => {
    const { ctx, tools } = setup();
    ctx.on("tools/pre-execute", () => ({ kind: "allow" }));
    const reported: unknown[] = [];
    ctx.on("kernel/listener-error", (name, error) => void reported.push([name, (error as Error).message]));
    ctx.on("tools/result", async () => {
      await Promise.resolve();
      throw new Error("observer broke");
    });
    tools.register(echoTool("echo"));
    const result = await tools.execute({ callId: "c", name: "echo", arguments: '{"text":"x"}', signal });
    assert.equal(result.error, undefined);
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(reported, [["tools/result", "observer broke"]]);
  });

  it("a failing tools/result listener is reported to the reporters of the call's scope only", async () => {
    const { ctx, tools } = setup();
    ctx.on("tools/pre-execute", () => ({ kind: "allow" }));
    const a = createScope(ctx, "a");
    const b = createScope(ctx, "b");
    const heard: string[] = [];
    for (const [who, on] of [["root", ctx], ["a", a.ctx], ["b", b.ctx]] as const) {
      on.on("kernel/listener-error", (name) => void heard.push(`${who} heard ${name}`));
    }
    b.ctx.on("tools/result", () => {
      throw new Error("b's observer broke");
    });
    tools.register(echoTool("echo"));
    await tools.execute({ callId: "c", name: "echo", arguments: '{"text":"x"}', signal, scope: b.info });
    assert.deepEqual(heard.sort(), ["b heard tools/result", "root heard tools/result"]);
  });

  it("an async kernel/listener-error reporter that rejects is contained too", async () => {
    const { ctx, tools } = setup();
    ctx.on("tools/pre-execute", () => ({ kind: "allow" }));
    const reported: string[] = [];
    ctx.on("kernel/listener-error", async (name) => {
      reported.push(name);
      await Promise.resolve();
      throw new Error("the reporter broke");
    });
    ctx.on("tools/result", () => {
      throw new Error("observer broke");
    });
    tools.register(echoTool("echo"));
    await tools.execute({ callId: "c", name: "echo", arguments: '{"text":"x"}', signal });
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(reported, ["tools/result"]);
  });
});
