/**
 * `localFs({ root })`: the file-system seam on the host's disk, confined to
 * one directory.
 *
 * How confinement works: a path is normalised lexically (no `..` above the
 * root, absolute paths only inside it), then resolved with `realpath` (the
 * deepest existing ancestor for a new path) and checked again, so a symbolic
 * link that leads out is refused. Files are opened with `O_NOFOLLOW` and
 * `O_NONBLOCK`, checked with `fstat` to be regular files, and — on Linux —
 * the opened descriptor's real path (`/proc/self/fd/N`) is checked against the
 * root, which closes the race of a directory swapped for a link between the
 * check and the open. Elsewhere the parent's `realpath` is checked again after
 * the open (best effort). `mkdir` and `remove` check the real parent just
 * before acting; a swap inside that window is not detected.
 *
 * A write replaces the file whole or not at all: a temporary file beside it
 * is written, flushed and renamed over it (on Linux through the checked
 * directory's descriptor), so a failed write (`FS_NO_SPACE`,
 * `FILE_TOO_LARGE`, `FS_READ_ONLY`) leaves the old content, a reader sees the
 * old or the new content, and the file's other hard links keep the old one.
 * A file the process may not write (a read-only file in a writable
 * directory) is refused with `PERMISSION_DENIED`, not replaced. A file
 * another user owns (the new file would be this process's), or in a
 * directory that may not be written or lets only the file's owner replace it
 * (sticky, as `/tmp`), is written in place instead: owner, mode and hard
 * links kept, but a failed write may leave part of the new content.
 *
 * Longer than the house limit on purpose: every operation goes through the
 * same confinement steps (the root, `resolvePath`, `openedAt`), closures over
 * one root; what needs none of them is in `_local_fs_parts.ts`.
 *
 * Writes and edits of one real path run one at a time within the process,
 * across every `localFs` (two harnesses over one root, parallel subagents).
 * Another process is not held off: an edit checks just before it writes that
 * the file still holds what it read, and fails with `FILE_CHANGED` when not
 * (a write by the other process inside that last window is still lost).
 *
 * @module
 */

import type { FileHandle } from "node:fs/promises";
import { HarnessError } from "../../kernel/harness_error.ts";
import { globMatcher } from "./_glob.ts";
import {
  changed,
  editableText,
  endsWithSlash,
  fsError,
  isDirectory,
  nameTooLong,
  notDirectory,
  notFound,
  notRegular,
  outside,
  replaceExact,
  segmentsOf,
  selectLines,
  slashed,
  toFsError,
} from "./_fs_errors.ts";
import type { FsEntry, FsEntryKind, FsService, FsStat } from "./fs_service.ts";
import { sameBytes, selectLinesOf, serialised, STREAM_ABOVE } from "./_local_fs_parts.ts";

type NodeFs = typeof import("node:fs/promises");
type NodeFsConstants = typeof import("node:fs").constants;
let loading: Promise<{ fs: NodeFs; constants: NodeFsConstants; linux: boolean; uid: number | undefined }> | undefined;
const host = () =>
  loading ??= Promise.all([import("node:fs/promises"), import("node:fs"), import("node:process")]).then((
    [fs, fsSync, proc],
  ) => {
    const uid = proc.default.getuid?.(); // none on Windows
    return { fs, constants: fsSync.constants, linux: proc.default.platform === "linux", uid: uid ?? undefined };
  });

/** Options of {@linkcode localFs}. */
export interface LocalFsOptions {
  /** The directory every path is confined to; it must exist. */
  readonly root: string;
}

const errno = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
};

const decoder = new TextDecoder();

let beforeEditWrite: ((abs: string) => Promise<void>) | undefined;
let duringWrite: ((temp: string) => Promise<void>) | undefined;
let uidOverride: { uid: number } | undefined;

/**
 * Test support: run `hook` in every edit between its read and its write (as another process writing the file
 * then would). Returns the function that removes it.
 */
export function beforeEditWriteForTests(hook: (abs: string) => Promise<void>): () => void {
  beforeEditWrite = hook;
  return () => void (beforeEditWrite = undefined);
}

/**
 * Test support: run `hook` in every write with the path of its temporary file once the new content is in it, before
 * the file is given the old one's mode and renamed. Returns the function that removes it.
 */
export function duringWriteForTests(hook: (temp: string) => Promise<void>): () => void {
  duringWrite = hook;
  return () => void (duringWrite = undefined);
}

