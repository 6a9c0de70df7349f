/**
 * `renderPrompt()`: strict `{{variable}}` interpolation.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";

/** The variable names a template may reference. */
export const PROMPT_VARIABLE_NAME: RegExp = /^[A-Za-z_][A-Za-z0-9_]*$/;

const TOKEN = /\\\{\{|\{\{([^{}]*)\}\}|\{\{/g;

/**
 * Interpolate `{{name}}` references (spaces inside the braces are allowed).
 * Strict: a reference to a variable that is missing or `undefined` is an
 * error, never an empty string. Write `\{{` for a literal `{{`.
 *
 * @param template The text.
 * @param variables The values by name.
 * @returns The rendered text.
 * @throws {HarnessError} `PROMPT_VARIABLE_MISSING` for a missing variable,
 *   `PROMPT_TEMPLATE_INVALID` for a malformed reference.
 *
 * @example
 * ```ts
 * import { HarnessError, renderPrompt } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * assert.equal(renderPrompt("You work in {{ cwd }}.", { cwd: "/repo" }), "You work in /repo.");
 * assert.equal(renderPrompt("Literal \\{{cwd}}", {}), "Literal {{cwd}}");
 * assert.throws(() => renderPrompt("Hello {{name}}", {}), (e) => HarnessError.isInstance(e, "PROMPT_VARIABLE_MISSING"));
 * ```
 */
export function renderPrompt(template: string, variables: Readonly<Record<string, string | undefined>>): string {
  if (typeof template !== "string") {
    throw new HarnessError("INVALID_ARGS", "Cannot render a prompt that is not a string");
  }
  // No reference and no escape: nothing to replace (every token starts with "{{" or "\\{{").
  if (!template.includes("{{")) return template;
  return template.replace(TOKEN, (token: string, inner: string | undefined, offset: number) => {
    if (token === "\\{{") return "{{";
    const name = inner?.trim();
    if (name === undefined || !PROMPT_VARIABLE_NAME.test(name)) {
      throw new HarnessError(
        "PROMPT_TEMPLATE_INVALID",
        `Prompt template has a malformed reference at offset ${offset}: ${JSON.stringify(token)}`,
        { details: { offset } },
      );
    }
    const value = Object.hasOwn(variables, name) ? variables[name] : undefined;
    if (typeof value !== "string") {
      throw new HarnessError("PROMPT_VARIABLE_MISSING", `Prompt variable "${name}" is not defined`, {
        details: { name },
      });
    }
    return value;
  });
}
