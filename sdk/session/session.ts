/**
 * `Session`: the append-only, typed event log of one agent, and the history,
 * request header and route derived from it.
 *
 * Longer than the house limit on purpose: `Session` is one class whose append path (checks, copy,
 * freeze, surface commit, observers) and derivation cache must be read together; validation,
 * surface folding, lossless copying and header rules already live in their own files.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { Message } from "../llm/messages.ts";
import { chunkPayload, copyChunkData, copySeqs } from "./_copy_chunk_data.ts";
import { copyPlainJson, takeSeqList, vouch } from "./_copy_event_data.ts";
import { INCARNATION_PATTERN, newIncarnation } from "./_incarnation.ts";
import { copyLosslessJson, losslessEvent } from "./lossless_json.ts";
import { deepFreeze } from "./deep_freeze.ts";
import { deriveEventMessage } from "./derive_event_message.ts";
import { canonicalHeader } from "./header_equals.ts";
import type {
  EpochHeader,
  RequestContext,
  SessionEvent,
  SessionEventMap,
  SessionEventType,
  SurfaceEventType,
  SurfaceIntent,
} from "./session_events.ts";
import { commitPlain, isSurfaceEventType, type SessionSurface, SurfaceManager } from "./surface_manager.ts";
import {
  isEventTypeText,
  isTime,
  validateChunkUsage,
  validateEnvelope,
  validateEventData,
  validateTodoItems,
} from "./_validate_event.ts";
import { containRejection } from "../kernel/_contain_rejection.ts";

/** The format version stamped on new session headers. */
export const SESSION_FORMAT_VERSION: number = 1;

/**
 * What a session was created with beyond the harness defaults — its own
 * system prompt, tool allowlist and model route (e.g. given at `POST
 * /sessions`). Kept in the header, so that wherever the session resumes, the
 * same profile applies.
 */
export interface SessionProfile {
  /** Extra system prompt text of this session. */
  readonly system?: string;
  /** The tools this session may use (an allowlist of registered tool names). */
  readonly tools?: readonly string[];
  /** The provider of the session's model route. */
  readonly provider?: string;
  /** The model of the session's route. */
  readonly model?: string;
  /** The reasoning effort of the route. */
  readonly reasoningEffort?: "minimal" | "low" | "medium" | "high" | "max";
  /** The sampling temperature of the route. */
  readonly temperature?: number;
  /** The output token limit of the route. */
  readonly maxTokens?: number;
}

/** Creation metadata of a session, kept beside (not in) the event log. Deep-frozen. */
export interface SessionHeader {
  /** The storage format version. */
  readonly version: number;
  /** The session id. */
  readonly id: string;
  /** Creation time, Unix epoch milliseconds. */
  readonly createdAt: number;
  /** The working directory the session belongs to. */
  readonly cwd?: string;
  /** The id of the session this one was forked from. */
  readonly parentSession?: string;
  /** How many events were copied from the parent when forking. */
  readonly seedLength?: number;
  /** Who created the session, free-form (e.g. `cli`, `http`, `subagent`). */
  readonly origin?: string;
  /** How many delegations deep this session is. */
  readonly delegationDepth?: number;
  /** The agent preset the session was created with. */
  readonly agentPreset?: string;
  /** The session's own system prompt, tools and model route, restored wherever it resumes. */
  readonly profile?: SessionProfile;
  /**
   * A random token naming this life of the session's log (`[0-9a-z]{1,16}`),
   * made when the session is created: a session deleted and created again
   * under the same id gets another. Absent in logs written before it (their
   * `createdAt` stands in).
   */
  readonly incarnation?: string;
}

/** Called synchronously after an event is committed. */
export type SessionObserver = (event: SessionEvent, session: Session) => void;

/** Run-time options of a session (not stored in the header). */
export interface SessionOptions {
  /**
   * The clock stamping `time` on appended events and `createdAt` on the
   * header. The agent loop passes its own `now()` so that logs are deterministic.
   *
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * An observer called after every committed append (not for seed events or
   * the end-seed marker). The store uses it to publish `session/event`.
   */
  onCommit?: SessionObserver;
}

