// Decoding of stored session logs (plain JSONL and zstd frames) into the
// header and events, with the torn-tail / corruption rules:
// - the header's version is checked before anything else;
// - records must parse, and their seqs continue the log (rows expand first);
// - a defect followed by a complete record is corruption (error naming the
//   file and the 1-based logical line, the header being line 1);
// - a defect followed by nothing is a torn tail: decoding stops before it and
//   reports where it began;
// - a complete record whose type the reader does not know (a strict reader) and
//   that is not ignorable is refused;
// - every event is checked with the validator `Session.append()` uses (the
//   envelope, then the payload of the core types): a whole record that parses
//   but fails it is corruption wherever it is (a torn write leaves an
//   incomplete line, not a wrong one).
// A zstd frame is all-or-nothing: a frame with any defect is torn as a whole.
// Lines carry checksums (see _record_checksum.ts); a line that fails its
// checksum is a defect. A plain file's last record that is complete and
// checks out is kept even when its newline is missing.

import type { SessionEvent } from "../session/session_events.ts";
import { type ChunkRow, expandChunkRow, isChunkRow } from "./chunk_rows.ts";
import { corrupt, unknownEventType } from "./_errors.ts";
import { readable, type ReaderVocabulary } from "./_event_types.ts";
import { parseHeader } from "./_header.ts";
import type { SessionHeader } from "./session_storage.ts";
import { frameEnd, nextMagic, zstd } from "./_zstd.ts";
import { validateEnvelope, validateEventData } from "../session/_validate_event.ts";
import { openLine } from "./_record_checksum.ts";

export interface DecodedLog {
  readonly header: SessionHeader;
  readonly events: SessionEvent[];
  /** Bytes of the valid prefix (the whole file when nothing is torn). */
  readonly validBytes: number;
  readonly totalBytes: number;
  /** The 1-based logical line where a torn tail began, if any. */
  readonly tornLine?: number;
  /** The last record is complete and checks out but lacks its newline (a plain file; repair adds it). */
  readonly missingNewline?: boolean;
}

const decoder = /* @__PURE__ */ new TextDecoder();

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function looksLikeRecord(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value) &&
    typeof (value as { type?: unknown }).type === "string";
}

/** Whether a line after a defect is a committed record (then the defect is corruption, not a torn tail). */
function followsAsRecord(line: string): boolean {
  const { json, verified } = openLine(line);
  return verified !== false && looksLikeRecord(parseJson(json));
}

/** Turns record lines into events, tracking the next seq. */
class RecordReader {
  readonly events: SessionEvent[] = [];
  nextSeq = 0;
  defect = "";
  /** The last defect was a whole record that parses but fails validation: corruption, never a torn write. */
  invalid = false;

  readonly file: string;
  readonly known: ReaderVocabulary;

  constructor(file: string, known: ReaderVocabulary) {
    this.file = file;
    this.known = known;
  }

  /** The events of one line, or `undefined` (with `defect` set) when the line is defective. */
  read(text: string, line: number): SessionEvent[] | undefined {
    this.invalid = false;
    const { json, verified } = openLine(text);
    if (verified === false) return this.#fail("the line fails its checksum");
    const value = parseJson(json);
    if (!looksLikeRecord(value)) {
      this.defect = value === undefined ? "the line is not JSON" : "the line is not a record";
      return undefined;
    }
    const record = value as Record<string, unknown> & { type: string };
    if (isChunkRow(record)) {
      const events = expandChunkRow(record as unknown as ChunkRow);
      if (events === undefined) return this.#fail(`the ${record.type} row is malformed`);
      if (events[0].seq !== this.nextSeq) {
        return this.#fail(`the row starts at seq ${events[0].seq}, not ${this.nextSeq}`);
      }
      return this.#valid(events) ? events : undefined;
    }
    if (record.seq !== this.nextSeq) return this.#fail(`the event has seq ${record.seq}, not ${this.nextSeq}`);
    if (!Number.isFinite(record.time) || !("data" in record)) return this.#fail("the event has no time or data");
    if (!readable(this.known, record.type, record.ignorable)) {
      throw unknownEventType(this.file, line, record.type);
    }
    const event = record as unknown as SessionEvent;
    return this.#valid([event]) ? [event] : undefined;
  }

