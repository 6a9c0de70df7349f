import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { createKernel, HarnessError } from "../kernel/mod.ts";
import { defineTool } from "./define_tool.ts";
import { ToolRuntime } from "./tool_runtime.ts";
import { signal } from "./_test_util.ts";

describe("defineTool()", () => {
  it("turns zod parameters into JSON Schema without the $schema marker", () => {
    const tool = defineTool({
      name: "read_file",
      description: "Read a file",
      parameters: z.object({ path: z.string(), limit: z.number().int().optional() }),
      output: { schema: z.string(), render: (_a, text) => text },
      execute: () => "",
    });
    assert.equal(tool.parameters.type, "object");
    assert.deepEqual(tool.parameters.required, ["path"]);
    assert.equal("$schema" in tool.parameters, false);
    assert.deepEqual(tool.output.schema, { type: "string" });
  });

  it("passes parsed zod arguments (defaults applied) to the body", async () => {
    let seen: unknown;
    const tool = defineTool({
      name: "t",
      description: "",
      parameters: z.object({ n: z.number().default(3) }),
      output: { schema: z.number(), render: (_a, v) => String(v) },
      execute: (args) => {
        seen = args;
        return args.n * 2;
      },
    });
    const tools = new ToolRuntime(createKernel());
    tools.register(tool);
    const result = await tools.execute({ callId: "c", name: "t", arguments: "", signal });
    assert.deepEqual(seen, { n: 3 });
    assert.equal(result.value, 6);
  });

  it("validates raw JSON Schema parameters (@cfworker/json-schema): a mismatch is an INVALID_ARGS result", async () => {
    let called = false;
    const tool = defineTool({
      name: "raw",
      description: "",
      parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
      output: { schema: { type: "integer" }, render: (_a, v) => String(v) },
      execute: (args) => {
        called = true;
        return (args as { n: number }).n;
      },
    });
    const tools = new ToolRuntime(createKernel());
    tools.register(tool);
    const bad = await tools.execute({ callId: "c1", name: "raw", arguments: '{"n":"x"}', signal });
    assert.deepEqual(bad.error, { name: "ToolArgsError", code: "INVALID_ARGS" });
    assert.equal(called, false);
    const good = await tools.execute({ callId: "c2", name: "raw", arguments: '{"n":4}', signal });
    assert.equal(good.error, undefined);
    assert.equal(good.value, 4);
  });

  it("refuses a malformed raw JSON Schema at once, naming where; leaves the schema it sends unannotated", async () => {
    const base = {
      name: "t",
      description: "",
      output: { schema: { type: "string" }, render: () => "" },
      execute: () => "",
    };
    const at = (pointer: string) => (e: unknown) =>
      HarnessError.isInstance(e, "INVALID_TOOL_DEFINITION") && (e as Error).message.includes(pointer);
    assert.throws(
      () => defineTool({ ...base, parameters: { properties: { n: { type: "int" } } } }),
      at("/properties/n/type"),
    );
    assert.throws(() => defineTool({ ...base, parameters: { type: "object", required: "n" } }), at("/required"));
    assert.throws(() => defineTool({ ...base, parameters: { anyOf: [{ pattern: "(" }] } }), at("/anyOf/0/pattern"));
    // Values JSON cannot carry (the schema goes into every request header): refused now, not at every turn.
    const cyclic: Record<string, unknown> = { type: "object" };
    cyclic.properties = { self: cyclic };
    const hint: string | undefined = undefined;
    for (
      const [parameters, where] of [
        [{ type: "object", description: hint }, "parameters.description is not lossless JSON: undefined"],
        [{ type: "object", default: 1n }, "parameters.default is not lossless JSON: a BigInt"],
        [{ type: "object", examples: [() => 1] }, "parameters.examples[0] is not lossless JSON: a function"],
        [cyclic, "parameters.properties.self is not lossless JSON: a circular reference"],
      ] as const
    ) assert.throws(() => defineTool({ ...base, parameters: parameters as never }), at(where));
    assert.throws(
      () =>
        defineTool({ ...base, parameters: {}, output: { ...base.output, schema: { type: "string", title: hint } } }),
      at("output.title"),
    );
    const parameters = {
      type: "object",
      properties: { size: { $ref: "#/$defs/size" } },
      $defs: { size: { enum: ["s", "m"] } },
    };
    const sent = JSON.stringify(parameters);
    const tool = defineTool({ ...base, parameters, execute: (args) => JSON.stringify(args) });
    const tools = new ToolRuntime(createKernel());
    tools.register(tool);
    const good = await tools.execute({ callId: "c1", name: "t", arguments: '{"size":"m"}', signal });
    assert.equal(good.value, '{"size":"m"}');
    const bad = await tools.execute({ callId: "c2", name: "t", arguments: '{"size":"xl"}', signal });
    assert.deepEqual(bad.error, { name: "ToolArgsError", code: "INVALID_ARGS" });
    assert.equal(JSON.stringify(tool.parameters), sent);
  });

  it("an output that does not match output.schema is an INVALID_TOOL_OUTPUT result", async () => {
    const tool = defineTool({
      name: "count",
      description: "",
      parameters: z.object({}),
      output: { schema: z.number().int(), render: (_a, v) => String(v) },
      execute: () => 1.5,
    });
    const tools = new ToolRuntime(createKernel());
    tools.register(tool);
    const result = await tools.execute({ callId: "c", name: "count", arguments: "{}", signal });
    assert.deepEqual(result.error, { name: "ToolOutputError", code: "INVALID_TOOL_OUTPUT" });
    assert.equal(result.value, undefined);
  });

  it("classifies invalid arguments as not concurrency-safe and presents nothing for them", () => {
    const tool = defineTool({
      name: "t",
      description: "",
      parameters: z.object({ path: z.string() }),
      output: { schema: z.string(), render: (_a, v) => v },
      execute: () => "",
      isConcurrencySafe: () => true,
      presentCall: (args) => ({ card: "generic", title: args.path }),
    });
    assert.equal(tool.isConcurrencySafe!({ path: "a" }), true);
    assert.equal(tool.isConcurrencySafe!({ path: 1 } as never), false);
    assert.deepEqual(tool.presentCall!({ path: "a" }), { card: "generic", title: "a" });
    assert.equal(tool.presentCall!({} as never), undefined);
  });

  it("presentResult gets the parsed arguments and the result projection", () => {
    const tool = defineTool({
      name: "t",
      description: "",
      parameters: z.object({ path: z.string() }),
      output: { schema: z.string(), render: (_a, v) => v },
      execute: () => "",
      presentResult: (args, result) => ({ card: "read", title: args.path, failed: result.isError }),
    });
    const projection = { content: [{ type: "text" as const, text: "x" }], isError: false };
    assert.deepEqual(tool.presentResult!({ path: "a.txt" }, projection), {
      card: "read",
      title: "a.txt",
      failed: false,
    });
    assert.equal(tool.presentResult!({ path: 3 } as never, projection), undefined);
  });

  it("rejects a bad name, a missing output and a non-positive timeout at once", () => {
    const base = {
      description: "",
      parameters: z.object({}),
      output: { schema: z.string(), render: () => "" },
      execute: () => "",
    };
    const invalid = (e: unknown) => HarnessError.isInstance(e, "INVALID_TOOL_DEFINITION");
    assert.throws(() => defineTool({ ...base, name: "has space" }), invalid);
    assert.throws(() => defineTool({ ...base, name: "t", output: undefined as never }), invalid);
    assert.throws(() => defineTool({ ...base, name: "t", timeoutMs: 0 }), invalid);
    assert.throws(
      () => defineTool({ ...base, name: "t", parameters: { type: "nonsense-type" } }),
      invalid,
    );
  });
});

