/**
 * Packed chunk rows: the stored form of runs of stream deltas.
 *
 * A model stream is logged as one `assistant/chunk` event per delta, and the
 * envelope of each is many times the size of its text. A run of at least
 * {@linkcode MIN_CHUNK_RUN} consecutive deltas of the same block (same turn,
 * step, block index and delta type, and for tool calls the same id) is stored
 * as one row instead: `{ type: "text-chunks", seq0, time0, data: { turn, step,
 * index, dt, texts } }`, where `dt[i]` is the time of delta `i` minus `time0`.
 * Rows exist only in storage: readers get the events back, identical.
 *
 * Only deltas whose envelope holds exactly the fields rows can restore are
 * packed (no `ignorable`, no extra keys, integer times), so packing never
 * loses anything.
 *
 * @module
 */

import type { SessionEvent } from "../session/session_events.ts";

/** The shortest run of deltas stored as a row. */
export const MIN_CHUNK_RUN: number = 3;

/** The row types: one per delta type. */
export type ChunkRowType = "text-chunks" | "reasoning-chunks" | "tool-call-chunks";

/** A run of stream deltas of one block, stored as one record. */
export interface ChunkRow {
  readonly type: ChunkRowType;
  /** The seq of the first delta; the others follow contiguously. */
  readonly seq0: number;
  /** The time of the first delta. */
  readonly time0: number;
  readonly data: {
    readonly turn: number;
    readonly step: number;
    /** The block index the deltas target. */
    readonly index: number;
    /** The tool call id (`tool-call-chunks` only). */
    readonly id?: string;
    /** Per-delta time offsets from `time0`. */
    readonly dt: readonly number[];
    /** Per-delta texts (`argumentsDelta` for tool calls). */
    readonly texts: readonly string[];
  };
}

/** One stored record: an event as it is, or a packed row. */
export type StoredRecord = SessionEvent | ChunkRow;

/** Options of {@linkcode packChunkRows}. */
export interface PackChunkRowsOptions {
  /**
   * The shortest run to pack.
   *
   * @default {3}
   */
  readonly minRun?: number;
}

const ROW_OF_DELTA = {
  "text-delta": "text-chunks",
  "reasoning-delta": "reasoning-chunks",
  "tool-call-delta": "tool-call-chunks",
} as const;

const DELTA_OF_ROW = {
  "text-chunks": "text-delta",
  "reasoning-chunks": "reasoning-delta",
  "tool-call-chunks": "tool-call-delta",
} as const;

interface DeltaKey {
  readonly row: ChunkRowType;
  readonly turn: number;
  readonly step: number;
  readonly index: number;
  readonly id: string | undefined;
  readonly text: string;
  readonly seq: number;
  readonly time: number;
}

function keyCount(value: object): number {
  let n = 0;
  for (const _ in value) n++;
  return n;
}

/** The packing key of an event, or `undefined` when it cannot be packed without loss. */
function deltaKey(event: SessionEvent): DeltaKey | undefined {
  if (event.type !== "assistant/chunk" || keyCount(event) !== 4) return undefined;
  if (!Number.isSafeInteger(event.seq) || !Number.isSafeInteger(event.time)) return undefined;
  const data = event.data;
  if (typeof data !== "object" || data === null || keyCount(data) !== 3) return undefined;
  const { turn, step, chunk } = data;
  if (!Number.isSafeInteger(turn) || !Number.isSafeInteger(step)) return undefined;
  if (typeof chunk !== "object" || chunk === null || !("index" in chunk) || !Number.isSafeInteger(chunk.index)) {
    return undefined;
  }
  if (chunk.type === "text-delta" || chunk.type === "reasoning-delta") {
    if (keyCount(chunk) !== 3 || typeof chunk.text !== "string") return undefined;
    return {
      row: ROW_OF_DELTA[chunk.type],
      turn,
      step,
      index: chunk.index,
      id: undefined,
      text: chunk.text,
      seq: event.seq,
      time: event.time,
    };
  }
  if (chunk.type === "tool-call-delta") {
    if (keyCount(chunk) !== 4 || typeof chunk.id !== "string" || typeof chunk.argumentsDelta !== "string") {
      return undefined;
    }
    return {
      row: "tool-call-chunks",
      turn,
      step,
      index: chunk.index,
      id: chunk.id,
      text: chunk.argumentsDelta,
      seq: event.seq,
      time: event.time,
    };
  }
  return undefined;
}

function continues(run: DeltaKey, next: DeltaKey, prevSeq: number): boolean {
  return next.row === run.row && next.turn === run.turn && next.step === run.step && next.index === run.index &&
    next.id === run.id && next.seq === prevSeq + 1;
}