/** The third argument of {@linkcode Session.create}: header fields and run-time options. */
export interface SessionHeaderInit extends SessionOptions {
  /**
   * The format version; a restored header must carry the current one.
   *
   * @default {SESSION_FORMAT_VERSION}
   */
  version?: number;
  /** Must equal the session id when given (restored headers carry it). */
  id?: string;
  /**
   * Creation time.
   *
   * @default {now()}
   */
  createdAt?: number;
  /** See {@linkcode SessionHeader.cwd}. */
  cwd?: string;
  /** See {@linkcode SessionHeader.parentSession}. */
  parentSession?: string;
  /** See {@linkcode SessionHeader.seedLength}. */
  seedLength?: number;
  /** See {@linkcode SessionHeader.origin}. */
  origin?: string;
  /** See {@linkcode SessionHeader.delegationDepth}. */
  delegationDepth?: number;
  /** See {@linkcode SessionHeader.agentPreset}. */
  agentPreset?: string;
  /** See {@linkcode SessionHeader.profile}. */
  profile?: SessionProfile;
  /**
   * See {@linkcode SessionHeader.incarnation}.
   *
   * @default {a new random token (a restored header keeps what it has)}
   */
  incarnation?: string;
}

/** The envelope options of a log-only event. */
export interface LogOnlyAppendOptions {
  /** Readers that do not know the event's type may skip it (mark a plugin's optional records so). */
  readonly ignorable?: true;
}

/**
 * The append options of an event type: a {@linkcode SurfaceIntent} for
 * surface types (required), {@linkcode LogOnlyAppendOptions} otherwise.
 */
export type SessionAppendArgs<T extends SessionEventType> = T extends SurfaceEventType ? [intent: SurfaceIntent]
  : [options?: LogOnlyAppendOptions];

const HEADER_FIELDS = [
  "cwd",
  "parentSession",
  "seedLength",
  "origin",
  "delegationDepth",
  "agentPreset",
  "profile",
  "incarnation",
] as const;

function invalidHeader(what: string): never {
  throw new HarnessError("INVALID_ARGS", `Session header ${what}`);
}

// A POSIX path from "/", a Windows path from a drive ("C:\", "C:/") or a UNC share ("\\host").
const ABSOLUTE_PATH = /^(?:\/|[A-Za-z]:[\\/]|\\\\)/;

const isNonNegativeInteger = (v: unknown): boolean => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

// Checks the header fields' types and returns their values, each read once.
function headerFields(init: SessionHeaderInit): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const key of HEADER_FIELDS) {
    const value = init[key];
    if (value === undefined) continue;
    switch (key) {
      case "cwd":
        if (typeof value !== "string") invalidHeader("cwd must be a string");
        if (!ABSOLUTE_PATH.test(value)) invalidHeader(`cwd must be an absolute path, not ${JSON.stringify(value)}`);
        break;
      case "parentSession":
      case "origin":
      case "agentPreset":
        if (typeof value !== "string" || value === "") invalidHeader(`${key} must be a non-empty string`);
        break;
      case "seedLength":
      case "delegationDepth":
        if (!isNonNegativeInteger(value)) invalidHeader(`${key} must be a non-negative safe integer`);
        break;
      case "incarnation":
        if (typeof value !== "string" || !INCARNATION_PATTERN.test(value)) {
          invalidHeader(`incarnation must be 1 to 16 characters [0-9a-z], not ${JSON.stringify(value)}`);
        }
        break;
    }
    fields[key] = value;
  }
  return fields;
}

function checkInit(init: unknown): void {
  if (typeof init !== "object" || init === null || Array.isArray(init)) invalidHeader("is not a plain object");
  const proto = Object.getPrototypeOf(init);
  if (proto !== Object.prototype && proto !== null) invalidHeader("is not a plain object");
}

