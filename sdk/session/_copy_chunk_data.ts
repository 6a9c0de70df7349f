// Internal: a fast, exact copy of the `assistant/chunk` payloads a model stream
// is made of.
//
// Every streamed chunk is appended to the log, so the generic lossless-JSON
// walk (`copyLosslessJson`) would be the loop's per-chunk hot path. Each chunk
// type has a small closed shape: this copier checks exactly that shape (plain
// objects, exact keys, string leaves, non-negative integer counters) and
// returns a frozen copy. Anything else returns `undefined`, and the caller
// falls back to the generic walk, so what the log accepts does not change:
// only the time it takes. Each property is read once, and the copy is made of
// what was read.

import { vouch } from "./_copy_event_data.ts";
import { flatString } from "./_flat_string.ts";
import { TOKEN_FIELDS } from "./_validate_event.ts";

const hasOwn = Object.prototype.hasOwnProperty;

function plain(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && Object.getOwnPropertySymbols(value).length === 0;
}

function count(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 && !Object.is(value, -0);
}

// Exactly these own string-keyed properties, all enumerable (plain() rules
// out symbols). Cheaper on V8 than one `Reflect.ownKeys`: the first two lists
// come from the object's enumeration cache. Keys in the protocol's order (as
// adapters write them) are compared in place; any other order is looked up.
function hasExactly(value: Record<string, unknown>, keys: readonly string[]): boolean {
  const own = Object.keys(value);
  const n = keys.length;
  if (own.length !== n) return false;
  if (Object.getOwnPropertyNames(value).length !== n) return false;
  for (let i = 0; i < n; i++) {
    if (own[i] !== keys[i]) {
      for (const key of keys) if (!hasOwn.call(value, key)) return false;
      return true;
    }
  }
  return true;
}

const DATA_KEYS = ["turn", "step", "chunk"] as const;
const TEXT_KEYS = ["type", "index", "text"] as const;
const START_KEYS = ["type", "index", "blockType"] as const;
const TOOL_KEYS = ["type", "index", "id", "argumentsDelta"] as const;
const TOOL_NAMED_KEYS = ["type", "index", "id", "name", "argumentsDelta"] as const;
const END_KEYS = ["type", "index", "block"] as const;
const USAGE_CHUNK_KEYS = ["type", "usage"] as const;
const FINISH_KEYS = ["type", "reason"] as const;
const KIND_KEYS = ["kind"] as const;
const TEXT_BLOCK_KEYS = ["type", "text"] as const;
const CALL_BLOCK_KEYS = ["type", "id", "name", "arguments"] as const;
const USAGE_KEYS: ReadonlySet<string> = new Set(TOKEN_FIELDS);

// A text, reasoning or tool-call block with exactly its fields, all strings. Its text (an adapter's `+=` of the
// deltas) is flattened: the log keeps it for good (see _flat_string.ts). The copy is vouched for (see
// _copy_event_data.ts), as is a usage copy: the loop's assistant message carries the logged block-end blocks and
// usage, and its append then shares them instead of copying them again.
function copyBlock(block: unknown): Readonly<Record<string, unknown>> | undefined {
  if (!plain(block)) return undefined;
  const type = block.type;
  if (type === "text" || type === "reasoning") {
    if (!hasExactly(block, TEXT_BLOCK_KEYS)) return undefined;
    const text = block.text;
    return typeof text === "string" ? vouch(Object.freeze({ type, text: flatString(text) })) : undefined;
  }
  if (type === "tool-call") {
    if (!hasExactly(block, CALL_BLOCK_KEYS)) return undefined;
    const id = block.id, name = block.name, args = block.arguments;
    if (typeof id !== "string" || typeof name !== "string" || typeof args !== "string") return undefined;
    return vouch(Object.freeze({ type, id, name, arguments: flatString(args) }));
  }
  return undefined;
}

// Token counts: input and output, and any other known field, each a non-negative integer.
function copyUsage(usage: unknown): Readonly<Record<string, number>> | undefined {
  if (!plain(usage)) return undefined;
  const keys = Object.keys(usage);
  if (Object.getOwnPropertyNames(usage).length !== keys.length) return undefined;
  const out: Record<string, number> = {};
  for (const key of keys) {
    if (!USAGE_KEYS.has(key)) return undefined;
    const value = usage[key];
    if (!count(value)) return undefined;
    out[key] = value;
  }
  // The two counts every usage has (the usage totals add them); without one, the general path refuses the chunk.
  if (out.inputTokens === undefined || out.outputTokens === undefined) return undefined;
  return vouch(Object.freeze(out));
}

