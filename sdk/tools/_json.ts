/**
 * Internal: JSON snapshots for the tool pipeline. Arguments, values, metadata
 * and content cross one materialisation boundary: they are copied as plain
 * JSON and deep-frozen, so no hook can change what another one saw.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import { deepFreeze } from "../session/deep_freeze.ts";
import { copyLosslessJson } from "../session/lossless_json.ts";
import { copyPlainJson, vouch } from "../session/_copy_event_data.ts";

// The tool pipeline freezes with the session log's own deepFreeze.
export { deepFreeze };

/**
 * Copy `value` as plain JSON with the session log's lossless-JSON walk, and
 * deep-freeze the copy. What `JSON.stringify` changes silently is normalised
 * rather than refused (object properties whose value is `undefined` are
 * dropped, `-0` becomes `0`), since tool code produces both routinely.
 *
 * @throws {TypeError} when the value holds anything else (functions, class
 * instances, `undefined` array items, non-finite numbers, cycles…); the
 * pipeline reports it under its own code (`INVALID_ARGS`, `INVALID_TOOL_OUTPUT`…).
 */
export function frozenJson<T>(value: T, path = "$"): T {
  // Plain JSON (nothing to normalise) takes the exact fast copy, which also shares what is frozen JSON already.
  // Objects are vouched for, so that copying them again (normalising content twice, a result message) shares them.
  const fast = copyPlainJson(value);
  if (typeof fast === "object" && fast !== null) return vouch(fast) as T;
  if (fast !== undefined && fast !== null) return fast as T;
  try {
    return copyLosslessJson(value, path, { normalize: true });
  } catch (error) {
    if (HarnessError.isInstance(error, "NOT_LOSSLESS_JSON")) throw new TypeError(error.message, { cause: error });
    throw error;
  }
}
