// Test helper: the command that runs a TypeScript file in a child process of the runtime running the tests.

import process from "node:process";

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
