// Internal: a fast, exact copy of the commonest `assistant/chunk` payloads.
//
// Every streamed delta is appended to the log, so the generic lossless-JSON
// walk (`copyLosslessJson`) is the loop's per-chunk hot path. The delta and
// block-start chunks have a small closed shape: this copier checks exactly
// that shape (plain objects, exact keys, string leaves, non-negative integer
// counters) and returns a frozen copy. Anything else returns `undefined`, and
// the caller falls back to the generic walk, so what the log accepts does not
// change: only the time it takes.

function plain(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && Object.getOwnPropertySymbols(value).length === 0;
}

function count(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 && !Object.is(value, -0);
}

// Exactly these own properties, all enumerable (plain() rules out symbols).
function hasExactly(value: Record<string, unknown>, keys: readonly string[]): boolean {
  if (Object.keys(value).length !== keys.length) return false;
  if (Object.getOwnPropertyNames(value).length !== keys.length) return false;
  for (const key of keys) if (!Object.prototype.hasOwnProperty.call(value, key)) return false;
  return true;
}

const DATA_KEYS = ["turn", "step", "chunk"] as const;
const TEXT_KEYS = ["type", "index", "text"] as const;
const START_KEYS = ["type", "index", "blockType"] as const;
const TOOL_KEYS = ["type", "index", "id", "argumentsDelta"] as const;
const TOOL_NAMED_KEYS = ["type", "index", "id", "name", "argumentsDelta"] as const;

function copyChunk(chunk: Record<string, unknown>): Readonly<Record<string, unknown>> | undefined {
  switch (chunk.type) {
    case "text-delta":
    case "reasoning-delta":
      if (!hasExactly(chunk, TEXT_KEYS) || !count(chunk.index) || typeof chunk.text !== "string") return undefined;
      return Object.freeze({ type: chunk.type, index: chunk.index, text: chunk.text });
    case "block-start":
      if (!hasExactly(chunk, START_KEYS) || !count(chunk.index) || typeof chunk.blockType !== "string") {
        return undefined;
      }
      return Object.freeze({ type: chunk.type, index: chunk.index, blockType: chunk.blockType });
    case "tool-call-delta": {
      const named = "name" in chunk;
      if (!hasExactly(chunk, named ? TOOL_NAMED_KEYS : TOOL_KEYS) || !count(chunk.index)) return undefined;
      if (typeof chunk.id !== "string" || typeof chunk.argumentsDelta !== "string") return undefined;
      if (named && typeof chunk.name !== "string") return undefined;
      return Object.freeze(
        named
          ? {
            type: chunk.type,
            index: chunk.index,
            id: chunk.id,
            name: chunk.name,
            argumentsDelta: chunk.argumentsDelta,
          }
          : { type: chunk.type, index: chunk.index, id: chunk.id, argumentsDelta: chunk.argumentsDelta },
      );
    }
    default:
      return undefined;
  }
}

/**
 * A frozen copy of an `assistant/chunk` payload whose chunk is a delta or a
 * block start, or `undefined` when the payload is anything else.
 */
export function copyChunkData(data: unknown): Readonly<Record<string, unknown>> | undefined {
  if (!plain(data) || !hasExactly(data, DATA_KEYS) || !count(data.turn) || !count(data.step)) return undefined;
  if (!plain(data.chunk)) return undefined;
  const chunk = copyChunk(data.chunk);
  return chunk === undefined ? undefined : Object.freeze({ turn: data.turn, step: data.step, chunk });
}
