/**
 * The rules a fork prefix must keep, as one pure function.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionEvent } from "./session_events.ts";

/**
 * Check a fork boundary against a log and resolve it: the inclusive seq a
 * fork's prefix ends at (the last event by default), which must not end inside
 * a turn. An empty log with no boundary given resolves to `-1`: the fork of
 * an empty session is an empty child (`events.slice(0, end + 1)` is `[]`).
 *
 * @param sessionId The source session's id (for messages).
 * @param events The source log.
 * @param boundary The inclusive boundary seq. @default {the last seq}
 * @returns The resolved boundary; `-1` for an empty log and no boundary.
 * @throws {HarnessError} `INVALID_BOUNDARY` or `OPEN_TURN`.
 */
export function forkBoundary(sessionId: string, events: readonly SessionEvent[], boundary?: number): number {
  const last = events.length - 1;
  if (boundary === undefined && last === -1) return -1;
  const end = boundary ?? last;
  if (!Number.isSafeInteger(end) || end < 0 || end > last) {
    throw new HarnessError(
      "INVALID_BOUNDARY",
      `Cannot fork session ${sessionId}: boundary ${end} is not a seq of the log (0..${last})`,
      { details: { sessionId, boundary: end } },
    );
  }
  let openTurn: number | undefined;
  for (let i = 0; i <= end; i++) {
    const event = events[i];
    if (event.type === "turn/start") openTurn = event.data.turn;
    else if (event.type === "turn/end") openTurn = undefined;
  }
  if (openTurn !== undefined) {
    throw new HarnessError("OPEN_TURN", `Cannot fork session ${sessionId}: the prefix ends inside turn ${openTurn}`, {
      details: { sessionId, boundary: end, turn: openTurn },
    });
  }
  return end;
}