  /** Check events with the append validator; `false` (with `defect` set) when one fails. */
  #valid(events: readonly SessionEvent[]): boolean {
    for (const event of events) {
      try {
        validateEnvelope(event, event.seq);
        validateEventData(event.type, event.data, event.seq);
      } catch (error) {
        this.defect = error instanceof Error ? error.message : String(error);
        this.invalid = true;
        return false;
      }
    }
    return true;
  }

  accept(events: readonly SessionEvent[]): void {
    for (const event of events) this.events.push(event);
    this.nextSeq += events.length;
  }

  #fail(defect: string): undefined {
    this.defect = defect;
    return undefined;
  }
}

function byteOffsetOfLine(bytes: Uint8Array, index: number): number {
  let at = 0;
  for (let i = 0; i < index; i++) at = bytes.indexOf(10, at) + 1;
  return at;
}

/** What {@linkcode decodeRecordLines} read: the events of the valid prefix, and where a torn tail began. */
export interface DecodedLines {
  readonly events: SessionEvent[];
  /** The 0-based index in `lines` where a torn tail began, if any. */
  readonly tornIndex?: number;
  /** Why the line at `tornIndex` is defective. */
  readonly tornReason?: string;
  /** The last record is complete and checks out but lacks its newline. */
  readonly missingNewline?: boolean;
}

/**
 * Decode the record lines of a plain log: `lines` is the log's text split at
 * `\n` (so the last entry is `""` when the text ends with a newline), and
 * `lines[0]`, the header, is skipped. Errors name `file` and the 1-based index
 * in `lines` (the header being line 1). Shared by the storage reader and the
 * fixture loader, which decodes each header-delimited log of a file with it.
 */
export function decodeRecordLines(lines: readonly string[], file: string, known: ReaderVocabulary): DecodedLines {
  const reader = new RecordReader(file, known);
  const last = lines.length - 1;
  for (let i = 1; i <= last; i++) {
    if (i === last && lines[i] === "") break;
    if (i === last && openLine(lines[i]).verified === true) {
      // Complete and checked, only its newline was lost: keep it (repair writes the newline).
      const events = reader.read(lines[i], i + 1);
      if (events !== undefined) {
        reader.accept(events);
        return { events: reader.events, missingNewline: true };
      }
      if (reader.invalid) throw corrupt(file, i + 1, reader.defect);
    }
    const events = i < last ? reader.read(lines[i], i + 1) : undefined;
    if (events !== undefined) {
      reader.accept(events);
      continue;
    }
    if (i < last && reader.invalid) throw corrupt(file, i + 1, reader.defect);
    const defect = i < last ? reader.defect : "the line is incomplete";
    for (let j = i + 1; j <= last; j++) {
      if (lines[j] !== "" && followsAsRecord(lines[j])) {
        throw corrupt(file, i + 1, `${defect}, and records follow`, { nextRecordLine: j + 1 });
      }
    }
    return { events: reader.events, tornIndex: i, tornReason: defect };
  }
  return { events: reader.events };
}

/** Decode a plain JSONL session file. */
export function decodePlainLog(
  bytes: Uint8Array,
  file: string,
  sessionId: string | undefined,
  known: ReaderVocabulary,
): DecodedLog {
  const text = decoder.decode(bytes);
  const lines = text.split("\n");
  const headerLine = openLine(lines[0]);
  if (headerLine.verified === false && lines.length > 1) throw corrupt(file, 1, "the header line fails its checksum");
  const headerValue = parseJson(headerLine.json);
  if (headerValue === undefined) {
    // A header that does not parse cannot be version-checked; a published file always has a whole one.
    throw corrupt(file, 1, lines.length === 1 ? "the header line is incomplete" : "the header line is not JSON");
  }
  const header = parseHeader(headerValue, file, sessionId);
  if (lines.length === 1) throw corrupt(file, 1, "the header line is incomplete");
  const { events, tornIndex, missingNewline } = decodeRecordLines(lines, file, known);
  const totalBytes = bytes.length;
  if (tornIndex !== undefined) {
    return { header, events, validBytes: byteOffsetOfLine(bytes, tornIndex), totalBytes, tornLine: tornIndex + 1 };
  }
  return { header, events, validBytes: totalBytes, totalBytes, ...(missingNewline ? { missingNewline } : {}) };
}