/**
 * Test support: writes take the process's user id to be `uid` (a test that does not run as root cannot make a file
 * another user owns: it takes itself for another). Returns the function that removes it.
 */
export function processUidForTests(uid: number): () => void {
  uidOverride = { uid };
  return () => void (uidOverride = undefined);
}

/**
 * An {@linkcode FsService} over a directory of the host's disk. Nothing
 * outside `root` can be read, written, listed or removed through it (see the
 * module notes for how, and what remains best effort).
 *
 * @param options The root directory.
 * @returns The service.
 *
 * @example Confined to a folder
 * ```ts
 * import { localFs } from "@dsh/harness/tools";
 * import { mkdtemp, rm } from "node:fs/promises";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 * import assert from "node:assert/strict";
 *
 * const dir = await mkdtemp(join(tmpdir(), "dsh-doc-"));
 * const fs = localFs({ root: dir });
 * await fs.writeFile("notes/a.txt", "one\ntwo\n");
 * assert.deepEqual(await fs.readText("notes/a.txt", { startLine: 2 }), {
 *   text: "two\n", startLine: 2, endLine: 2, totalLines: 2,
 * });
 * await assert.rejects(fs.readText("../../etc/passwd"), { code: "PATH_OUTSIDE_ROOT" });
 * await rm(dir, { recursive: true });
 * ```
 */
