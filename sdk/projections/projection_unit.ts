/**
 * `ProjectionUnit`: a named, pure fold of a session log into one typed state.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionEvent } from "../session/session_events.ts";
import type { SessionHeader } from "../session/session.ts";

/**
 * A projection unit: `fold` is applied to each committed event in seq order,
 * starting from `initial()`.
 *
 * Contract: `fold` is pure and never mutates the state it is given (states
 * are shared with every reader); it returns the same state when the event
 * does not concern it. Folding a log in one go or event by event, in any
 * number of sittings, gives the same state.
 *
 * @typeParam S The state.
 * @typeParam V The client view `snapshot()` reports (the state itself by default).
 */
export interface ProjectionUnit<S, V = S> {
  /** Unique among the units of a `SessionProjections` service; the key of `snapshot()`. */
  readonly name: string;
  /**
   * The state of an empty log. `header` is the session's when the reader has
   * it (a live session's, a stored one's): a fork's log starts with a seed
   * copied from its parent (`seedLength` events, then `session/end-seed`).
   */
  initial(header?: SessionHeader): S;
  /** The state after `event`. */
  fold(state: S, event: SessionEvent): S;
  /** The trimmed client view of a state. @default {the state} */
  view?(state: S): V;
}

/** A projection unit of any state and view. */
// deno-lint-ignore no-explicit-any
export type AnyProjectionUnit = ProjectionUnit<any, any>;

/** The state type of a projection unit. */
export type ProjectionState<U> = U extends ProjectionUnit<infer S, unknown> ? S : never;

/**
 * Check and freeze a projection unit.
 *
 * @param unit The unit.
 * @returns The same unit, frozen.
 * @throws {HarnessError} `INVALID_ARGS` when the name is empty or `initial` / `fold` are not functions.
 *
 * @example Counting turns
 * ```ts
 * import { defineProjection, foldProjection, type SessionEvent } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const turns = defineProjection({
 *   name: "turns",
 *   initial: () => 0,
 *   fold: (n: number, event) => (event.type === "turn/start" ? n + 1 : n),
 * });
 * const log: SessionEvent[] = [{ type: "turn/start", seq: 0, time: 0, data: { turn: 1 } }];
 * assert.equal(foldProjection(turns, log), 1);
 * ```
 */
export function defineProjection<S, V = S>(unit: ProjectionUnit<S, V>): ProjectionUnit<S, V> {
  if (typeof unit !== "object" || unit === null) {
    throw new HarnessError("INVALID_ARGS", "A projection unit is an object");
  }
  if (typeof unit.name !== "string" || unit.name === "") {
    throw new HarnessError("INVALID_ARGS", "A projection unit needs a non-empty name");
  }
  if (typeof unit.initial !== "function" || typeof unit.fold !== "function") {
    throw new HarnessError("INVALID_ARGS", `Projection unit "${unit.name}" needs initial() and fold()`);
  }
  if (unit.view !== undefined && typeof unit.view !== "function") {
    throw new HarnessError("INVALID_ARGS", `Projection unit "${unit.name}" has a view that is not a function`);
  }
  return Object.freeze({ ...unit });
}

/**
 * Fold a whole log (or the part of it after `from.seq`) with one unit.
 *
 * @param unit The unit.
 * @param events The log.
 * @param from A state already folded over `events[0..from.seq)`. @default {the initial state at seq 0}
 * @param header The session's header, given to `initial()` (see {@linkcode ProjectionUnit.initial}).
 * @returns The state after the last event.
 *
 * @example
 * ```ts
 * import { foldProjection, todos } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const state = foldProjection(todos, [
 *   { type: "todo/write", seq: 0, time: 0, data: { todos: [{ content: "Ship", status: "pending" }] } },
 * ]);
 * assert.equal(state.length, 1);
 * ```
 */
export function foldProjection<S>(
  unit: ProjectionUnit<S, unknown>,
  events: readonly SessionEvent[],
  from?: { readonly state: S; readonly seq: number },
  header?: SessionHeader,
): S {
  let state = from === undefined ? unit.initial(header) : from.state;
  for (let i = from?.seq ?? 0; i < events.length; i++) state = unit.fold(state, events[i]);
  return state;
}
