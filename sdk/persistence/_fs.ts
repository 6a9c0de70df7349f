// The file-system seam of fileStorage: `node:fs/promises`, which Deno, Bun and
// Node all implement. `fsOps` is a mutable object so that tests can make one
// operation fail (rollback tests); nothing else replaces it. The module is
// imported on first use, not at load: importing `@dsh/harness` should not pay
// for a file system it may never touch (it costs ~200 ms at start on Deno),
// and a bundle for the edge (esbuild `platform=browser|neutral`) must not need
// it. The `try { await import() }` form is what lets bundlers leave the
// specifier unresolved instead of failing the build (edge_bundle_test.ts).

import { HarnessError } from "../kernel/harness_error.ts";

type Fs = typeof import("node:fs/promises");
let loading: Promise<Fs> | undefined;
const nodeFs = (): Promise<Fs> => (loading ??= loadFs());

async function loadFs(): Promise<Fs> {
  try {
    return await import("node:fs/promises");
  } catch (cause) {
    loading = undefined;
    throw new HarnessError(
      "UNSUPPORTED_RUNTIME",
      "fileStorage needs node:fs/promises (Deno, Bun or Node), which this runtime lacks: use memoryStorage() or " +
        "a SessionStorage of your own",
      { cause },
    );
  }
}

/** An open file, as far as fileStorage uses it. */
export interface FileHandleLike {
  write(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesWritten: number }>;
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  truncate(length: number): Promise<void>;
  sync(): Promise<void>;
  stat(): Promise<{ size: number; mtimeMs: number }>;
  close(): Promise<void>;
}

export const fsOps = {
  open: async (path: string, flags: string): Promise<FileHandleLike> => (await nodeFs()).open(path, flags),
  readFile: async (path: string): Promise<Uint8Array> => (await nodeFs()).readFile(path),
  writeFile: async (path: string, data: string, flag: string): Promise<void> =>
    (await nodeFs()).writeFile(path, data, { flag }),
  link: async (from: string, to: string): Promise<void> => (await nodeFs()).link(from, to),
  unlink: async (path: string): Promise<void> => (await nodeFs()).unlink(path),
  rename: async (from: string, to: string): Promise<void> => (await nodeFs()).rename(from, to),
  utimes: async (path: string, atime: Date, mtime: Date): Promise<void> => (await nodeFs()).utimes(path, atime, mtime),
  mkdir: async (path: string): Promise<void> => {
    await (await nodeFs()).mkdir(path, { recursive: true });
  },
  readdir: async (path: string): Promise<string[]> => (await nodeFs()).readdir(path),
  readlink: async (path: string): Promise<string> => (await nodeFs()).readlink(path),
  stat: async (path: string): Promise<{ size: number; mtimeMs: number; isDirectory(): boolean }> =>
    (await nodeFs()).stat(path),
  rm: async (path: string): Promise<void> => (await nodeFs()).rm(path, { recursive: true, force: true }),
};

/** The error code of a failed file operation (`ENOENT`, `EEXIST`, …), if any. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** Join path segments with `/` (accepted on every platform by node:fs). */
export function joinPath(dir: string, ...names: string[]): string {
  return [dir.replace(/[/\\]+$/, "") || "/", ...names].join("/").replace(/^\/\//, "/");
}

/** fsync a directory so that a link or unlink in it is durable; a no-op where unsupported. */
export async function syncDir(path: string): Promise<void> {
  let handle: FileHandleLike | undefined;
  try {
    handle = await fsOps.open(path, "r");
    await handle.sync();
  } catch {
    // Windows cannot open or fsync directories; the rename/link is still atomic.
  } finally {
    await handle?.close().catch(() => {});
  }
}

/** Whether the process `pid` is alive on this machine (`undefined` when it cannot be told). */
export function processAlive(pid: number): boolean | undefined {
  const proc = (globalThis as { process?: { pid?: number; kill?: (pid: number, signal: number) => void } }).process;
  if (typeof proc?.kill !== "function") return undefined;
  try {
    proc.kill(pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) === "EPERM" ? true : errorCode(error) === "ESRCH" ? false : undefined;
  }
}

/** This process's id, when the runtime exposes one. */
export function currentPid(): number | undefined {
  return (globalThis as { process?: { pid?: number } }).process?.pid;
}

let namespace: Promise<string | undefined> | undefined;

/**
 * Names the process-id namespace this process lives in, so that a lock file's
 * pid can be judged only where it means the same process: on Linux the boot id
 * (one per machine and boot) and the pid namespace (one per container).
 * `undefined` where neither can be read (other systems, no permission).
 */
export function pidNamespace(): Promise<string | undefined> {
  return namespace ??= readNamespace();
}

async function readNamespace(): Promise<string | undefined> {
  try {
    const boot = new TextDecoder().decode(await fsOps.readFile("/proc/sys/kernel/random/boot_id")).trim();
    const ns = await fsOps.readlink("/proc/self/ns/pid");
    return boot !== "" && ns !== "" ? `${boot}/${ns}` : undefined;
  } catch {
    return undefined;
  }
}