function buildHeader(id: string, init: SessionHeaderInit, now: () => number, restore: boolean): SessionHeader {
  if (init.id !== undefined && init.id !== id) {
    throw new HarnessError("INVALID_ARGS", `Session header id ${init.id} does not match session id ${id}`);
  }
  const version = init.version ?? SESSION_FORMAT_VERSION;
  if (version !== SESSION_FORMAT_VERSION) {
    throw new HarnessError(
      "SESSION_FORMAT_UNSUPPORTED",
      `Session format version ${version} is not supported; this SDK reads version ${SESSION_FORMAT_VERSION}`,
      { details: { version } },
    );
  }
  const createdAt = init.createdAt ?? now();
  if (!isTime(createdAt)) invalidHeader(`createdAt must be a non-negative safe integer, not ${String(createdAt)}`);
  const header: Record<string, unknown> = { version, id, createdAt, ...headerFields(init) };
  // A new log is a new life of its id; a restored one keeps what it was stored with.
  if (!restore && header.incarnation === undefined) header.incarnation = newIncarnation();
  return copyLosslessJson(header as unknown as SessionHeader, "header");
}

/**
 * An append-only log of typed {@linkcode SessionEvent}s: the only source of
 * truth of an agent. The model's history (`deriveMessages()`), the request
 * header and the route are derived from it.
 *
 * Contract:
 * - `seq` equals the position in the log, from 0.
 * - `append()` copies and deep-freezes `data` in one pass and validates the
 *   event completely (lossless JSON, payload shape, surface rules) before
 *   committing; a rejected append leaves the log unchanged.
 * - The surface intent is required exactly for the surface types (`user/message`, `system/message`, `assistant/message`, `tool/result`).
 * - `session/end-seed` is written only by the constructor, when a seed is
 *   given that does not already end with one; written, it sits at
 *   `firstLiveSeq` (a seed that ends with one keeps it, at `firstLiveSeq - 1`).
 * - Observers run synchronously after commit; their failures are contained;
 *   an append from inside an observer is rejected with `APPEND_REENTERED`.
 * - Seeds and restored logs are validated like appends: envelope `time` is a
 *   non-negative safe integer (so is the clock's), a `request/header` holds a
 *   non-empty `reasoningEffort` if any and `adapterDefaults` markers that are
 *   `true` for config fields present; header fields are typed (`createdAt` a
 *   non-negative safe integer, `cwd` an absolute path, …); each seed entry,
 *   and each of its properties, is read once.
 *
 * Kept on purpose, where the reference implementation differs: a
 * `user/message` without an `id` is refused at append (the surface and
 * derivation key messages by id, so an id-less message could never be pruned
 * or replaced); a `todo/write` whose `todos` is not an array is refused (the
 * todo projection could not fold it); observer errors are contained rather
 * than vetoing an append (the event is already committed when observers run,
 * so a veto could not undo it, and one faulty listener must not stop the
 * agent).
 *
 * The clock: `time` comes from the `now` option (default `Date.now`).
 *
 * @example Appending and deriving the history
 * ```ts
 * import { Session } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const session = Session.create("s1", undefined, { now: () => 0 });
 * session.append("turn/start", { turn: 1 });
 * session.append(
 *   "user/message",
 *   { id: "m1", role: "user", content: [{ type: "text", text: "Hello" }], source: { kind: "user" } },
 *   { surfaceOp: "append" },
 * );
 * session.append("turn/end", { turn: 1, reason: { kind: "completed" } });
 * assert.equal(session.seq, 3);
 * assert.deepEqual(session.surface.nodes, [1]);
 * assert.equal(session.deriveMessages()[0].id, "m1");
 * ```
 */
function vouchInserted(data: unknown): void {
  if (typeof data !== "object" || data === null) return;
  const inserted = (data as { inserted?: unknown }).inserted;
  if (!Array.isArray(inserted)) return;
  for (const entry of inserted) {
    const message = (entry as { message?: unknown } | null)?.message;
    if (typeof message === "object" && message !== null) vouch(message);
  }
}

let appendChunkTo: (session: Session, turn: number, step: number, chunk: unknown) => SessionEvent<"assistant/chunk">;

/**
 * Internal (not exported by the package): the agent loop's per-chunk append.
 * The same as `session.append("assistant/chunk", { turn, step, chunk })` —
 * same checks, copy, event and errors — without building the payload literal
 * and checking it again.
 *
 * @param session The session (a real `Session`).
 * @param turn The turn.
 * @param step The step.
 * @param chunk The streamed chunk.
 * @returns The committed event.
 */
export function appendChunk(
  session: Session,
  turn: number,
  step: number,
  chunk: unknown,
): SessionEvent<"assistant/chunk"> {
  return appendChunkTo(session, turn, step, chunk);
}

