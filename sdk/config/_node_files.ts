/**
 * Internal: the file system seam of `loadConfig`, through `node:` built-ins that
 * Deno, Bun and Node all implement. Imported lazily, so that the SDK loads
 * where there is no file system as long as `loadConfig` is given a `readFile`.
 *
 * @module
 */

/** Read a UTF-8 text file. Rejects with the runtime's error (`code: "ENOENT"` when missing). */
export async function readTextFile(path: string): Promise<string> {
  const { readFile } = await import("node:fs/promises");
  return await readFile(path, "utf8");
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
