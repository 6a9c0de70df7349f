// Internal: parts of localFs that need none of its closures: the per-path write queue shared by every localFs of the
// process, and the chunked read of the lines of a large file.

import type { FileHandle } from "node:fs/promises";
import { fsError, selectLines } from "./_fs_errors.ts";

const decoder = new TextDecoder();

// Writes and edits of one file run one at a time in this process, whichever localFs (or harness, or subagent) asks:
// an edit reads, replaces and writes back, and two edits interleaved would both succeed with one of them lost. The
// queue is per real path, on globalThis so that two copies of this module (a bundle and its source) share it.
const QUEUES = Symbol.for("@dsh/harness/local-fs-write-queues");
const queues = (): Map<string, Promise<void>> => {
  const global = globalThis as unknown as Record<symbol, Map<string, Promise<void>> | undefined>;
  return global[QUEUES] ??= new Map();
};

/** Run `fn` after every write of `key` queued before it, and before those queued after it. */
export async function serialised<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const map = queues();
  const before = map.get(key) ?? Promise.resolve();
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  const tail = before.then(() => done);
  map.set(key, tail);
  try {
    await before;
    return await fn();
  } finally {
    release();
    if (map.get(key) === tail) map.delete(key);
  }
}

export const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
};

/** Files above this size are read in chunks, keeping only the lines asked for. */
export const STREAM_ABOVE = 16 * 1024 * 1024;
/** The most text one read returns (strings have a runtime limit: ~512 MB on V8). */
export const MAX_TEXT_BYTES = 128 * 1024 * 1024;

/**
 * `selectLines` over a large open file, in chunks: the lines are split at LF
 * bytes (which UTF-8 never uses inside a character), only the selected ones
 * are kept and decoded, and every line is counted.
 */
export async function selectLinesOf(
  handle: FileHandle,
  size: number,
  path: string,
  startLine: number,
  lineCount: number | undefined,
): Promise<{ text: string; startLine: number; endLine: number; totalLines: number }> {
  selectLines("", startLine, lineCount); // the same argument checks
  const last = lineCount === undefined ? Infinity : startLine - 1 + lineCount;
  const parts: Uint8Array[] = [];
  let kept = 0;
  let line = 1;
  let newlines = 0;
  let lastByte = -1;
  const buffer = new Uint8Array(1 << 20);
  for (let position = 0; position < size;) {
    const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, size - position), position);
    if (bytesRead === 0) break;
    const chunk = buffer.subarray(0, bytesRead);
    for (let i = 0; i < chunk.length;) {
      const newline = chunk.indexOf(0x0a, i);
      const end = newline < 0 ? chunk.length : newline + 1;
      if (line >= startLine && line <= last) {
        kept += end - i;
        if (kept > MAX_TEXT_BYTES) {
          throw fsError(
            "FILE_TOO_LARGE",
            `The lines asked for in "${path}" pass ${MAX_TEXT_BYTES} bytes: read fewer at a time (offset and limit)`,
            path,
          );
        }
        parts.push(chunk.slice(i, end));
      }
      if (newline < 0) break;
      newlines++;
      line++;
      i = end;
    }
    lastByte = chunk[bytesRead - 1];
    position += bytesRead;
  }
  const total = size === 0 ? 0 : lastByte === 0x0a ? newlines : newlines + 1;
  const from = Math.min(startLine, total + 1);
  const to = lineCount === undefined ? total : Math.min(total, from - 1 + lineCount);
  const bytes = new Uint8Array(kept);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.length;
  }
  return { text: decoder.decode(bytes), startLine: from, endLine: to, totalLines: total };
}
