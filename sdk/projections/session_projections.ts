/**
 * `SessionProjections` (`ctx.sessionProjections`): registered projection units
 * folded incrementally over each session's committed events.
 *
 * @module
 */

import type { HarnessContext } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { Session, SessionHeader } from "../session/session.ts";
import type { SessionEvent } from "../session/session_events.ts";
import { type AnyProjectionUnit, defineProjection, foldProjection, type ProjectionUnit } from "./projection_unit.ts";
import { childSessions } from "./child_sessions.ts";
import { todos } from "./todos.ts";
import { turnBoundary } from "./turn_boundary.ts";
import { usageTotals } from "./usage_totals.ts";

/**
 * A live session, or a log folded from scratch on each read: a stored session
 * as loaded (its header and events), or bare events (read with no header).
 */
export type ProjectionSource =
  | Session
  | { readonly header: SessionHeader; readonly events: readonly SessionEvent[] }
  | readonly SessionEvent[];

/** Options of {@linkcode SessionProjections.snapshot}. */
export interface SnapshotOptions extends StateOptions {
  /** Only these units, by name. @default {every registered unit} */
  readonly units?: readonly string[];
}

/** Options of {@linkcode SessionProjections.stateOf}. */
export interface StateOptions {
  /**
   * For a live session: fold only its events with seqs below this (its log as far as storage holds it, say),
   * incrementally as it grows, beside the fold of the whole log. Ignored for a log given as events.
   * @default {the session's seq}
   */
  readonly upTo?: number;
}

interface Folded {
  state: unknown;
  seq: number;
}

/** The units every harness registers: `turnBoundary`, `todos`, `usageTotals`, `childSessions`. */
export const SHIPPED_PROJECTIONS: readonly AnyProjectionUnit[] = Object.freeze([
  turnBoundary,
  todos,
  usageTotals,
  childSessions,
]);

/**
 * The projection service. A unit is folded per live session lazily and
 * incrementally: a read folds only the events committed since the previous
 * read of that unit on that session (O(new events), never the whole log).
 * Reading a unit that is not registered fails (`PROJECTION_NOT_REGISTERED`)
 * rather than quietly folding something no host declared.
 *
 * @example
 * ```ts
 * import { Session, SessionProjections, todos } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const projections = new SessionProjections();
 * projections.register(todos);
 * const session = Session.create("s1");
 * session.append("turn/start", { turn: 1 });
 * session.append("todo/write", { todos: [{ id: "1", content: "Ship it", status: "in_progress" }] });
 * assert.equal(projections.stateOf(session, todos)[0].content, "Ship it");
 * assert.deepEqual(Object.keys(projections.snapshot(session)), ["todos"]);
 * ```
 */
export class SessionProjections {
  readonly #units = new Map<string, AnyProjectionUnit>();
  readonly #folded = new WeakMap<Session, Map<AnyProjectionUnit, Folded>>();
  // Folds of a prefix of a live session (`upTo`), kept apart from the fold of the whole log.
  readonly #prefixes = new WeakMap<Session, Map<AnyProjectionUnit, Folded>>();

