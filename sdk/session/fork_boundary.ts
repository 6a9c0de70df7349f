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
 * @throws {HarnessError} `INVALID_BOUNDARY`, `OPEN_TURN` or `OPEN_COMPACTION`.
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
  let openCompaction: number | undefined;
  // Whether the open compaction started inside a turn: such a compaction cannot outlive its turn, so the
  // turn's `turn/end` closes it too (logs written before compactions always got their `compaction/end`
  // hold such dangling starts, closed only by the turn's end).
  let compactionInTurn = false;
  for (let i = 0; i <= end; i++) {
    const event = events[i];
    if (event.type === "turn/start") openTurn = event.data.turn;
    else if (event.type === "turn/end") {
      openTurn = undefined;
      if (compactionInTurn) openCompaction = undefined;
      compactionInTurn = false;
    } else if (event.type === "compaction/start") {
      openCompaction = event.seq;
      compactionInTurn = openTurn !== undefined;
    } else if (event.type === "compaction/end") {
      openCompaction = undefined;
      compactionInTurn = false;
    }
  }
  if (openTurn !== undefined) {
    throw new HarnessError("OPEN_TURN", `Cannot fork session ${sessionId}: the prefix ends inside turn ${openTurn}`, {
      details: { sessionId, boundary: end, turn: openTurn },
    });
  }
  // A manual compaction runs between turns: its bracket is checked on its own (a child that copied its
  // `compaction/start` without the `compaction/end` could never compact again). One started inside a turn
  // and still open here means the boundary is inside that turn, refused above as OPEN_TURN.
  if (openCompaction !== undefined) {
    throw new HarnessError(
      "OPEN_COMPACTION",
      `Cannot fork session ${sessionId}: the prefix ends inside the compaction started at seq ${openCompaction}`,
      { details: { sessionId, boundary: end, compactionStart: openCompaction } },
    );
  }
  return end;
}
