#!/usr/bin/env node
// The whole check, as `npm test` runs it: type check, lint, format, publish
// dry run, the test suite on Deno, Bun and Node (tsx), the JSDoc examples, and
// the packed npm tarball installed into consumer projects (scripts/pack_check.mjs).
// Every step runs even when an earlier one fails; the exit code is non-zero if
// any failed. Pass step names to run only those, e.g. `node scripts/test.mjs node bun`.

import { spawn } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name) => join(root, "node_modules", ".bin", name);
const SKIP_DIRS = new Set(["node_modules", ".git", ".tmp", "dist", "testdata"]);

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    if (SKIP_DIRS.has(name) || name.startsWith(".")) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else out.push(relative(root, path));
  }
  return out;
}

const files = walk(root).sort();
const testFiles = files.filter((f) => f.endsWith("_test.ts"));
// Browser tests (playwright-core driving Chromium) run on Node only; see sdk/http/view/view_browser_test.ts.
const runtimeTestFiles = testFiles.filter((f) => !f.endsWith("_browser_test.ts"));
const sourceFiles = files.filter((f) =>
  f.endsWith(".ts") && !f.endsWith("_test.ts") && !f.startsWith("bench/") && !f.startsWith("examples/") &&
  !f.startsWith("scripts/") && !f.includes("/_test_") && !f.includes("/testdata/")
);
const entryPoints = [
  "mod.ts",
  "adapters/mod.ts",
  "replay/mod.ts",
  "testing/mod.ts",
  "sdk/http/mod.ts",
  "sdk/config/mod.ts",
  "sdk/capabilities/mod.ts",
  "sdk/subagents/mod.ts",
  "sdk/hooks/mod.ts",
  "view/mod.ts",
  "sdk/postgres/mod.ts",
];
// Every test file is type-checked here, once (the runtimes then run them with --no-check): type tests
// (`*_types_test.ts`: `@ts-expect-error` lines and exact type equalities) and the tests' own code alike.
const checked = [
  ...entryPoints,
  ...files.filter((f) => (f.startsWith("examples/") || f.startsWith("bench/")) && f.endsWith(".ts")),
  ...testFiles,
];

const steps = [
  { name: "paths", cmd: process.execPath, args: [join(root, "scripts", "check_paths.mjs")] },
  { name: "check", cmd: bin("deno"), args: ["check", ...checked] },
  { name: "lint", cmd: bin("deno"), args: ["lint"] },
  { name: "fmt", cmd: bin("deno"), args: ["fmt", "--check"] },
  { name: "publish", cmd: bin("deno"), args: ["publish", "--dry-run", "--allow-dirty"] },
  { name: "deno", cmd: bin("deno"), args: ["test", "-A", "--no-check", ...runtimeTestFiles], summary: denoSummary },
  {
    name: "bun",
    cmd: bin("bun"),
    args: ["test", "--timeout", "30000", ...runtimeTestFiles.map((f) => `./${f}`)],
    summary: bunSummary,
  },
  {
    name: "node",
    cmd: process.execPath,
    args: ["--import", "tsx", "--test", "--test-timeout=30000", ...testFiles],
    summary: nodeSummary,
  },
  { name: "doc", cmd: bin("deno"), args: ["test", "-A", "--doc", ...sourceFiles], summary: denoSummary },
  { name: "pack", cmd: process.execPath, args: [join(root, "scripts", "pack_check.mjs")] },
];

function denoSummary(text) {
  const m = [...text.matchAll(/(?:ok|FAILED) \| (\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed/g)].pop();
  return m ? { passed: +m[1], failed: +m[2] } : undefined;
}
function bunSummary(text) {
  const p = text.match(/^\s*(\d+) pass$/m);
  const f = text.match(/^\s*(\d+) fail$/m);
  return p && f ? { passed: +p[1], failed: +f[1] } : undefined;
}
function nodeSummary(text) {
  const p = text.match(/^# pass (\d+)$/m);
  const f = text.match(/^# fail (\d+)$/m);
  return p && f ? { passed: +p[1], failed: +f[1] } : undefined;
}

function run(step) {
  return new Promise((resolve) => {
    console.log(
      `\n=== ${step.name}: ${[relative(root, step.cmd) || step.cmd, ...step.args.slice(0, 4)].join(" ")}${
        step.args.length > 4 ? " …" : ""
      }`,
    );
    const child = spawn(step.cmd, step.args, { cwd: root, env: { ...process.env, NO_COLOR: "1" } });
    let text = "";
    const onData = (stream) => (chunk) => {
      text += chunk;
      stream.write(chunk);
    };
    child.stdout.on("data", onData(process.stdout));
    child.stderr.on("data", onData(process.stderr));
    child.on("close", (code) => resolve({ code, text }));
  });
}

const only = new Set(process.argv.slice(2));
const results = [];
let totalPassed = 0;
let totalFailed = 0;
for (const step of steps) {
  if (only.size && !only.has(step.name)) continue;
  const { code, text } = await run(step);
  // deno-lint-ignore no-control-regex
  const counts = step.summary?.(text.replace(/\x1b\[[0-9;]*m/g, ""));
  if (step.summary && !counts) {
    results.push({ name: step.name, ok: false, note: "no test summary found" });
    continue;
  }
  if (counts) {
    totalPassed += counts.passed;
    totalFailed += counts.failed;
  }
  const ok = code === 0 && (!counts || (counts.failed === 0 && counts.passed > 0));
  results.push({
    name: step.name,
    ok,
    note: counts ? `${counts.passed} passed, ${counts.failed} failed` : `exit ${code}`,
  });
}

console.log("\n=== summary");
for (const r of results) console.log(`${r.ok ? "ok  " : "FAIL"} ${r.name.padEnd(8)} ${r.note}`);
const failedSteps = results.filter((r) => !r.ok).length;
console.log(`tests: ${totalPassed} passed, ${totalFailed + failedSteps} failed`);
process.exit(failedSteps ? 1 : 0);
