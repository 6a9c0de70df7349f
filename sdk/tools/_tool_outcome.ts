/**
 * Internal: building normalised tool outcomes (failures, validated successes,
 * content and context snapshots).
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { UserMessage } from "../llm/messages.ts";
import { frozenJson } from "./_json.ts";
import { vouch } from "../session/_copy_event_data.ts";
import { compileSchema } from "./_json_schema.ts";
import type {
  AnyToolDefinition,
  ToolContentInput,
  ToolFailure,
  ToolOutcome,
  ToolResultContent,
  ToolSuccess,
} from "./tool_definition.ts";

export function failure(code: string, name: string, message: string, meta?: ToolOutcome["meta"]): ToolFailure {
  return {
    isError: true,
    error: { name, code, message },
    content: [{ type: "text", text: message }],
    ...(meta !== undefined ? { meta } : {}),
  };
}

/** The text of a thrown value that cannot be shown as text (`String()` throws on it). */
export const UNPRINTABLE_THROW = "a value that cannot be shown as text was thrown";

// `String(value)`, or the fixed text when that throws (a null-prototype object, a throwing `toString`).
function textOf(value: unknown): string {
  try {
    return String(value);
  } catch {
    return UNPRINTABLE_THROW;
  }
}

/**
 * The message of anything thrown, always a string: an `Error`'s `message`
 * (as text when it is not a string), a string as it is, anything else through
 * `String()`; never throws (a getter or a `toString` that throws gives a
 * fixed text).
 */
export function messageOf(error: unknown): string {
  try {
    if (typeof error === "string") return error;
    if (error instanceof Error) {
      const message: unknown = error.message;
      return typeof message === "string" ? message : textOf(message);
    }
    return textOf(error);
  } catch {
    return UNPRINTABLE_THROW;
  }
}

/** The name of anything thrown, always a non-empty string (`"Error"` unless an `Error` names itself). */
export function nameOf(error: unknown): string {
  try {
    if (!(error instanceof Error)) return "Error";
    const name: unknown = error.name;
    return typeof name === "string" && name !== "" ? name : "Error";
  } catch {
    return "Error";
  }
}

/** Turn anything thrown into a failure (never throws); a `HarnessError` keeps its code. */
export function failureFrom(error: unknown, fallbackCode: string): ToolFailure {
  let code = fallbackCode;
  try {
    if (HarnessError.isInstance(error) && typeof error.code === "string" && error.code !== "") code = error.code;
  } catch {
    // A getter threw: the fallback code.
  }
  return failure(code, nameOf(error), messageOf(error) || code);
}

/** Normalise content to frozen text/image blocks. */
export function normalizeContent(input: ToolContentInput): readonly ToolResultContent[] {
  // One text block: frozen plain JSON, vouched for, so the result message and the log share it.
  if (typeof input === "string") return vouch(Object.freeze([Object.freeze({ type: "text" as const, text: input })]));
  if (!Array.isArray(input)) throw new TypeError("content must be a string or an array of text and image blocks");
  for (const block of input) {
    const ok = (block?.type === "text" && typeof block.text === "string") ||
      (block?.type === "image" && typeof block.mediaType === "string");
    if (!ok) throw new TypeError("content must hold only text and image blocks");
  }
  return frozenJson(input as ToolResultContent[]);
}

/** Validate, snapshot and render a successful value. */
export function success(definition: AnyToolDefinition, args: unknown, value: unknown): ToolOutcome {
  const problems = compileSchema(definition.output.schema, "output")(value);
  if (problems) {
    return failure(
      "INVALID_TOOL_OUTPUT",
      "ToolOutputError",
      `Invalid output of ${definition.name}: ${problems.join("; ")}`,
    );
  }
  try {
    const frozen = frozenJson(value);
    const content = normalizeContent(definition.output.render(args, frozen));
    const meta = definition.output.meta?.(args, frozen);
    const out: ToolSuccess = { isError: false, value: frozen, content };
    return meta === undefined ? out : { ...out, meta: frozenJson(meta) };
  } catch (error) {
    return failure(
      "INVALID_TOOL_OUTPUT",
      "ToolOutputError",
      `Invalid output of ${definition.name}: ${messageOf(error)}`,
    );
  }
}

export function snapshotContext(message: UserMessage): UserMessage {
  if (
    typeof message !== "object" || message === null || message.role !== "user" || typeof message.id !== "string" ||
    !Array.isArray(message.content) || typeof message.source?.kind !== "string"
  ) {
    throw new HarnessError("INVALID_ARGS", "A deferred context must be a user message with id, content and source");
  }
  return frozenJson(message);
}