function isSkippable(bytes: Uint8Array, at: number): boolean {
  return at + 4 <= bytes.length && bytes[at] >= 0x50 && bytes[at] <= 0x5f && bytes[at + 1] === 0x2a &&
    bytes[at + 2] === 0x4d && bytes[at + 3] === 0x18;
}

/**
 * Decode a zstd session file: a header frame, then one frame per appended
 * batch. Some native encoders split one input into several frames (or add an
 * empty one), so a batch is read as the run of frames whose content ends with
 * a newline; a batch is all-or-nothing.
 */
export async function decodeZstdLog(
  bytes: Uint8Array,
  file: string,
  sessionId: string | undefined,
  known: ReaderVocabulary,
): Promise<DecodedLog> {
  const z = await zstd();
  const inflate = (at: number, end: number): string | undefined => {
    try {
      return decoder.decode(z.decompress(bytes.subarray(at, end)));
    } catch {
      return undefined;
    }
  };
  const headerEnd = frameEnd(bytes, 0);
  const headerText = headerEnd === -1 ? undefined : inflate(0, headerEnd);
  const headerLine = headerText === undefined ? undefined : openLine(headerText.split("\n")[0]);
  const headerValue = headerLine === undefined || headerLine.verified === false
    ? undefined
    : parseJson(headerLine.json);
  if (headerValue === undefined) throw corrupt(file, 1, "the header frame is incomplete or not JSON");
  const header = parseHeader(headerValue, file, sessionId);

  const reader = new RecordReader(file, known);
  let line = 2;
  let at = headerEnd;
  for (let batchIndex = 1; at < bytes.length; batchIndex++) {
    const start = at;
    let text = "";
    let defect: string | undefined;
    let searchFrom = at;
    while (defect === undefined) {
      if (at >= bytes.length) {
        if (text !== "") defect = "the batch does not end with a newline";
        searchFrom = at;
        break;
      }
      const end = frameEnd(bytes, at);
      const content = end === -1 ? undefined : isSkippable(bytes, at) ? "" : inflate(at, end);
      if (content === undefined) {
        defect = end === -1 ? "a frame is incomplete" : "a frame does not decompress";
        searchFrom = at + 1;
        break;
      }
      text += content;
      at = end;
      if (text !== "" && text.endsWith("\n")) break;
    }
    const batch: SessionEvent[] = [];
    let lines = 0;
    if (defect === undefined && text !== "") {
      searchFrom = at;
      const batchLines = text.slice(0, -1).split("\n");
      const first = reader.nextSeq;
      for (; lines < batchLines.length; lines++) {
        const events = reader.read(batchLines[lines], line + lines);
        if (events === undefined) {
          // The frame checked out (zstd content checksum), so a bad record in it was written so.
          if (reader.invalid) throw corrupt(file, line + lines, reader.defect);
          defect = reader.defect;
          break;
        }
        for (const event of events) batch.push(event);
        reader.nextSeq += events.length;
      }
      reader.nextSeq = first;
    }
    if (defect === undefined) {
      reader.accept(batch);
      line += lines;
      continue;
    }
    for (let next = nextMagic(bytes, searchFrom); next !== -1; next = nextMagic(bytes, next + 1)) {
      const nextEnd = frameEnd(bytes, next);
      if (nextEnd !== -1 && inflate(next, nextEnd) !== undefined) {
        throw corrupt(file, line + lines, `batch ${batchIndex} is defective (${defect}), and frames follow`, {
          batch: batchIndex,
          offset: start,
        });
      }
    }
    return { header, events: reader.events, validBytes: start, totalBytes: bytes.length, tornLine: line };
  }
  return { header, events: reader.events, validBytes: bytes.length, totalBytes: bytes.length };
}
