// Internal: the coded errors of the file-system seam and shared path helpers.

import { HarnessError } from "../../kernel/harness_error.ts";

/** A coded file-system error naming the path. */
export function fsError(code: string, message: string, path: string, cause?: unknown): HarnessError {
  return new HarnessError(code, message, { details: { path }, ...(cause !== undefined ? { cause } : {}) });
}

export const outside = (path: string): HarnessError =>
  fsError("PATH_OUTSIDE_ROOT", `Path "${path}" is outside the root`, path);
export const notFound = (path: string, cause?: unknown): HarnessError =>
  fsError("FILE_NOT_FOUND", `No file or directory at "${path}"`, path, cause);
export const notDirectory = (path: string): HarnessError =>
  fsError("NOT_A_DIRECTORY", `Path "${path}" is not a directory`, path);
export const isDirectory = (path: string): HarnessError =>
  fsError("IS_A_DIRECTORY", `Path "${path}" is a directory`, path);
/** Whether a path ends with a separator: it then names a directory, never a file. */
export const endsWithSlash = (path: string): boolean => /[/\\]$/.test(path);
export const slashed = (path: string): HarnessError =>
  fsError(
    "NOT_A_DIRECTORY",
    `Path "${path}" ends with a slash, which names a directory: give a file's path without it`,
    path,
  );
export const nameTooLong = (path: string, cause?: unknown): HarnessError =>
  fsError("INVALID_PATH", `A name in "${path}", or the whole path, is too long for the file system`, path, cause);
export const changed = (path: string): HarnessError =>
  fsError(
    "FILE_CHANGED",
    `"${path}" changed while it was being edited (something else wrote it): nothing was written; read it again and redo the edit`,
    path,
  );
export const notRegular = (path: string): HarnessError =>
  fsError("NOT_A_REGULAR_FILE", `Path "${path}" is not a regular file`, path);

/**
 * Split a path into its normal segments relative to the root, or throw
 * `INVALID_PATH` / `PATH_OUTSIDE_ROOT`. `rootAbs` is the root's absolute
 * path, for absolute inputs (`/` for a virtual file system).
 *
 * A `\` is a separator on every platform, on purpose: a model's Windows-style
 * `src\a.ts` names `src/a.ts`, a path means the same to `localFs` and
 * `memoryFs` on Linux and on Windows, and the permission subjects of the file
 * tools (`subjectOf`) read it the same way, so `secrets\key` cannot pass a
 * rule written for `secrets/**`. The price: on POSIX a file whose name holds
 * a `\` is listed but no path names it.
 */
export function segmentsOf(path: string, rootAbs: string): string[] {
  if (typeof path !== "string" || path === "") throw fsError("INVALID_PATH", "The path is empty", String(path));
  if (path.includes("\0")) throw fsError("INVALID_PATH", "The path contains a NUL byte", path);
  let rest = path.replaceAll("\\", "/");
  if (rest.startsWith("/")) {
    const root = rootAbs.replace(/\/+$/, "");
    if (root !== "" && rest !== root && !rest.startsWith(root + "/")) throw outside(path);
    rest = rest.slice(root.length);
  }
  const out: string[] = [];
  for (const part of rest.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (out.length === 0) throw outside(path);
      out.pop();
    } else out.push(part);
  }
  return out;
}

/** Split text into lines as the seam counts them. */
export function selectLines(text: string, startLine = 1, lineCount?: number): {
  text: string;
  startLine: number;
  endLine: number;
  totalLines: number;
} {
  if (!Number.isInteger(startLine) || startLine < 1) {
    throw new HarnessError("INVALID_ARGS", "startLine must be an integer of at least 1");
  }
  if (lineCount !== undefined && (!Number.isInteger(lineCount) || lineCount < 0)) {
    throw new HarnessError("INVALID_ARGS", "lineCount must be a non-negative integer");
  }
  const lines = text === "" ? [] : text.split("\n");
  const endsWithNewline = text.endsWith("\n");
  if (endsWithNewline) lines.pop();
  const total = lines.length;
  const from = Math.min(startLine, total + 1);
  const to = lineCount === undefined ? total : Math.min(total, from - 1 + lineCount);
  const picked = lines.slice(from - 1, to);
  const newline = picked.length > 0 && (to < total || endsWithNewline) ? "\n" : "";
  return { text: picked.join("\n") + newline, startLine: from, endLine: to, totalLines: total };
}

const editDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * A file's bytes as text an edit can write back unchanged around its
 * replacement: UTF-8 only (a byte sequence that is not would be replaced by
 * U+FFFD, and written back so), the byte order mark kept as a character.
 *
 * @throws {HarnessError} `FILE_NOT_TEXT` when the bytes are not UTF-8.
 */
export function editableText(path: string, bytes: Uint8Array): string {
  try {
    return editDecoder.decode(bytes);
  } catch {
    throw fsError(
      "FILE_NOT_TEXT",
      `"${path}" is not UTF-8 text: an edit would change its other bytes (write it whole, or leave it)`,
      path,
    );
  }
}

/** Where `oldText` occurs in `text`, as one left-to-right scan (see {@link findMatches}). */
interface Matches {
  /** Where the first match starts, -1 when there is none. */
  first: number;
  /** Whether there is a second match, overlapping the first or not: "aba" matches twice in "ababa". */
  another: boolean;
  /** Where the matches `replaceAll` replaces start: left to right, each one that overlaps the one before skipped. */
  replaced: number[];
  /** Whether a match was skipped so: some two matches overlap. */
  overlapping: boolean;
}

