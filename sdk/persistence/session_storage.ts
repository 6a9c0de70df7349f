/**
 * The storage seam: how a session log is made durable.
 *
 * A {@linkcode SessionStorage} keeps, per session id, one header (storage
 * metadata that never enters the log) and an append-only list of
 * {@linkcode SessionEvent}s whose `seq` equals their position. It knows nothing
 * of the loop: the persistence plugin batches `session/event` traffic into
 * `append` calls and resume reads the log back with `load`.
 *
 * Contract:
 * - `append(id, events, { expectedSeq })` is all-or-nothing and resolves only
 *   once the batch is durable. The batch must start at `expectedSeq`, which
 *   must equal the stored next seq, and be contiguous; anything else rejects
 *   with `SESSION_SEQ_MISMATCH` and writes nothing.
 * - One writer per session: `acquireWriter(id)` returns a lease; while it is
 *   held, a second `acquireWriter` and any `append`, `load` (when it would
 *   repair) or `delete` not presenting the lease reject with
 *   `SESSION_WRITER_BUSY`. Without any lease, appends are accepted (scripts).
 * - `load(id, { writer })` returns the header and the log, crash-repaired: a
 *   torn tail is dropped, and an open final turn and an unfinished compaction
 *   are closed (see `repairSessionLog`); the repair is written back.
 *   `inspect(id)` does the same in memory only. Only the lease holder writes a
 *   repair: a `load` that would repair and presents no lease writes nothing
 *   and is refused, with `SESSION_WRITER_BUSY` while another writer holds the
 *   lease (a live session is never cut or closed under its writer) and with
 *   `SESSION_REPAIR_REQUIRED` otherwise (take the lease, then load under it, as
 *   `harness.resumeAgent` does; two loaders repairing at once would cut and
 *   append over each other). A `load` that needs no repair needs no lease.
 * - A log written by a newer format version is refused before anything else
 *   (`SESSION_FORMAT_UNSUPPORTED`); a defect followed by committed records is
 *   corruption (`SESSION_CORRUPT`, naming file and line).
 * - A log whose structure is broken is refused by `load` and `inspect` as
 *   `SESSION_CORRUPT` (naming the invariant and its seq, nothing written):
 *   the `checkInvariants` violations after crash repair, except the loop's
 *   conventions `TURN_NUMBER`, `STEP_NUMBER` and `EVENT_OUTSIDE_TURN` (a
 *   script may write bookkeeping events between turns), the compaction
 *   brackets' `COMPACTION_*`, and the tool call/result pairing codes
 *   (`TOOL_CALL_WITHOUT_RESULT`, `TOOL_RESULT_DUPLICATE`, `TOOL_CALL_ID_UNKNOWN`,
 *   `TOOL_PAIR_SPLIT`, and on the surface `TOOL_CALL_ID_REPEATED`,
 *   `TOOL_RESULTS_INTERRUPTED`, `TOOL_RESULT_OUT_OF_PLACE`), and an assistant
 *   message against its chunks (`ASSISTANT_MESSAGE_CHUNKS_MISMATCH`, not even
 *   computed on load), checked by `checkInvariants` only. An open final turn
 *   is not a violation: repair closes it.
 * - The event vocabulary is open: an event of any well-formed type (a
 *   plugin's `SessionEventMap` augmentation) is persisted and loaded back with
 *   no registration, its `ignorable` flag kept. Writes are never refused for
 *   their type. A strict reader (one given the plugin types it knows) refuses
 *   on load an event of another type that is not `ignorable`
 *   (`SESSION_UNKNOWN_EVENT_TYPE`).
 *
 * Mapping onto distributed backends (none ships yet; the seam is shaped so
 * they need no change to the loop):
 * - Redis Streams: one stream per session (`session:<id>`), the header in a
 *   hash (`session:<id>:header`, `HSETNX` for `create`). `append` is a Lua
 *   script that checks `XLEN == expectedSeq` and then `XADD`s each event with
 *   the explicit id `0-<seq+1>`, so seq contiguity is enforced by the server;
 *   `load` is `XRANGE`, live tailing `XREAD BLOCK`. The writer lease is
 *   `SET session:<id>:writer <token> NX PX <ttl>` renewed by the holder, and
 *   the append script also checks the token (fencing).
 * - PostgreSQL: `sessions(id primary key, header jsonb)` and
 *   `session_events(session_id, seq, type, time, data jsonb, ignorable,
 *   surface_op, source_event_seqs, primary key (session_id, seq))`. `append`
 *   is one transaction that checks `max(seq) + 1 = expectedSeq` (the primary
 *   key rejects a racing duplicate); `LISTEN/NOTIFY` tails. The lease is a row
 *   in `session_writers` with a token and expiry, or `pg_advisory_lock` on a
 *   hash of the id held by the writer's connection.
 *
 * @module
 */

import type { SessionEvent } from "../session/session_events.ts";
import type { SessionHeader } from "../session/session.ts";

export type { SessionHeader };

