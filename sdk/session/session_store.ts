/**
 * `SessionStore` (`ctx.sessions`): the in-memory registry of live sessions,
 * the session-domain events, and fork.
 *
 * Longer than the house limit on purpose: the registry, its events and fork
 * share the live-session bookkeeping.
 *
 * Persistence is not done here: a persistence plugin listens to
 * `session/event` and writes on `session/flush` and `session/disposed`.
 *
 * @module
 */

import { emitterOf, type HarnessContext, type PluginObject, unheard } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import { Session, type SessionHeader, type SessionHeaderInit } from "./session.ts";
import type { SessionEvent } from "./session_events.ts";
import { forkBoundary } from "./fork_boundary.ts";
import { incarnationOf } from "./_incarnation.ts";

export { forkBoundary };

/** The events of the session domain (all dispatched from the session's context, so scope-filtered). */
export interface SessionEvents {
  /** A session was announced (emit; once per session). */
  "session/created": (session: Session) => void;
  /** An event was committed to a live session (emit, after commit; observer failures are contained). */
  "session/event": (session: Session, event: SessionEvent) => void;
  /**
   * Events up to (not including) `nextSeq` are now on storage (emit, by the
   * persistence plugin, after each write). Without storage it never fires:
   * every committed event counts as acknowledged.
   */
  "session/durable": (session: Session, nextSeq: number) => void;
  /** A durability checkpoint was requested (parallel: every listener is awaited). */
  "session/flush": (session: Session) => Promise<void>;
  /**
   * A live session is about to leave this process (parallel: every listener is
   * awaited): durable listeners write what is left and release what they hold,
   * such as a storage writer lease. The agent factory dispatches it on dispose.
   */
  "session/release": (session: Session) => Promise<void>;
  /** A session created by {@linkcode SessionStore.create} left the store (emit). */
  "session/disposed": (session: Session) => void;
}

/** The services this room provides. */
export interface SessionServices {
  /** The live session store. */
  sessions: SessionStore;
}

/** A context the store dispatches a session's events from (its scope decides who hears them). */
export type SessionDispatchContext = Pick<HarnessContext<SessionEvents, object>, "emit" | "parallel" | "effect">;

/** Options of {@linkcode SessionStore} and of {@linkcode sessionStorePlugin}. */
export interface SessionStoreOptions {
  /**
   * The clock of the sessions the store creates.
   *
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * The id generator for sessions created without an id, and the one {@linkcode SessionStore.newId} hands plugins.
   *
   * @default {crypto.randomUUID}
   */
  newId?: () => string;
}

/** Options of {@linkcode SessionStore.create} and {@linkcode SessionStore.prepare}. */
export interface SessionCreateOptions extends Omit<SessionHeaderInit, "onCommit" | "id"> {
  /** Events to seed the session with (deep-copied; an end-seed marker follows them). */
  seed?: readonly SessionEvent[];
  /**
   * A stored header to start from; the top-level header fields override it.
   * One with a `createdAt` and no `incarnation` (written before incarnation
   * tokens) keeps the stand-in its log has, its `createdAt` in base 36.
   */
  header?: Partial<SessionHeader> | Readonly<Record<string, unknown>>;
  /**
   * The context the session's events are dispatched from. When it is scoped,
   * only listeners of that scope, its ancestors and unscoped ones hear them.
   * For `create()`, the session also leaves the store when this context's
   * plugin (or scope) is disposed.
   *
   * @default {the store's own context}
   */
  ctx?: SessionDispatchContext;
}

/** A live session or the id of one. */
export type SessionForkSource = Session | string;

interface Entry {
  readonly session: Session;
  readonly unobserve: () => void;
}

/**
 * What flush() gives while nothing listens to `session/flush`: one resolved
 * promise, shared. Internal: a caller that finds it knows there is nothing to
 * wait for (the loop's checkpoints then build no race against the turn's signal).
 */
export const FLUSHED: Promise<boolean> = Promise.resolve(true);

const HEADER_KEYS = [
  "version",
  "createdAt",
  "cwd",
  "parentSession",
  "seedLength",
  "origin",
  "delegationDepth",
  "agentPreset",
  "profile",
  "incarnation",
];

// Every session object that is in some store: one object is in one store at a time.
const attached = new WeakSet<Session>();

