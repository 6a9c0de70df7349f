// Internal: session ids that may travel in URLs and reach storage.

import { HttpProblem } from "./_problem.ts";
import { escapeSessionId } from "../persistence/_header.ts";

/**
 * Letters, digits, `_` and `-`, 1 to 128 characters, starting with a letter or
 * digit: enough for UUIDs and readable ids, and nothing a path can be built
 * from (`.`, `/`, `\`, `%`, NUL, spaces).
 */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** Whether `id` is an acceptable session id: the pattern, and an id every storage takes (see validateSessionId). */
export function isValidSessionId(id: unknown): id is string {
  return typeof id === "string" && SESSION_ID.test(id) && escapeSessionId(id).length <= 255;
}

/** Return `id` when acceptable, else throw a 400 problem. */
export function checkSessionId(id: string | undefined): string {
  if (!isValidSessionId(id)) {
    throw new HttpProblem(
      400,
      "INVALID_SESSION_ID",
      "Session ids are 1 to 128 letters, digits, underscores or hyphens, starting with a letter or digit; a capital counts three toward a limit of 255 (length + 2 × capitals)",
    );
  }
  return id;
}