  /**
   * Register a unit.
   *
   * @param unit The unit (checked by {@linkcode defineProjection}).
   * @returns A function that unregisters it.
   * @throws {HarnessError} `PROJECTION_ALREADY_REGISTERED` when a unit of that name is registered.
   */
  register(unit: AnyProjectionUnit): () => void {
    const checked = Object.isFrozen(unit) ? unit : defineProjection(unit);
    if (this.#units.has(checked.name)) {
      throw new HarnessError("PROJECTION_ALREADY_REGISTERED", `A projection named "${checked.name}" is registered`, {
        details: { name: checked.name },
      });
    }
    this.#units.set(checked.name, checked);
    return () => {
      if (this.#units.get(checked.name) === checked) this.#units.delete(checked.name);
    };
  }

  /**
   * The names of the registered units, in registration order.
   *
   * @returns A new array.
   */
  names(): string[] {
    return [...this.#units.keys()];
  }

  /**
   * The state of one registered unit over a session's committed events.
   *
   * @param source A live session, or a log.
   * @param unit A registered unit.
   * @param options For a live session, a prefix of its log to fold (`upTo`).
   * @returns The unit's state (shared: do not mutate it).
   * @throws {HarnessError} `PROJECTION_NOT_REGISTERED`; `INVALID_ARGS` for an `upTo` that is not an integer from 0.
   */
  stateOf<S>(source: ProjectionSource, unit: ProjectionUnit<S, unknown>, options: StateOptions = {}): S {
    this.#require(unit);
    if (Array.isArray(source)) return foldProjection(unit, source as readonly SessionEvent[]);
    // A loaded session is a plain object; a live one folds incrementally (it has `slice`).
    if (typeof (source as Partial<Session>).slice !== "function") {
      const loaded = source as { header: SessionHeader; events: readonly SessionEvent[] };
      return foldProjection(unit, loaded.events, undefined, loaded.header);
    }
    const session = source as Session;
    const upTo = options.upTo;
    if (upTo !== undefined && (!Number.isSafeInteger(upTo) || upTo < 0)) {
      throw new HarnessError("INVALID_ARGS", `upTo must be an integer from 0, got ${String(upTo)}`);
    }
    const end = upTo === undefined ? session.seq : Math.min(upTo, session.seq);
    const folds = end === session.seq ? this.#folded : this.#prefixes;
    let perUnit = folds.get(session);
    if (perUnit === undefined) folds.set(session, perUnit = new Map());
    let folded = perUnit.get(unit);
    // A prefix shorter than the one folded (another caller's) is folded again from the start.
    if (folded === undefined || folded.seq > end) {
      perUnit.set(unit, folded = { state: unit.initial(session.header), seq: 0 });
    }
    if (folded.seq < end) {
      let state = folded.state as S;
      for (const event of session.slice(folded.seq, end)) state = unit.fold(state, event);
      folded.state = state;
      folded.seq = end;
    }
    return folded.state as S;
  }

  /**
   * The client view of every registered unit (or of the named ones), keyed by unit name.
   *
   * @param source A live session, or a log.
   * @param options Which units.
   * @returns A new object: `{ [name]: view(state) }`.
   * @throws {HarnessError} `PROJECTION_NOT_REGISTERED` for a name that is not registered.
   */
  snapshot(source: ProjectionSource, options: SnapshotOptions = {}): Record<string, unknown> {
    const names = options.units ?? this.names();
    const out: Record<string, unknown> = {};
    for (const name of names) {
      const unit = this.#units.get(name);
      if (unit === undefined) throw notRegistered(name);
      const state = this.stateOf(source, unit, options.upTo === undefined ? {} : { upTo: options.upTo });
      out[name] = unit.view ? unit.view(state) : state;
    }
    return out;
  }

  #require(unit: AnyProjectionUnit): void {
    const registered = this.#units.get(unit?.name);
    if (registered === undefined || (registered !== unit && registered.fold !== unit.fold)) {
      throw notRegistered(unit?.name);
    }
  }
}

function notRegistered(name: unknown): HarnessError {
  return new HarnessError("PROJECTION_NOT_REGISTERED", `No projection named "${String(name)}" is registered`, {
    details: { name },
  });
}

/** Options of {@linkcode sessionProjectionsPlugin}. */
export interface SessionProjectionsOptions {
  /** Units to register besides (or instead of) the shipped ones. */
  readonly units?: readonly AnyProjectionUnit[];
  /**
   * Register {@linkcode SHIPPED_PROJECTIONS}.
   *
   * @default {true}
   */
  readonly shipped?: boolean;
}

/**
 * The plugin that provides `ctx.sessionProjections` with the shipped units
 * (and `units`) registered.
 *
 * @param ctx The plugin context.
 * @param options Extra units.
 */
export function sessionProjectionsPlugin(ctx: HarnessContext, options: SessionProjectionsOptions = {}): void {
  const service = new SessionProjections();
  for (const unit of [...(options.shipped === false ? [] : SHIPPED_PROJECTIONS), ...(options.units ?? [])]) {
    service.register(unit);
  }
  (ctx as unknown as HarnessContext<object, { sessionProjections: SessionProjections }>).provide(
    "sessionProjections",
    service,
  );
}
