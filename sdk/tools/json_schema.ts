/**
 * `jsonSchema<T>()`: a raw JSON Schema that carries the TypeScript type of the
 * values it describes, so that `defineTool()` can type a raw-schema tool.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { JsonSchema } from "./tool_definition.ts";

/** The key of the type-only brand of {@linkcode TypedJsonSchema}; no value ever has it. */
declare const describedType: unique symbol;

/**
 * A raw JSON Schema that says, for the type checker only, which TypeScript type
 * `T` its valid values have. Build one with {@linkcode jsonSchema}.
 *
 * The brand exists only in types: at run time the value is the schema object
 * itself, with no added property, so it is sent to the model and validated
 * exactly as given. Keeping `T` and the schema in agreement is the author's
 * promise; the runtime still validates every call against the schema.
 */
export type TypedJsonSchema<T> = JsonSchema & { readonly [describedType]: T };

/**
 * Tag a raw JSON Schema with the TypeScript type of its values.
 *
 * `defineTool()` infers a tool's argument type from `parameters` and its value
 * type from `output.schema`: a zod schema types itself, a plain JSON Schema
 * gives `unknown`, and a schema wrapped in `jsonSchema<T>()` gives `T`.
 *
 * @typeParam T The type of the values the schema accepts.
 * @param schema A JSON Schema object (draft 2020-12).
 * @returns The same object, typed as a {@linkcode TypedJsonSchema}.
 * @throws {HarnessError} `INVALID_ARGS` when `schema` is not a JSON object.
 *
 * @example A typed raw-schema tool
 * ```ts
 * import { defineTool, jsonSchema } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const weather = defineTool({
 *   name: "weather",
 *   description: "The weather in a city",
 *   parameters: jsonSchema<{ city: string }>({
 *     type: "object",
 *     properties: { city: { type: "string" } },
 *     required: ["city"],
 *   }),
 *   output: { schema: jsonSchema<string>({ type: "string" }), render: (args, text) => `${args.city}: ${text}` },
 *   execute: ({ city }) => `sunny in ${city.toUpperCase()}`, // `city` is a string
 * });
 * assert.deepEqual(weather.parameters.required, ["city"]);
 * ```
 */
export function jsonSchema<T>(schema: JsonSchema): TypedJsonSchema<T> {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    throw new HarnessError("INVALID_ARGS", "A JSON Schema must be an object");
  }
  return schema as TypedJsonSchema<T>;
}

/** The type a {@linkcode TypedJsonSchema} describes; `unknown` for any other schema. */
export type JsonSchemaType<S> = S extends { readonly [describedType]: infer T } ? T : unknown;