let appendBracketTo: (session: Session, type: BracketType, turn: number, step: number | undefined) => SessionEvent;

let publishingOf: (session: Session) => boolean;
let headerSeqOf: (session: Session) => number;

/**
 * Internal (not exported by the package): the seq of the `request/header` event whose header is in force (-1
 * before one), so that a caller can tell a header this process's run of the session logged (at or after
 * `firstLiveSeq`) from one it was seeded with.
 *
 * @param session The session (a real `Session`).
 * @returns The seq, or -1.
 */
export function requestHeaderSeq(session: Session): number {
  return headerSeqOf(session);
}

/**
 * Internal (not exported by the package): whether the session is publishing an event to its observers, where an
 * append is refused with `APPEND_REENTERED` (the agent refuses what would append there: a wake that starts a turn).
 *
 * @param session The session (a real `Session`).
 * @returns Whether an observer of it is being called.
 */
export function isPublishing(session: Session): boolean {
  return publishingOf(session);
}

/** The loop's bracket events whose data is its turn (and step) counters alone. */
export type BracketType = "turn/start" | "step/start" | "step/end";

/**
 * Internal (not exported by the package): the agent loop's `turn/start`,
 * `step/start` and `step/end`. The same as `session.append(type, { turn })`
 * (`step` undefined) or `session.append(type, { turn, step })` — same event,
 * checks and errors — but for counting integers (the only data the types
 * accept) the session builds the frozen data from the two counters instead of
 * copying a caller's object; anything else takes `append` itself.
 *
 * @param session The session (a real `Session`).
 * @param type The event type.
 * @param turn The turn.
 * @param step The step (`step/start`, `step/end`); undefined for `turn/start`.
 * @returns The committed event.
 */
export function appendBracket(session: Session, type: BracketType, turn: number, step?: number): SessionEvent {
  if (isCount(turn) && (type === "turn/start" ? step === undefined : isCount(step))) {
    return appendBracketTo(session, type, turn, step);
  }
  return session.append(type, (step === undefined ? { turn } : { turn, step }) as never);
}

/** An integer from 1 that JSON carries exactly. */
function isCount(n: unknown): n is number {
  return Number.isSafeInteger(n) && (n as number) >= 1;
}

// Every event keeps its time. V8 stores a number field that has only held numbers as a box of each object's own (one
// more object per event for the collector to copy and mark: a fifth of what a logged chunk retained on Node, see
// bench/PROFILE.md). This object, with the event envelope's keys in the same order, makes the `time` field of that
// shape hold any value; an event then points at the box it is given, and #time() gives every event of the same
// millisecond the same box. No effect on what the log holds, nor on other engines (JavaScriptCore stores doubles inline).
Object.freeze({ type: "", seq: 0, time: null, data: null });
const NO_TIME: object = Object.freeze({});

export class Session {
  /** Deep-frozen creation metadata. */
  readonly header: SessionHeader;
  /** The first seq appended by this instance: the length of the constructor seed (0 without one). */
  readonly firstLiveSeq: number;
  readonly #now: () => number;
  readonly #log: SessionEvent[] = [];
  #snapshot: readonly SessionEvent[] | undefined;
  readonly #surface: SurfaceManager;
  // Replaced, never changed in place: a publish iterates the list it started
  // with, without copying it on every append.
  #observers: readonly SessionObserver[] = [];
  #publishing = false;
  #derived: Message[] = [];
  #derivedNodes = 0;
  #derivedGeneration = 0;
  #requestHeader: EpochHeader | undefined;
  /** The seq of the `request/header` that set {@linkcode Session.requestHeader}, -1 before one. */
  #requestHeaderSeq = -1;
  #requestContext: RequestContext | undefined;
  /**
   * The last time #time() returned: events of the same millisecond share it (see the note above the class). Before the
   * first, an object of this module's that no clock can return, so that the first time is always checked.
   */
  #lastTime: unknown = NO_TIME;