/**
 * The header fields a caller gives to {@linkcode SessionStorage.create}; the
 * storage stamps `version` (`SESSION_FORMAT_VERSION`) and defaults `createdAt`
 * to its clock. The stored header is the session's {@linkcode SessionHeader}.
 */
export type NewSessionHeader = Omit<SessionHeader, "version" | "createdAt"> & {
  /** Must be `SESSION_FORMAT_VERSION` when given. */
  readonly version?: number;
  /** Creation time; defaults to the storage's clock. */
  readonly createdAt?: number;
};

/**
 * A held per-session writer lease. While it is held, no other writer can
 * append to, repair or delete the session.
 */
export interface SessionWriter extends AsyncDisposable {
  /** The session the lease is for. */
  readonly sessionId: string;
  /** An opaque token unique to this lease (a fencing token for remote backends). */
  readonly token: string;
  /** Whether {@linkcode SessionWriter.release} has run. */
  readonly released: boolean;
  /** Give the lease up; idempotent. */
  release(): Promise<void>;
}

/** Options of {@linkcode SessionStorage.create}. */
export interface StorageCreateOptions {
  /** Events published together with the header, atomically (a seed); they must start at seq 0. */
  readonly events?: readonly SessionEvent[];
  /** The lease to write under, when one is held for this id. */
  readonly writer?: SessionWriter;
}

/** Options of {@linkcode SessionStorage.append}. */
export interface StorageAppendOptions {
  /** The seq the batch must start at: the stored next seq. */
  readonly expectedSeq: number;
  /** The lease to write under, when one is held for this id. */
  readonly writer?: SessionWriter;
}

/** Options of {@linkcode SessionStorage.follow}. */
export interface StorageFollowOptions {
  /**
   * The first seq to yield.
   *
   * @default {0}
   */
  readonly fromSeq?: number;
  /** Ends the iteration. */
  readonly signal?: AbortSignal;
  /**
   * The life of the log to follow (the `incarnation` of a header the caller
   * read, see `SessionHeader`): the iteration ends, yielding nothing of it,
   * when the stored log is another life (the session was deleted and created
   * again before or while it is followed), and ends at once when the session
   * is not stored. Without it, the life found at the first read is followed.
   */
  readonly incarnation?: string;
}

/** What {@linkcode SessionStorage.append} resolves to. */
export interface StorageAppendResult {
  /** The stored next seq after the batch. */
  readonly nextSeq: number;
}

/** Options of {@linkcode SessionStorage.load}, {@linkcode SessionStorage.inspect} and {@linkcode SessionStorage.delete}. */
export interface StorageAccessOptions {
  /** The lease held for this id, if any; needed to repair or delete a session whose lease is held. */
  readonly writer?: SessionWriter;
}

/** What crash repair changed (or, for `inspect`, would change). */
export interface RepairReport {
  /** `true` when anything was dropped or added. */
  readonly repaired: boolean;
  /** `true` when the repair was written back to storage (`load`), `false` for `inspect`. */
  readonly committed: boolean;
  /** Bytes of a torn tail dropped; 0 when there was none. */
  readonly truncatedBytes: number;
  /** Where the torn tail began, when there was one. */
  readonly tornTail?: {
    /** File (or storage key) holding the torn tail. */
    readonly file: string;
    /** Byte offset where it began (the length the file was cut back to). */
    readonly offset: number;
    /** 1-based logical line (the header is line 1) of the first dropped record. */
    readonly line: number;
  };
  /** The turn that was open and got closed, if any. */
  readonly closedTurn?: number;
  /** The synthetic events appended to close it (error tool results, `step/end`, `turn/end`). */
  readonly syntheticEvents: readonly SessionEvent[];
}

/** A session as read back from storage. */
export interface LoadedSession {
  /** The stored header. */
  readonly header: SessionHeader;
  /** The full log, repaired, with `seq` equal to position. Do not mutate. */
  readonly events: readonly SessionEvent[];
  /** What repair did. */
  readonly repair: RepairReport;
}

/** Cheap facts about a stored session (no full parse). */
export interface SessionStat {
  /** The stored header. */
  readonly header: SessionHeader;
  /** The next seq an append must start at (committed records only; a torn tail does not count). */
  readonly nextSeq: number;
  /** Stored size in bytes (encoded; 0 for storages without bytes). */
  readonly size: number;
  /** Unix epoch milliseconds of the last write. */
  readonly updatedAt: number;
  /**
   * `true` when the tail awaits repair by `load`: a torn record to drop, or a
   * complete last record whose lost newline is to be written (counted in
   * `nextSeq`); an append is refused until then.
   */
  readonly torn: boolean;
}

