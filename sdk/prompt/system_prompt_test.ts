import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createKernel, createScope, type HarnessContext, HarnessError, type KernelEvents } from "../kernel/mod.ts";
import type { ToolSchema } from "../llm/messages.ts";
import type { AssembleContext } from "./prompt_contributions.ts";
import { assembleForRequest, SystemPrompt } from "./system_prompt.ts";
import type { SystemPromptEvents } from "./system_prompt_events.ts";

type Ctx = HarnessContext<SystemPromptEvents & KernelEvents>;

function setup() {
  const ctx: Ctx = createKernel<SystemPromptEvents & KernelEvents>();
  return { ctx, prompt: new SystemPrompt(ctx) };
}
const schema = (name: string, extra: Record<string, unknown> = {}): ToolSchema =>
  ({ name, description: `tool ${name}`, parameters: { type: "object" }, ...extra }) as ToolSchema;

describe("SystemPrompt sections", () => {
  it("joins sections by ascending order (identity, persona, tool guidance), ties by name", async () => {
    const { prompt } = setup();
    prompt.section({ name: "guidance-b", order: 150, text: "Guide B." });
    prompt.section({ name: "persona", order: 0, text: "Persona." });
    prompt.section({ name: "guidance-a", order: 150, text: "Guide A." });
    prompt.section({ name: "identity", order: -100, text: "Identity." });
    prompt.section({ name: "empty", order: 50, text: "  " });
    assert.deepEqual(await prompt.assemble(), { system: "Identity.\n\nPersona.\n\nGuide A.\n\nGuide B." });
  });

  it("an empty prompt assembles to {} (no system, no tools)", async () => {
    const { prompt } = setup();
    prompt.section({ name: "blank", order: 0, text: "" });
    prompt.tools({ schemas: () => [] });
    assert.deepEqual(await prompt.assemble(), {});
  });

  it("a scoped section shadows the global one of the same name in that scope and its descendants only", async () => {
    const { ctx, prompt } = setup();
    prompt.section({ name: "persona", order: 0, text: "Global persona." });
    const a = createScope(ctx, "a");
    const child = createScope(a.ctx, "child");
    const b = createScope(ctx, "b");
    prompt.section({ name: "persona", order: 0, text: "Agent A persona." }, a.ctx);
    prompt.section({ name: "extra", order: 10, text: "Only A." }, a.ctx);
    assert.equal((await prompt.assemble({ scope: a.info })).system, "Agent A persona.\n\nOnly A.");
    assert.equal((await prompt.assemble({ scope: child.info })).system, "Agent A persona.\n\nOnly A.");
    assert.equal((await prompt.assemble({ scope: b.info })).system, "Global persona.");
    assert.equal((await prompt.assemble()).system, "Global persona.");
    await a.dispose();
    assert.equal((await prompt.assemble({ scope: child.info })).system, "Global persona.");
  });

  it("dynamic text is evaluated at every assembly with that assembly's context", async () => {
    const { ctx, prompt } = setup();
    let n = 0;
    const seen: (string | undefined)[] = [];
    prompt.section({
      name: "clock",
      order: 0,
      text: async (context: AssembleContext) => {
        seen.push(context.scope?.key);
        await Promise.resolve();
        return `Assembly ${++n}.`;
      },
    });
    const scope = createScope(ctx, "s");
    assert.equal((await prompt.assemble()).system, "Assembly 1.");
    assert.equal((await prompt.assemble({ scope: scope.info })).system, "Assembly 2.");
    assert.deepEqual(seen, [undefined, "s"]);
  });

  it("refuses duplicates in one layer, bad orders and a second complete section", () => {
    const { ctx, prompt } = setup();
    prompt.section({ name: "persona", order: 0, text: "x" });
    const exists = (e: unknown) => HarnessError.isInstance(e, "PROMPT_ENTRY_EXISTS");
    assert.throws(() => prompt.section({ name: "persona", order: 1, text: "y" }), exists);
    assert.throws(
      () => prompt.section({ name: "n", order: Number.NaN, text: "y" }),
      (e) => HarnessError.isInstance(e, "INVALID_ARGS"),
    );
    prompt.section({ name: "full", order: 0, text: "Full.", complete: true });
    assert.throws(() => prompt.section({ name: "full2", order: 0, text: "Other.", complete: true }), exists);
    const scope = createScope(ctx, "s");
    prompt.section({ name: "persona", order: 0, text: "scoped" }, scope.ctx); // another layer: fine
  });

  it("a failing dynamic text rejects the assembly with PROMPT_TEXT_FAILED", async () => {
    const { prompt } = setup();
    prompt.section({
      name: "broken",
      order: 0,
      text: () => {
        throw new Error("no git");
      },
    });
    await assert.rejects(prompt.assemble(), (e) => HarnessError.isInstance(e, "PROMPT_TEXT_FAILED"));
  });
});

