import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../kernel/harness_error.ts";
import { JsoncText } from "./_jsonc_text.ts";

describe("JsoncText", () => {
  it("refuses values nested past 256 levels with CONFIG_SYNTAX at the bracket, not a stack overflow", () => {
    const nested = (n: number) => `{"a": ${"[".repeat(n)}1${"]".repeat(n)}}`;
    assert.deepEqual(JsoncText.parse(nested(255), "c.jsonc").value !== undefined, true);
    for (const n of [257, 50_000]) {
      assert.throws(() => JsoncText.parse(nested(n), "c.jsonc"), (error: unknown) => {
        assert.ok(HarnessError.isInstance(error, "CONFIG_SYNTAX"));
        assert.match((error as Error).message, /c\.jsonc:1:262: values nest deeper than 256 levels/);
        return true;
      });
    }
    // Brackets in strings and comments are not nesting.
    const text = `{"s": "${"[".repeat(300)}", /* ${"{".repeat(300)} */ "b": 1}`;
    assert.equal((JsoncText.parse(text, "c.jsonc").value as { b: number }).b, 1);
  });

  it("counts depth over the parser's own tokens: a CR-ended comment or an unterminated string hides no bracket", () => {
    const deep = "[".repeat(300) + "]".repeat(300);
    for (const text of [`// note\r{ "tools": ${deep} }`, `{ "model": { "model": "x\n, "tools": ${deep} } "`]) {
      assert.throws(() => JsoncText.parse(text, "c.jsonc"), (error: unknown) => {
        assert.ok(HarnessError.isInstance(error, "CONFIG_SYNTAX"));
        assert.match((error as Error).message, /c\.jsonc:2:\d+: values nest deeper than 256 levels/);
        return true;
      });
    }
  });

  it("refuses a U+2028 or U+2029 inside a // comment, which would hide what follows it on the line", () => {
    for (const separator of ["\u2028", "\u2029"]) {
      const text =
        `{\n  // allow reads${separator}"permissions": [{ "tool": "bash", "action": "deny" }],\n  "model": "m"\n}`;
      assert.throws(() => JsoncText.parse(text, "c.jsonc"), (error: unknown) => {
        assert.ok(HarnessError.isInstance(error, "CONFIG_SYNTAX"));
        assert.match(
          (error as Error).message,
          /c\.jsonc:2:17: a line separator \(U\+2028 or U\+2029\) inside a \/\/ comment/,
        );
        return true;
      });
    }
    // In a string or a block comment it is harmless.
    const fine = '{ "a": "x\u2028y", /* z\u2029 */ "b": 1 }';
    assert.deepEqual({ ...JsoncText.parse(fine, "c.jsonc").value as object }, { a: "x\u2028y", b: 1 });
  });

  it("counts lines across LF, CRLF and CR line ends", () => {
    const text = JsoncText.parse('{\r\n"a": {\n\r"b": 1\r\n}}', "t");
    assert.deepEqual(text.locate(["a"]), { line: 2, column: 6 });
    assert.deepEqual(text.locate(["a", "b"]), { line: 4, column: 6 });
  });

  it("locates the deepest present ancestor of a missing path, and property names", () => {
    const text = JsoncText.parse('{ "a": { "b": 1 } }', "t");
    assert.deepEqual(text.locate(["a", "missing", "deeper"]), { line: 1, column: 8 });
    assert.deepEqual(text.locate(["a"], "b"), { line: 1, column: 10 });
    assert.deepEqual(text.locate([]), { line: 1, column: 1 });
  });

  it("ignores a byte order mark", () => {
    const text = JsoncText.parse('\uFEFF{ "a": 1 }', "t");
    assert.deepEqual({ ...(text.value as object) }, { a: 1 });
    assert.deepEqual(text.locate(["a"]), { line: 1, column: 8 });
  });

  it("reports unterminated input at its position", () => {
    try {
      JsoncText.parse('{\n  "a": "open', "t.jsonc");
      assert.fail("expected CONFIG_SYNTAX");
    } catch (error) {
      assert.ok(HarnessError.isInstance(error, "CONFIG_SYNTAX"));
      assert.equal(error.details?.line, 2);
      assert.match(error.message, /^Cannot parse the configuration in t\.jsonc:2:\d+: /);
    }
  });

  it("gives {} for whitespace and comments only", () => {
    assert.deepEqual(JsoncText.parse("  /* nothing */\n// here\n", "t").value, {});
    assert.deepEqual(JsoncText.parse("", "t").value, {});
  });

  it("refuses a text that starts with an unterminated comment instead of reading it as empty", () => {
    for (const text of ['/* TODO: review\n{ "tools": [] }\n', "/* x", '// a\n/* { "a": 1 }']) {
      assert.throws(() => JsoncText.parse(text, "t.jsonc"), { code: "CONFIG_SYNTAX", message: /unterminated comment/ });
    }
  });
});
