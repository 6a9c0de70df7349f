// Byte-level operations on one session file: encoding batches, atomic first
// publication, durable appends with rollback, and cheap reads of the head and
// tail. fileStorage composes these; the format is documented there. A little over the house limit on purpose:
// writing and reading the same byte format (plain and zstd, torn-tail handling) stay side by side, so that a
// change to one is seen next to the other.

import type { SessionEvent } from "../session/session_events.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import { expandChunkRow, isChunkRow, packChunkRows } from "./chunk_rows.ts";
import { alreadyExists } from "./_errors.ts";
import { decodePlainLog, decodeZstdLog } from "./_log_decoder.ts";
import type { ReaderVocabulary } from "./_event_types.ts";
import { errorCode, type FileHandleLike, fsOps, joinPath, syncDir } from "./_fs.ts";
import { headerRecord } from "./_header.ts";
import type { SessionHeader } from "./session_storage.ts";
import { frameEnd, zstd } from "./_zstd.ts";
import { openLine, sealLine } from "./_record_checksum.ts";

export type Encoding = "plain" | "zstd";

/** The file name of a log of format `version`: `session.jsonl` for v0, `session.vN.jsonl` from v1 on. */
export function logFileName(version: number, encoding: Encoding): string {
  const base = version === 0 ? "session.jsonl" : `session.v${version}.jsonl`;
  return encoding === "zstd" ? `${base}.zstd` : base;
}

const LOG_FILE = /^session(?:\.v([1-9][0-9]*))?\.jsonl(\.zstd)?$/;

/** The format version and encoding a file name stands for, or `undefined` for another file. */
export function parseLogFileName(name: string): { version: number; encoding: Encoding } | undefined {
  const match = LOG_FILE.exec(name);
  if (match === null) return undefined;
  return {
    version: match[1] === undefined ? 0 : Number(match[1]),
    encoding: match[2] === undefined ? "plain" : "zstd",
  };
}

export interface EncodeOptions {
  readonly encoding: Encoding;
  readonly level: number;
  readonly packChunks: boolean;
}

const encoder = /* @__PURE__ */ new TextEncoder();
const decoder = /* @__PURE__ */ new TextDecoder();

/** The lines of a batch (rows packed when asked), each with its checksum, newline-terminated. */
export function batchText(events: readonly SessionEvent[], packChunks: boolean): string {
  const records = packChunks ? packChunkRows(events) : events;
  let text = "";
  for (const record of records) text += sealLine(JSON.stringify(record)) + "\n";
  return text;
}

/** The bytes appended for one batch: lines, or one zstd frame of them. */
export async function encodeBatch(events: readonly SessionEvent[], options: EncodeOptions): Promise<Uint8Array> {
  const bytes = encoder.encode(batchText(events, options.packChunks));
  return options.encoding === "zstd" ? (await zstd()).compress(bytes, options.level) : bytes;
}

/** The bytes of a new file: the header line (its own frame under zstd) and the seed batch. */
export async function encodeNewFile(
  header: SessionHeader,
  events: readonly SessionEvent[],
  options: EncodeOptions,
): Promise<Uint8Array> {
  const head = encoder.encode(sealLine(JSON.stringify(headerRecord(header))) + "\n");
  if (options.encoding === "plain") {
    return concat(head, encoder.encode(batchText(events, options.packChunks)));
  }
  const z = await zstd();
  const first = z.compress(head, options.level);
  return events.length === 0 ? first : concat(first, await encodeBatch(events, options));
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

async function writeFully(handle: FileHandleLike, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, done, bytes.length - done, position + done);
    if (bytesWritten <= 0) throw new Error("The file system accepted no bytes");
    done += bytesWritten;
  }
}

/**
 * Publish a new file without ever overwriting: write a temp file, fsync it,
 * hard-link it to its name (exclusive create where links are unsupported),
 * fsync the directory. Throws `SESSION_ALREADY_EXISTS` when the name is taken,
 * and `SESSION_WRITE_FAILED` (the file system's error as its cause, the temp
 * file removed) when the write fails.
 */
