/**
 * Internal: JSON Schema handling for tools. Parameters and outputs may be given
 * as zod v4 schemas (converted with `z.toJSONSchema`) or as raw JSON Schema
 * (draft 2020-12, compiled with ajv).
 *
 * @module
 */

import { z } from "zod";
import { Ajv2020 } from "ajv/dist/2020.js";
import { HarnessError } from "../kernel/harness_error.ts";

/** A raw JSON Schema object. */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** A compiled validator: `undefined` when valid, otherwise the list of problems. */
export type Validator = (value: unknown) => string[] | undefined;

const ajv = new Ajv2020({ allErrors: true, strict: false, addUsedSchema: false, validateFormats: false });
const compiled = new WeakMap<object, Validator>();

/** Whether `value` is a zod v4 schema. */
export function isZodSchema(value: unknown): value is z.ZodType {
  return typeof value === "object" && value !== null && "_zod" in value &&
    typeof (value as z.ZodType).safeParse === "function";
}

/**
 * Convert a zod schema to JSON Schema (without the `$schema` marker).
 *
 * @throws {HarnessError} `INVALID_TOOL_DEFINITION` when zod cannot represent it.
 */
export function zodToJsonSchema(schema: z.ZodType, io: "input" | "output", what: string): JsonSchema {
  let json: Record<string, unknown>;
  try {
    json = z.toJSONSchema(schema, { io }) as Record<string, unknown>;
  } catch (cause) {
    throw new HarnessError("INVALID_TOOL_DEFINITION", `Cannot convert the ${what} schema to JSON Schema`, { cause });
  }
  delete json.$schema;
  return json;
}

/**
 * Compile a raw JSON Schema (cached per schema object).
 *
 * @throws {HarnessError} `INVALID_TOOL_DEFINITION` when the schema is not valid JSON Schema.
 */
export function compileSchema(schema: JsonSchema, what: string): Validator {
  const cached = compiled.get(schema);
  if (cached) return cached;
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    throw new HarnessError("INVALID_TOOL_DEFINITION", `The ${what} schema is not a JSON Schema object`);
  }
  let check: ReturnType<typeof ajv.compile>;
  try {
    check = ajv.compile(schema as Record<string, unknown>);
  } catch (cause) {
    throw new HarnessError("INVALID_TOOL_DEFINITION", `The ${what} schema is not valid JSON Schema`, { cause });
  }
  const validator: Validator = (value) => {
    if (check(value)) return undefined;
    return (check.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? "is invalid"}`);
  };
  compiled.set(schema, validator);
  return validator;
}

/** Describe zod issues as `path message` strings. */
export function zodProblems(error: z.ZodError): string[] {
  return error.issues.map((issue) => `/${issue.path.map(String).join("/")} ${issue.message}`);
}
