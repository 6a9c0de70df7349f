/**
 * `childSessions`: the child sessions a session delegated to.
 *
 * @module
 */

import type { SessionEventMap } from "../session/session_events.ts";
import { defineProjection, type ProjectionUnit } from "./projection_unit.ts";

/** One child of a session, as `subagent/spawned` recorded it. */
export type ChildSessionEntry = SessionEventMap["subagent/spawned"];

const EMPTY: readonly ChildSessionEntry[] = Object.freeze([]);
// The empty state of a fork's log, by the length of its seed: the children its parent linked before the fork (in the
// copied seed) are the parent's, not the fork's.
const seeds = new WeakMap<readonly ChildSessionEntry[], number>();

/**
 * The children a session spawned (`subagent/spawned`), in spawn order. Each
 * child's own log names the parent in its header (`parentSession`); folding
 * each child's log with this unit in turn walks the whole tree. A fork's log
 * starts with its parent's events (`seedLength` of them): the children linked
 * there are its parent's and are left out when the reader has the header (a
 * live session, a loaded one, or `foldProjection(childSessions, events,
 * undefined, header)`); bare events are read as a log of their own.
 *
 * @example
 * ```ts
 * import { childSessions, foldProjection } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const children = foldProjection(childSessions, [
 *   { type: "subagent/spawned", seq: 0, time: 0, data: { turn: 1, step: 1, callId: "c1", session: "child-1", mode: "in-process", agent: "worker" } },
 * ]);
 * assert.deepEqual(children.map((c) => c.session), ["child-1"]);
 * ```
 */
export const childSessions: ProjectionUnit<readonly ChildSessionEntry[]> = defineProjection<
  readonly ChildSessionEntry[]
>({
  name: "childSessions",
  initial: (header) => {
    if (header?.parentSession === undefined || typeof header.seedLength !== "number") return EMPTY;
    const seeded: readonly ChildSessionEntry[] = Object.freeze([]);
    seeds.set(seeded, header.seedLength);
    return seeded;
  },
  fold: (state, event) => {
    if (event.type !== "subagent/spawned") return state;
    const seedLength = seeds.get(state);
    return seedLength !== undefined && event.seq < seedLength ? state : [...state, event.data];
  },
});