function copyChunk(chunk: Record<string, unknown>): Readonly<Record<string, unknown>> | undefined {
  const type = chunk.type;
  switch (type) {
    case "text-delta":
    case "reasoning-delta": {
      if (!hasExactly(chunk, TEXT_KEYS)) return undefined;
      const index = chunk.index, text = chunk.text;
      if (!count(index) || typeof text !== "string") return undefined;
      return Object.freeze({ type, index, text });
    }
    case "block-start": {
      if (!hasExactly(chunk, START_KEYS)) return undefined;
      const index = chunk.index, blockType = chunk.blockType;
      if (!count(index) || typeof blockType !== "string") return undefined;
      return Object.freeze({ type, index, blockType });
    }
    case "tool-call-delta": {
      const named = hasOwn.call(chunk, "name");
      if (!hasExactly(chunk, named ? TOOL_NAMED_KEYS : TOOL_KEYS)) return undefined;
      const index = chunk.index, id = chunk.id, argumentsDelta = chunk.argumentsDelta;
      if (!count(index) || typeof id !== "string" || typeof argumentsDelta !== "string") return undefined;
      if (!named) return Object.freeze({ type, index, id, argumentsDelta });
      const name = chunk.name;
      if (typeof name !== "string") return undefined;
      return Object.freeze({ type, index, id, name, argumentsDelta });
    }
    case "block-end": {
      if (!hasExactly(chunk, END_KEYS)) return undefined;
      const index = chunk.index;
      if (!count(index)) return undefined;
      const block = copyBlock(chunk.block);
      return block === undefined ? undefined : Object.freeze({ type, index, block });
    }
    case "usage": {
      if (!hasExactly(chunk, USAGE_CHUNK_KEYS)) return undefined;
      const usage = copyUsage(chunk.usage);
      return usage === undefined ? undefined : Object.freeze({ type, usage });
    }
    case "finish": {
      // The plain finishes only; a failure or replay state takes the generic walk.
      if (!hasExactly(chunk, FINISH_KEYS)) return undefined;
      const reason = chunk.reason;
      if (!plain(reason) || !hasExactly(reason, KIND_KEYS)) return undefined;
      const kind = reason.kind;
      if (kind !== "stop" && kind !== "tool-calls" && kind !== "max-tokens") return undefined;
      return Object.freeze({ type, reason: Object.freeze({ kind }) });
    }
    default:
      return undefined;
  }
}

/**
 * A frozen copy of an `assistant/chunk` payload whose chunk has one of the
 * plain shapes of the stream protocol, or `undefined` when it is anything else.
 */
export function copyChunkData(data: unknown): Readonly<Record<string, unknown>> | undefined {
  try {
    if (!plain(data) || !hasExactly(data, DATA_KEYS)) return undefined;
    const turn = data.turn, step = data.step, raw = data.chunk;
    if (!count(turn) || !count(step) || !plain(raw)) return undefined;
    const chunk = copyChunk(raw);
    return chunk === undefined ? undefined : Object.freeze({ turn, step, chunk });
  } catch {
    // A revoked proxy or a throwing getter: the generic walk reports it, with its own error.
    return undefined;
  }
}

/**
 * The payload `{ turn, step, chunk }` of an `assistant/chunk`, frozen, when
 * `turn` and `step` are counters and the chunk has one of the plain shapes:
 * what {@linkcode copyChunkData} returns for that literal, without building it.
 */
export function chunkPayload(
  turn: unknown,
  step: unknown,
  chunk: unknown,
): Readonly<Record<string, unknown>> | undefined {
  try {
    if (!count(turn) || !count(step) || !plain(chunk)) return undefined;
    const copy = copyChunk(chunk);
    return copy === undefined ? undefined : Object.freeze({ turn, step, chunk: copy });
  } catch {
    // As in copyChunkData: the generic walk reports it.
    return undefined;
  }
}

/**
 * A frozen copy of a plain, dense array of non-negative integers with no
 * other own property (a `sourceEventSeqs` list, e.g. the chunk seqs of an
 * assistant message), or `undefined` for anything else (the generic walk
 * decides then): what the generic lossless copy returns for it, without a
 * path stack and a recursion per item.
 */
export function copySeqs(value: unknown): readonly number[] | undefined {
  if (!Array.isArray(value) || Object.getPrototypeOf(value) !== Array.prototype) return undefined;
  const length = value.length;
  // The indices in order, then `length`, and nothing else (no hole, no extra or symbol-keyed property).
  const own = Reflect.ownKeys(value);
  if (own.length !== length + 1 || own[length] !== "length") return undefined;
  const out: number[] = new Array(length);
  for (let i = 0; i < length; i++) {
    const seq: unknown = value[i];
    if (!count(seq)) return undefined;
    out[i] = seq;
  }
  return Object.freeze(out);
}