  private constructor(
    id: string,
    seed: readonly SessionEvent[] | undefined,
    init: SessionHeaderInit,
    restore: boolean,
  ) {
    if (typeof id !== "string" || id.length === 0) {
      throw new HarnessError("INVALID_ARGS", "Session id must be a non-empty string");
    }
    if (seed !== undefined && !Array.isArray(seed)) {
      throw new HarnessError("INVALID_ARGS", "Session seed must be an array");
    }
    checkInit(init);
    if (init.now !== undefined && typeof init.now !== "function") {
      throw new HarnessError("INVALID_ARGS", "Session option now must be a function");
    }
    this.#now = init.now ?? Date.now;
    this.header = buildHeader(id, init, this.#now, restore);
    this.#surface = new SurfaceManager();
    if (seed !== undefined) {
      // Each entry is read once (a getter cannot show the check one event and
      // the log another), and so is each of its properties: the copy is read,
      // not the caller's object.
      for (let i = 0; i < seed.length; i++) {
        const raw: unknown = seed[i];
        let event: SessionEvent;
        if (restore) {
          // Storage's own freshly parsed objects: checked and frozen in place.
          validateEnvelope(raw, i);
          losslessEvent(raw, `seed[${i}]`, false);
          event = deepFreeze(raw as SessionEvent);
        } else {
          event = losslessEvent(raw as SessionEvent, `seed[${i}]`, true);
          validateEnvelope(event, i);
        }
        validateEventData(event.type, event.data, i);
        this.#commit(event);
      }
    }
    this.firstLiveSeq = this.#log.length;
    if (seed !== undefined && this.#log.at(-1)?.type !== "session/end-seed") {
      this.#commit(this.#envelope("session/end-seed", {}, undefined));
    }
    if (init.onCommit !== undefined) this.#observers = [init.onCommit];
  }

  /**
   * Create a detached session, optionally seeded with events (which are
   * validated and deep-copied; the caller keeps its own).
   *
   * @param id The session id.
   * @param seed Events to start from (replay, fork, resume). When given, an end-seed marker follows them.
   * @param header Header fields, the clock and an observer.
   * @returns The session.
   * @throws {HarnessError} `INVALID_ARGS`, `INVALID_EVENT`, `NOT_LOSSLESS_JSON`, `LEGACY_EVENT`,
   *   `SESSION_FORMAT_UNSUPPORTED`, or a surface rejection for an invalid seed.
   *
   * @example Re-seeding reproduces the history and adds one end-seed
   * ```ts
   * import { Session } from "@dsh/harness";
   * import assert from "node:assert/strict";
   *
   * const a = Session.create("a", undefined, { now: () => 0 });
   * a.append("user/message", { id: "m", role: "user", content: [], source: { kind: "user" } }, { surfaceOp: "append" });
   * const b = Session.create("b", a.events, { now: () => 0 });
   * assert.equal(b.firstLiveSeq, 1);
   * assert.equal(b.events[1].type, "session/end-seed");
   * assert.deepEqual(b.deriveMessages(), a.deriveMessages());
   * ```
   */
  static create(id: string, seed?: readonly SessionEvent[], header?: SessionHeaderInit): Session {
    return new Session(id, seed, header === undefined ? {} : header, false);
  }

  /**
   * Restore a session from storage, taking ownership of `seed`: the events are
   * validated and then frozen in place instead of copied.
   *
   * @param id The session id.
   * @param seed The stored events; the caller must not keep using them mutably.
   * @param header The stored header (its `id`, when present, must match; its `version` must be current).
   * @returns The restored session.
   * @throws {HarnessError} Like {@linkcode Session.create}.
   */
  static fromRestore(id: string, seed: readonly SessionEvent[], header: SessionHeaderInit): Session {
    if (!Array.isArray(seed)) throw new HarnessError("INVALID_ARGS", "Restored session events must be an array");
    return new Session(id, seed, header === undefined ? {} : header, true);
  }

  /** The session id. */
  get id(): string {
    return this.header.id;
  }

  /**
   * The log: a frozen snapshot, reused until the next append. Making one
   * costs time in proportion to the log's length (a copy, and on
   * JavaScriptCore, Bun's engine, about 250 ns per event to freeze it): to
   * follow a growing log, read the new events with {@linkcode Session.slice}.
   */
  get events(): readonly SessionEvent[] {
    return this.#snapshot ??= Object.freeze(this.#log.slice());
  }

  /**
   * The events with seqs from `start` (inclusive) to `end` (exclusive), without
   * snapshotting the whole log: O(end - start).
   *
   * @param start The first seq.
   * @param end One past the last seq. @default {the log's length}
   * @returns A new array of the (frozen) events.
   * @throws {HarnessError} `INVALID_ARGS` for a negative or fractional bound (a seq counts from 0; no wrapping from
   *   the end as `Array.prototype.slice` does).
   */
  slice(start: number, end: number = this.#log.length): SessionEvent[] {
    if (!Number.isSafeInteger(start) || start < 0 || !Number.isSafeInteger(end) || end < 0) {
      throw new HarnessError("INVALID_ARGS", `slice() takes seqs (integers from 0), not ${start}, ${end}`);
    }
    return this.#log.slice(start, end);
  }

  /**
   * The event with this seq.
   *
   * @param seq A seq of the log.
   * @returns The event, or `undefined` past the end.
   */
  at(seq: number): SessionEvent | undefined {
    return this.#log[seq];
  }

  /** The seq of the next event: the length of the log. */
  get seq(): number {
    return this.#log.length;
  }

  /** The live surface view: its nodes and replace generation. */
  get surface(): SessionSurface {
    return this.#surface.surface;
  }

  /**
   * Add an observer called synchronously after each committed append.
   *
   * @param observer The observer; errors it throws are reported and contained.
   * @returns A function that removes the observer.
   */
  observe(observer: SessionObserver): () => void {
    if (typeof observer !== "function") throw new HarnessError("INVALID_ARGS", "Session observer must be a function");
    this.#observers = [...this.#observers, observer];
    return () => {
      const i = this.#observers.indexOf(observer);
      if (i >= 0) this.#observers = this.#observers.filter((_, j) => j !== i);
    };
  }

  /**
   * Append one event.
   *
   * @param type The event type.
   * @param data The payload; copied and deep-frozen. The copy is what is checked and logged; a getter in it may
   *   run twice, as a fast copy of plain JSON gives up on anything else (a class instance, `-0`, a key named
   *   `__proto__`, …) and the lossless-JSON walk then reads the data again (its read is the one logged).
   * @param intent For `user/message`, `assistant/message` and `tool/result`: how the event joins the surface
   *   (required); for any other type, optionally `{ ignorable: true }`.
   * @returns The committed event (with the frozen copy of `data`).
   * @throws {HarnessError} `APPEND_REENTERED` from inside an observer; `END_SEED_RESERVED` for
   *   `session/end-seed`; `INVALID_ARGS`; `NOT_LOSSLESS_JSON`; `INVALID_EVENT`; `LEGACY_EVENT`;
   *   `SURFACE_OP_MISSING` / `SURFACE_OP_FORBIDDEN` and the other surface rejections of
   *   {@linkcode SurfaceManager}. Nothing is committed when it throws.
   */
  append<T extends SessionEventType>(
    type: T,
    data: SessionEventMap[T],
    ...intent: SessionAppendArgs<T>
  ): SessionEvent<T> {
    this.#refuseReentry(type);
    if (typeof type !== "string" || type.length === 0 || !isEventTypeText(type)) {
      throw new HarnessError(
        "INVALID_ARGS",
        "Event type must be a non-empty string of well-formed text without control characters",
      );
    }
    if (type === "session/end-seed") {
      throw new HarnessError(
        "END_SEED_RESERVED",
        "Cannot append session/end-seed: only the session constructor writes it",
      );
    }
    const seq = this.#log.length;
    let given: SurfaceIntent | undefined;
    let ignorable = false;
    if (isSurfaceEventType(type)) given = intent[0] as SurfaceIntent | undefined;
    else if (intent[0] !== undefined) {
      const options = intent[0] as Record<string, unknown>;
      if (typeof options !== "object" || options === null || "surfaceOp" in options || "sourceEventSeqs" in options) {
        throw new HarnessError("SURFACE_OP_FORBIDDEN", `Event type ${type} takes no surface intent`, {
          details: { seq, type },
        });
      }
      if (options.ignorable !== undefined && options.ignorable !== true) {
        throw new HarnessError("INVALID_ARGS", "Option ignorable must be true when given");
      }
      ignorable = options.ignorable === true;
    }
    if (isSurfaceEventType(type) && (typeof given !== "object" || given === null)) {
      throw new HarnessError("SURFACE_OP_MISSING", `Surface event type ${type} needs a surface intent`, {
        details: { seq, type },
      });
    }
    const event = this.#envelope(type, data, given, ignorable);
    validateEventData(type, event.data, seq);
    if (type === "todo/write") validateTodoItems(event.data, seq);
    else if (type === "assistant/chunk") validateChunkUsage(event.data, seq);
    this.#commit(event);
    if (this.#observers.length > 0) this.#publish(event);
    return event as SessionEvent<T>;
  }

  static {
    publishingOf = (session) => session.#publishing;
    headerSeqOf = (session) => session.#requestHeaderSeq;
    appendChunkTo = (session, turn, step, chunk) => session.#appendChunk(turn, step, chunk);
    appendBracketTo = (session, type, turn, step) => session.#appendBracket(type, turn, step);
  }

  // `append(type, { turn, step })` for counting integers (see appendBracket()): the type is a core one without a surface
  // intent and the data the session's own, so what is left of append is the envelope, the type's own rule
  // (validateEventData, as append runs it) and the commit.
  #appendBracket(type: BracketType, turn: number, step: number | undefined): SessionEvent {
    this.#refuseReentry(type);
    // Built from an empty object (no allocation site): a literal's site, once V8 pretenures it, would deoptimise the
    // loop functions this append is inlined into.
    const data: { turn?: number; step?: number } = {};
    data.turn = turn;
    if (step !== undefined) data.step = step;
    Object.freeze(data);
    const event = this.#envelope(type, data, undefined, false, true);
    validateEventData(type, event.data, event.seq);
    this.#commit(event);
    if (this.#observers.length > 0) this.#publish(event);
    return event;
  }

  // `append("assistant/chunk", { turn, step, chunk })`, step for step (see appendChunk()).
  #appendChunk(turn: number, step: number, chunk: unknown): SessionEvent<"assistant/chunk"> {
    this.#refuseReentry("assistant/chunk");
    const seq = this.#log.length;
    const time = this.#time();
    const fast = chunkPayload(turn, step, chunk);
    const data = fast ?? copyLosslessJson({ turn, step, chunk }, "data");
    const event = Object.freeze({ type: "assistant/chunk", seq, time, data }) as unknown as SessionEvent<
      "assistant/chunk"
    >;
    // The fast copy has already checked the chunk's shape (a known type) and
    // that turn and step are integers; what validateEventData adds is that
    // they count from 1.
    if (fast === undefined || turn < 1 || step < 1) {
      validateEventData("assistant/chunk", data, seq);
      validateChunkUsage(data, seq);
    }
    // What #commit does for an event without surface metadata that is not a request header or context.
    commitPlain(this.#surface, event);
    this.#logged(event);
    if (this.#observers.length > 0) this.#publish(event);
    return event;
  }

  #envelope(
    type: string,
    data: unknown,
    intent: SurfaceIntent | undefined,
    ignorable = false,
    own = false,
  ): SessionEvent {
    const time = this.#time();
    // The session's own frozen data as it is; else the exact fast copies first, and anything they do not take,
    // the generic walk copies or rejects. A getter the fast copy read before it gave up is read again by the walk
    // (documented on append): making the fast copy look for accessors first would cost it a property descriptor per
    // key on every append (twice its time on Bun) for data that is plain JSON but for a getter.
    const copied = own
      ? data
      : (type === "assistant/chunk" ? copyChunkData(data) : copyPlainJson(data)) ?? copyLosslessJson(data, "data");
    // An inbox entry's message is appended again when its turn claims it: that append shares the logged copy.
    if (type === "agent/inbox/spliced") vouchInserted(copied);
    const event: Record<string, unknown> = { type, seq: this.#log.length, time, data: copied };
    if (ignorable) event.ignorable = true;
    if (intent !== undefined) {
      const op = intent.surfaceOp;
      if (op !== undefined) event.surfaceOp = copyLosslessJson(op, "surfaceOp");
      if (intent.sourceEventSeqs !== undefined) {
        const seqs = intent.sourceEventSeqs;
        event.sourceEventSeqs = takeSeqList(seqs) ?? copySeqs(seqs) ?? copyLosslessJson(seqs, "sourceEventSeqs");
      }
    }
    return Object.freeze(event) as unknown as SessionEvent;
  }

  // Validate against the surface and commit; throws before any change.
  #commit(event: SessionEvent): void {
    // The header's canonical form is computed before anything changes (the log, the surface, the cached header).
    const header = event.type === "request/header" ? deepFreeze(canonicalHeader(event.data.header)) : undefined;
    this.#surface.commit(event);
    this.#logged(event);
    if (header !== undefined) {
      this.#requestHeader = header;
      this.#requestHeaderSeq = event.seq;
    } else if (event.type === "request/context") this.#requestContext = event.data;
  }

  /** The event is committed: it joins the log, and the cached snapshot is stale. */
  #logged(event: SessionEvent): void {
    this.#log.push(event);
    this.#snapshot = undefined;
  }

  /** Refuse an append made from inside an observer (while an event is being published). */
  #refuseReentry(type: string): void {
    if (this.#publishing) {
      throw new HarnessError("APPEND_REENTERED", `Cannot append ${type} to session ${this.id} from inside an observer`);
    }
  }

