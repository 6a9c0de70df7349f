/**
 * `defineTool()`: a tool with typed, validated arguments.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import {
  compileSchema,
  isZodSchema,
  jsonSchemaValidatorPending,
  type Validator,
  zodProblems,
  zodToJsonSchema,
} from "./_json_schema.ts";
import { validateToolShape } from "./_validate_definition.ts";
import { syncBodies } from "./_sync_body.ts";
import type { JsonSchemaType } from "./json_schema.ts";
import { ToolArgsError } from "./tool_errors.ts";
import type {
  JsonSchema,
  ToolAccess,
  ToolCallView,
  ToolContentInput,
  ToolDefinition,
  ToolExecution,
  ToolOutcome,
  ToolResultProjection,
  ToolResultView,
  ToolRunContext,
} from "./tool_definition.ts";

/**
 * The type side of a zod v4 schema as {@linkcode defineTool} reads it: its Standard Schema face, whose
 * `types.output` is the parsed value's type. Structural on purpose, so that a schema made by any installed copy
 * of zod 4 fits, and a program that gives only raw JSON Schema needs no zod types. At run time the schema must
 * still be a zod classic schema (`import { z } from "zod"`, 4.2.0 or later); anything else is refused with
 * `INVALID_TOOL_DEFINITION`.
 */
export interface ZodSchemaLike {
  /** The Standard Schema properties every zod 4 schema carries. */
  readonly "~standard": {
    readonly vendor: string;
    readonly types?: { readonly output: unknown } | undefined;
  };
}

/** A schema given to {@linkcode defineTool}: a zod v4 schema or raw JSON Schema. */
export type ToolSchemaInput = ZodSchemaLike | JsonSchema;

/** The parsed value's type of a schema with a Standard Schema face, `Else` for any other. */
type StandardOutput<S, Else> = S extends { readonly "~standard": { readonly types?: infer T } }
  ? T extends { readonly output: infer O } ? O : Else
  : Else;

/**
 * The argument type a parameters schema describes: the zod schema's output, `T` for a raw schema wrapped in
 * {@linkcode jsonSchema}`<T>()`, `unknown` for other raw JSON Schema.
 */
export type InferToolArgs<P> = StandardOutput<P, JsonSchemaType<P>>;

/**
 * The value type an output schema describes: the zod schema's output, `T` for a raw schema wrapped in
 * {@linkcode jsonSchema}`<T>()`, `unknown` for other raw JSON Schema.
 */
export type InferToolValue<O> = StandardOutput<O, JsonSchemaType<O>>;

/** Options of {@linkcode defineTool}. */
export interface DefineToolOptions<P extends ToolSchemaInput, O extends ToolSchemaInput> {
  /** The tool name the model calls (letters, digits, `_` and `-`, at most 64). */
  readonly name: string;
  /** What the tool does, for the model. */
  readonly description: string;
  /** The arguments: a zod v4 schema (converted to JSON Schema for the model) or a raw JSON Schema (validated with @cfworker/json-schema). */
  readonly parameters: P;
  /** The canonical output: its schema (zod or JSON Schema) and the renderer to model-facing content. */
  readonly output: {
    readonly schema: O;
    render(args: InferToolArgs<P>, value: InferToolValue<O>): ToolContentInput;
    meta?(args: InferToolArgs<P>, value: InferToolValue<O>): Readonly<Record<string, unknown>> | undefined;
  };
  /** The body; it gets validated arguments and must observe `exec.signal`. */
  execute(args: InferToolArgs<P>, exec: ToolRunContext): Promise<InferToolValue<O>> | InferToolValue<O>;
  /** Last change to the content, called exactly once per call (failures included). */
  finalizeContent?(exec: ToolExecution, outcome: ToolOutcome): ToolContentInput | undefined;
  /** Cooperative time budget in milliseconds; the body's signal aborts when it elapses. */
  readonly timeoutMs?: number;
  /** Whether a call may overlap its siblings; only `true` counts, invalid arguments are exclusive. */
  isConcurrencySafe?(args: InferToolArgs<P>): boolean;
  /** `read` runs by default, `write` asks for approval by default. @default {undefined (runs)} */
  readonly access?: ToolAccess;
  /** The argument a permission rule's `tool(pattern)` matches; not called for invalid arguments. */
  permissionSubject?(args: InferToolArgs<P>): string | undefined;
  /** How a UI may show the pending call; not called for invalid arguments. */
  presentCall?(args: InferToolArgs<P>): ToolCallView | undefined;
  /** How a UI may show the completed call; not called for invalid arguments. */
  presentResult?(args: InferToolArgs<P>, result: ToolResultProjection): ToolResultView | undefined;
}

// `loading`: a raw schema whose validator has not loaded yet; the answer is not cached.
type Parse = (args: unknown) => { ok: true; value: unknown } | { ok: false; problems: string[]; loading?: true };

function parserFor(parameters: ToolSchemaInput): { json: JsonSchema; parse: Parse } {
  if (isZodSchema(parameters)) {
    const json = zodToJsonSchema(parameters, "input", "parameters");
    return {
      json,
      parse: (args) => {
        const result = parameters.safeParse(args);
        return result.success ? { ok: true, value: result.data } : { ok: false, problems: zodProblems(result.error) };
      },
    };
  }
  // Not a zod schema, so raw JSON Schema (the static type cannot tell a zod look-alike from one).
  const raw = parameters as JsonSchema;
  const validate: Validator = compileSchema(raw, "parameters");
  return {
    json: raw,
    parse: (args) => {
      const problems = validate(args);
      if (problems?.loading) return { ok: false, problems, loading: true };
      return problems ? { ok: false, problems } : { ok: true, value: args };
    },
  };
}

