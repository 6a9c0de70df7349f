/**
 * The registered form of a tool: its model-facing schema plus everything the
 * runtime needs to execute, validate, render and present a call.
 *
 * @module
 */

import type { ImageBlock, TextBlock, ToolSchema, UserMessage } from "../llm/messages.ts";
import type { ScopeInfo } from "../kernel/harness_context.ts";

/** A raw JSON Schema object (draft 2020-12). */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** Whether a tool only reads or also changes the world (files, processes, remote state). */
export type ToolAccess = "read" | "write";

/** A content block a tool result may carry. */
export type ToolResultContent = TextBlock | ImageBlock;

/** What a renderer returns: content blocks, or a string for one text block. */
export type ToolContentInput = string | readonly ToolResultContent[];

/**
 * The canonical output contract of a tool.
 *
 * `schema` is enforced by the runtime on every successful value; `render` is a
 * pure projection from the validated arguments and value to the content the
 * model sees.
 */
export interface ToolOutputDefinition<A = unknown, V = unknown> {
  /** JSON Schema every successful value must match. */
  readonly schema: JsonSchema;
  /** Project the arguments and the validated value onto model-facing content. */
  render(args: A, value: V): ToolContentInput;
  /** Optional JSON metadata recorded with the result (for presentation), never sent to the model. */
  meta?(args: A, value: V): Readonly<Record<string, unknown>> | undefined;
}

/**
 * One call inside the pipeline, as hooks see it. Shallowly frozen; `args` is
 * deep-frozen.
 */
export interface ToolExecution {
  /** The call id the model gave. */
  readonly callId: string;
  /** The tool name the model asked for. */
  readonly name: string;
  /** The raw argument string as the model produced it. */
  readonly arguments: string;
  /** The parsed arguments (`{}` for an empty string); `undefined` when `arguments` is not valid JSON. */
  readonly args: unknown;
  /** The caller's cancellation signal. */
  readonly signal: AbortSignal;
  /** The scope the call runs for (the agent's scope), if any. */
  readonly scope?: ScopeInfo;
  /** The session the call belongs to, if any. */
  readonly sessionId?: string;
  /** The turn the call belongs to, if any. */
  readonly turn?: number;
  /** The step the call belongs to, if any. */
  readonly step?: number;
}

/** What the tool body receives besides its arguments. */
export interface ToolRunContext extends ToolExecution {
  /** Aborted when the caller cancels, a wrapper replaces it, or the tool's `timeoutMs` elapses. */
  readonly signal: AbortSignal;
  /**
   * Attach a message to this call's result; the loop appends it to the next
   * step's input after the `tool/result` (for example a plugin instruction).
   */
  deferContext(message: UserMessage): void;
  /** Mark a successful result of this call as the end of the turn. */
  concludeTurn(): void;
  /**
   * Whether this call may also reach `subject`: a path a search, a listing or
   * a link leads to beyond the one the call was judged on, or (`web_fetch`) a
   * redirect's target URL. `false` when a
   * subject guard ({@linkcode ToolRuntime.subjectGuard}), such as a
   * configured deny or ask rule, refuses it. Absent when no subject guard
   * applies to the call (everything it reaches is permitted).
   */
  readonly permits?: (subject: string) => boolean;
}

/** How a UI may show a pending call (a render intent, not a protocol). */
export interface ToolCallView {
  /** The kind of card: `generic`, `terminal`, `diff`, … */
  readonly card: string;
  /** A one-line title. */
  readonly title: string;
  /** Further card-specific fields. */
  readonly [field: string]: unknown;
}

/** How a UI may show a completed call. */
export interface ToolResultView {
  /** The kind of card: `generic`, `terminal`, `diff`, … */
  readonly card: string;
  /** A one-line title. */
  readonly title?: string;
  /** Further card-specific fields. */
  readonly [field: string]: unknown;
}

/** The durable projection of a result a presenter sees. */
export interface ToolResultProjection {
  /** The model-facing content. */
  readonly content: readonly ToolResultContent[];
  /** Whether the call failed. */
  readonly isError: boolean;
  /** The presentation metadata, if any. */
  readonly meta?: Readonly<Record<string, unknown>>;
}

