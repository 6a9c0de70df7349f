/**
 * Loading the effective configuration from profile files, a patch file and overrides.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { HarnessConfigLayer } from "./harness_config.ts";
import { type ConfigLayer, type LoadedConfig, resolveConfig } from "./resolve_config.ts";
import { currentDirectory, readTextFile } from "./_node_files.ts";
import { fileUrlOf } from "./_plugin_specifier.ts";

/** The configuration files {@linkcode loadConfig} reads. */
export interface ConfigPaths {
  /** Profile files, applied in order (later ones win). */
  readonly profiles?: readonly string[];
  /** The user's patch file, applied after every profile. */
  readonly patch?: string;
}

/** Options of {@linkcode loadConfig}. */
export interface LoadConfigOptions {
  /**
   * Read a file as text. To report a missing file, reject with an error whose
   * `code` is `"ENOENT"` (as `node:fs` does).
   *
   * @default {readFile from "node:fs/promises"}
   */
  readonly readFile?: (path: string) => Promise<string>;
  /**
   * The directory relative file paths are relative to: they are read from it,
   * and relative plugin specifiers in them resolve to `file:` URLs under it.
   * Relative plugin specifiers and a relative `storage.dir` in `overrides`
   * resolve against it too. Origins keep the paths as given. A relative
   * `cwd` is relative to the process's current directory.
   *
   * @default {the process's current directory}
   */
  readonly cwd?: string;
}

const MISSING_CODES = new Set(["ENOENT", "ENOTDIR"]);

/**
 * Load the effective configuration: {@linkcode DEFAULT_CONFIG}, then each
 * profile file in order, then the patch file, then `overrides`.
 *
 * Files are JSONC (comments and trailing commas allowed) holding one
 * {@linkcode HarnessConfigLayer}. Layers combine as {@linkcode resolveConfig}
 * describes; a file's origin is its path as given, the overrides' origin is
 * `"overrides"`. Relative plugin specifiers (`./x.ts`, `../x.ts`) and a relative
 * `storage.dir` in a file are resolved against that file (a specifier to a `file:` URL,
 * the directory to a path); those in `overrides` against `cwd`.
 *
 * @param paths The profile files and the patch file.
 * @param overrides Programmatic overrides, applied last.
 * @param options How to read files.
 * @returns The deep-frozen effective configuration and the origin of each leaf.
 * @throws {HarnessError} `CONFIG_NOT_FOUND` when a named file does not exist,
 *   `CONFIG_UNREADABLE` when it cannot be read, `INVALID_ARGS` when `profiles` is not an array
 *   or a path is not a non-empty string, and the errors of {@linkcode resolveConfig}.
 *
 * @example Loading a profile and a patch
 * ```ts
 * import { loadConfig } from "@dsh/harness/config";
 * import assert from "node:assert/strict";
 *
 * const files: Record<string, string> = {
 *   "profiles/base.jsonc": `{
 *     // the team's defaults
 *     "model": { "model": "deepseek-reasoner", "reasoningEffort": "high" },
 *     "tools": ["add", "read_file"],
 *   }`,
 *   "patch.jsonc": `{ "model": { "reasoningEffort": null } }`,
 * };
 * const loaded = await loadConfig(
 *   { profiles: ["profiles/base.jsonc"], patch: "patch.jsonc" },
 *   { maxParallelToolCalls: 4 },
 *   { readFile: async (path) => files[path] },
 * );
 * assert.deepEqual(loaded.config.model, { provider: "deepseek", model: "deepseek-reasoner" });
 * assert.deepEqual(loaded.config.tools, ["add", "read_file"]);
 * assert.equal(loaded.origins["tools"], "profiles/base.jsonc");
 * assert.equal(loaded.origins["maxParallelToolCalls"], "overrides");
 * ```
 */