export function localFs(options: LocalFsOptions): FsService {
  if (typeof options?.root !== "string" || options.root === "") {
    throw new HarnessError("INVALID_ARGS", "localFs needs a root directory");
  }
  let rootReal: Promise<{ real: string; given: string }> | undefined;
  const roots = () =>
    rootReal ??= host().then(async ({ fs }) => {
      const { resolve } = await import("node:path");
      const given = resolve(options.root);
      let real: string;
      try {
        real = await fs.realpath(given);
      } catch (cause) {
        throw fsError("FILE_NOT_FOUND", `The root "${options.root}" does not exist`, options.root, cause);
      }
      if (!(await fs.stat(real)).isDirectory()) throw notDirectory(options.root);
      return { real, given };
    });

  const inside = (real: string, path: string, abs: string): void => {
    if (abs !== real && !abs.startsWith(real === "/" ? "/" : real + "/")) throw outside(path);
  };

  /** Normal segments of `path` relative to the root. */
  const segments = async (path: string): Promise<string[]> => {
    const { real, given } = await roots();
    try {
      return segmentsOf(path, given);
    } catch (error) {
      if (HarnessError.isInstance(error, "PATH_OUTSIDE_ROOT") && path.startsWith("/") && given !== real) {
        return segmentsOf(path, real);
      }
      throw error;
    }
  };

  /**
   * The real absolute path of `path`: every existing component resolved,
   * checked inside the root; missing components appended as they are.
   */
  const resolvePath = async (path: string): Promise<{ abs: string; exists: boolean }> => {
    const { fs } = await host();
    const { real } = await roots();
    const parts = await segments(path);
    for (let keep = parts.length; keep >= 0; keep--) {
      const candidate = [real === "/" ? "" : real, ...parts.slice(0, keep)].join("/") || "/";
      let resolved: string;
      try {
        resolved = await fs.realpath(candidate);
      } catch (error) {
        const code = errno(error);
        if (code === "ENOENT" && keep > 0) continue;
        if (code === "ENOTDIR") throw notDirectory(path);
        if (code === "ELOOP") throw outside(path);
        if (code === "ENAMETOOLONG") throw nameTooLong(path, error);
        throw notFound(path, error);
      }
      inside(real, path, resolved);
      if (keep < parts.length) {
        // A dangling link leads nowhere we can check: refuse it.
        const tail = parts.slice(keep);
        try {
          const st = await fs.lstat(`${resolved}/${tail[0]}`);
          if (st.isSymbolicLink()) throw outside(path);
        } catch (error) {
          if (HarnessError.isInstance(error)) throw error;
        }
        return { abs: [resolved === "/" ? "" : resolved, ...tail].join("/"), exists: false };
      }
      return { abs: resolved, exists: true };
    }
    throw outside(path);
  };

  /** Where an open descriptor really is (Linux), or where its path now leads. */
  const openedAt = async (handle: FileHandle, abs: string): Promise<{ file: string; dir: boolean }> => {
    const { fs, linux } = await host();
    if (linux) {
      try {
        return { file: await fs.readlink(`/proc/self/fd/${handle.fd}`), dir: false };
      } catch { /* no /proc: fall back to the parent */ }
    }
    const slash = abs.lastIndexOf("/");
    return { file: await fs.realpath(abs.slice(0, slash) || "/"), dir: true };
  };

  /** Open a file to read, or to write (not truncated; created when missing unless `create` is false). */
  const openFile = async (
    path: string,
    write: boolean,
    create = write,
  ): Promise<{ handle: FileHandle; abs: string }> => {
    const { fs, constants } = await host();
    const { abs, exists } = await resolvePath(path);
    if (!exists && !create) throw notFound(path);
    if (exists) {
      const st = await fs.stat(abs);
      if (st.isDirectory()) throw isDirectory(path);
      if (endsWithSlash(path)) throw slashed(path);
      if (!st.isFile()) throw notRegular(path);
    } else if (endsWithSlash(path)) throw slashed(path);
    const nofollow = (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
    const flags = write
      ? constants.O_WRONLY | nofollow | (exists ? 0 : constants.O_CREAT | constants.O_EXCL)
      : constants.O_RDONLY | nofollow;
    let handle: FileHandle;
    try {
      handle = await fs.open(abs, flags, 0o666);
    } catch (error) {
      const code = errno(error);
      if (code === "ELOOP" || code === "EMLINK") throw outside(path);
      if (code === "ENOENT") throw notFound(path, error);
      if (code === "EEXIST") throw fsError("FILE_EXISTS", `Path "${path}" appeared while it was written`, path, error);
      if (code === "EISDIR") throw isDirectory(path);
      if (code === "ENXIO") throw notRegular(path);
      if (code === "ENOTDIR") throw notDirectory(path);
      throw error;
    }
    try {
      const at = await openedAt(handle, abs);
      const { real } = await roots();
      if (at.file !== real && !at.file.startsWith(real + "/")) {
        // A file this call created where it must not be is taken back.
        if (write && !exists) await fs.unlink(at.dir ? abs : at.file).catch(() => {});
        throw outside(path);
      }
      const st = await handle.stat();
      if (st.isDirectory()) throw isDirectory(path);
      if (!st.isFile()) throw notRegular(path);
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
    return { handle, abs };
  };

  const readBytes = async (path: string): Promise<Uint8Array> => (await readWithPath(path)).bytes;

  /** A file's bytes and its real path. */
  const readWithPath = async (path: string): Promise<{ bytes: Uint8Array; abs: string }> => {
    const { handle, abs } = await openFile(path, false);
    try {
      return { bytes: new Uint8Array(await handle.readFile()), abs };
    } finally {
      await handle.close();
    }
  };

  /** An edit's file must still hold what the edit read (`expected`), else `FILE_CHANGED`; a write has no `expected`. */
  const assertUnchanged = async (path: string, expected?: { abs: string; bytes: Uint8Array }): Promise<void> => {
    if (expected === undefined) return;
    const now = await readWithPath(path).catch(() => undefined);
    if (now === undefined || now.abs !== expected.abs || !sameBytes(now.bytes, expected.bytes)) throw changed(path);
  };

  const ensureDir = async (path: string, parts: string[], recursive: boolean): Promise<void> => {
    const { fs } = await host();
    for (let i = recursive ? 1 : parts.length; i <= parts.length; i++) {
      const sub = parts.slice(0, i).join("/");
      const { abs, exists } = await resolvePath(sub);
      if (exists) {
        if (!(await fs.stat(abs)).isDirectory()) throw notDirectory(sub);
        if (i === parts.length && !recursive) throw fsError("FILE_EXISTS", `Path "${path}" already exists`, path);
        continue;
      }
      try {
        await fs.mkdir(abs);
      } catch (error) {
        if (errno(error) === "EEXIST" && recursive) continue;
        if (errno(error) === "ENOENT") throw notFound(path, error);
        throw error;
      }
      const { real } = await roots();
      try {
        inside(real, path, await fs.realpath(abs));
      } catch (error) {
        await fs.rmdir(abs).catch(() => {});
        throw error;
      }
    }
  };

  /** The key of a path's write queue: where it really leads (a link's target), or the path itself when it cannot say. */
  const queueKey = async (path: string): Promise<string> => {
    try {
      return (await resolvePath(path)).abs;
    } catch {
      return `${(await roots()).real}\0${path}`; // the write itself fails on it, and says why
    }
  };

  /**
   * Write a file whole or not at all: the bytes go to a new temporary file beside it (`O_CREAT | O_EXCL |
   * O_NOFOLLOW`, a random name; for an existing file, made `0600` and given its owner before a byte is written, so
   * no one else may read the new content meanwhile), which is given the old file's mode, flushed to the disk
   * (fsync) and renamed over the file. A write that fails (a full disk, a quota, a size limit) leaves the old content
   * and no temporary file. The rename replaces the entry, so the file's other hard links keep the old content; a
   * symbolic link inside the root is written through (its target is replaced, the link stays).
   *
   * On Linux the directory is opened first (`O_NOFOLLOW`), its real place (`/proc/self/fd/N`) checked inside the
   * root, and the temporary file is made and renamed through that descriptor (`/proc/self/fd/N/name`), so a
   * directory swapped for a link meanwhile changes nothing: a rename by paths looks each of its two paths up in turn,
   * and a swap between the lookups would move the file out of the root. Elsewhere the paths are used, the temporary
   * file's directory checked after it is made (best effort). Where the directory may not be written (the file may),
   * the file is written in place, as before; so is a file another user owns (a new file would be this process's),
   * one whose owner and group may not be given to the new file, and one the directory lets only its owner replace
   * (a sticky directory, as /tmp) — keeping its owner, its mode and its other hard links, not atomic.
   *
   * With `expected`, the write happens only when the file still holds those bytes (an edit's read), else
   * `FILE_CHANGED` (content, not modification times: those of Linux tick every few milliseconds, and a write within
   * the same tick would pass). The caller holds the path's write queue.
   */
  const writeNow = async (
    path: string,
    data: string | Uint8Array,
    createParents: boolean,
    expected?: { abs: string; bytes: Uint8Array },
  ): Promise<void> => {
    const { fs, constants, linux, uid: hostUid } = await host();
    const uid = uidOverride?.uid ?? hostUid;
    const { real } = await roots();
    const parts = await segments(path);
    if (parts.length === 0) throw isDirectory(path);
    if (endsWithSlash(path)) {
      // `newdir/` would make a file newdir, `a.txt/` write a.txt: refused, before any parent is made.
      const { abs, exists } = await resolvePath(path);
      if (exists && (await fs.stat(abs)).isDirectory()) throw isDirectory(path);
      throw slashed(path);
    }
    if (createParents && parts.length > 1) await ensureDir(path, parts.slice(0, -1), true);
    const { abs, exists } = await resolvePath(path);
    let old: { mode: number; uid: number; gid: number } | undefined;
    if (exists) {
      const st = await writableStat(path, abs);
      old = { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
      // A file another user owns is written in place: a new file would be this process's (only a privileged one may
      // give a file away), and a sticky directory (/tmp, a shared workspace) lets only the file's owner replace it.
      if (uid !== undefined && uid !== 0 && st.uid !== uid) return await writeInPlace(path, data, expected);
    }
    const slash = abs.lastIndexOf("/");
    const dir = abs.slice(0, slash) || "/";
    const name = abs.slice(slash + 1);
    const openError = (error: unknown): unknown => {
      const code = errno(error);
      if (code === "ENOENT") return notFound(path, error);
      if (code === "ENOTDIR") return notDirectory(path);
      if (code === "ELOOP") return outside(path);
      return error;
    };
    let dirHandle: FileHandle | undefined;
    let base = dir === "/" ? "" : dir;
    if (linux && constants.O_DIRECTORY !== undefined) {
      try {
        dirHandle = await fs.open(dir, constants.O_RDONLY | constants.O_DIRECTORY | (constants.O_NOFOLLOW ?? 0));
      } catch (error) {
        throw openError(error);
      }
      const at = await fs.readlink(`/proc/self/fd/${dirHandle.fd}`).catch(() => undefined);
      if (at === undefined) {
        await dirHandle.close(); // no /proc: paths, as elsewhere
        dirHandle = undefined;
      } else {
        try {
          inside(real, path, at);
        } catch (error) {
          await dirHandle.close();
          throw error;
        }
        base = `/proc/self/fd/${dirHandle.fd}`;
      }
    }
    let inPlace = false;
    try {
      const random = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0"));
      const temp = `${base}/.${name.slice(0, 64)}.${random.join("")}.tmp`;
      const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);
      let handle: FileHandle;
      try {
        // Only this process may read the new content of an existing file until it has the file's mode: a secret
        // (0600) would otherwise sit in a file others may open, and keep open, until the end of the write.
        handle = await fs.open(temp, flags, old === undefined ? 0o666 : 0o600);
      } catch (error) {
        const code = errno(error);
        if ((code === "EACCES" || code === "EPERM") && exists) return await writeInPlace(path, data, expected);
        throw openError(error);
      }
      let renamed = false;
      try {
        try {
          if (dirHandle === undefined) {
            const at = await openedAt(handle, `${dir === "/" ? "" : dir}/${name}`);
            if (at.file !== real && !at.file.startsWith(real + "/")) throw outside(path);
          }
          // The old file's owner and group: where they may not be given (a group this process is not in), the file
          // is written in place, keeping them.
          if (old !== undefined && uid !== undefined) {
            inPlace = await handle.chown(old.uid, old.gid).then(() => false, () => true);
          }
          if (!inPlace) {
            await handle.writeFile(data);
            await duringWrite?.(temp);
            // The old mode once the content is written (a change of owner, and a write, clear set-user-ID bits).
            if (old !== undefined) await handle.chmod(old.mode);
            await handle.sync();
          }
        } finally {
          await handle.close();
        }
        if (!inPlace) {
          await assertUnchanged(path, expected);
          try {
            await fs.rename(temp, `${base}/${name}`);
            renamed = true;
          } catch (error) {
            const code = errno(error);
            if (code === "EISDIR") throw isDirectory(path); // a directory appeared there meanwhile
            // The directory refuses the new file the place of the old one (sticky, as /tmp): in place then.
            if ((code === "EPERM" || code === "EACCES") && old !== undefined) inPlace = true;
            else throw error;
          }
        }
      } finally {
        if (!renamed) await fs.unlink(temp).catch(() => {});
      }
    } finally {
      await dirHandle?.close();
    }
    if (inPlace) await writeInPlace(path, data, expected);
  };

  /**
   * The status of an existing file this process may write: a file it may not (a read-only file, chmod 444, in a
   * writable directory) is refused with `PERMISSION_DENIED`, as when files were written in place, not replaced by a
   * new one. The file is opened for writing (not truncated) through the same confined open as a read, and closed.
   */
  const writableStat = async (path: string, abs: string) => {
    try {
      const { handle } = await openFile(path, true, false);
      try {
        return await handle.stat();
      } finally {
        await handle.close();
      }
    } catch (error) {
      // A program that is running (Linux refuses to open it for writing) passed the permission check, which comes
      // first: it may be replaced, as a rename leaves the running one alone.
      if (errno(error) !== "ETXTBSY") throw error;
      const { fs } = await host();
      return await fs.stat(abs);
    }
  };

  /** The old way, for a file whose directory may not be written: in place, not atomic. */
  const writeInPlace = async (
    path: string,
    data: string | Uint8Array,
    expected?: { abs: string; bytes: Uint8Array },
  ): Promise<void> => {
    const { handle } = await openFile(path, true);
    try {
      await assertUnchanged(path, expected);
      await handle.truncate(0);
      await handle.writeFile(data);
    } finally {
      await handle.close();
    }
  };

  const kindOf = (d: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): FsEntryKind =>
    d.isSymbolicLink() ? "symlink" : d.isFile() ? "file" : d.isDirectory() ? "directory" : "other";

  const service: FsService = {
    readBytes,
    readText: async (path, read = {}) => {
      const { handle } = await openFile(path, false);
      try {
        const size = (await handle.stat()).size;
        if (size <= STREAM_ABOVE) {
          return selectLines(decoder.decode(new Uint8Array(await handle.readFile())), read.startLine, read.lineCount);
        }
        return await selectLinesOf(handle, size, path, read.startLine ?? 1, read.lineCount);
      } finally {
        await handle.close();
      }
    },
    writeFile: async (path, data, write = {}) =>
      serialised(await queueKey(path), () => writeNow(path, data, write.createParents ?? true)),
    edit: async (path, oldText, newText, edit = {}) =>
      serialised(await queueKey(path), async () => {
        const read = await readWithPath(path);
        const before = editableText(path, read.bytes);
        const { text, count } = replaceExact(path, before, oldText, newText, edit.replaceAll ?? false);
        await beforeEditWrite?.(read.abs);
        // Another process may have written the file since it was read: writing now would undo its change.
        await writeNow(path, text, false, read);
        return count;
      }),
    list: async (path) => {
      const { fs } = await host();
      const { abs, exists } = await resolvePath(path);
      if (!exists) throw notFound(path);
      if (!(await fs.stat(abs)).isDirectory()) throw notDirectory(path);
      const entries = await fs.readdir(abs, { withFileTypes: true });
      return entries.map((d): FsEntry => ({ name: d.name, kind: kindOf(d) }))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
    glob: async (pattern, glob = {}) => {
      const { fs } = await host();
      const { real } = await roots();
      const matcher = globMatcher(pattern);
      const limit = glob.limit ?? 1000;
      const base = await segments(glob.cwd ?? ".");
      const { abs: start, exists } = await resolvePath(glob.cwd ?? ".");
      if (!exists) throw notFound(glob.cwd ?? ".");
      if (!(await fs.stat(start)).isDirectory()) throw notDirectory(glob.cwd ?? ".");
      const out: string[] = [];
      const visit = async (dir: string, rel: string): Promise<void> => {
        const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
        for (const d of entries) {
          const path = rel === "" ? d.name : `${rel}/${d.name}`;
          if (d.isDirectory()) await visit(`${dir}/${d.name}`, path);
          else if (matcher(path)) {
            // Regular files only: not a FIFO, a socket or a device, nor a link to a directory or out of the root.
            if (d.isSymbolicLink()) {
              const target = await fs.realpath(`${dir}/${d.name}`).catch(() => undefined);
              if (target === undefined || (target !== real && !target.startsWith(real + "/"))) continue;
              if (!(await fs.stat(target).then((st) => st.isFile(), () => false))) continue;
            } else if (!d.isFile()) continue;
            out.push(path);
          }
        }
      };
      await visit(start, "");
      const prefix = base.join("/");
      return out.sort().slice(0, limit).map((p) => (prefix === "" ? p : `${prefix}/${p}`));
    },
    realPath: async (path) => {
      const { real } = await roots();
      const { abs } = await resolvePath(path);
      if (abs === real) return ".";
      return abs.slice(real === "/" ? 1 : real.length + 1);
    },
    stat: async (path): Promise<FsStat> => {
      const { fs } = await host();
      const { abs, exists } = await resolvePath(path);
      if (!exists) throw notFound(path);
      const st = await fs.stat(abs);
      const kind: FsEntryKind = st.isFile() ? "file" : st.isDirectory() ? "directory" : "other";
      return { kind, size: st.isDirectory() ? 0 : st.size, mtimeMs: st.mtimeMs };
    },
    mkdir: async (path, mkdir = {}) => {
      const parts = await segments(path);
      if (parts.length === 0) {
        if (mkdir.recursive) return;
        throw fsError("FILE_EXISTS", `Path "${path}" already exists`, path);
      }
      await ensureDir(path, parts, mkdir.recursive ?? false);
    },
    remove: async (path, remove = {}) => {
      const { fs } = await host();
      const { real } = await roots();
      const parts = await segments(path);
      if (parts.length === 0) throw new HarnessError("INVALID_PATH", "Cannot remove the root");
      // The entry itself is removed, not what a link points to: resolve the parent only.
      const parent = await resolvePath(parts.slice(0, -1).join("/") || ".");
      if (!parent.exists) throw notFound(path);
      const abs = `${parent.abs === "/" ? "" : parent.abs}/${parts[parts.length - 1]}`;
      let st;
      try {
        st = await fs.lstat(abs);
      } catch (error) {
        if (errno(error) === "ENOTDIR") throw notDirectory(path);
        throw notFound(path, error);
      }
      inside(real, path, await fs.realpath(parent.abs));
      if (st.isDirectory()) {
        if (!remove.recursive) {
          try {
            await fs.rmdir(abs);
          } catch (error) {
            if (errno(error) === "ENOTEMPTY" || errno(error) === "EEXIST") {
              throw fsError("DIRECTORY_NOT_EMPTY", `Directory "${path}" is not empty`, path);
            }
            throw error;
          }
        } else await fs.rm(abs, { recursive: true });
      } else await fs.unlink(abs);
    },
  };
  // Every failure leaves as a coded error, whatever step it came from.
  const coded = {} as Record<string, unknown>;
  for (const [name, method] of Object.entries(service)) {
    coded[name] = (path: string, ...rest: unknown[]) =>
      (method as (...args: unknown[]) => Promise<unknown>)(path, ...rest).catch((error: unknown) => {
        throw toFsError(error, name === "glob" ? String((rest[0] as { cwd?: string } | undefined)?.cwd ?? ".") : path);
      });
  }
  return coded as unknown as FsService;
}