export async function publishNew(
  dir: string,
  name: string,
  bytes: Uint8Array,
  sessionId: string,
  token: string,
): Promise<void> {
  const target = joinPath(dir, name);
  const temp = joinPath(dir, `.${name}.${token}.tmp`);
  try {
    const handle = await fsOps.open(temp, "wx");
    try {
      await writeFully(handle, bytes, 0);
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    // A full disk, say: nothing was published, and the partial temp file is not left behind.
    await fsOps.unlink(temp).catch(() => {});
    throw publishFailed(target, sessionId, bytes, error);
  }
  try {
    await fsOps.link(temp, target);
  } catch (error) {
    if (errorCode(error) === "EEXIST") throw alreadyExists(sessionId);
    if (!["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EXDEV", "EMLINK"].includes(errorCode(error) ?? "")) {
      throw publishFailed(target, sessionId, bytes, error);
    }
    await publishExclusive(target, bytes, sessionId).catch((failure) => {
      throw HarnessError.isInstance(failure) ? failure : publishFailed(target, sessionId, bytes, failure);
    });
  } finally {
    await fsOps.unlink(temp).catch(() => {});
  }
  await syncDir(dir);
}

function publishFailed(file: string, sessionId: string, bytes: Uint8Array, cause: unknown): HarnessError {
  return new HarnessError("SESSION_WRITE_FAILED", `Writing ${file} failed; nothing was published`, {
    cause,
    details: { file, sessionId, bytes: bytes.length },
  });
}

async function publishExclusive(target: string, bytes: Uint8Array, sessionId: string): Promise<void> {
  let handle: FileHandleLike;
  try {
    handle = await fsOps.open(target, "wx");
  } catch (error) {
    if (errorCode(error) === "EEXIST") throw alreadyExists(sessionId);
    throw error;
  }
  try {
    await writeFully(handle, bytes, 0);
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => {});
    await fsOps.unlink(target).catch(() => {});
    throw error;
  }
  await handle.close();
}

/**
 * Append `bytes` at `position` (the file's committed length) and fsync; on any
 * failure cut the file back to `position` and throw `SESSION_WRITE_FAILED`.
 * Returns the new length.
 */
export async function appendAt(
  file: string,
  bytes: Uint8Array,
  position: number,
  sessionId: string,
): Promise<number> {
  let handle: FileHandleLike;
  try {
    handle = await fsOps.open(file, "r+");
  } catch (error) {
    throw new HarnessError("SESSION_WRITE_FAILED", `Opening ${file} to append failed; nothing was written`, {
      cause: error,
      details: { file, sessionId, position, bytes: bytes.length },
    });
  }
  try {
    await writeFully(handle, bytes, position);
    await handle.sync();
    return position + bytes.length;
  } catch (error) {
    try {
      await handle.truncate(position);
      await handle.sync();
    } catch {
      // The rollback failed too; the torn tail is then repaired by the next load.
    }
    throw new HarnessError("SESSION_WRITE_FAILED", `Writing to ${file} failed; the batch was rolled back`, {
      cause: error,
      details: { file, sessionId, position, bytes: bytes.length },
    });
  } finally {
    await handle.close().catch(() => {});
  }
}