function toRow(run: readonly DeltaKey[]): ChunkRow {
  const first = run[0];
  const data: ChunkRow["data"] = first.id === undefined
    ? {
      turn: first.turn,
      step: first.step,
      index: first.index,
      dt: run.map((d) => d.time - first.time),
      texts: run.map((d) => d.text),
    }
    : {
      turn: first.turn,
      step: first.step,
      index: first.index,
      id: first.id,
      dt: run.map((d) => d.time - first.time),
      texts: run.map((d) => d.text),
    };
  return { type: first.row, seq0: first.seq, time0: first.time, data };
}

/**
 * Pack runs of same-block deltas into {@linkcode ChunkRow}s; every other event
 * is passed through as it is (the same object).
 *
 * @param events Events in seq order.
 * @param options The shortest run to pack.
 * @returns The records to store, in order.
 *
 * @example Packing a text stream
 * ```ts
 * import { packChunkRows, unpackChunkRows, type SessionEvent } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const events: SessionEvent[] = ["Hel", "lo", "!"].map((text, i) => ({
 *   type: "assistant/chunk",
 *   seq: i,
 *   time: 1000 + i,
 *   data: { turn: 1, step: 1, chunk: { type: "text-delta", index: 0, text } },
 * }));
 * const records = packChunkRows(events);
 * assert.equal(records.length, 1);
 * assert.equal(records[0].type, "text-chunks");
 * assert.deepEqual(unpackChunkRows(records), events);
 * ```
 */
export function packChunkRows(events: readonly SessionEvent[], options: PackChunkRowsOptions = {}): StoredRecord[] {
  const minRun = options.minRun ?? MIN_CHUNK_RUN;
  if (!Number.isSafeInteger(minRun) || minRun < 2) {
    throw new RangeError(`minRun must be an integer of at least 2, got ${minRun}`);
  }
  const out: StoredRecord[] = [];
  let i = 0;
  while (i < events.length) {
    const first = deltaKey(events[i]);
    if (first === undefined) {
      out.push(events[i++]);
      continue;
    }
    const run = [first];
    let j = i + 1;
    while (j < events.length) {
      const next = deltaKey(events[j]);
      if (next === undefined || !continues(first, next, run[run.length - 1].seq)) break;
      run.push(next);
      j++;
    }
    if (run.length >= minRun) out.push(toRow(run));
    else for (let k = i; k < j; k++) out.push(events[k]);
    i = j;
  }
  return out;
}

/**
 * Whether a stored record is a packed row (its `type` names a row, not an event).
 *
 * @param record A stored record.
 * @returns `true` for a {@linkcode ChunkRow}.
 */
export function isChunkRow(record: StoredRecord | { readonly type: unknown }): record is ChunkRow {
  return typeof record.type === "string" && Object.hasOwn(DELTA_OF_ROW, record.type);
}

/**
 * The events of one row, or `undefined` when the row is malformed.
 *
 * @param row A parsed row.
 * @returns The deltas it stands for.
 */
export function expandChunkRow(row: ChunkRow): SessionEvent<"assistant/chunk">[] | undefined {
  const { seq0, time0, data } = row;
  const delta = DELTA_OF_ROW[row.type];
  if (!Number.isSafeInteger(seq0) || !Number.isSafeInteger(time0) || typeof data !== "object" || data === null) {
    return undefined;
  }
  const { turn, step, index, id, dt, texts } = data;
  if (!Number.isSafeInteger(turn) || !Number.isSafeInteger(step) || !Number.isSafeInteger(index)) return undefined;
  if (!Array.isArray(dt) || !Array.isArray(texts) || dt.length !== texts.length || dt.length === 0) return undefined;
  if ((delta === "tool-call-delta") !== (typeof id === "string")) return undefined;
  const out: SessionEvent<"assistant/chunk">[] = new Array(dt.length);
  for (let i = 0; i < dt.length; i++) {
    const offset = dt[i];
    const text = texts[i];
    if (!Number.isSafeInteger(offset) || typeof text !== "string") return undefined;
    out[i] = {
      type: "assistant/chunk",
      seq: seq0 + i,
      time: time0 + offset,
      data: {
        turn,
        step,
        chunk: delta === "tool-call-delta"
          ? { type: delta, index, id: id as string, argumentsDelta: text }
          : { type: delta, index, text },
      },
    };
  }
  return out;
}

/**
 * The events of stored records: rows expanded, events passed through.
 *
 * @param records Records as {@linkcode packChunkRows} produced them.
 * @returns The events.
 * @throws {TypeError} When a row is malformed.
 */
export function unpackChunkRows(records: readonly StoredRecord[]): SessionEvent[] {
  const out: SessionEvent[] = [];
  for (const record of records) {
    if (!isChunkRow(record)) {
      out.push(record);
      continue;
    }
    const events = expandChunkRow(record);
    if (events === undefined) throw new TypeError(`Malformed ${record.type} row at seq ${record.seq0}`);
    for (const event of events) out.push(event);
  }
  return out;
}
