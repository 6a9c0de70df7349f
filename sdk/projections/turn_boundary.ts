/**
 * `turnBoundary`: where the log stands with respect to turns.
 *
 * @module
 */

import type { TurnEndReason } from "../session/session_events.ts";
import { defineProjection, type ProjectionUnit } from "./projection_unit.ts";

/** The state of {@linkcode turnBoundary}. */
export interface TurnBoundaryState {
  /** The highest turn started. */
  readonly turns: number;
  /** The open turn, if any: its number, the seq of its `turn/start`, and its open step. */
  readonly open?: { readonly turn: number; readonly startSeq: number; readonly step?: number };
  /** The last turn that ended: its number, reason and the seq of its `turn/end`. */
  readonly lastEnd?: { readonly turn: number; readonly reason: TurnEndReason; readonly seq: number };
  /**
   * The length of the longest prefix that ends outside every turn: the whole
   * log when no turn is open, else the seq of the open turn's `turn/start`.
   * A fork of a running session starts from this completed prefix.
   */
  readonly completedPrefix: number;
}

const INITIAL: TurnBoundaryState = Object.freeze({ turns: 0, completedPrefix: 0 });

/**
 * The turn boundary of a log: the open turn and step, the last turn end, and
 * the completed prefix (what a fork may copy while a turn runs).
 *
 * @example
 * ```ts
 * import { foldProjection, turnBoundary } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const state = foldProjection(turnBoundary, [
 *   { type: "turn/start", seq: 0, time: 0, data: { turn: 1 } },
 *   { type: "turn/end", seq: 1, time: 0, data: { turn: 1, reason: { kind: "completed" } } },
 *   { type: "turn/start", seq: 2, time: 0, data: { turn: 2 } },
 * ]);
 * assert.equal(state.open?.turn, 2);
 * assert.equal(state.completedPrefix, 2);
 * ```
 */
export const turnBoundary: ProjectionUnit<TurnBoundaryState> = defineProjection<TurnBoundaryState>({
  name: "turnBoundary",
  initial: () => INITIAL,
  fold(state, event) {
    switch (event.type) {
      case "turn/start":
        return {
          turns: Math.max(state.turns, event.data.turn),
          open: { turn: event.data.turn, startSeq: event.seq },
          ...(state.lastEnd !== undefined ? { lastEnd: state.lastEnd } : {}),
          completedPrefix: event.seq,
        };
      case "turn/end":
        return {
          turns: state.turns,
          lastEnd: { turn: event.data.turn, reason: event.data.reason, seq: event.seq },
          completedPrefix: event.seq + 1,
        };
      case "step/start":
        if (state.open === undefined) break;
        return { ...state, open: { ...state.open, step: event.data.step } };
      case "step/end":
        if (state.open === undefined) break;
        return { ...state, open: { turn: state.open.turn, startSeq: state.open.startSeq } };
    }
    return state.open === undefined ? { ...state, completedPrefix: event.seq + 1 } : state;
  },
});