/**
 * Define a tool whose arguments are validated and typed.
 *
 * Parameters given as a zod v4 schema reach the model as its JSON Schema
 * (`z.toJSONSchema`, input side) and are parsed with zod, so defaults and
 * transforms apply; raw JSON Schema (draft 2020-12) is validated with
 * `@cfworker/json-schema`, which generates no code and is loaded on the first
 * raw schema only. Arguments that do not match make the call fail with a
 * {@linkcode ToolArgsError}
 * (`INVALID_ARGS`); a value that does not match `output.schema` fails with
 * `INVALID_TOOL_OUTPUT` (checked by the runtime). Both are ordinary tool
 * errors, never exceptions out of `ToolRuntime.execute()`.
 *
 * @param options The tool.
 * @returns A definition to pass to `ToolRuntime.register()`.
 * @throws {HarnessError} `INVALID_TOOL_DEFINITION` for a bad name, schema or `timeoutMs`.
 *
 * @example A typed tool
 * ```ts
 * import { defineTool } from "@dsh/harness";
 * import { z } from "zod";
 * import assert from "node:assert/strict";
 *
 * const add = defineTool({
 *   name: "add",
 *   description: "Add two numbers",
 *   parameters: z.object({ a: z.number(), b: z.number() }),
 *   output: { schema: z.number(), render: (args, sum) => `${args.a} + ${args.b} = ${sum}` },
 *   execute: ({ a, b }) => a + b,
 * });
 * assert.equal(add.name, "add");
 * assert.deepEqual(add.parameters.required, ["a", "b"]);
 * ```
 */
export function defineTool<P extends ToolSchemaInput, O extends ToolSchemaInput>(
  options: DefineToolOptions<P, O>,
): ToolDefinition<InferToolArgs<P>, InferToolValue<O>> {
  if (typeof options !== "object" || options === null) {
    throw new HarnessError("INVALID_TOOL_DEFINITION", "Cannot define a tool without options");
  }
  const { json: parameters, parse } = parserFor(options.parameters);
  if (typeof options.output !== "object" || options.output === null) {
    throw new HarnessError("INVALID_TOOL_DEFINITION", `Tool "${options.name}" has no output definition`);
  }
  const outputSchema: JsonSchema = isZodSchema(options.output.schema)
    ? zodToJsonSchema(options.output.schema, "output", "output")
    : options.output.schema as JsonSchema;
  compileSchema(outputSchema, "output");

  const cache = new WeakMap<object, ReturnType<Parse>>();
  const parsed = (args: unknown): ReturnType<Parse> => {
    if (typeof args !== "object" || args === null) return parse(args);
    let result = cache.get(args);
    if (result === undefined) {
      result = parse(args);
      if (result.ok || !result.loading) cache.set(args, result);
    }
    return result;
  };
  const typed = (args: unknown): InferToolArgs<P> => {
    const result = parsed(args);
    if (!result.ok) {
      throw new ToolArgsError(`Invalid arguments for ${options.name}: ${result.problems.join("; ")}`, {
        details: { problems: result.problems },
      });
    }
    return result.value as InferToolArgs<P>;
  };
  type A = InferToolArgs<P>;
  type V = InferToolValue<O>;
  const source = options;
  const definition: ToolDefinition<A, V> = {
    name: source.name,
    description: source.description,
    parameters,
    output: {
      schema: outputSchema,
      render: (args, value) => source.output.render(typed(args), value),
      ...(source.output.meta ? { meta: (args: A, value: V) => source.output.meta!(typed(args), value) } : {}),
    },
    execute: async (args, exec) => {
      const pending = jsonSchemaValidatorPending();
      if (pending !== undefined) await pending;
      return await source.execute(typed(args), exec);
    },
    checkArgs: (args) => {
      const result = parsed(args);
      // A raw schema's validator still loading has no say yet: the body validates once it has loaded.
      return result.ok || result.loading ? undefined : result.problems;
    },
    ...(source.finalizeContent ? { finalizeContent: source.finalizeContent.bind(source) } : {}),
    ...(source.timeoutMs !== undefined ? { timeoutMs: source.timeoutMs } : {}),
    ...(source.isConcurrencySafe
      ? {
        isConcurrencySafe: (args: A) => {
          const result = parsed(args);
          return result.ok ? source.isConcurrencySafe!(result.value as A) === true : false;
        },
      }
      : {}),
    ...(source.access !== undefined ? { access: source.access } : {}),
    ...(source.permissionSubject
      ? {
        permissionSubject: (args: A) => {
          const result = parsed(args);
          return result.ok ? source.permissionSubject!(result.value as A) : undefined;
        },
      }
      : {}),
    ...(source.presentCall
      ? {
        presentCall: (args: A) => {
          const result = parsed(args);
          return result.ok ? source.presentCall!(result.value as A) : undefined;
        },
      }
      : {}),
    ...(source.presentResult
      ? {
        presentResult: (args: A, projection: ToolResultProjection) => {
          const result = parsed(args);
          return result.ok ? source.presentResult!(result.value as A, projection) : undefined;
        },
      }
      : {}),
  };
  validateToolShape(definition);
  const frozen = Object.freeze(definition);
  syncBodies.set(frozen, {
    execute: frozen.execute,
    run: (args, exec) => {
      const pending = jsonSchemaValidatorPending();
      if (pending !== undefined) return pending.then(() => source.execute(typed(args), exec));
      return source.execute(typed(args), exec);
    },
  });
  return frozen;
}