describe("SystemPrompt variables", () => {
  it("interpolates variables strictly; scoped values shadow global ones; undefined means missing", async () => {
    const { ctx, prompt } = setup();
    prompt.section({ name: "persona", order: 0, text: "Work in {{cwd}} as {{role}}." });
    prompt.variable({ name: "cwd", value: "/global" });
    prompt.variable({ name: "role", value: (c: AssembleContext) => (c.scope ? "a helper" : undefined) });
    const scope = createScope(ctx, "s");
    prompt.variable({ name: "cwd", value: "/agent" }, scope.ctx);
    assert.equal((await prompt.assemble({ scope: scope.info })).system, "Work in /agent as a helper.");
    await assert.rejects(
      prompt.assemble(),
      (e) => HarnessError.isInstance(e, "PROMPT_VARIABLE_MISSING") && e.details?.name === "role",
    );
  });

  it("refuses an invalid variable name", () => {
    const { prompt } = setup();
    assert.throws(
      () => prompt.variable({ name: "has-dash", value: "x" }),
      (e) => HarnessError.isInstance(e, "INVALID_ARGS"),
    );
  });
});

describe("SystemPrompt assembly waterfall and the complete section", () => {
  it("a system-prompt/assemble listener may rewrite the assembly; a scoped listener only for its scope", async () => {
    const { ctx, prompt } = setup();
    prompt.section({ name: "persona", order: 0, text: "Persona." });
    ctx.on("system-prompt/assemble", async (assembly, _context, next) => {
      assembly.sections.push({ name: "appended", order: 999, text: "Appended globally." });
      return await next();
    });
    const a = createScope(ctx, "a");
    const b = createScope(ctx, "b");
    a.ctx.on("system-prompt/assemble", async (_assembly, _context, next) => {
      const result = await next();
      return { ...result, sections: [{ name: "only", order: 0, text: "Replaced for A." }] };
    });
    assert.equal((await prompt.assemble()).system, "Persona.\n\nAppended globally.");
    assert.equal((await prompt.assemble({ scope: a.info })).system, "Replaced for A.");
    assert.equal((await prompt.assemble({ scope: b.info })).system, "Persona.\n\nAppended globally.");
  });

  it("the complete section is the only section and is restored after the waterfall", async () => {
    const { ctx, prompt } = setup();
    prompt.section({ name: "persona", order: 0, text: "Persona." });
    const sub = createScope(ctx, "sub");
    prompt.section({ name: "full", order: 0, text: "You are a subagent for {{task}}.", complete: true }, sub.ctx);
    prompt.section({ name: "more", order: 5, text: "More." }, sub.ctx);
    prompt.variable({ name: "task", value: "search" }, sub.ctx);
    ctx.on("system-prompt/assemble", async (assembly, _context, next) => {
      assembly.sections = [{ name: "hijack", order: 0, text: "Hijacked." }];
      assembly.tools.push(schema("added_by_listener"));
      return await next();
    });
    const scoped = await prompt.assemble({ scope: sub.info });
    assert.equal(scoped.system, "You are a subagent for search.");
    assert.deepEqual(scoped.tools?.map((t) => t.name), ["added_by_listener"]);
    assert.equal((await prompt.assemble()).system, "Hijacked.");
  });

  it("a listener returning something that is not an assembly rejects with PROMPT_ASSEMBLY_INVALID", async () => {
    const { ctx, prompt } = setup();
    ctx.on("system-prompt/assemble", () => undefined as never);
    await assert.rejects(prompt.assemble(), (e) => HarnessError.isInstance(e, "PROMPT_ASSEMBLY_INVALID"));
  });

  it("an aborted signal rejects the assembly with ABORTED", async () => {
    const { prompt } = setup();
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(
      prompt.assemble({ signal: controller.signal }),
      (e) => HarnessError.isInstance(e, "ABORTED"),
    );
  });
});

