// Internal: the SSE frames of the event streams (`GET /sessions/:id/events`).
// Longer than the house limit on purpose: the text frames (a backlog) and the
// byte writer (a live feed) must agree byte for byte, so both stay here with
// the one shape check they share.
//
// A streamed chunk (`assistant/chunk` with a text, reasoning or tool-call
// delta) is most of what a stream carries. A stream sends it once: as
// `event: delta` by default (a small frame a client appends to the block it
// names; a run of one block's chunks written together is one frame with their
// joined text, `seq` to `last`), or as `event: session` in a stream that
// asked for the whole log (`?deltas=false`). `JSON.stringify` of the event and of a delta object built
// for it were the largest per-chunk cost of serving a stream (most on Deno and
// Node; on Node the object spread of the delta even more). For those events the
// frames are written here by hand from the event's fields: as text for a
// reader's backlog (`sessionFrame`, `deltaFrame`), and as UTF-8 straight into a
// live feed's segment (`FrameWriter`). The output is byte for byte what
// `JSON.stringify` gives (`_sse_frames_test.ts` checks it on random events of
// every chunk kind). The hand encoder only takes an event whose objects have
// exactly the keys, in the order, that the session writes (`type, seq, time,
// data`; `turn, step, chunk`; the chunk's own), no `toJSON`, and finite numbers
// and strings where those belong; anything else, and every other event, goes
// through `JSON.stringify`.

import type { SessionEvent } from "../session/session_events.ts";
import {
  type FrameBuffer,
  jsonStringMax,
  NUMBER_MAX,
  writeBytes,
  writeJsonString,
  writeJsonStringBody,
  writeNumber,
} from "./_frame_buffer.ts";

/** The `event: delta` payload of a streamed chunk, as an object (the reference form). */
export function deltaOf(event: SessionEvent): Record<string, unknown> | undefined {
  if (event.type !== "assistant/chunk") return undefined;
  const { turn, step, chunk } = event.data;
  const base = { seq: event.seq, turn, step, index: "index" in chunk ? chunk.index : undefined };
  if (chunk.type === "text-delta") return { ...base, blockType: "text", text: chunk.text };
  if (chunk.type === "reasoning-delta") return { ...base, blockType: "reasoning", text: chunk.text };
  if (chunk.type === "tool-call-delta") {
    return { ...base, blockType: "tool-call", id: chunk.id, name: chunk.name, text: chunk.argumentsDelta };
  }
  return undefined;
}

const EVENT_KEYS = ["type", "seq", "time", "data"] as const;
const DATA_KEYS = ["turn", "step", "chunk"] as const;
const TEXT_KEYS = ["type", "index", "text"] as const;
const TOOL_KEYS = ["type", "index", "id", "argumentsDelta"] as const;
const TOOL_NAMED_KEYS = ["type", "index", "id", "name", "argumentsDelta"] as const;

/** A plain JSON object with exactly these enumerable keys in this order, that `JSON.stringify` writes as is. */
function shaped(value: unknown, keys: readonly string[]): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return false;
  const own = Object.keys(value);
  if (own.length !== keys.length) return false;
  for (let i = 0; i < keys.length; i++) if (own[i] !== keys[i]) return false;
  return true;
}