export async function loadConfig(
  paths: ConfigPaths,
  overrides?: HarnessConfigLayer,
  options: LoadConfigOptions = {},
): Promise<LoadedConfig> {
  const profiles = paths?.profiles ?? [];
  if (!Array.isArray(profiles)) {
    throw new HarnessError("INVALID_ARGS", "Configuration profiles must be an array of file paths");
  }
  const files = [...profiles, ...(paths?.patch === undefined ? [] : [paths.patch])];
  for (const file of files) {
    if (typeof file !== "string" || file === "") {
      throw new HarnessError("INVALID_ARGS", "Configuration file paths must be non-empty strings");
    }
  }
  const read = options.readFile ?? readTextFile;
  // A relative `cwd` is relative to the process's directory: the files are read from there, and what they name
  // must resolve against the same place (a relative base resolved nothing, and `storage.dir` stayed relative).
  const given = options.cwd === undefined ? undefined : await absoluteDirectory(options.cwd);
  const texts = await Promise.allSettled(
    files.map(async (file) => await read(given === undefined ? file : within(given, file))),
  );
  const hasOverrides = overrides !== undefined && overrides !== null;
  const needsCwd = hasOverrides || files.some((file) => fileUrlOf(file) === undefined);
  const cwd = given ?? (needsCwd ? await currentDirectory() : undefined);

  const layers: ConfigLayer[] = files.map((file, index) => {
    const outcome = texts[index];
    if (outcome.status === "rejected") throw readError(file, outcome.reason);
    if (typeof outcome.value !== "string") {
      throw new HarnessError("CONFIG_UNREADABLE", `Cannot read configuration file ${file}: readFile gave no text`, {
        details: { file },
      });
    }
    return { name: file, text: outcome.value, url: fileUrlOf(file, cwd) };
  });
  if (hasOverrides) {
    // Relative specifiers and directories of the overrides are relative to `cwd` (a directory URL, so `./x` is in it).
    const dir = cwd === undefined ? undefined : fileUrlOf(cwd.endsWith("/") || cwd.endsWith("\\") ? cwd : `${cwd}/`);
    layers.push({ name: "overrides", value: overrides, ...(dir !== undefined ? { url: dir } : {}) });
  }
  return resolveConfig(layers);
}

/** `dir` as an absolute path or URL: a relative one joined to the process's current directory. */
async function absoluteDirectory(dir: string): Promise<string> {
  if (typeof dir !== "string" || dir === "") {
    throw new HarnessError("INVALID_ARGS", "loadConfig's cwd must be a non-empty string", {
      details: { field: "cwd" },
    });
  }
  if (fileUrlOf(dir) !== undefined) return dir;
  const current = await currentDirectory();
  if (current === undefined) {
    throw new HarnessError(
      "INVALID_ARGS",
      `loadConfig's cwd "${dir}" is relative, and the process's current directory could not be read (a runtime without ` +
        "one, or no permission to read it, such as Deno without --allow-read): give an absolute path",
      { details: { field: "cwd" } },
    );
  }
  return within(current, dir);
}

/** `path` read from `dir`: absolute paths and URLs unchanged, relative ones joined. */
function within(dir: string, path: string): string {
  if (fileUrlOf(path) !== undefined) return path;
  return dir.endsWith("/") || dir.endsWith("\\") ? `${dir}${path}` : `${dir}/${path}`;
}

function readError(file: string, cause: unknown): HarnessError {
  if (HarnessError.isInstance(cause)) return cause;
  const code = (cause as { code?: unknown } | null)?.code;
  const name = (cause as { name?: unknown } | null)?.name;
  if ((typeof code === "string" && MISSING_CODES.has(code)) || name === "NotFound") {
    return new HarnessError("CONFIG_NOT_FOUND", `Configuration file ${file} does not exist`, {
      cause,
      details: { file },
    });
  }
  const reason = cause instanceof Error ? `: ${cause.message}` : "";
  return new HarnessError("CONFIG_UNREADABLE", `Cannot read configuration file ${file}${reason}`, {
    cause,
    details: { file },
  });
}
