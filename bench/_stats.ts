/**
 * Small helpers shared by the benchmarks: the runtime's name, arguments,
 * forced garbage collection, heap figures, medians, and the machine-readable
 * result line that `scripts/bench.mjs` collects.
 *
 * @module
 */

import process from "node:process";

/** `deno`, `bun` or `node`. */
export const RUNTIME: "deno" | "bun" | "node" = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node";

/** The runtime and its version, e.g. `node 20.20.2`. */
export function runtimeVersion(): string {
  const g = globalThis as { Deno?: { version: { deno: string } }; Bun?: { version: string } };
  if (g.Deno) return `deno ${g.Deno.version.deno}`;
  if (g.Bun) return `bun ${g.Bun.version}`;
  return `node ${process.versions.node}`;
}

/**
 * A numeric option given as `--name value` / `--name=value` or the environment
 * variable `env`; `fallback` otherwise.
 */
export function numberOption(name: string, env: string, fallback: number): number {
  const args = process.argv.slice(2);
  let raw: string | undefined;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === `--${name}`) raw = args[i + 1];
    else if (args[i].startsWith(`--${name}=`)) raw = args[i].slice(name.length + 3);
  }
  raw ??= process.env[env];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got "${raw}"`);
  return value;
}

/** Whether the flag `--name` was given. */
export function flag(name: string): boolean {
  return process.argv.slice(2).includes(`--${name}`);
}

/**
 * Force a full garbage collection where the runtime allows it (`Bun.gc(true)`,
 * or `gc()` exposed by `--expose-gc` on Node and `--v8-flags=--expose-gc` on Deno).
 *
 * @returns Whether a collection ran.
 */
export function forceGc(): boolean {
  const g = globalThis as { gc?: () => void; Bun?: { gc(force: boolean): void } };
  if (g.Bun) {
    g.Bun.gc(true);
    return true;
  }
  if (typeof g.gc === "function") {
    g.gc();
    g.gc();
    return true;
  }
  return false;
}

/** Bytes of heap in use now. */
export function heapUsed(): number {
  return process.memoryUsage().heapUsed;
}

/** The median of `values` (not modified). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Round to `digits` significant decimals for printing. */
export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** The marker of the machine-readable line a benchmark prints last. */
export const RESULT_MARKER = "BENCH_RESULT ";

/** Print the machine-readable result line collected by `scripts/bench.mjs`. */
export function printResult(result: unknown): void {
  console.log(RESULT_MARKER + JSON.stringify(result));
}
