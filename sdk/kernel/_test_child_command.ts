// Test helper: the command that runs a TypeScript file in a child process of the runtime running the tests.

import process from "node:process";
import { spawn } from "node:child_process";

/**
 * How this runtime runs `script` with `args`: `deno run -A`, `bun`, or Node with tsx.
 *
 * @param script An absolute path to a `.ts` file.
 * @param args Its arguments.
 * @returns The program and its arguments, for `spawn()`.
 */
export function childCommand(script: string, ...args: string[]): [string, string[]] {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  if (g.Deno !== undefined) return [process.execPath, ["run", "-A", script, ...args]];
  if (g.Bun !== undefined) return [process.execPath, [script, ...args]];
  return [process.execPath, ["--import", "tsx", script, ...args]];
}

/**
 * Run `program` with `args` to its end, with no input: its exit code and everything it wrote.
 *
 * @param program The program.
 * @param args Its arguments.
 * @returns The exit code (`null` when a signal ended it) and the output.
 */
export function runToEnd(
  program: string,
  args: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(program, args, { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}