/**
 * Every place `oldText` starts in `text` (UTF-16 units, as `indexOf` counts), found by Knuth–Morris–Pratt: time in
 * proportion to the two lengths added, however they repeat. `indexOf` and `split` can take their product (2 MB of
 * "a" and a 20,000-unit text that ends in "b" take seconds each), and stepping `indexOf` one unit past each match
 * takes it whenever the text repeats.
 */
function findMatches(text: string, oldText: string): Matches {
  const m = oldText.length;
  // border[i]: the length of the longest proper prefix of oldText[0..i] that is also its suffix.
  const border = new Int32Array(m);
  for (let i = 1, k = 0; i < m; i++) {
    while (k > 0 && oldText.charCodeAt(i) !== oldText.charCodeAt(k)) k = border[k - 1];
    if (oldText.charCodeAt(i) === oldText.charCodeAt(k)) k++;
    border[i] = k;
  }
  const found: Matches = { first: -1, another: false, replaced: [], overlapping: false };
  let nextFree = 0;
  for (let i = 0, k = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    while (k > 0 && c !== oldText.charCodeAt(k)) k = border[k - 1];
    if (c === oldText.charCodeAt(k)) k++;
    if (k < m) continue;
    const at = i - m + 1;
    if (found.first === -1) found.first = at;
    else found.another = true;
    if (at >= nextFree) {
      found.replaced.push(at);
      nextFree = at + m;
    } else {
      found.overlapping = true;
    }
    k = border[k - 1];
  }
  return found;
}

/**
 * Apply an exact replacement, or throw `EDIT_NO_MATCH` / `EDIT_NOT_UNIQUE`. Unique means no second match anywhere,
 * overlapping ones included; with `replaceAll` the matches are replaced left to right, an overlapping one skipped (as
 * `String.prototype.replaceAll` does), and `count` is how many were replaced. `EDIT_NOT_UNIQUE`'s
 * `details.occurrences` is that same count, what `replaceAll` would replace (1 when the only other match overlaps the
 * first, as "aba" in "ababa"), and `details.overlapping` whether some match overlaps another, so that more places
 * match than `occurrences` says. Time is linear in the two lengths.
 */
export function replaceExact(
  path: string,
  text: string,
  oldText: string,
  newText: string,
  replaceAll: boolean,
): { text: string; count: number } {
  if (typeof oldText !== "string" || oldText === "") {
    throw new HarnessError("INVALID_ARGS", "The text to replace must be a non-empty string");
  }
  const { first, another, replaced, overlapping } = findMatches(text, oldText);
  if (first === -1) {
    // The model sees lines, not their ends: a file with CRLF lines does not contain a text with bare LF line breaks.
    const crlf = text.includes("\r\n") && /(?<!\r)\n/.test(oldText) ? " (the file's lines end with \\r\\n)" : "";
    throw fsError("EDIT_NO_MATCH", `The text to replace does not occur in "${path}"${crlf}`, path);
  }
  const count = replaced.length;
  if (another && !replaceAll) {
    throw new HarnessError(
      "EDIT_NOT_UNIQUE",
      count < 2
        ? `The text to replace matches at overlapping places in "${path}" (replacing all would replace only the first); give more context`
        : `The text to replace occurs ${count} times in "${path}"${
          overlapping ? " (not counting matches that overlap one before)" : ""
        }; give more context or replace all ${count}`,
      { details: { path, occurrences: count, overlapping } },
    );
  }
  const parts: string[] = [];
  let from = 0;
  for (const at of replaceAll ? replaced : [first]) {
    parts.push(text.slice(from, at), newText);
    from = at + oldText.length;
  }
  parts.push(text.slice(from));
  return { text: parts.join(""), count: replaceAll ? count : 1 };
}

const BY_ERRNO: Readonly<Record<string, [string, string]>> = {
  ENOENT: ["FILE_NOT_FOUND", "No file or directory at"],
  ENOTDIR: ["NOT_A_DIRECTORY", "A component is not a directory in"],
  EISDIR: ["IS_A_DIRECTORY", "Is a directory:"],
  ELOOP: ["PATH_OUTSIDE_ROOT", "Too many symbolic links, or a link where none may be, in"],
  EEXIST: ["FILE_EXISTS", "Something already exists at"],
  ENAMETOOLONG: ["INVALID_PATH", "A name, or the whole path, is too long for the file system:"],
  ENOTEMPTY: ["DIRECTORY_NOT_EMPTY", "Directory is not empty:"],
  EACCES: ["PERMISSION_DENIED", "Permission denied for"],
  EPERM: ["PERMISSION_DENIED", "Operation not permitted on"],
  ENXIO: ["NOT_A_REGULAR_FILE", "Not a regular file:"],
  ENOSPC: ["FS_NO_SPACE", "No space left on the device; nothing was written to"],
  EDQUOT: ["FS_NO_SPACE", "The disk quota is used up; nothing was written to"],
  EFBIG: ["FILE_TOO_LARGE", "Too large for the file system (or the process's file size limit); nothing was written to"],
  EROFS: ["FS_READ_ONLY", "The file system is read-only; nothing was written to"],
};

/** A coded error for any failure of an operation on `path`: harness errors pass, errno errors map. */
export function toFsError(error: unknown, path: string): HarnessError {
  if (HarnessError.isInstance(error)) return error;
  const errno = (error as { code?: unknown } | null)?.code;
  const known = typeof errno === "string" ? BY_ERRNO[errno] : undefined;
  if (known) return fsError(known[0], `${known[1]} "${path}"`, path, error);
  return fsError(
    "FS_ERROR",
    `File operation on "${path}" failed: ${(error as Error)?.message ?? String(error)}`,
    path,
    error,
  );
}
