// Internal: session ids that may travel in URLs and reach storage.

import { HttpProblem } from "./_problem.ts";
import { escapeSessionId } from "../persistence/_header.ts";

/**
 * Letters, digits, `_`, `-` and `.`, 1 to 128 characters, starting and ending
 * with a letter or digit (or `_`, `-` at the end): enough for UUIDs, readable
 * ids and subagent children (`<parent>.<call id>`), and nothing a path can be
 * built from (`/`, `\`, `%`, NUL, spaces; `.` and `..` cannot be a whole id).
 */
const SESSION_ID = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9_-])?$/;

/** Whether `id` is an acceptable session id: the pattern, and an id every storage takes (see validateSessionId). */
export function isValidSessionId(id: unknown): id is string {
  return typeof id === "string" && SESSION_ID.test(id) && escapeSessionId(id).length <= 255;
}

/** What an acceptable session id is, as a client is told. */
export const SESSION_ID_RULE =
  "Session ids are 1 to 128 letters, digits, underscores, hyphens or dots, starting with a letter or digit and not ending with a dot; a capital counts three toward a limit of 255 (length + 2 × capitals)";

/** Return `id` when acceptable, else throw a 400 problem. */
export function checkSessionId(id: string | undefined): string {
  if (!isValidSessionId(id)) {
    throw new HttpProblem(400, "INVALID_SESSION_ID", SESSION_ID_RULE);
  }
  return id;
}