describe("SystemPrompt contexts, tools and change events", () => {
  it("contexts are resolved, ordered and empty ones dropped, apart from the system text", async () => {
    const { prompt } = setup();
    prompt.section({ name: "persona", order: 0, text: "Persona." });
    prompt.context({ name: "todo", order: 20, text: () => "Todo: none." });
    prompt.context({ name: "git", order: 10, text: "Branch main." });
    prompt.context({ name: "nothing", order: 0, text: () => "" });
    const assembly = await prompt.assembly();
    assert.deepEqual(assembly.contexts.map((c) => c.text), ["Branch main.", "Todo: none."]);
    assert.deepEqual(await prompt.assemble(), {
      system: "Persona.",
      contexts: [{ name: "git", text: "Branch main." }, { name: "todo", text: "Todo: none." }],
    });
  });

  it("tool providers contribute only name, description and parameters; a nearer provider wins a name", async () => {
    const { ctx, prompt } = setup();
    prompt.tools({ schemas: () => [schema("read", { timeoutMs: 5, execute: () => 1 }), schema("write")] });
    const scope = createScope(ctx, "s");
    prompt.tools({ order: -1, schemas: () => [{ ...schema("write"), description: "scoped write" }] }, scope.ctx);
    const global = await prompt.assemble();
    assert.deepEqual(global.tools, [schema("read"), schema("write")]);
    const scoped = await prompt.assemble({ scope: scope.info });
    assert.deepEqual(scoped.tools?.map((t) => [t.name, t.description]), [["write", "scoped write"], [
      "read",
      "tool read",
    ]]);
    for (const tool of scoped.tools ?? []) assert.deepEqual(Object.keys(tool), ["name", "description", "parameters"]);
  });

  it("system-prompt/change is announced on every registration and disposal, scoped ones included", async () => {
    const { ctx, prompt } = setup();
    const scope = createScope(ctx, "s");
    let heard = 0;
    ctx.on("system-prompt/change", () => void heard++);
    const off = prompt.section({ name: "a", order: 0, text: "A" });
    prompt.context({ name: "c", order: 0, text: "C" }, scope.ctx);
    prompt.variable({ name: "v", value: "V" });
    prompt.tools({ schemas: () => [] });
    assert.equal(heard, 4);
    off();
    await scope.dispose();
    assert.equal(heard, 6);
    assert.deepEqual(await prompt.assemble(), {});
  });
});

