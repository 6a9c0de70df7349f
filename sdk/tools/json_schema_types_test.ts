// Type tests of raw-schema tools: `deno check` runs this file (scripts/test.mjs, step "check"), so a typing
// regression fails the gate: the plain lines stop compiling, or a `@ts-expect-error` line stops erroring.
// The runtime tests check that the typed schema is the schema: nothing is added to what the model sees.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { z } from "zod";
import type { z as lowest } from "zod-lowest";
import { HarnessError } from "../kernel/harness_error.ts";
import { defineTool, type InferToolArgs, type InferToolValue } from "./define_tool.ts";
import { jsonSchema, type JsonSchemaType, type TypedJsonSchema } from "./json_schema.ts";
import type { JsonSchema, ToolDefinition } from "./tool_definition.ts";
import { signal } from "./_test_util.ts";

/** `true` exactly when `A` and `B` are the same type (not merely assignable). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
function expectType<T extends true>(_proof?: T): void {}

interface WeatherArgs {
  city: string;
  days?: number;
}
const weatherParameters: TypedJsonSchema<WeatherArgs> = jsonSchema<WeatherArgs>({
  type: "object",
  properties: { city: { type: "string" }, days: { type: "integer", minimum: 1 } },
  required: ["city"],
  additionalProperties: false,
});

const weather = defineTool({
  name: "weather",
  description: "The forecast for a city",
  parameters: weatherParameters,
  output: {
    schema: jsonSchema<{ summary: string }>({
      type: "object",
      properties: { summary: { type: "string" } },
      required: ["summary"],
    }),
    render: (args, value) => `${args.city}: ${value.summary}`,
  },
  execute: ({ city, days }) => ({ summary: `${days ?? 1} day(s) of sun in ${city.toUpperCase()}` }),
  permissionSubject: (args) => args.city,
});

// The raw schema types the arguments and the value, as zod does.
expectType<Equal<typeof weather, ToolDefinition<WeatherArgs, { summary: string }>>>();
expectType<Equal<InferToolArgs<typeof weatherParameters>, WeatherArgs>>();
expectType<Equal<JsonSchemaType<TypedJsonSchema<number[]>>, number[]>>();
// An untagged raw schema still types as unknown, and zod schemas keep their own types.
expectType<Equal<InferToolArgs<{ type: "object" }>, unknown>>();
expectType<Equal<InferToolValue<JsonSchema>, unknown>>();
expectType<Equal<InferToolArgs<z.ZodObject<{ a: z.ZodNumber }>>, { a: number }>>();
// A schema of another installed copy of zod 4 (the lowest supported, 4.2.0) fits and types the same.
expectType<Equal<InferToolArgs<lowest.ZodObject<{ a: lowest.ZodNumber }>>, { a: number }>>();
expectType<Equal<InferToolValue<lowest.ZodArray<lowest.ZodString>>, string[]>>();
// A typed schema is still a JSON Schema (createHarness and ToolRuntime take it as one).
const asPlain: JsonSchema = weatherParameters;

defineTool({
  name: "bad",
  description: "Misuses its typed arguments",
  parameters: weatherParameters,
  output: { schema: { type: "string" }, render: () => "" },
  // @ts-expect-error `city` is a string, not a number
  execute: (args) => args.city.toFixed(1),
});

defineTool({
  name: "bad_value",
  description: "Returns what its typed output schema does not describe",
  parameters: { type: "object" },
  output: { schema: jsonSchema<{ summary: string }>({ type: "object" }), render: (_args, value) => value.summary },
  // @ts-expect-error the value must be { summary: string }
  execute: () => ({ summary: 42 }),
});

// Type-only: never called.
export function _notASchema(): void {
  // @ts-expect-error a schema is an object, not a string
  jsonSchema<string>("string");
}

describe("jsonSchema()", () => {
  it("returns the schema itself: the model and the validator see exactly what was given", async () => {
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    assert.equal(jsonSchema<{ city: string }>(schema), schema);
    assert.deepEqual(Object.keys(asPlain), ["type", "properties", "required", "additionalProperties"]);
    assert.deepEqual(weather.parameters, weatherParameters);
    const value = await weather.execute({ city: "Oslo", days: 2 }, { signal } as never);
    assert.deepEqual(value, { summary: "2 day(s) of sun in OSLO" });
    assert.equal(weather.permissionSubject?.({ city: "Oslo" }), "Oslo");
  });

  it("typed raw schemas are still validated at run time", async () => {
    await assert.rejects(weather.execute({ city: 3 } as never, { signal } as never), { code: "INVALID_ARGS" });
  });

  it("refuses a schema that is not a JSON object with INVALID_ARGS", () => {
    for (const bad of [null, "string", [], 3]) {
      assert.throws(() => jsonSchema(bad as never), (e: unknown) => HarnessError.isInstance(e, "INVALID_ARGS"));
    }
  });
});
