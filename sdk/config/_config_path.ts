/**
 * Internal: how configuration paths are written (`model.provider`, `adapters["my.proxy"].kind`, `tools[0]`).
 *
 * @module
 */

/** One step of a path into a configuration value: a key or an array index. */
export type ConfigPathSegment = string | number;

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** Write a path the way origins, dumps and error messages show it. */
export function formatConfigPath(path: readonly ConfigPathSegment[]): string {
  let text = "";
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else if (PLAIN_KEY.test(segment)) text += text === "" ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text;
}