/**
 * The in-memory store of live sessions, provided as `ctx.sessions` by
 * {@linkcode sessionStorePlugin}.
 *
 * Lifecycle: `create()` = `prepare()` + `enter()` + `announce()`, undone (with
 * `session/disposed`) when the store, or the `ctx` given in the options, is
 * disposed. Callers that fold the session into their own lifecycle use
 * `prepare()`, `enter()` (whose disposer detaches without emitting anything)
 * and `announce()` themselves, and emit `session/disposed` when they tear down.
 *
 * @example Creating a session and hearing its events
 * ```ts
 * import { createKernel, type SessionEvent, type SessionEvents, type SessionServices, sessionStorePlugin } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const ctx = createKernel<SessionEvents, SessionServices>();
 * await ctx.plugin(sessionStorePlugin, { now: () => 0 }).ready;
 * const seen: SessionEvent[] = [];
 * ctx.on("session/event", (_session, event) => void seen.push(event));
 * const session = ctx.service("sessions").create("s1");
 * session.append("turn/start", { turn: 1 });
 * assert.equal(seen.length, 1);
 * assert.equal(ctx.service("sessions").get("s1"), session);
 * ```
 */
export class SessionStore {
  readonly #ctx: SessionDispatchContext;
  readonly #now: () => number;
  readonly #newId: () => string;
  readonly #live = new Map<string, Entry>();
  readonly #dispatch = new WeakMap<Session, SessionDispatchContext>();
  readonly #announced = new WeakSet<Session>();
  readonly #owned = new Map<Session, () => void>();

  /**
   * Create a store dispatching from `ctx` (usually done by {@linkcode sessionStorePlugin}).
   *
   * @param ctx The store's context.
   * @param options The clock and the id generator.
   */
  constructor(ctx: SessionDispatchContext, options: SessionStoreOptions = {}) {
    this.#ctx = ctx;
    this.#now = options.now ?? Date.now;
    this.#newId = options.newId ?? (() => crypto.randomUUID());
  }

  /**
   * Build a session without entering it into the store (pair with `enter()` and `announce()`).
   *
   * @param id The session id. @default {a new id}
   * @param options Seed, header fields, clock and dispatch context.
   * @returns The new, detached session.
   * @throws {HarnessError} `INVALID_ARGS` and the seed rejections of {@linkcode Session.create}.
   */
  prepare(id?: string, options: SessionCreateOptions = {}): Session {
    const { seed, header, ctx, ...fields } = options;
    const init: Record<string, unknown> = {};
    if (header !== undefined) {
      if (typeof header !== "object" || header === null) {
        throw new HarnessError("INVALID_ARGS", "Session header must be an object");
      }
      for (const key of HEADER_KEYS) {
        const value = (header as Record<string, unknown>)[key];
        if (value !== undefined) init[key] = value;
      }
      const headerId = (header as Record<string, unknown>).id;
      if (headerId !== undefined) init.id = headerId;
      // A stored header from before incarnation tokens: the live session keeps the stand-in its log has.
      const createdAt = (header as Record<string, unknown>).createdAt;
      if (init.incarnation === undefined && typeof createdAt === "number") {
        init.incarnation = incarnationOf({ createdAt });
      }
    }
    for (const [key, value] of Object.entries(fields)) if (value !== undefined) init[key] = value;
    init.now ??= this.#now;
    const sessionId = id ?? (init.id as string | undefined) ?? this.#newId();
    const session = Session.create(sessionId, seed, init as SessionHeaderInit);
    this.#dispatch.set(session, ctx ?? this.#ctx);
    return session;
  }

