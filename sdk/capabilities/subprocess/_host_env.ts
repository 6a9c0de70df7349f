// Internal: the host process's environment variables, picked by name for the commands the harness runs (bashShell's,
// the hook bridge's). The one place outside localSubprocess that reads the host's environment: `process.env`, which
// Node, Bun and Deno (through its Node compatibility) all have; a runtime without it has no variables to pass.

import { HarnessError } from "../../kernel/harness_error.ts";

type Env = Record<string, string | undefined>;

/** The environment of the host process (`process.env` on Node, Bun and Deno). */
export const hostEnv = (): Env => (globalThis as { process?: { env?: Env } }).process?.env ?? {};

/** Whether the host runs on Windows, where variable names are read in any case. */
export const isWindows = (): boolean =>
  (globalThis as { process?: { platform?: string } }).process?.platform === "win32";

/**
 * An `inheritEnv` option checked: the names to pick (`defaults` when absent, none for `false`), or `true` to leave
 * the environment to the subprocess provider. A name has no `=`, NUL or `*`; a prefix ends with `*`.
 *
 * @throws {HarnessError} `INVALID_ARGS`, naming `owner`, for anything but a boolean or a list of names.
 */
export function checkEnvNames(
  inheritEnv: unknown,
  defaults: readonly string[],
  owner: string,
): readonly string[] | true {
  if (inheritEnv === undefined) return defaults;
  if (inheritEnv === true) return true;
  if (inheritEnv === false) return [];
  const bad = (): never => {
    throw new HarnessError(
      "INVALID_ARGS",
      `${owner}'s inheritEnv must be a boolean or a list of variable names (a prefix ending with "*" too)`,
    );
  };
  if (!Array.isArray(inheritEnv)) bad();
  for (const name of inheritEnv as readonly unknown[]) {
    if (typeof name !== "string" || !/^[^=\0*]+\*?$/.test(name)) bad();
  }
  return Object.freeze([...inheritEnv as readonly string[]]);
}

/**
 * An `env` option checked: an object of string values whose names are not empty and hold no `=` or NUL, and whose
 * values hold no NUL (what no process can be given).
 *
 * @throws {HarnessError} `INVALID_ARGS`, naming `owner` and the variable.
 */
export function checkEnv(env: unknown, owner: string): Readonly<Record<string, string>> | undefined {
  if (env === undefined) return undefined;
  if (typeof env !== "object" || env === null || Array.isArray(env)) {
    throw new HarnessError("INVALID_ARGS", `${owner}'s env must be an object of variable names to string values`);
  }
  for (const [name, value] of Object.entries(env)) {
    if (name === "" || name.includes("=") || name.includes("\0")) {
      throw new HarnessError(
        "INVALID_ARGS",
        `${owner}'s env has the variable name ${
          JSON.stringify(name)
        }, which is empty or contains "=" or a NUL character`,
      );
    }
    if (typeof value !== "string" || value.includes("\0")) {
      throw new HarnessError(
        "INVALID_ARGS",
        `${owner}'s env gives ${name} a value that is not a string without NUL characters`,
      );
    }
  }
  return Object.freeze({ ...env as Record<string, string> });
}

/** The variables of the host that `names` names (on Windows, where names are read in any case, in any case). */
export function pickEnv(names: readonly string[]): Record<string, string> {
  const picked: Record<string, string> = {};
  if (names.length === 0) return picked;
  const fold = isWindows() ? (name: string) => name.toUpperCase() : (name: string) => name;
  const exact = new Set(names.filter((n) => !n.endsWith("*")).map(fold));
  const prefixes = names.filter((n) => n.endsWith("*")).map((n) => fold(n.slice(0, -1)));
  for (const [name, value] of Object.entries(hostEnv())) {
    if (value === undefined) continue;
    const key = fold(name);
    if (exact.has(key) || prefixes.some((p) => key.startsWith(p))) picked[name] = value;
  }
  return picked;
}

/**
 * `base` with the variables of `layers` set over it, in order. On Windows, where a name is one variable in any case,
 * a variable set under another case than the one it has (`path` over the host's `Path`) replaces it: a child given
 * both gets only one of them, the first in sort order (Node's rule), which need not be the one set.
 */
export function overlayEnv<V extends string | undefined>(
  base: Readonly<Record<string, V>>,
  ...layers: readonly (Readonly<Record<string, string>> | undefined)[]
): Record<string, V | string> {
  let env: Record<string, V | string> = { ...base };
  const windows = isWindows();
  for (const layer of layers) {
    if (layer === undefined) continue;
    if (windows) {
      const names = new Set(Object.keys(layer).map((name) => name.toUpperCase()));
      for (const name of Object.keys(env)) if (names.has(name.toUpperCase())) delete env[name];
    }
    // Spread, not assignment: a variable named `__proto__` is a variable.
    env = { ...env, ...layer };
  }
  return env;
}
