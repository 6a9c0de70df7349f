/**
 * Internal: JSON Schema handling for tools. Parameters and outputs may be given
 * as zod v4 schemas (converted with the schema's own `toJSONSchema()` and
 * validated with its own `safeParse()`, so the SDK never loads zod itself) or
 * as raw JSON Schema (draft 2020-12, compiled with ajv, which is created on the
 * first raw schema only).
 *
 * @module
 */

import type { z } from "zod";
import { Ajv2020 } from "ajv/dist/2020.js";
import { HarnessError } from "../kernel/harness_error.ts";

/** A raw JSON Schema object. */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** A compiled validator: `undefined` when valid, otherwise the list of problems. */
export type Validator = (value: unknown) => string[] | undefined;

let ajv: Ajv2020 | undefined;
const compiled = new WeakMap<object, Validator>();

/** Describe a zod schema's parse problems, or `undefined` when `value` passes. */
export function zodValidator(schema: z.ZodType): Validator {
  return (value) => {
    const result = schema.safeParse(value);
    return result.success ? undefined : zodProblems(result.error);
  };
}

/** The lowest zod release whose schemas carry `toJSONSchema()` (the peer dependency range starts there). */
export const MIN_ZOD_VERSION = "4.2.0";

/**
 * Whether `value` is a zod schema of any release: zod 4 (classic or mini,
 * `_zod`) or zod 3 (`_def` and `safeParse()`). {@linkcode zodToJsonSchema}
 * refuses the ones it cannot use, naming the cause.
 */
export function isZodSchema(value: unknown): value is z.ZodType {
  if (typeof value !== "object" || value === null) return false;
  return "_zod" in value || ("_def" in value && typeof (value as { safeParse?: unknown }).safeParse === "function");
}

/** The zod release that made a schema, as `major.minor.patch` (zod 4 records it; zod 3 does not). */
function zodVersionOf(schema: object): string | undefined {
  const version = (schema as { _zod?: { version?: { major?: unknown; minor?: unknown; patch?: unknown } } })._zod
    ?.version;
  return typeof version?.major === "number" ? `${version.major}.${version.minor}.${version.patch}` : undefined;
}

function olderThan(version: string, minimum: string): boolean {
  const a = version.split(".").map(Number);
  const b = minimum.split(".").map(Number);
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] < b[i];
  return false;
}

/**
 * Convert a zod schema to JSON Schema (without the `$schema` marker).
 *
 * @throws {HarnessError} `INVALID_TOOL_DEFINITION` when zod cannot represent it.
 */
export function zodToJsonSchema(schema: z.ZodType, io: "input" | "output", what: string): JsonSchema {
  const convert = (schema as { toJSONSchema?: (params: { io: string }) => unknown }).toJSONSchema;
  if (typeof convert !== "function") {
    const version = zodVersionOf(schema);
    const copies = "if your own zod is newer, a second, older copy made this schema (see `npm ls zod`)";
    throw new HarnessError(
      "INVALID_TOOL_DEFINITION",
      version === undefined
        ? `The ${what} schema comes from zod 3, which @dsh/harness does not support: use zod >= ${MIN_ZOD_VERSION} or JSON Schema`
        : olderThan(version, MIN_ZOD_VERSION)
        ? `The ${what} schema comes from zod ${version}, older than the zod >= ${MIN_ZOD_VERSION} that @dsh/harness ` +
          `needs (no toJSONSchema()): update zod; ${copies}`
        : `The ${what} schema is a zod ${version} schema without toJSONSchema() (zod/mini): ` +
          'use a zod classic schema (import from "zod") or JSON Schema',
      { details: { zodVersion: version ?? "3", minimum: MIN_ZOD_VERSION } },
    );
  }
  let json: Record<string, unknown>;
  try {
    json = { ...(convert.call(schema, { io }) as Record<string, unknown>) };
  } catch (cause) {
    throw new HarnessError("INVALID_TOOL_DEFINITION", `Cannot convert the ${what} schema to JSON Schema`, { cause });
  }
  delete json.$schema;
  // The JSON Schema derived from a zod schema is validated by zod itself.
  compiled.set(json, zodValidator(schema));
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
  let check: ReturnType<Ajv2020["compile"]>;
  try {
    ajv ??= new Ajv2020({ allErrors: true, strict: false, addUsedSchema: false, validateFormats: false });
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