describe("defineTool() with a zod it cannot use", () => {
  const define = (parameters: unknown) => () =>
    defineTool({
      name: "t",
      description: "t",
      parameters: parameters as z.ZodType,
      output: { schema: z.string(), render: (_args, out) => out },
      execute: () => "",
    });
  const refused = (pattern: RegExp) => (error: unknown) =>
    HarnessError.isInstance(error, "INVALID_TOOL_DEFINITION") && pattern.test((error as Error).message);

  it("names a too-old zod and the second-copy cause", () => {
    const old = { _zod: { version: { major: 4, minor: 1, patch: 12 } }, safeParse: () => ({ success: true }) };
    assert.throws(define(old), refused(/zod 4\.1\.12, older than the zod >= 4\.2\.0 .*npm ls zod/));
  });

  it("names zod 3", () => {
    const v3 = { _def: { typeName: "ZodObject" }, safeParse: () => ({ success: true }) };
    assert.throws(define(v3), refused(/comes from zod 3/));
  });

  it("names zod/mini", async () => {
    const zm = await import("zod/mini");
    assert.throws(
      define(zm.object({ a: zm.number() })),
      refused(/zod 4\.\d+\.\d+ schema without toJSONSchema\(\) \(zod\/mini\)/),
    );
  });

  it("accepts the lowest supported zod (4.2.0)", async () => {
    const { z: lowest } = await import("zod-lowest");
    const tool = defineTool({
      name: "add",
      description: "Add",
      parameters: lowest.object({ a: lowest.number() }),
      output: { schema: lowest.number(), render: (_args, out) => String(out) },
      execute: ({ a }) => a + 1,
    });
    assert.deepEqual(tool.parameters.required, ["a"]);
  });
});
