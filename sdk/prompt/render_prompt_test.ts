import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../kernel/mod.ts";
import { renderPrompt } from "./render_prompt.ts";

describe("renderPrompt()", () => {
  it("interpolates every reference, with or without spaces in the braces", () => {
    assert.equal(renderPrompt("{{a}} and {{ b }} and {{a}}", { a: "1", b: "2" }), "1 and 2 and 1");
    assert.equal(renderPrompt("no references", {}), "no references");
  });

  it("a missing or undefined variable is an error, not an empty string", () => {
    const missing = (name: string) => (e: unknown) =>
      HarnessError.isInstance(e, "PROMPT_VARIABLE_MISSING") && e.details?.name === name;
    assert.throws(() => renderPrompt("cwd: {{cwd}}", {}), missing("cwd"));
    assert.throws(() => renderPrompt("cwd: {{cwd}}", { cwd: undefined }), missing("cwd"));
    assert.throws(() => renderPrompt("{{toString}}", {}), missing("toString"));
  });

  it("a malformed reference is an error; \\{{ is a literal", () => {
    const invalid = (e: unknown) => HarnessError.isInstance(e, "PROMPT_TEMPLATE_INVALID");
    assert.throws(() => renderPrompt("{{ not a name }}", {}), invalid);
    assert.throws(() => renderPrompt("unclosed {{name", { name: "x" }), invalid);
    assert.throws(() => renderPrompt("{{}}", {}), invalid);
    assert.equal(renderPrompt("\\{{name}} is {{name}}", { name: "x" }), "{{name}} is x");
  });

  it("does not re-interpolate substituted values", () => {
    assert.equal(renderPrompt("{{a}}", { a: "{{b}}" }), "{{b}}");
  });
});
