/**
 * The shape checks of replay override entries and their stream chunks, shared
 * by `replayAdapter` (overrides given as options or read with the fixture) and
 * the override sidecar reader, so that a chunk the runtime cannot play is refused where it
 * is given, with the path of the bad field, instead of ending a replayed call
 * mid-stream.
 *
 * @module
 */

/** A malformed field: where it is (`overrides[0].chunks[1].type`) and what is wrong with it. */
export interface EntryProblem {
  /** The path of the bad field, from the root the caller named. */
  readonly path: string;
  /** What is wrong, without the path. */
  readonly message: string;
}

const BLOCK_TYPES: ReadonlySet<unknown> = new Set(["text", "reasoning", "tool-call"]);

/** The chunk types of the stream protocol (`StreamChunk`), in the order a message names them. */
const CHUNK_TYPES = "block-start, text-delta, reasoning-delta, tool-call-delta, block-end, usage or finish";

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function field(
  chunk: Record<string, unknown>,
  path: string,
  key: string,
  ok: (value: unknown) => boolean,
  what: string,
): EntryProblem | undefined {
  return ok(chunk[key]) ? undefined : { path: `${path}.${key}`, message: `must be ${what}` };
}

const isIndex = (v: unknown) => typeof v === "number" && Number.isInteger(v) && v >= 0;
const isString = (v: unknown) => typeof v === "string";

/**
 * What is wrong with one stream chunk, or `undefined` when it has the shape of a chunk of the stream protocol: a
 * known `type`, a block index, the strings its deltas carry, a block, a usage, a finish reason with a kind. The
 * grammar of the stream (order, indices that follow each other, a last finish) is not checked: an override may play
 * a broken stream on purpose.
 */
export function chunkProblem(chunk: unknown, path: string): EntryProblem | undefined {
  if (!isObject(chunk)) return { path, message: "must be a stream chunk object" };
  const index = () => field(chunk, path, "index", isIndex, "a non-negative integer");
  switch (chunk.type) {
    case "block-start":
      return index() ?? field(chunk, path, "blockType", (v) => BLOCK_TYPES.has(v), "text, reasoning or tool-call");
    case "text-delta":
    case "reasoning-delta":
      return index() ?? field(chunk, path, "text", isString, "a string");
    case "tool-call-delta":
      return index() ?? field(chunk, path, "id", isString, "a string") ??
        field(chunk, path, "argumentsDelta", isString, "a string") ??
        field(chunk, path, "name", (v) => v === undefined || isString(v), "a string when given");
    case "block-end":
      return index() ??
        field(chunk, path, "block", (v) => isObject(v) && isString(v.type), "a content block with a type");
    case "usage":
      return field(chunk, path, "usage", isObject, "an object of token counts");
    case "finish":
      return field(chunk, path, "reason", (v) => isObject(v) && isString(v.kind), "a finish reason with a kind");
    default:
      return {
        path: `${path}.type`,
        message: `is ${JSON.stringify(chunk.type) ?? "missing"}, not a stream chunk type (${CHUNK_TYPES})`,
      };
  }
}

/** What is wrong with a list of chunks (an array, each a chunk), or `undefined`. */
export function chunksProblem(chunks: unknown, path: string): EntryProblem | undefined {
  if (!Array.isArray(chunks)) return { path, message: "must be an array of stream chunks" };
  for (let i = 0; i < chunks.length; i++) {
    const problem = chunkProblem(chunks[i], `${path}[${i}]`);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * What is wrong with a replay entry (`{ chunks }`, `{ throw }` or `{ hang }`, as `ReplayEntry` describes them) and
 * its chunks, or `undefined`. As when it is played, `throw` wins over `hang`, and `hang` over `chunks`.
 */
export function entryProblem(entry: unknown, path: string): EntryProblem | undefined {
  const shape: EntryProblem = { path, message: "must be { chunks }, { throw } or { hang }" };
  if (!isObject(entry)) return shape;
  if ("throw" in entry) {
    const thrown = entry.throw;
    if (!isObject(thrown) || typeof thrown.message !== "string") return shape;
    return thrown.chunks === undefined ? undefined : chunksProblem(thrown.chunks, `${path}.throw.chunks`);
  }
  if ("hang" in entry) {
    if (entry.hang !== true && typeof entry.hang !== "object") return shape;
    return entry.chunks === undefined ? undefined : chunksProblem(entry.chunks, `${path}.chunks`);
  }
  if (!("chunks" in entry) || !Array.isArray(entry.chunks)) return shape;
  return chunksProblem(entry.chunks, `${path}.chunks`);
}
