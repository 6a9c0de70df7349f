/**
 * Errors of the tool pipeline. Inside `ToolRuntime.execute()` they become
 * ordinary error results, never exceptions.
 *
 * @module
 */

import { HarnessError, type HarnessErrorOptions } from "../kernel/harness_error.ts";

/**
 * The arguments of a call do not match the tool's parameters (code `INVALID_ARGS`).
 *
 * @example
 * ```ts
 * import { ToolArgsError } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const error = new ToolArgsError("Invalid arguments for read_file: /path must be string");
 * assert.equal(error.code, "INVALID_ARGS");
 * assert.equal(error.name, "ToolArgsError");
 * ```
 */
export class ToolArgsError extends HarnessError {
  /**
   * Create the error.
   *
   * @param message The problem, fact first.
   * @param options The cause and details (e.g. `problems`).
   */
  constructor(message: string, options?: HarnessErrorOptions) {
    super("INVALID_ARGS", message, options);
    this.name = "ToolArgsError";
  }
}

/**
 * A tool's value does not match its `output.schema`, or cannot be rendered
 * (code `INVALID_TOOL_OUTPUT`).
 *
 * @example
 * ```ts
 * import { ToolOutputError } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * assert.equal(new ToolOutputError("Invalid output of count: / must be integer").code, "INVALID_TOOL_OUTPUT");
 * ```
 */
export class ToolOutputError extends HarnessError {
  /**
   * Create the error.
   *
   * @param message The problem, fact first.
   * @param options The cause and details (e.g. `problems`).
   */
  constructor(message: string, options?: HarnessErrorOptions) {
    super("INVALID_TOOL_OUTPUT", message, options);
    this.name = "ToolOutputError";
  }
}
