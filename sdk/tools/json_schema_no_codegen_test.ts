import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const deno = fileURLToPath(new URL("../../node_modules/.bin/deno", import.meta.url));
const script = fileURLToPath(new URL("./_test_no_codegen.ts", import.meta.url));

function runWithoutCodegen(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      deno,
      ["run", "--v8-flags=--disallow-code-generation-from-strings", "--no-check", "-A", script],
      { cwd: root, timeout: 25_000, env: { ...process.env, NO_COLOR: "1" } },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

describe("raw JSON Schema tools where code generation is forbidden", () => {
  it("validate good and bad arguments and outputs under deno --disallow-code-generation-from-strings", async () => {
    const { code, stdout, stderr } = await runWithoutCodegen();
    assert.equal(code, 0, stderr);
    const out = JSON.parse(stdout.trim().split("\n").at(-1)!);
    // The flag is in force: the platform really forbids `new Function`.
    assert.equal(out.codegen, "forbidden (EvalError)");
    // zod tools never start loading the validator; the first raw schema does, and a synchronous check made
    // before it has loaded is not cached as a failure.
    assert.equal(out.zodResult, "hi");
    assert.equal(out.pendingAfterZod, false);
    assert.equal(out.pendingAfterRaw, true);
    assert.equal(out.safeBeforeLoad, false);
    assert.equal(out.safeAfterLoad, true);
    assert.deepEqual(out.good, { value: 8, text: "8" });
    assert.deepEqual(out.wrongType.error, { name: "ToolArgsError", code: "INVALID_ARGS" });
    assert.match(out.wrongType.text, /^Invalid arguments for double: \/n .*integer/);
    assert.deepEqual(out.wrongRef.error, { name: "ToolArgsError", code: "INVALID_ARGS" });
    assert.match(out.wrongRef.text, /\/unit .*apples/);
    assert.deepEqual(out.extra.error, { name: "ToolArgsError", code: "INVALID_ARGS" });
    assert.match(out.extra.text, /"x"/);
    assert.deepEqual(out.badOutput.error, { name: "ToolOutputError", code: "INVALID_TOOL_OUTPUT" });
    assert.match(out.badOutput.text, /120/);
  });
});
