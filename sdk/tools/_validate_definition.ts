/**
 * Internal: the checks every registered tool definition passes.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import { compileSchema } from "./_json_schema.ts";
import type { AnyToolDefinition } from "./tool_definition.ts";

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Check a definition's shape and compile its schemas.
 *
 * @throws {HarnessError} `INVALID_TOOL_DEFINITION` naming the first problem.
 */
export function validateToolShape(definition: AnyToolDefinition): void {
  const fail = (problem: string): never => {
    const name = typeof definition?.name === "string" ? definition.name : "(unnamed)";
    throw new HarnessError("INVALID_TOOL_DEFINITION", `Tool "${name}" is invalid: ${problem}`);
  };
  if (typeof definition !== "object" || definition === null) fail("it is not an object");
  if (typeof definition.name !== "string" || !TOOL_NAME.test(definition.name)) {
    fail("the name must be 1 to 64 letters, digits, underscores or hyphens");
  }
  if (typeof definition.description !== "string") fail("the description must be a string");
  if (typeof definition.parameters !== "object" || definition.parameters === null) {
    fail("the parameters must be a JSON Schema object");
  }
  if (typeof definition.execute !== "function") fail("execute must be a function");
  if (typeof definition.output !== "object" || definition.output === null) fail("the output definition is required");
  if (typeof definition.output.render !== "function") fail("output.render must be a function");
  if (
    definition.timeoutMs !== undefined &&
    (typeof definition.timeoutMs !== "number" || !Number.isFinite(definition.timeoutMs) || definition.timeoutMs <= 0)
  ) {
    fail("timeoutMs must be a positive finite number");
  }
  if (definition.access !== undefined && definition.access !== "read" && definition.access !== "write") {
    fail('access must be "read" or "write"');
  }
  compileSchema(definition.parameters, "parameters");
  compileSchema(definition.output.schema, "output");
}
