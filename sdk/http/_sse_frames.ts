// Internal: the SSE frames of the event streams (`GET /sessions/:id/events`).
//
// A streamed chunk (`assistant/chunk` with a text, reasoning or tool-call
// delta) is most of what a stream carries: one `event: session` frame and one
// `event: delta` frame per chunk. `JSON.stringify` of the event and of a
// delta object built for it were the largest per-chunk cost of serving a
// stream (most on Deno and Node; on Node the object spread of the delta even
// more). For those events the frames are written here by hand from the
// event's fields, with the delta's text escaped once for both frames; the
// output is byte for byte what `JSON.stringify` gives (`_sse_frames_test.ts`
// checks it on random events of every chunk kind). The hand encoder only
// takes an event whose objects have exactly the keys, in the order, that the
// session writes (`type, seq, time, data`; `turn, step, chunk`; the chunk's
// own), no `toJSON`, and finite numbers and strings where those belong;
// anything else, and every other event, goes through `JSON.stringify`.

import type { SessionEvent } from "../session/session_events.ts";

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

/** A streamed delta chunk event, read once: its fields and the JSON of each part of it. */
interface DeltaParts {
  readonly event: SessionEvent;
  readonly seq: number;
  readonly time: number;
  readonly turn: number;
  readonly step: number;
  readonly index: number;
  readonly kind: "text-delta" | "reasoning-delta" | "tool-call-delta";
  /** The JSON of `id` and `name` (tool-call deltas; `name` may be absent). */
  readonly id: string;
  readonly name: string | undefined;
  /** The JSON of the text (`text` or `argumentsDelta`). */
  readonly text: string;
}

// The parts of the last event read: its session frame and its delta frame are
// made one after the other (without storage) and share the escaped text. Only
// a frozen event (as the session makes them) is taken from here.
let last: DeltaParts | undefined;

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
    id = JSON.stringify(callId);
    if (named) name = JSON.stringify(callName);
    text = chunk.argumentsDelta;
  } else {
    return undefined;
  }
  const index = chunk.index;
  if (!finite(index) || typeof text !== "string") return undefined;
  return last = { event, seq, time, turn, step, index, kind, id, name, text: JSON.stringify(text) };
}

/** The JSON of a streamed delta chunk event, exactly as `JSON.stringify(event)`. */
function chunkJson(p: DeltaParts): string {
  const head = `{"type":"assistant/chunk","seq":${p.seq},"time":${p.time},"data":{"turn":${p.turn},"step":${p.step},` +
    `"chunk":{"type":"${p.kind}","index":${p.index},`;
  if (p.kind !== "tool-call-delta") return `${head}"text":${p.text}}}}`;
  const name = p.name === undefined ? "" : `"name":${p.name},`;
  return `${head}"id":${p.id},${name}"argumentsDelta":${p.text}}}}`;
}

/** The JSON of a delta's payload, exactly as `JSON.stringify(deltaOf(event))`. */
function deltaJson(p: DeltaParts): string {
  const head = `{"seq":${p.seq},"turn":${p.turn},"step":${p.step},"index":${p.index},`;
  if (p.kind === "text-delta") return `${head}"blockType":"text","text":${p.text}}`;
  if (p.kind === "reasoning-delta") return `${head}"blockType":"reasoning","text":${p.text}}`;
  const name = p.name === undefined ? "" : `"name":${p.name},`;
  return `${head}"blockType":"tool-call","id":${p.id},${name}"text":${p.text}}`;
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

/** The `event: delta` frame of a streamed chunk, if the event is one. */
export function deltaFrame(event: SessionEvent): string | undefined {
  if (event.type !== "assistant/chunk") return undefined;
  const parts = deltaParts(event);
  if (parts !== undefined) return `event: delta\ndata: ${deltaJson(parts)}\n\n`;
  const delta = deltaOf(event);
  return delta === undefined ? undefined : `event: delta\ndata: ${JSON.stringify(delta)}\n\n`;
}

/** Any other frame (`ready`, `reset`, `status`, `approvals`, `end`). */
export function otherFrame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