  /** The clock's time for a new event; a clock that is not a non-negative safe integer is refused, and -0 is 0. */
  #time(): number {
    const time = this.#now();
    // The same value as the last event's (already checked): that one, boxed once.
    const last = this.#lastTime;
    if (time === last && time !== 0) return last as number; // not for 0, which is also -0's equal
    if (!isTime(time)) {
      throw new HarnessError("INVALID_ARGS", `Session clock returned ${String(time)}, not a non-negative safe integer`);
    }
    this.#lastTime = time;
    // -0 is logged as 0: JSON has no -0, so a stored log reads it back as 0 (and the log is what storage keeps).
    return time === 0 ? 0 : time;
  }

  #reportObserver(error: unknown): void {
    console.error(`[@dsh/harness] an observer of session ${this.id} threw:`, error);
  }

  #publish(event: SessionEvent): void {
    this.#publishing = true;
    // Indexed, not for-of: every event passes here, and the lower tiers run for-of through an array iterator.
    const observers = this.#observers;
    try {
      for (let i = 0; i < observers.length; i++) {
        const observer = observers[i];
        try {
          const result: unknown = observer(event, this);
          if (result !== undefined) containRejection(result, (error) => this.#reportObserver(error));
        } catch (error) {
          this.#reportObserver(error);
        }
      }
    } finally {
      this.#publishing = false;
    }
  }

  /**
   * The model's history: each surface node projected by
   * {@linkcode deriveEventMessage}, nulls dropped.
   *
   * Each node is projected once, when first seen (a call costs O(new nodes)
   * plus the copy of the array); the cache is rebuilt only when the surface's
   * `replaceGeneration` changes. Each call returns a fresh array; the messages
   * in it are shared and deep-frozen (they are the log's own data).
   *
   * @returns A fresh array of frozen messages.
   */
  deriveMessages(): Message[] {
    const surface = this.#surface;
    if (surface.replaceGeneration !== this.#derivedGeneration) {
      this.#derived = [];
      this.#derivedNodes = 0;
      this.#derivedGeneration = surface.replaceGeneration;
    }
    const size = surface.size;
    for (let i = this.#derivedNodes; i < size; i++) {
      const message = deriveEventMessage(this.#log[surface.nodeAt(i)!]);
      if (message !== null) this.#derived.push(message);
    }
    this.#derivedNodes = size;
    return this.#derived.slice();
  }

  /**
   * The per-node projection; the same as the pure {@linkcode deriveEventMessage}.
   *
   * @param event Any event.
   * @returns Its message, or `null`.
   */
  deriveEventMessage(event: SessionEvent): Message | null {
    return deriveEventMessage(event);
  }

  /**
   * The request header in force: the canonical header of the last
   * `request/header` event (folded as events are committed).
   *
   * @returns The header, or `undefined` before the first `request/header`.
   */
  requestHeader(): EpochHeader | undefined {
    return this.#requestHeader;
  }

  /**
   * The latest route record: the data of the last `request/context` event.
   *
   * @returns The record, or `undefined` before the first `request/context`.
   */
  requestContext(): RequestContext | undefined {
    return this.#requestContext;
  }
}