describe("assembleForRequest (the loop's cached assembly)", () => {
  // Frozen schemas with deep-frozen parameters, as the tool runtime gives them.
  const frozenSchema = (name: string, description = `tool ${name}`): ToolSchema =>
    Object.freeze({ name, description, parameters: Object.freeze({ type: "object" }) });
  const now = (prompt: SystemPrompt, context: AssembleContext = {}) => {
    const result = assembleForRequest(prompt, context);
    assert.ok(!(result instanceof Promise), "expected a synchronous assembly");
    return result;
  };

  it("gives what assemble() gives, synchronously, and the same frozen result while nothing changes", async () => {
    const { ctx, prompt } = setup();
    const scope = createScope(ctx, "s");
    prompt.section({ name: "persona", order: 0, text: "You help with {{project}}." });
    prompt.section({ name: "identity", order: -100, text: "You are dsh." });
    prompt.section({ name: "blank", order: 5, text: " " });
    prompt.context({ name: "cwd", order: 0, text: "cwd: /tmp" });
    prompt.context({ name: "empty", order: 1, text: "" });
    prompt.variable({ name: "project", value: "the harness" });
    const read = frozenSchema("read"), write = frozenSchema("write");
    let calls = 0;
    const seen: (AssembleContext | undefined)[] = [];
    prompt.tools({
      schemas: (context) => {
        calls++;
        seen.push(context);
        return [read, write];
      },
    });
    const context = { scope: scope.info };
    const first = now(prompt, context);
    assert.deepEqual(first, await prompt.assemble(context));
    assert.equal(first.system, "You are dsh.\n\nYou help with the harness.");
    assert.ok(Object.isFrozen(first) && Object.isFrozen(first.tools));
    const second = now(prompt, context);
    assert.equal(second, first);
    // The providers are called on every assembly, with its context.
    assert.equal(calls, 3);
    assert.equal(seen[2], context);
    assert.deepEqual(now(prompt), await prompt.assemble());
  });

  it("sees every registration change, a new schema object and a mutable schema changed in place", async () => {
    const { ctx, prompt } = setup();
    const scope = createScope(ctx, "s");
    prompt.section({ name: "persona", order: 0, text: "Global." });
    let schemas: ToolSchema[] = [frozenSchema("read")];
    prompt.tools({ schemas: () => schemas });
    const context = { scope: scope.info };
    const before = now(prompt, context);
    const off = prompt.section({ name: "extra", order: 1, text: "Extra." });
    assert.equal(now(prompt, context).system, "Global.\n\nExtra.");
    prompt.section({ name: "persona", order: 0, text: "Scoped." }, scope.ctx);
    assert.equal(now(prompt, context).system, "Scoped.\n\nExtra.");
    assert.equal(now(prompt).system, "Global.\n\nExtra.");
    off();
    await scope.dispose();
    assert.deepEqual(now(prompt, context), before);
    schemas = [frozenSchema("read", "reads a file")];
    assert.equal(now(prompt, context).tools?.[0].description, "reads a file");
    const mutable = { name: "edit", description: "v1", parameters: { type: "object" } };
    schemas = [mutable];
    assert.equal(now(prompt).tools?.[0].description, "v1");
    mutable.description = "v2";
    assert.equal(now(prompt).tools?.[0].description, "v2");
    schemas = [];
    assert.deepEqual(now(prompt), { system: "Global." });
  });

  it("dynamic texts and variables, listeners and asynchronous providers take the full path", async () => {
    const { ctx, prompt } = setup();
    prompt.section({ name: "persona", order: 0, text: "Static." });
    let n = 0;
    const offSection = prompt.section({ name: "clock", order: 1, text: () => `Tick ${++n}.` });
    const a = assembleForRequest(prompt, {});
    assert.ok(a instanceof Promise);
    assert.equal((await a).system, "Static.\n\nTick 1.");
    assert.equal((await assembleForRequest(prompt, {})).system, "Static.\n\nTick 2.");
    offSection();
    const offVariable = prompt.variable({ name: "v", value: () => "dynamic" });
    assert.ok(assembleForRequest(prompt, {}) instanceof Promise);
    offVariable();
    assert.ok(!(assembleForRequest(prompt, {}) instanceof Promise));
    const offListener = ctx.on("system-prompt/assemble", async (assembly, _context, next) => {
      assembly.sections.push({ name: "added", order: 9, text: "Added." });
      return await next();
    });
    const heard = assembleForRequest(prompt, {});
    assert.ok(heard instanceof Promise);
    assert.equal((await heard).system, "Static.\n\nAdded.");
    offListener();
    assert.equal(now(prompt).system, "Static.");
    let calls = 0;
    prompt.tools({ schemas: () => [frozenSchema("sync")] });
    prompt.tools({
      order: 1,
      schemas: async () => {
        calls++;
        await Promise.resolve();
        return [frozenSchema("async")];
      },
    });
    prompt.tools({ order: 2, schemas: () => [frozenSchema("after")] });
    const pending = assembleForRequest(prompt, {});
    assert.ok(pending instanceof Promise);
    assert.deepEqual((await pending).tools?.map((t) => t.name), ["sync", "async", "after"]);
    assert.deepEqual(await pending, await prompt.assemble());
    assert.equal(calls, 2); // once per assembly
  });

  it("fails as assemble() fails", async () => {
    const failsAs = async (configure: (prompt: SystemPrompt) => void, code: string, context: AssembleContext = {}) => {
      const { prompt } = setup();
      configure(prompt);
      await assert.rejects(prompt.assemble(context), (e) => HarnessError.isInstance(e, code));
      await assert.rejects(
        async () => await assembleForRequest(prompt, context),
        (e) => HarnessError.isInstance(e, code),
      );
    };
    const controller = new AbortController();
    controller.abort();
    await failsAs(() => {}, "ABORTED", { signal: controller.signal });
    await failsAs((p) => p.tools({ schemas: () => [] }), "ABORTED", { signal: controller.signal });
    await failsAs((p) =>
      p.tools({
        schemas: () => {
          throw new Error("boom");
        },
      }), "PROMPT_TEXT_FAILED");
    await failsAs((p) => p.tools({ schemas: () => Promise.reject(new Error("boom")) }), "PROMPT_TEXT_FAILED");
    await failsAs((p) => p.tools({ schemas: () => "nope" as never }), "PROMPT_ASSEMBLY_INVALID");
    await failsAs((p) => p.tools({ schemas: () => [{ name: "x" } as never] }), "PROMPT_ASSEMBLY_INVALID");
    await failsAs((p) => p.section({ name: "s", order: 0, text: "Hi {{who}}." }), "PROMPT_VARIABLE_MISSING");
    // A provider that aborts the assembly it serves.
    const aborting = new AbortController();
    await failsAs((p) => p.tools({ schemas: () => (aborting.abort(), []) }), "ABORTED", { signal: aborting.signal });
    // A provider's schemas are checked before the next provider is called.
    const { prompt } = setup();
    let later = 0;
    prompt.tools({ schemas: () => [{ name: "bad" } as never] });
    prompt.tools({ order: 1, schemas: () => (later++, []) });
    assert.throws(() => assembleForRequest(prompt, {}), (e) => HarnessError.isInstance(e, "PROMPT_ASSEMBLY_INVALID"));
    assert.equal(later, 0);
  });

  it("another implementation of the service is asked through its own assemble()", async () => {
    class Custom extends SystemPrompt {
      override assemble(): Promise<{ system: string }> {
        return Promise.resolve({ system: "custom" });
      }
    }
    const custom = new Custom(createKernel());
    custom.section({ name: "persona", order: 0, text: "Ignored." });
    assert.deepEqual(await assembleForRequest(custom, {}), { system: "custom" });
  });
});