  /**
   * Enter a session into the store; from now on its commits are published on `session/event`.
   *
   * @param session The session.
   * @returns A disposer that detaches it again (idempotent; emits nothing).
   * @throws {HarnessError} `SESSION_ALREADY_EXISTS` when a live session has the same id,
   *   `SESSION_ALREADY_ATTACHED` when this session object is in a store (this one or another) already.
   */
  enter(session: Session): () => void {
    if (!(session instanceof Session)) throw new HarnessError("INVALID_ARGS", "Only a Session can enter the store");
    if (attached.has(session)) {
      throw new HarnessError("SESSION_ALREADY_ATTACHED", `Session ${session.id} is already in a store`, {
        details: { sessionId: session.id },
      });
    }
    if (this.#live.has(session.id)) {
      throw new HarnessError("SESSION_ALREADY_EXISTS", `Session ${session.id} is already live`, {
        details: { sessionId: session.id },
      });
    }
    // The method is read once (each read through the context view costs a proxy trap), and an event nobody
    // listens to returns before the call.
    const emit = emitterOf(this.#contextOf(session), "session/event");
    const unobserve = session.observe((event, s) => emit(s, event));
    const entry: Entry = { session, unobserve };
    this.#live.set(session.id, entry);
    attached.add(session);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      attached.delete(session);
      unobserve();
      if (this.#live.get(session.id) === entry) this.#live.delete(session.id);
    };
  }

  /**
   * Emit `session/created` for a session, once. A second call, also one made
   * from a `session/created` listener, throws: `session/created` and
   * `session/disposed` come in one pair per session.
   *
   * @param session The session.
   * @throws {HarnessError} `SESSION_ALREADY_ANNOUNCED` when the session was announced before.
   */
  announce(session: Session): void {
    if (this.#announced.has(session)) {
      throw new HarnessError("SESSION_ALREADY_ANNOUNCED", `Session ${session.id} was already announced`, {
        details: { sessionId: session.id },
      });
    }
    this.#announced.add(session);
    this.#contextOf(session).emit("session/created", session);
  }

  /**
   * Create a live session: prepare, enter and announce it. It leaves the store
   * (with `session/disposed`) when the store or `options.ctx` is disposed.
   *
   * @param id The session id. @default {a new id}
   * @param options Seed, header fields, clock and dispatch context.
   * @returns The live session.
   * @throws {HarnessError} `SESSION_ALREADY_EXISTS`, `INVALID_ARGS`, or a seed rejection.
   */
  create(id?: string, options: SessionCreateOptions = {}): Session {
    if (id !== undefined && this.#live.has(id)) {
      throw new HarnessError("SESSION_ALREADY_EXISTS", `Session ${id} is already live`, { details: { sessionId: id } });
    }
    const session = this.prepare(id, options);
    const detach = this.enter(session);
    const ctx = this.#contextOf(session);
    let disposed = false;
    const dispose = (): void => {
      if (disposed) return;
      disposed = true;
      this.#owned.delete(session);
      detach();
      ctx.emit("session/disposed", session);
    };
    this.#owned.set(session, dispose);
    if (options.ctx !== undefined) options.ctx.effect(() => dispose, `session ${session.id}`);
    this.announce(session);
    return session;
  }

  /**
   * Ask every `session/flush` listener to make the session durable, and wait for all of them.
   *
   * @param session The session.
   * @returns `true` once every listener has finished; `false` when the session is not live (nothing was dispatched).
   * @throws {HarnessError} `SESSION_FLUSH_FAILED` (cause: the first listener's error) when a
   *   listener rejects: a failed checkpoint fails closed.
   */
  flush(session: Session): Promise<boolean> {
    // Not an async function: one reaction to the listeners' promise (a checkpoint runs several times per turn).
    let flushing: Promise<void>;
    try {
      if (this.#live.get(session.id)?.session !== session) return Promise.resolve(false);
    } catch (error) {
      return Promise.reject(error); // as the async function it was: a rejection, never a throw
    }
    try {
      const ctx = this.#contextOf(session);
      // Nothing listens (the default without storage): the answer without a listeners' promise and a reaction to it.
      if (unheard(ctx, "session/flush")) return FLUSHED;
      flushing = ctx.parallel("session/flush", session);
    } catch (error) {
      return Promise.reject(flushFailed(session, error));
    }
    return flushing.then(() => true, (error: unknown) => Promise.reject(flushFailed(session, error)));
  }

  /**
   * A new id from the store's id source: the harness's `newId` (`createHarness` gives the same one to the store, the
   * agent loop and the tool runtime). A plugin that adds messages to a session (context, notices) mints their ids
   * here, as the loop does its own, so that a harness configured with deterministic ids writes deterministic logs
   * (replay and golden tests compare them). Message ids are unique within a session: an id from here is as unique as
   * the source's (a counter restarted by each process repeats across resumes; see `createHarness`'s `newId`).
   *
   * @returns A new id.
   *
   * @example Ids from the harness's source
   * ```ts
   * import { createHarness } from "@dsh/harness";
   * import assert from "node:assert/strict";
   *
   * let n = 0;
   * const harness = await createHarness({ newId: () => `id-${++n}` });
   * assert.equal(harness.ctx.service("sessions").newId(), "id-1");
   * await harness.dispose();
   * ```
   */
  newId(): string {
    return this.#newId();
  }

  /**
   * The live session with this id.
   *
   * @param id A session id.
   * @returns The session, or `undefined`.
   */
  get(id: string): Session | undefined {
    return this.#live.get(id)?.session;
  }

  /**
   * Every live session, in the order they entered.
   *
   * @returns A fresh array.
   */
  list(): Session[] {
    return [...this.#live.values()].map((entry) => entry.session);
  }

  /**
   * Fork a live session: a new live session seeded with a deep copy of the
   * source's events up to `boundary` (inclusive), with `parentSession`,
   * `seedLength` and the source's `cwd` in its header, and its own end-seed.
   *
   * @param source A live session or its id.
   * @param boundary The last seq to copy. @default {the source's last seq}
   * @param childId The child's id. @default {a new id}
   * @returns The child session.
   * @throws {HarnessError} `SESSION_NOT_FOUND` (no live session has the id, also for a detached
   *   session object), `SESSION_NOT_LIVE` (a session object whose id is live with another object), `SESSION_ALREADY_EXISTS` (child id taken), `INVALID_BOUNDARY`
   *   (not a seq of the source), `OPEN_TURN` (the prefix ends inside a turn), `OPEN_COMPACTION` (inside a compaction).
   *
   * @example
   * ```ts
   * import { createKernel, type SessionEvents, type SessionServices, sessionStorePlugin } from "@dsh/harness";
   * import assert from "node:assert/strict";
   *
   * const ctx = createKernel<SessionEvents, SessionServices>();
   * await ctx.plugin(sessionStorePlugin).ready;
   * const parent = ctx.service("sessions").create("parent");
   * parent.append("turn/start", { turn: 1 });
   * parent.append("turn/end", { turn: 1, reason: { kind: "completed" } });
   * parent.append("turn/start", { turn: 2 });
   * assert.throws(() => ctx.service("sessions").fork(parent), { code: "OPEN_TURN" });
   * const child = ctx.service("sessions").fork(parent, 1, "child");
   * assert.equal(child.header.parentSession, "parent");
   * assert.equal(child.header.seedLength, 2);
   * assert.equal(child.events[2].type, "session/end-seed");
   * ```
   */
  fork(source: SessionForkSource, boundary?: number, childId?: string): Session {
    let session: Session;
    if (typeof source === "string") {
      const found = this.#live.get(source);
      if (!found) {
        throw new HarnessError("SESSION_NOT_FOUND", `Cannot fork session ${source}: it is not live`, {
          details: { sessionId: source },
        });
      }
      session = found.session;
    } else if (source instanceof Session) {
      const live = this.#live.get(source.id);
      if (live === undefined) {
        throw new HarnessError("SESSION_NOT_FOUND", `Cannot fork session ${source.id}: it is not live`, {
          details: { sessionId: source.id },
        });
      }
      if (live.session !== source) {
        throw new HarnessError("SESSION_NOT_LIVE", `Cannot fork session ${source.id}: another object is the live one`, {
          details: { sessionId: source.id },
        });
      }
      session = source;
    } else {
      throw new HarnessError("INVALID_ARGS", "Fork source must be a session or a session id");
    }
    const events = session.events;
    if (childId !== undefined && this.#live.has(childId)) {
      throw new HarnessError("SESSION_ALREADY_EXISTS", `Cannot fork into session ${childId}: it is already live`, {
        details: { sessionId: childId },
      });
    }
    const end = forkBoundary(session.id, events, boundary);
    const options: SessionCreateOptions = {
      seed: events.slice(0, end + 1),
      parentSession: session.id,
      seedLength: end + 1,
      ctx: this.#contextOf(session),
    };
    if (session.header.cwd !== undefined) options.cwd = session.header.cwd;
    // The child keeps the parent's own profile (system text, tools, route).
    if (session.header.profile !== undefined) options.profile = session.header.profile;
    return this.create(childId ?? this.#newId(), options);
  }

  /**
   * Remove one session created by `create()` (or `fork()`) from the store,
   * emitting `session/disposed`, as disposing its context would.
   *
   * @param session The session.
   * @returns `false` when the store did not create it or it is gone already.
   */
  dispose(session: Session): boolean {
    const dispose = this.#owned.get(session);
    if (dispose === undefined) return false;
    dispose();
    return true;
  }

  /** Remove every session created by `create()`, emitting `session/disposed` for each. */
  disposeAll(): void {
    for (const dispose of [...this.#owned.values()].reverse()) dispose();
  }

  #contextOf(session: Session): SessionDispatchContext {
    return this.#dispatch.get(session) ?? this.#ctx;
  }
}

/**
 * The plugin that provides `ctx.sessions`. On dispose, the sessions it
 * created leave the store with `session/disposed`.
 *
 * @example
 * ```ts
 * import { createKernel, type SessionEvents, type SessionServices, sessionStorePlugin } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const ctx = createKernel<SessionEvents, SessionServices>();
 * const handle = ctx.plugin(sessionStorePlugin, { now: () => 42 });
 * await handle.ready;
 * assert.equal(ctx.service("sessions").create("a").header.createdAt, 42);
 * await handle.dispose();
 * assert.equal(ctx.get("sessions"), undefined);
 * ```
 */
export const sessionStorePlugin: PluginObject<SessionStoreOptions | void, SessionEvents, SessionServices> = {
  name: "session-store",
  apply(ctx: HarnessContext<SessionEvents, SessionServices>, options: SessionStoreOptions | void): void {
    const store = new SessionStore(ctx, options ?? {});
    ctx.effect(() => () => store.disposeAll(), "session-store sessions");
    ctx.provide("sessions", store);
  },
};

function flushFailed(session: Session, error: unknown): HarnessError {
  const first = error instanceof AggregateError && error.errors.length > 0 ? error.errors[0] : error;
  return new HarnessError(
    "SESSION_FLUSH_FAILED",
    `Cannot flush session ${session.id}: ${first instanceof Error ? first.message : String(first)}`,
    { cause: first, details: { sessionId: session.id } },
  );
}
