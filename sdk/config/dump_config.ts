/**
 * Printing the effective configuration with the origin of each value.
 *
 * @module
 */

import type { LoadedConfig } from "./resolve_config.ts";
import { type ConfigPathSegment, formatConfigPath } from "./_config_path.ts";
import { isPlainObject } from "./_layer_merge.ts";

/** Lines longer than this do not push the `# from` column of the others further right. */
const ALIGN_LIMIT = 60;

/**
 * Print the effective configuration, one line per leaf with the layer it came
 * from (the `--dump-config` of the seeds):
 *
 * ```text
 * model.provider = "deepseek"          # from default
 * model.model = "deepseek-reasoner"    # from profiles/base.jsonc
 * tools = ["add","read_file"]          # from overrides
 * ```
 *
 * Leaves are scalars, arrays and empty objects, written as JSON, in the order
 * of the configuration's keys. Any printed line can be replaced by a patch.
 *
 * @param loaded What {@linkcode loadConfig} or {@linkcode resolveConfig} returned.
 * @returns The lines, joined with `\n` (no trailing newline).
 *
 * @example Dumping a configuration
 * ```ts
 * import { dumpConfig, resolveConfig } from "@dsh/harness/config";
 * import assert from "node:assert/strict";
 *
 * const dump = dumpConfig(resolveConfig([{ name: "patch.jsonc", value: { invariants: false } }]));
 * assert.match(dump, /^invariants = false +# from patch\.jsonc$/m);
 * assert.match(dump, /^model\.provider = "deepseek" +# from default$/m);
 * ```
 */
export function dumpConfig(loaded: LoadedConfig): string {
  const entries: [string, string][] = [];
  const walk = (value: unknown, path: ConfigPathSegment[]): void => {
    if (isPlainObject(value) && Object.keys(value).length > 0) {
      for (const [key, child] of Object.entries(value)) walk(child, [...path, key]);
      return;
    }
    const name = formatConfigPath(path);
    entries.push([`${name} = ${JSON.stringify(value)}`, loaded.origins[name] ?? "unknown"]);
  };
  walk(loaded.config, []);
  const width = Math.max(0, ...entries.map(([text]) => text.length).filter((n) => n <= ALIGN_LIMIT));
  return entries.map(([text, origin]) => `${text.padEnd(width)}   # from ${origin}`).join("\n");
}