/**
 * A normalised outcome inside the pipeline, before it becomes a result
 * message: either a success with its canonical value or a failure.
 */
export type ToolOutcome = ToolSuccess | ToolFailure;

/** A successful outcome. */
export interface ToolSuccess {
  /** Always `false`. */
  readonly isError: false;
  /** The canonical value (matches `output.schema`); execution-local, never persisted. */
  readonly value: unknown;
  /** The model-facing content (`output.render` of the value, unless replaced). */
  readonly content: readonly ToolResultContent[];
  /** Presentation metadata (`output.meta`), JSON. */
  readonly meta?: Readonly<Record<string, unknown>>;
}

/** A failed outcome; failures never carry a value. */
export interface ToolFailure {
  /** Always `true`. */
  readonly isError: true;
  /** What failed. */
  readonly error: ToolFailureInfo;
  /** The model-facing content: the error message unless replaced. */
  readonly content: readonly ToolResultContent[];
  /** Presentation metadata, JSON. */
  readonly meta?: Readonly<Record<string, unknown>>;
}

/** Why a call failed. */
export interface ToolFailureInfo {
  /** The error class name, e.g. `ToolArgsError`. */
  readonly name: string;
  /** The stable code, e.g. `INVALID_ARGS`, `UNKNOWN_TOOL`, `TIMEOUT`, `DENIED`. */
  readonly code: string;
  /** A human-readable message. */
  readonly message: string;
}

/**
 * A registered tool. `name`, `description` and `parameters` are all the model
 * ever sees of it; the runtime's `schemas()` builds the model-facing list by
 * that explicit allowlist.
 *
 * `execute` receives the parsed, frozen arguments as `unknown` and validates
 * them itself; {@linkcode defineTool} writes that validation for you.
 */
export interface ToolDefinition<A = unknown, V = unknown> extends ToolSchema {
  /** The canonical output contract (required). */
  readonly output: ToolOutputDefinition<A, V>;
  /** Run one accepted call; async work must observe `exec.signal`. */
  execute(args: A, exec: ToolRunContext): Promise<V>;
  /**
   * Last synchronous change to the model-facing content, called exactly once
   * for every outcome of a call to this tool (failures included). Return
   * `undefined` to keep the content.
   */
  finalizeContent?(exec: ToolExecution, outcome: ToolOutcome): ToolContentInput | undefined;
  /** A cooperative time budget in milliseconds; the body's signal aborts when it elapses. Never sent to the model. */
  readonly timeoutMs?: number;
  /** Whether a call may overlap its siblings; only an exact `true` counts. Never sent to the model. */
  isConcurrencySafe?(args: A): boolean;
  /**
   * What the tool does to the world, for permissions: a `write` call asks
   * for approval unless a `tools/pre-execute` listener or a permission rule
   * decides otherwise; `read` (and no declaration) runs. Never sent to the model.
   */
  readonly access?: ToolAccess;
  /**
   * The argument a permission rule's pattern is matched against, as in
   * `bash(git *)` or `write_file(src/*)`: the command, the path, the URL.
   * Never sent to the model.
   */
  permissionSubject?(args: A): string | undefined;
  /** How a UI may show the pending call. */
  presentCall?(args: A): ToolCallView | undefined;
  /** How a UI may show the completed call. */
  presentResult?(args: A, result: ToolResultProjection): ToolResultView | undefined;
  /**
   * The problems of a call's parsed arguments, or `undefined` when they are
   * valid. The pipeline asks after the `tools/pre-execute` listeners (so that
   * one may repair the input) and before any guard or approval: a call with
   * problems is answered `INVALID_ARGS` (`ToolArgsError`) at once and nobody is
   * asked to approve it. Without it, the body alone validates.
   * {@linkcode defineTool} writes it from `parameters`.
   */
  checkArgs?(args: unknown): readonly string[] | undefined;
}

/** A tool definition of any argument and value types. */
// deno-lint-ignore no-explicit-any
export type AnyToolDefinition = ToolDefinition<any, any>;