/** Cut a file back to `length` and fsync; a failure is `SESSION_WRITE_FAILED`, the file system's error as its cause. */
export async function truncateTo(file: string, length: number, sessionId: string): Promise<void> {
  try {
    const handle = await fsOps.open(file, "r+");
    try {
      await handle.truncate(length);
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw new HarnessError("SESSION_WRITE_FAILED", `Cutting ${file} back to ${length} bytes failed`, {
      cause: error,
      details: { file, sessionId, length },
    });
  }
}

async function readRange(handle: FileHandleLike, start: number, end: number): Promise<Uint8Array> {
  const buffer = new Uint8Array(end - start);
  let done = 0;
  while (done < buffer.length) {
    const { bytesRead } = await handle.read(buffer, done, buffer.length - done, start + done);
    if (bytesRead <= 0) break;
    done += bytesRead;
  }
  return buffer.subarray(0, done);
}

/** Read just the header of a session file. */
export async function readHeader(
  file: string,
  encoding: Encoding,
  sessionId: string | undefined,
): Promise<SessionHeader> {
  const handle = await fsOps.open(file, "r");
  try {
    const { size } = await handle.stat();
    for (let window = 4096;; window *= 8) {
      const bytes = await readRange(handle, 0, Math.min(size, window));
      if (encoding === "plain") {
        const nl = bytes.indexOf(10);
        if (nl !== -1 || bytes.length === size) {
          return decodePlainLog(bytes.subarray(0, nl === -1 ? bytes.length : nl + 1), file, sessionId, new Set())
            .header;
        }
      } else {
        const end = frameEnd(bytes, 0);
        if (end !== -1 || bytes.length === size) {
          return (await decodeZstdLog(bytes.subarray(0, end === -1 ? bytes.length : end), file, sessionId, new Set()))
            .header;
        }
      }
    }
  } finally {
    await handle.close();
  }
}

/** The committed tail state of a file, read cheaply. */
export interface TailState {
  readonly size: number;
  readonly updatedAt: number;
  /** The next seq: one past the last complete record. */
  readonly nextSeq: number;
  /**
   * The tail awaits repair by `load`: bytes follow the last complete record,
   * or that record is complete but lost its newline.
   */
  readonly torn: boolean;
}

function recordEnd(line: string): number | undefined {
  const { json: text, verified } = openLine(line);
  if (verified === false) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const record = value as { type?: unknown; seq?: unknown };
  if (record.type === "session") return 0;
  if (isChunkRow(record as { type: unknown })) {
    const events = expandChunkRow(value as Parameters<typeof expandChunkRow>[0]);
    return events === undefined ? undefined : events[events.length - 1].seq + 1;
  }
  return Number.isSafeInteger(record.seq) ? (record.seq as number) + 1 : undefined;
}

/**
 * Where {@linkcode readTail} last found the final complete frame of a zstd
 * file. Frames cannot be found from the end of a file (a frame is delimited
 * only by walking the headers from the start), so without a mark the walk
 * reads every byte; with one it reads from the marked frame on.
 */
export interface ZstdTailMark {
  /** The offset of the last complete frame. */
  readonly lastStart: number;
  /** Its end: the bytes before it are a chain of complete frames from offset 0. */
  readonly chainEnd: number;
  /** A fingerprint of the frame's bytes, to notice a file rewritten since. */
  readonly fingerprint: number;
}

/** The marks of one storage instance, by file path. */
export type ZstdTailMarks = Map<string, ZstdTailMark>;

// FNV-1a over the frame's length and its first and last 64 bytes: a zstd frame ends in a checksum of its
// content where the encoder wrote one, and a file rewritten in place is unlikely to repeat a frame at the
// same offset. Constant time, so a large last frame costs no more than a small one.
function frameFingerprint(frame: Uint8Array): number {
  let hash = 0x811c9dc5 ^ frame.length;
  const mix = (from: number, to: number) => {
    for (let i = from; i < to; i++) hash = Math.imul(hash ^ frame[i], 0x01000193);
  };
  mix(0, Math.min(64, frame.length));
  mix(Math.max(64, frame.length - 64), frame.length);
  return hash >>> 0;
}

interface LastFrame {
  readonly nextSeq: number;
  /** The frame's start and end, relative to the bytes walked. */
  readonly start: number;
  readonly end: number;
}

/** Walk complete frames from `at` (a frame boundary) and read the last record of the last one walked. */
async function lastFrameFrom(bytes: Uint8Array, at: number): Promise<LastFrame | undefined> {
  let lastStart = -1;
  for (let end = frameEnd(bytes, at); end !== -1; end = frameEnd(bytes, at)) {
    lastStart = at;
    at = end;
  }
  if (lastStart === -1) return undefined;
  let text: string | undefined;
  try {
    text = decoder.decode((await zstd()).decompress(bytes.subarray(lastStart, at)));
  } catch {
    text = undefined;
  }
  const lines = text?.endsWith("\n") ? text.slice(0, -1).split("\n") : [];
  const nextSeq = lines.length === 0 ? undefined : recordEnd(lines[lines.length - 1]);
  return nextSeq === undefined ? undefined : { nextSeq, start: lastStart, end: at };
}

function markOf(bytes: Uint8Array, last: LastFrame, offset: number): ZstdTailMark {
  return {
    lastStart: offset + last.start,
    chainEnd: offset + last.end,
    fingerprint: frameFingerprint(bytes.subarray(last.start, last.end)),
  };
}

/**
 * The tail of a zstd file read from its mark: every byte from the marked
 * frame on, once the frame is found still there; the last complete frame
 * (the marked one or a later one) is decompressed as a whole-file walk would.
 * `undefined` when the frame is not there or the last frame is unreadable:
 * the caller then walks the whole file.
 */
async function tailFromMark(
  handle: FileHandleLike,
  size: number,
  mark: ZstdTailMark,
): Promise<{ nextSeq: number; torn: boolean; mark: ZstdTailMark } | undefined> {
  if (size < mark.chainEnd) return undefined;
  const bytes = await readRange(handle, mark.lastStart, size);
  const frameLength = mark.chainEnd - mark.lastStart;
  if (bytes.length !== size - mark.lastStart || frameEnd(bytes, 0) !== frameLength) return undefined;
  if (frameFingerprint(bytes.subarray(0, frameLength)) !== mark.fingerprint) return undefined;
  const last = await lastFrameFrom(bytes, 0);
  if (last === undefined) return undefined;
  return { nextSeq: last.nextSeq, torn: last.end !== bytes.length, mark: markOf(bytes, last, mark.lastStart) };
}

/**
 * Find the next seq and whether the tail is torn, reading only the end of a
 * plain file, or of a zstd one from the frame `marks` holds for it (the whole
 * file when there is none; the mark is then set). Falls back to a full decode
 * when the last record is not readable.
 */
export async function readTail(
  file: string,
  encoding: Encoding,
  known: ReaderVocabulary,
  marks?: ZstdTailMarks,
): Promise<TailState> {
  const handle = await fsOps.open(file, "r");
  let bytes: Uint8Array;
  let size: number;
  let updatedAt: number;
  try {
    const stat = await handle.stat();
    size = stat.size;
    updatedAt = Math.floor(stat.mtimeMs);
    if (encoding === "plain") {
      for (let window = 65536;; window *= 4) {
        const start = Math.max(0, size - window);
        const tail = await readRange(handle, start, size);
        const lastNl = tail.lastIndexOf(10);
        const prevNl = lastNl <= 0 ? -1 : tail.lastIndexOf(10, lastNl - 1);
        if (prevNl === -1 && start > 0) continue;
        if (lastNl !== -1 && lastNl !== tail.length - 1) {
          // A last record that is complete and checks out but lost its newline counts, as the decoder counts it;
          // the tail still awaits load's repair (the newline), so an append is refused until then.
          const rest = decoder.decode(tail.subarray(lastNl + 1));
          const end = openLine(rest).verified === true ? recordEnd(rest) : undefined;
          if (end !== undefined) return { size, updatedAt, nextSeq: end, torn: true };
        }
        const nextSeq = lastNl === -1 ? undefined : recordEnd(decoder.decode(tail.subarray(prevNl + 1, lastNl)));
        if (nextSeq !== undefined) return { size, updatedAt, nextSeq, torn: lastNl !== tail.length - 1 };
        break;
      }
    }
    const mark = encoding === "zstd" ? marks?.get(file) : undefined;
    if (mark !== undefined) {
      const tail = await tailFromMark(handle, size, mark);
      if (tail !== undefined) {
        marks!.set(file, tail.mark);
        return { size, updatedAt, nextSeq: tail.nextSeq, torn: tail.torn };
      }
      marks!.delete(file);
    }
    bytes = await readRange(handle, 0, size);
  } finally {
    await handle.close();
  }
  if (encoding === "zstd") {
    const last = await lastFrameFrom(bytes, 0);
    if (last !== undefined) {
      marks?.set(file, markOf(bytes, last, 0));
      return { size, updatedAt, nextSeq: last.nextSeq, torn: last.end !== bytes.length };
    }
  }
  const decoded = encoding === "plain"
    ? decodePlainLog(bytes, file, undefined, known)
    : await decodeZstdLog(bytes, file, undefined, known);
  return { size, updatedAt, nextSeq: decoded.events.length, torn: decoded.validBytes !== decoded.totalBytes };
}
