/**
 * Internal: the file system seam of `loadConfig`, through `node:` built-ins that
 * Deno, Bun and Node all implement. Imported lazily, so that the SDK loads
 * where there is no file system as long as `loadConfig` is given a `readFile`.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";

/** Read a UTF-8 text file, named by path or `file:` URL. Rejects with the runtime's error (`code: "ENOENT"` when missing). */
export async function readTextFile(path: string): Promise<string> {
  // In a try, so that bundlers for the browser and the edge leave the specifier unresolved instead of failing.
  let fs: typeof import("node:fs/promises");
  try {
    fs = await import("node:fs/promises");
  } catch (cause) {
    throw new HarnessError(
      "UNSUPPORTED_RUNTIME",
      "Reading configuration files needs node:fs/promises: give loadConfig a readFile",
      {
        cause,
      },
    );
  }
  // A `file:` URL names a file too (node:fs reads a string as a path, so it is given as a URL).
  return await fs.readFile(/^file:/i.test(path) ? new URL(path) : path, "utf8");
}

/** The process's current directory, or `undefined` where there is none. */
export async function currentDirectory(): Promise<string | undefined> {
  try {
    const { cwd } = await import("node:process");
    return cwd();
  } catch {
    return undefined;
  }
}
