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

/**
 * The children a session spawned (`subagent/spawned`), in spawn order. Each
 * child's own log names the parent in its header (`parentSession`); folding
 * each child's log with this unit in turn walks the whole tree.
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
  initial: () => EMPTY,
  fold: (state, event) => (event.type === "subagent/spawned" ? [...state, event.data] : state),
});
