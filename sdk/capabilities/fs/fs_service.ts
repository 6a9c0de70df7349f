/**
 * The file-system seam (`ctx.fs`): what the file tools need, confined to one
 * root.
 *
 * @module
 */

/** The kind of a directory entry. */
export type FsEntryKind = "file" | "directory" | "symlink" | "other";

/** One entry of {@linkcode FsService.list}. */
export interface FsEntry {
  /** The entry's name (no slash). */
  readonly name: string;
  /** What it is; a symbolic link is reported as such, not followed. */
  readonly kind: FsEntryKind;
}

/** What {@linkcode FsService.stat} reports. */
export interface FsStat {
  /** What the path is (after following symbolic links inside the root). */
  readonly kind: FsEntryKind;
  /** Size in bytes (0 for a directory). */
  readonly size: number;
  /** Last modification time, in milliseconds since the epoch. */
  readonly mtimeMs: number;
}

/** Options of {@linkcode FsService.readText}. */
export interface ReadTextOptions {
  /** The first line to return, counting from 1. @default {1} */
  readonly startLine?: number;
  /** How many lines to return at most. @default {all} */
  readonly lineCount?: number;
}

/** A text read: the selected lines and where they sit in the file. */
export interface TextRead {
  /** The selected lines, joined by `\n` (a final newline of the file is kept). */
  readonly text: string;
  /** The first line returned (1-based); `totalLines + 1` when past the end. */
  readonly startLine: number;
  /** The last line returned (1-based), `startLine - 1` when none. */
  readonly endLine: number;
  /** Lines in the whole file (a final newline does not start a line). */
  readonly totalLines: number;
}

/** Options of {@linkcode FsService.writeFile}. */
export interface WriteFileOptions {
  /** Create missing parent directories. @default {true} */
  readonly createParents?: boolean;
}

/** Options of {@linkcode FsService.edit}. */
export interface EditOptions {
  /** Replace every occurrence instead of requiring exactly one. @default {false} */
  readonly replaceAll?: boolean;
}

/** Options of {@linkcode FsService.glob}. */
export interface GlobOptions {
  /** The directory the pattern is relative to. @default {"."} */
  readonly cwd?: string;
  /** The most paths returned. @default {1000} */
  readonly limit?: number;
}

/** Options of {@linkcode FsService.mkdir} and {@linkcode FsService.remove}. */
export interface RecursiveOptions {
  /** `mkdir`: create parents, and succeed when the directory exists; `remove`: remove a directory with its content. @default {false} */
  readonly recursive?: boolean;
}

/**
 * A file system confined to a root: the service behind `ctx.fs`.
 *
 * Contract: paths are `/`-separated and relative to the root (`.` is the
 * root); an absolute path is accepted only when it lies inside the root. A
 * `\` is read as `/` on every platform (`a\b.txt` is `b.txt` in `a/`), so on
 * POSIX a file whose name contains a `\` is listed but cannot be named.
 * Every operation checks the path first and fails with a `HarnessError`:
 * `PATH_OUTSIDE_ROOT` (a `..` or an absolute path or a symbolic link that
 * leads out of the root), `INVALID_PATH` (empty, NUL byte, a name too long
 * for the file system), `FILE_NOT_FOUND`,
 * `NOT_A_DIRECTORY` (a file's path that ends with a slash too: `a.txt/`,
 * `newdir/` name directories), `IS_A_DIRECTORY`, `NOT_A_REGULAR_FILE`
 * (devices, sockets, pipes), `FILE_EXISTS`, `DIRECTORY_NOT_EMPTY`, and for `edit`
 * `EDIT_NO_MATCH` / `EDIT_NOT_UNIQUE` / `FILE_CHANGED`; a write the disk
 * refuses is `FS_NO_SPACE` (full, or a quota), `FILE_TOO_LARGE` (a file size
 * limit) or `FS_READ_ONLY`. Paths returned (by `glob`) are relative to the
 * root.
 *
 * Writes and edits of one file through the service (or, for `localFs`,
 * through any `localFs` of the process) run one after the other, so parallel
 * edits of one file all land.
 */
export interface FsService {
  /** The whole content of a regular file. */
  readBytes(path: string): Promise<Uint8Array>;
  /** A regular file as UTF-8 text, optionally a range of its lines. */
  readText(path: string, options?: ReadTextOptions): Promise<TextRead>;
  /**
   * Create or replace a regular file, whole or not at all: a write that fails
   * leaves the old content (`localFs` writes a temporary file beside it and
   * renames it over the file; a symbolic link is written through; a file
   * another user owns, or in a directory that does not allow the rename, is
   * written in place, not atomically).
   */
  writeFile(path: string, data: string | Uint8Array, options?: WriteFileOptions): Promise<void>;
  /**
   * Replace `oldText` with `newText` in a text file: `oldText` must occur
   * exactly once, a second match overlapping the first included ("aba" in
   * "ababa" is not unique), or at least once with `replaceAll`, which
   * replaces left to right and skips a match overlapping the one before.
   * `EDIT_NOT_UNIQUE`'s `details.occurrences` is how many `replaceAll`
   * would replace, `details.overlapping` whether more places match. When the file changed
   * between the read and the write (another process wrote it), nothing is
   * written and the edit fails with `FILE_CHANGED`.
   *
   * @returns How many occurrences were replaced.
   */
  edit(path: string, oldText: string, newText: string, options?: EditOptions): Promise<number>;
  /** The entries of a directory, sorted by name. */
  list(path: string): Promise<FsEntry[]>;
  /**
   * Paths of the regular files matching a glob (`*`, `**`, `?`, `[abc]`,
   * `{a,b}`), sorted; symbolic links to directories are not descended into
   * nor listed, and FIFOs, sockets and devices are not listed. A pattern
   * is matched in time linear in each path's length (not by backtracking, so
   * a pattern such as `*a*a*a*a*a*a*b` cannot stall the process).
   */
  glob(pattern: string, options?: GlobOptions): Promise<string[]>;
  /** What a path is; `FILE_NOT_FOUND` when nothing is there. */
  stat(path: string): Promise<FsStat>;
  /** Create a directory. */
  mkdir(path: string, options?: RecursiveOptions): Promise<void>;
  /** Remove a file, a symbolic link (not its target) or a directory. */
  remove(path: string, options?: RecursiveOptions): Promise<void>;
  /**
   * Where a path really leads, relative to the root (`.` for the root): every
   * symbolic link on the way resolved; a part that does not exist yet is kept
   * as given. Absent in a file system without links. The file tools judge this
   * path by the permission rules too, so a link cannot carry a call past them.
   */
  realPath?(path: string): Promise<string>;
}
