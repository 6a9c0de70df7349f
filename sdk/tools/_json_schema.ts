/**
 * Internal: JSON Schema handling for tools. Parameters and outputs may be given
 * as zod v4 schemas (converted with the schema's own `toJSONSchema()` and
 * validated with its own `safeParse()`, so the SDK never loads zod itself) or
 * as raw JSON Schema (draft 2020-12), validated by `@cfworker/json-schema`, an
 * interpreter that generates no code (it runs where `new Function` is
 * forbidden, e.g. Workers). That module is imported on the first raw schema
 * only: a program whose tools all use zod never loads it, and a bundler with
 * code splitting leaves it out of the initial chunk.
 *
 * Raw-schema validators are synchronous once the module has loaded. Loading
 * starts when such a schema is compiled (`defineTool()`, `register()`); the
 * tool pipeline and `execute()` wait for it ({@linkcode jsonSchemaValidatorPending}).
 * A synchronous check before then (`isConcurrencySafe`, `presentCall`) sees a
 * `loading` problem and is not cached.
 *
 * @module
 */

import type { z } from "zod";
import type { Validator as CfValidator } from "@cfworker/json-schema";
import { HarnessError } from "../kernel/harness_error.ts";
import { assertLosslessJson } from "../session/lossless_json.ts";
import { jsonSchemaShapeProblem } from "./_check_json_schema.ts";

/** A raw JSON Schema object. */
export type JsonSchema = Readonly<Record<string, unknown>>;

/**
 * A compiled validator: `undefined` when valid, otherwise the list of
 * problems. `loading` is set on a raw-schema validator's answer given before
 * its validator module has loaded (the value was not checked).
 */
export type Validator = (value: unknown) => (string[] & { loading?: true }) | undefined;

type ValidatorModule = { Validator: typeof CfValidator };
let validatorModule: ValidatorModule | undefined;
let validatorLoadError: unknown;
let loadingValidator: Promise<void> | undefined;
const compiled = new WeakMap<object, Validator>();

/** Start loading the raw JSON Schema validator (once); the promise never rejects. */
function loadValidator(): Promise<void> {
  return loadingValidator ??= import("@cfworker/json-schema").then(
    (module) => {
      validatorModule = module;
      validatorLoadError = undefined;
    },
    (error) => {
      // Let a later compile try again.
      validatorLoadError = error;
      loadingValidator = undefined;
    },
  );
}

/**
 * The load of the raw JSON Schema validator still under way, or `undefined`
 * when it is loaded or was never needed. Await it before calling raw-schema
 * validators from asynchronous code; it never rejects.
 */
export function jsonSchemaValidatorPending(): Promise<void> | undefined {
  return validatorModule === undefined ? loadingValidator : undefined;
}

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
 * Compile a raw JSON Schema (cached per schema object): check its shape now,
 * validate with `@cfworker/json-schema` once that has loaded.
 *
 * @throws {HarnessError} `INVALID_TOOL_DEFINITION` when the schema is not valid JSON Schema.
 */
export function compileSchema(schema: JsonSchema, what: string): Validator {
  const cached = compiled.get(schema);
  if (cached) return cached;
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    throw new HarnessError("INVALID_TOOL_DEFINITION", `The ${what} schema is not a JSON Schema object`);
  }
  // It goes to the model in every request header, which the log keeps as JSON: a value JSON cannot carry (an
  // `undefined` description, a Date, a function, a cycle) fails here, not at every turn of every agent.
  try {
    assertLosslessJson(schema, what);
  } catch (cause) {
    const message = HarnessError.isInstance(cause) ? cause.message : String(cause);
    throw new HarnessError("INVALID_TOOL_DEFINITION", `The ${what} schema is not plain JSON: ${message}`, { cause });
  }
  const problem = jsonSchemaShapeProblem(schema);
  if (problem !== undefined) {
    throw new HarnessError("INVALID_TOOL_DEFINITION", `The ${what} schema is not valid JSON Schema: ${problem}`);
  }
  if (validatorModule === undefined) void loadValidator();
  let check: CfValidator | undefined;
  const validator: Validator = (value) => {
    if (check === undefined) {
      if (validatorModule === undefined) {
        if (jsonSchemaValidatorPending() === undefined) void loadValidator();
        const why = validatorLoadError === undefined
          ? "the JSON Schema validator is still loading"
          : `the JSON Schema validator (@cfworker/json-schema) could not be loaded: ${String(validatorLoadError)}`;
        return Object.assign([`/ cannot be checked yet: ${why}`], { loading: true as const });
      }
      // The validator annotates the schema it is given: give it a copy, not the one sent to the model.
      check = new validatorModule.Validator(structuredClone(schema) as Record<string, unknown>, "2020-12", false);
    }
    let result: ReturnType<CfValidator["validate"]>;
    try {
      result = check.validate(value);
    } catch (error) {
      // e.g. a `$ref` that resolves to nothing.
      return [`/ cannot be checked against the ${what} schema: ${error instanceof Error ? error.message : error}`];
    }
    if (result.valid) return undefined;
    return leafErrors(result.errors);
  };
  compiled.set(schema, validator);
  return validator;
}

/**
 * `path message` for each error, leaving out the summaries that
 * `@cfworker/json-schema` adds for a parent (`Property "n" does not match
 * schema.`) when a more precise error is also listed.
 */
function leafErrors(errors: readonly { keywordLocation: string; instanceLocation: string; error: string }[]): string[] {
  const out: string[] = [];
  for (const e of errors) {
    // `additionalProperties: false` reports the property and, below it, the `false` schema: keep the first.
    if (e.error === "False boolean schema." && errors.length > 1) continue;
    const covered = errors.some((other) =>
      other !== e && other.keywordLocation.startsWith(`${e.keywordLocation}/`) &&
      other.instanceLocation.startsWith(e.instanceLocation)
    );
    if (!covered) out.push(`${e.instanceLocation.replace(/^#/, "") || "/"} ${e.error.replace(/\.$/, "")}`);
  }
  return out.length > 0 ? out : errors.map((e) => `${e.instanceLocation.replace(/^#/, "") || "/"} ${e.error}`);
}

/** Describe zod issues as `path message` strings. */
export function zodProblems(error: z.ZodError): string[] {
  return error.issues.map((issue) => `/${issue.path.map(String).join("/")} ${issue.message}`);
}
