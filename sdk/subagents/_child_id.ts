/**
 * Internal: the session id of a delegation's child, from its parent's id and
 * the delegating call's id.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import { validateSessionId } from "../persistence/_header.ts";

/** Room kept for the `.<n>` a second child of the same name gets (`SubagentService`'s free-name search). */
const RENAME_ROOM = ".9999999";

/**
 * The base id of the child a call `callId` of session `parent` delegates to,
 * a valid session id for every storage (with room for a `.<n>` suffix):
 *
 * - `<parent>.<callId>` when that is valid;
 * - else `<parent>.<tag>-<hash>`, `tag` the call id's first 16 characters with
 *   all but `[A-Za-z0-9_-]` written `_`, `hash` a stable hash of the whole call
 *   id (call ids with `/`, control characters, or too long);
 * - else (the parent's id is too long, as in deep nesting) the parent part is
 *   cut to its longest leading part that fits, followed by `~` and a hash of
 *   the whole parent id: `<parent prefix>~<hash>.<tag>-<hash>`.
 *
 * A function of the two ids only, so a replayed run names its children the
 * same. Distinct call ids may share a base (a hash collision, or `a/b` and
 * `a_b`'s tags with long parents): uniqueness per parent is the caller's
 * free-name search.
 */
export function childIdBase(parent: string, callId: string): string {
  const plain = `${parent}.${callId}`;
  if (fits(plain)) return plain;
  const tag = Array.from(callId).slice(0, 16).map((c) => /^[A-Za-z0-9_-]$/.test(c) ? c : "_").join("");
  const segment = `${tag}-${hash(callId)}`;
  if (fits(`${parent}.${segment}`)) return `${parent}.${segment}`;
  const parentHash = hash(parent);
  const points = Array.from(parent);
  for (let n = points.length; n >= 0; n--) {
    const id = `${points.slice(0, n).join("")}~${parentHash}.${segment}`;
    if (fits(id)) return id;
  }
  // Unreachable: `~<12 hex>.<at most 16 plain characters>-<12 hex>` is always valid.
  throw new HarnessError("INVALID_SESSION_ID", `Cannot name a child of session ${JSON.stringify(parent)}`);
}

function fits(id: string): boolean {
  try {
    validateSessionId(id + RENAME_ROOM);
    return true;
  } catch {
    return false;
  }
}

const encoder = new TextEncoder();

/** FNV-1a (64-bit) of the UTF-8 text, as 12 hex digits (48 bits). */
function hash(text: string): string {
  let h = 0xcbf29ce484222325n;
  for (const byte of encoder.encode(text)) {
    h ^= BigInt(byte);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return (h >> 16n).toString(16).padStart(12, "0");
}