function finite(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

/** A streamed delta chunk event, read once. */
interface DeltaParts {
  readonly event: SessionEvent;
  readonly seq: number;
  readonly time: number;
  readonly turn: number;
  readonly step: number;
  readonly index: number;
  readonly kind: "text-delta" | "reasoning-delta" | "tool-call-delta";
  /** `id` and `name` of a tool-call delta (`name` may be absent). */
  readonly id: string;
  readonly name: string | undefined;
  /** The text (`text` or `argumentsDelta`). */
  readonly text: string;
}

// The parts of the last event read: the feeds of one agent (one per kind of
// reader) write the same event one after the other, and read it once. Only a
// frozen event (as the session makes them) is taken from here.
let last: DeltaParts | undefined;

/** The most bytes {@linkcode writeToolHead} writes for `p` (its key after the name included). */
function toolHeadMax(p: DeltaParts): number {
  return TOOL_EXTRA + jsonStringMax(p.id) + jsonStringMax(p.name ?? "");
}

/** A tool-call chunk's `id` value, its `name` when it has one, then the key that follows (`after`). */
function writeToolHead(b: Uint8Array, at: number, p: DeltaParts, after: Uint8Array): number {
  at = writeJsonString(b, at, p.id);
  if (p.name !== undefined) at = writeJsonString(b, writeBytes(b, at, NAME), p.name);
  return writeBytes(b, at, after);
}

/** The parts of a streamed delta chunk event, or `undefined` when it is another event or another shape. */
function deltaParts(event: SessionEvent): DeltaParts | undefined {
  if (last !== undefined && last.event === event && Object.isFrozen(event)) return last;
  if (event.type !== "assistant/chunk" || !shaped(event, EVENT_KEYS)) return undefined;
  const { seq, time, data } = event as { seq: unknown; time: unknown; data: unknown };
  if (!finite(seq) || !finite(time) || !shaped(data, DATA_KEYS)) return undefined;
  const { turn, step, chunk } = data;
  if (!finite(turn) || !finite(step) || typeof chunk !== "object" || chunk === null) return undefined;
  const kind = (chunk as { type?: unknown }).type;
  let id = "", name: string | undefined, text: unknown;
  if (kind === "text-delta" || kind === "reasoning-delta") {
    if (!shaped(chunk, TEXT_KEYS)) return undefined;
    text = chunk.text;
  } else if (kind === "tool-call-delta") {
    const named = Object.prototype.hasOwnProperty.call(chunk, "name");
    if (!shaped(chunk, named ? TOOL_NAMED_KEYS : TOOL_KEYS)) return undefined;
    const callId = chunk.id, callName = named ? chunk.name : undefined;
    if (typeof callId !== "string" || (named && typeof callName !== "string")) return undefined;
    id = callId;
    name = callName as string | undefined;
    text = chunk.argumentsDelta;
  } else {
    return undefined;
  }
  const index = chunk.index;
  if (!finite(index) || typeof text !== "string") return undefined;
  return last = { event, seq, time, turn, step, index, kind, id, name, text };
}

/** The JSON of a streamed delta chunk event, exactly as `JSON.stringify(event)`. */
function chunkJson(p: DeltaParts): string {
  const head = `{"type":"assistant/chunk","seq":${p.seq},"time":${p.time},"data":{"turn":${p.turn},"step":${p.step},` +
    `"chunk":{"type":"${p.kind}","index":${p.index},`;
  const text = JSON.stringify(p.text);
  if (p.kind !== "tool-call-delta") return `${head}"text":${text}}}}`;
  const name = p.name === undefined ? "" : `"name":${JSON.stringify(p.name)},`;
  return `${head}"id":${JSON.stringify(p.id)},${name}"argumentsDelta":${text}}}}`;
}

/**
 * The JSON of a delta's payload, exactly as `JSON.stringify(deltaOf(event))`;
 * for a run, with the run's `text` and `last` seq (`JSON.stringify({
 * ...deltaOf(first), text, last })`).
 */
function deltaJson(p: DeltaParts, runText?: string, last?: number): string {
  const head = `{"seq":${p.seq},"turn":${p.turn},"step":${p.step},"index":${p.index},`;
  const text = JSON.stringify(runText ?? p.text) + (last === undefined ? "" : `,"last":${last}`);
  if (p.kind === "text-delta") return `${head}"blockType":"text","text":${text}}`;
  if (p.kind === "reasoning-delta") return `${head}"blockType":"reasoning","text":${text}}`;
  const name = p.name === undefined ? "" : `"name":${JSON.stringify(p.name)},`;
  return `${head}"blockType":"tool-call","id":${JSON.stringify(p.id)},${name}"text":${text}}`;
}

/** The JSON of a streamed delta chunk event written by hand, or `undefined` when it is not one (tests use it). */
export function fastChunkJson(event: SessionEvent): string | undefined {
  const parts = deltaParts(event);
  return parts === undefined ? undefined : chunkJson(parts);
}

// JSON.stringify escapes newlines, so data is one line.

/** The `event: session` frame of an event, with its `<incarnation>:<seq>` id. */
export function sessionFrame(event: SessionEvent, incarnation: string): string {
  const parts = deltaParts(event);
  const json = parts !== undefined ? chunkJson(parts) : JSON.stringify(event);
  return `event: session\ndata: ${json}\nid: ${incarnation}:${event.seq}\n\n`;
}

/**
 * The `event: delta` frame of a streamed chunk, if the event is one; with its
 * `<incarnation>:<seq>` id when `incarnation` is given (the chunk is
 * acknowledged: a reader may resume after it).
 */
export function deltaFrame(event: SessionEvent, incarnation?: string): string | undefined {
  if (event.type !== "assistant/chunk") return undefined;
  return deltaRunFrame([event], incarnation);
}

/**
 * The `event: delta` frame of a run of streamed chunks (each one
 * {@linkcode continuesRun} the one before): the first one's payload with the
 * run's text and, past one chunk, `last`, the seq of its last chunk, which
 * its id names. `undefined` when the first is not a streamed chunk.
 */
export function deltaRunFrame(run: readonly SessionEvent[], incarnation?: string): string | undefined {
  const first = run[0], lastEvent = run[run.length - 1];
  const text = run.length === 1 ? undefined : run.map(deltaText).join("");
  const last = run.length === 1 ? undefined : lastEvent.seq;
  const parts = deltaParts(first);
  let json: string;
  if (parts !== undefined) json = deltaJson(parts, text, last);
  else {
    const delta = deltaOf(first);
    if (delta === undefined) return undefined;
    json = JSON.stringify(text === undefined ? delta : { ...delta, text, last });
  }
  return incarnation === undefined
    ? `event: delta\ndata: ${json}\n\n`
    : `event: delta\ndata: ${json}\nid: ${incarnation}:${lastEvent.seq}\n\n`;
}

/** The text a streamed chunk adds (`text`, or a tool call's `argumentsDelta`). */
function deltaText(event: SessionEvent): string {
  const chunk = (event as SessionEvent<"assistant/chunk">).data.chunk;
  return chunk.type === "tool-call-delta" ? chunk.argumentsDelta : (chunk as { text: string }).text;
}

/**
 * Whether `next` continues the delta frame that `prev` is the last chunk of:
 * the next seq, a streamed chunk of the same kind, turn, step and block (and
 * tool call, not naming it again), after a text that does not end inside a
 * surrogate pair (the frame's JSON is then exactly `JSON.stringify` of the
 * joined text).
 */
export function continuesRun(prev: SessionEvent, next: SessionEvent): boolean {
  if (next.seq !== prev.seq + 1 || prev.type !== "assistant/chunk" || next.type !== "assistant/chunk") return false;
  const a = prev.data, b = next.data;
  const x = a.chunk as Record<string, unknown>, y = b.chunk as Record<string, unknown>;
  if (a.turn !== b.turn || a.step !== b.step || x.type !== y.type || x.index !== y.index) return false;
  let text: unknown, added: unknown;
  if (y.type === "tool-call-delta") {
    if (x.id !== y.id || Object.prototype.hasOwnProperty.call(y, "name")) return false;
    text = x.argumentsDelta;
    added = y.argumentsDelta;
  } else if (y.type === "text-delta" || y.type === "reasoning-delta") {
    text = x.text;
    added = y.text;
  } else {
    return false;
  }
  if (typeof text !== "string" || typeof added !== "string") return false;
  const end = text.charCodeAt(text.length - 1);
  return !(end >= 0xd800 && end <= 0xdbff);
}

/** Whether a stream that sends deltas sends `event` as an `event: delta` frame (a text, reasoning or tool-call delta). */
export function isStreamedDelta(event: SessionEvent): boolean {
  if (event.type !== "assistant/chunk") return false;
  const type = event.data?.chunk?.type;
  return type === "text-delta" || type === "reasoning-delta" || type === "tool-call-delta";
}

/** Any other frame (`ready`, `reset`, `status`, `approvals`, `end`). */
export function otherFrame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

const encoder = new TextEncoder();
const SESSION_HEAD = encoder.encode('event: session\ndata: {"type":"assistant/chunk","seq":');
const TIME = encoder.encode(',"time":');
const DELTA_HEAD = encoder.encode('event: delta\ndata: {"seq":');
const NAME = encoder.encode(',"name":');
const ARGUMENTS = encoder.encode(',"argumentsDelta":');
const TEXT = encoder.encode(',"text":');
const LAST = encoder.encode(',"last":');
/** Room for the literals of a tool-call delta beyond the others' (`,"name":` and `,"argumentsDelta":`). */
const TOOL_EXTRA = NAME.length + ARGUMENTS.length;

/** A delta frame that the next chunks may extend: where it is (`out` until its next `take()`), where its text ends. */
interface OpenRun {
  out: FrameBuffer;
  taken: number;
  end: number;
  textEnd: number;
  withId: boolean;
  last: SessionEvent;
}

/**
 * The frames of one incarnation's streams, written as UTF-8 into a segment's
 * bytes: the same bytes as {@linkcode sessionFrame}, {@linkcode deltaFrame}
 * and {@linkcode otherFrame} give as text. For a streamed chunk, the parts
 * between its seq, time and text repeat from one chunk to the next (the same
 * turn, step, kind and block index), so they are kept as bytes.
 */
export class FrameWriter {
  /** `}}}\nid: <incarnation>:`, after a chunk's text. */
  readonly #idHead: Uint8Array;
  /** `}\nid: <incarnation>:`, after a delta's payload. */
  readonly #deltaIdHead: Uint8Array;
  /** `\nid: <incarnation>:`, after any other event's JSON. */
  readonly #idText: string;
  readonly #incarnation: string;
  // The bytes from the time to the text of the last chunk kind written, for each frame.
  #key: DeltaParts | undefined;
  #sessionMiddle: Uint8Array = new Uint8Array(0);
  #deltaMiddle: Uint8Array = new Uint8Array(0);
  /** The delta frame written last: where it is (`out` until its next `take()`), where its text ends, its last chunk. */
  #run: OpenRun | undefined;

  constructor(incarnation: string) {
    this.#incarnation = incarnation;
    this.#idHead = encoder.encode(`}}}\nid: ${incarnation}:`);
    this.#deltaIdHead = encoder.encode(`}\nid: ${incarnation}:`);
    this.#idText = `\nid: ${incarnation}:`;
  }

  /** {@linkcode sessionFrame}, written into `out`. */
  session(out: FrameBuffer, event: SessionEvent): void {
    const p = deltaParts(event);
    if (p === undefined) {
      // The JSON goes to the encoder as it is, not joined to the head first (one copy of it fewer).
      out.text("event: session\ndata: ");
      out.text(JSON.stringify(event));
      out.text(this.#idText);
      const seq = event.seq;
      if (finite(seq)) out.number(seq);
      else out.text(`${seq}`);
      out.text("\n\n");
      return;
    }
    this.#middles(p);
    const tool = p.kind === "tool-call-delta";
    const b = out.reserve(
      SESSION_HEAD.length + TIME.length + this.#sessionMiddle.length + this.#idHead.length + 3 * NUMBER_MAX + 2 +
        jsonStringMax(p.text) + (tool ? toolHeadMax(p) : 0),
    );
    let at = writeBytes(b, out.length, SESSION_HEAD);
    at = writeNumber(b, at, p.seq);
    at = writeBytes(b, at, TIME);
    at = writeNumber(b, at, p.time);
    at = writeBytes(b, at, this.#sessionMiddle);
    if (tool) at = writeToolHead(b, at, p, ARGUMENTS);
    at = writeJsonString(b, at, p.text);
    at = writeBytes(b, at, this.#idHead);
    at = writeNumber(b, at, p.seq);
    b[at++] = 0x0a;
    b[at++] = 0x0a;
    out.commit(at);
  }

  /**
   * {@linkcode deltaFrame}, written into `out`, with the id when `withId`:
   * `"new"`; or, when the last frame in `out` is the delta frame of the chunk
   * before it and the chunk {@linkcode continuesRun} it, that frame made the
   * frame of the run ({@linkcode deltaRunFrame}): `"extended"`. `false`
   * (nothing written) when the event is not a streamed chunk.
   */
  delta(out: FrameBuffer, event: SessionEvent, withId: boolean): "new" | "extended" | false {
    if (event.type !== "assistant/chunk") return false;
    const run = this.#run;
    if (
      run !== undefined && run.out === out && run.taken === out.taken && run.end === out.length &&
      run.withId === withId && continuesRun(run.last, event)
    ) {
      const text = deltaText(event);
      const b = out.reserve(jsonStringMax(text) + LAST.length + this.#deltaIdHead.length + 2 * NUMBER_MAX + 3);
      this.#endRun(out, b, writeJsonStringBody(b, run.textEnd, text), run, event, withId);
      return "extended";
    }
    this.#run = undefined;
    const p = deltaParts(event);
    if (p === undefined) {
      const frame = deltaFrame(event, withId ? this.#incarnation : undefined);
      if (frame === undefined) return false;
      out.text(frame);
      return "new";
    }
    this.#middles(p);
    const tool = p.kind === "tool-call-delta";
    const b = out.reserve(
      DELTA_HEAD.length + this.#deltaMiddle.length + this.#deltaIdHead.length + 2 * NUMBER_MAX + 3 +
        jsonStringMax(p.text) + (tool ? toolHeadMax(p) : 0),
    );
    let at = writeBytes(b, out.length, DELTA_HEAD);
    at = writeNumber(b, at, p.seq);
    at = writeBytes(b, at, this.#deltaMiddle);
    if (tool) at = writeToolHead(b, at, p, TEXT);
    at = writeJsonString(b, at, p.text);
    const textEnd = at - 1;
    at = this.#deltaTail(b, at, p.seq, withId);
    out.commit(at);
    // A frozen event (as the session makes them) can start a run: its fields are read once.
    if (Object.isFrozen(event)) this.#run = { out, taken: out.taken, end: at, textEnd, withId, last: event };
    return "new";
  }

  /**
   * The delta frame written last by {@linkcode delta} (still the last frame in
   * `out`) made to carry `events[from]` to `events[to - 1]` too: chunks that
   * each {@linkcode continuesRun} the one before, the first continuing that
   * frame's last. Their texts are joined and encoded in one pass (not one
   * frame tail per chunk), for the same bytes as {@linkcode deltaRunFrame}.
   * `false` (nothing written) when that frame cannot take them.
   */
  extend(out: FrameBuffer, events: readonly SessionEvent[], from: number, to: number, withId: boolean): boolean {
    const run = this.#run;
    if (
      run === undefined || run.out !== out || run.taken !== out.taken || run.end !== out.length ||
      run.withId !== withId || from >= to || !continuesRun(run.last, events[from])
    ) return false;
    let text = "";
    for (let i = from; i < to; i++) text += deltaText(events[i]);
    // Each text ends outside a surrogate pair (continuesRun), so the JSON of the joined text is the JSON of
    // each one after the other.
    const json = JSON.stringify(text);
    out.commit(run.textEnd);
    out.text(json.slice(1, -1));
    const b = out.reserve(1 + LAST.length + this.#deltaIdHead.length + 2 * NUMBER_MAX + 2);
    this.#endRun(out, b, out.length, run, events[to - 1], withId);
    return true;
  }

  /**
   * The run's text ends at `at` in `b` (reserved in `out`): its closing quote, `last` (the seq of `last`, now its
   * last chunk), and the frame's end.
   */
  #endRun(out: FrameBuffer, b: Uint8Array, at: number, run: OpenRun, last: SessionEvent, withId: boolean): void {
    run.textEnd = at;
    b[at++] = 0x22; // the closing quote
    at = writeBytes(b, at, LAST);
    at = this.#deltaTail(b, writeNumber(b, at, last.seq), last.seq, withId);
    out.commit(at);
    run.last = last;
    run.end = at;
  }

  /** The next delta starts a frame of its own (a reader joins, and skips the frames before). */
  cut(): void {
    this.#run = undefined;
  }

  /** `}` and, `withId`, the id line of `seq`, then the blank line. */
  #deltaTail(b: Uint8Array, at: number, seq: number, withId: boolean): number {
    if (withId) {
      at = writeBytes(b, at, this.#deltaIdHead);
      at = writeNumber(b, at, seq);
    } else {
      b[at++] = 0x7d; // }
    }
    b[at++] = 0x0a;
    b[at++] = 0x0a;
    return at;
  }

  /** {@linkcode otherFrame}, written into `out`. */
  other(out: FrameBuffer, event: string, data: unknown): void {
    out.text(otherFrame(event, data));
  }

  /** The bytes between the time and the text (session frame), the seq and the text (delta frame) of `p`'s kind. */
  #middles(p: DeltaParts): void {
    const k = this.#key;
    if (k !== undefined && k.turn === p.turn && k.step === p.step && k.kind === p.kind && k.index === p.index) return;
    this.#key = p;
    const head = `"turn":${p.turn},"step":${p.step}`;
    const tail = p.kind === "tool-call-delta" ? `"id":` : `"text":`;
    this.#sessionMiddle = encoder.encode(
      `,"data":{${head},"chunk":{"type":"${p.kind}","index":${p.index},${tail}`,
    );
    const blockType = p.kind === "text-delta" ? "text" : p.kind === "reasoning-delta" ? "reasoning" : "tool-call";
    this.#deltaMiddle = encoder.encode(`,${head},"index":${p.index},"blockType":"${blockType}",${tail}`);
  }
}