/**
 * Durable append-only storage of session logs; see the module documentation
 * for the contract and the mapping onto Redis Streams and PostgreSQL.
 *
 * Implementations: `fileStorage(dir)` and `memoryStorage()`. Code written
 * against this interface works with either (and with a remote backend).
 *
 * Error codes: `INVALID_ARGS` (bad arguments), `INVALID_SESSION_ID`,
 * `SESSION_NOT_FOUND`, `SESSION_ALREADY_EXISTS`, `SESSION_SEQ_MISMATCH`,
 * `SESSION_WRITER_BUSY`, `SESSION_REPAIR_REQUIRED` (append to a log with a
 * torn tail, or a `load` without the lease of a log that needs repair), `SESSION_FORMAT_UNSUPPORTED`, `SESSION_CORRUPT`,
 * `SESSION_UNKNOWN_EVENT_TYPE`, `SESSION_WRITE_FAILED` (a write the backend failed: a full disk, no file handle
 * left, a dropped connection; the backend's error as the cause) and `SESSION_READ_FAILED` (a read it failed, likewise).
 * Bad arguments (`INVALID_ARGS`, `INVALID_SESSION_ID`) throw at once; everything else rejects.
 *
 * @example Copying a session between storages, under writer leases
 * ```ts
 * import { memoryStorage, type SessionStorage } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * async function copySession(from: SessionStorage, to: SessionStorage, id: string): Promise<number> {
 *   // The source's lease: nobody appends during the copy, and a crashed tail is repaired (without a lease, `load`
 *   // of such a log throws SESSION_REPAIR_REQUIRED).
 *   await using source = await from.acquireWriter(id);
 *   const { header, events } = await from.load(id, { writer: source });
 *   await using writer = await to.acquireWriter(id);
 *   await to.create(header, { writer });
 *   const { nextSeq } = await to.append(id, events, { expectedSeq: 0, writer });
 *   return nextSeq;
 * }
 *
 * const a = memoryStorage();
 * await a.create({ id: "s", createdAt: 1 });
 * await a.append("s", [{ type: "todo/write", seq: 0, time: 2, data: { todos: [] } }], { expectedSeq: 0 });
 * const b = memoryStorage();
 * assert.equal(await copySession(a, b, "s"), 1);
 * // The copy is the same log: same header, incarnation included.
 * assert.deepEqual((await b.load("s")).header, (await a.load("s")).header);
 * ```
 */
export interface SessionStorage {
  /** A short name of the backend, e.g. `file` or `memory`. */
  readonly kind: string;
  /**
   * Create a session: publish its header (and optional seed events) atomically.
   *
   * @throws {HarnessError} `SESSION_ALREADY_EXISTS` when the id is taken.
   */
  create(header: NewSessionHeader, options?: StorageCreateOptions): Promise<SessionHeader>;
  /**
   * Append a contiguous batch starting at `options.expectedSeq`; resolves once durable.
   *
   * @throws {HarnessError} `SESSION_SEQ_MISMATCH`, `SESSION_NOT_FOUND`, `SESSION_WRITER_BUSY`.
   */
  append(
    sessionId: string,
    events: readonly SessionEvent[],
    options: StorageAppendOptions,
  ): Promise<StorageAppendResult>;
  /**
   * Read a session, repairing a crashed tail and writing the repair back (with `options.writer`, the held lease).
   *
   * @throws {HarnessError} `SESSION_REPAIR_REQUIRED` when the log needs repair and no lease is given;
   *   `SESSION_WRITER_BUSY` when another writer holds the lease.
   */
  load(sessionId: string, options?: StorageAccessOptions): Promise<LoadedSession>;
  /** Read a session, repairing in memory only (nothing is written). */
  inspect(sessionId: string): Promise<LoadedSession>;
  /**
   * The headers of every stored session, oldest first (then by id). Sessions
   * this build cannot read (a newer format, a corrupt header) are left out;
   * `load` says why.
   */
  list(): Promise<SessionHeader[]>;
  /**
   * Optional: the headers of the stored subagent descendants of `sessionId`
   * (sessions whose header has `origin: "subagent"` and names `sessionId` up
   * a `parentSession` chain of such sessions; forks are not descendants), in
   * no particular order, found without reading every stored header
   * (`postgresStorage` implements it with an indexed query). The session
   * itself need not be stored; headers this build cannot read are left out,
   * with what lies below them, as from `list()`. Deleting a session with its
   * descendants (`harness.deleteSession`) uses it when present, `list()`
   * otherwise.
   */
  listSubagentDescendants?(sessionId: string): Promise<SessionHeader[]>;
  /** Cheap facts about one session, or `undefined` when it does not exist. */
  stat(sessionId: string): Promise<SessionStat | undefined>;
  /** Remove a session; resolves to whether it existed. */
  delete(sessionId: string, options?: StorageAccessOptions): Promise<boolean>;
  /**
   * Take the per-session writer lease; the session need not exist yet.
   *
   * @throws {HarnessError} `SESSION_WRITER_BUSY` when another writer holds it.
   */
  acquireWriter(sessionId: string): Promise<SessionWriter>;
  /**
   * Optional: follow a session's log read-only, from `fromSeq`: every stored
   * event in order, then each one appended later by any writer, in any
   * process sharing the storage (`postgresStorage` implements it). Takes no
   * lease. Ends when `signal` aborts or the session is deleted (or is another
   * life than `incarnation`); rejects with `SESSION_NOT_FOUND` when it does
   * not exist at the start (and no `incarnation` was given).
   */
  follow?(sessionId: string, options?: StorageFollowOptions): AsyncIterable<SessionEvent>;
}
