/**
 * `postgresStorage({ client })`: session logs in PostgreSQL, shared by any
 * number of harness instances on any number of machines.
 *
 * Tables (in `schema`, default `dsh`, created and upgraded by versioned
 * migrations the storage runs itself): `sessions` (one row per session: the
 * header, the next seq, size, update time, and the header's `parentSession`
 * and `origin` as the indexed columns `parent_id` and `origin`, which a
 * trigger fills from the header: a delete finds a session's subagent
 * descendants without reading every header), `session_events` (primary key
 * `(session_id, seq)`, the event as its exact JSON text) and `session_writers`
 * (the writer lease: a token, a fence counter and an expiry on the database's
 * clock). Every operation is one atomic statement, so the client may be a
 * `pg` `Pool`, PGlite or an HTTP serverless driver (see
 * {@linkcode PostgresExecutor}).
 *
 * The writer lease is a row, not an advisory lock (which would tie it to one
 * connection): the holder renews it in the background, and when it stops (the
 * instance died) another instance takes it over once it has expired. Every
 * write presents the lease's token and is refused, writing nothing, once the
 * lease has expired or been taken over (`SESSION_LEASE_LOST`).
 *
 * Longer than the house limit on purpose: the `SessionStorage` methods share
 * the lease state, the executor and the row decoding of one class; the SQL
 * lives in `_statements.ts` and the migrations in `_migrations.ts`.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import { unrefTimer } from "../kernel/_unref_timer.ts";
import type { SessionEvent } from "../session/session_events.ts";
import {
  alreadyExists,
  corrupt,
  invalidArgs,
  notFound,
  repairRequired,
  seqMismatch,
  writerBusy,
} from "../persistence/_errors.ts";
import { validateEnvelope, validateEventData } from "../session/_validate_event.ts";
import { readable, type ReaderVocabulary, readerVocabulary, unknownToReader } from "../persistence/_event_types.ts";
import { makeHeader, parseHeader, validateSessionId } from "../persistence/_header.ts";
import { checkBatchContent, validateBatchShape, validateExpectedSeq } from "../persistence/_validate_batch.ts";
import { repairReport, repairStoredLog } from "../persistence/_check_stored_log.ts";
import { subagentDescendants } from "../persistence/_delete_tree.ts";
import type {
  LoadedSession,
  NewSessionHeader,
  SessionHeader,
  SessionStat,
  SessionStorage,
  SessionWriter,
  StorageAccessOptions,
  StorageAppendOptions,
  StorageAppendResult,
  StorageCreateOptions,
  StorageFollowOptions,
} from "../persistence/session_storage.ts";
import { migrate } from "./_migrations.ts";
import { LOAD_PAGE_EVENTS, PAGE_BYTES, type Statements, statements } from "./_statements.ts";
import { type PostgresClient, type PostgresExecutor, toPostgresExecutor } from "./postgres_executor.ts";
import { lifeOf, PostgresTail, readFailed } from "./_tail.ts";
import { deadline } from "./_deadline.ts";

/** Options of {@linkcode postgresStorage}. */
export interface PostgresStorageOptions {
  /** A `pg` `Pool`, a PGlite instance, a serverless driver's client, or a {@linkcode PostgresExecutor}. */
  readonly client: PostgresClient | PostgresExecutor;
  /**
   * The schema holding the tables: lower-case letters, digits and `_`, at most 40 characters.
   *
   * @default {"dsh"}
   */
  readonly schema?: string;
  /**
   * How long a writer lease lasts without renewal, in milliseconds. The
   * holder renews it every third of this; another instance can take the
   * session over this long after the holder stopped.
   *
   * @default {30000}
   */
  readonly leaseMs?: number;
  /**
   * How often a live tail reads even without a notification, in milliseconds
   * (the only way to follow when the client cannot `LISTEN`).
   *
   * @default {1000}
   */
  readonly pollMs?: number;
  /**
   * How long a statement may go unanswered before its call fails, in
   * milliseconds: `SESSION_WRITE_FAILED` for writes, `SESSION_READ_FAILED` for
   * reads (with a silent network partition a driver may wait for ever). The
   * statement may still complete on the server; the next append of the session
   * finds out. Migrations and lease renewals have deadlines of their own (a
   * renewal waits at most until the next one is due).
   *
   * @default {60000}
   */
  readonly timeoutMs?: number;
  /**
   * Makes this a strict reader: it loads the core event types, these, and any
   * event marked `ignorable: true`, and refuses any other type with
   * `SESSION_UNKNOWN_EVENT_TYPE`. Without it every well-formed event is read.
   * Appends never check types: whatever the session accepted is persisted.
   */
  readonly eventTypes?: Iterable<string>;
  /**
   * The clock used for `createdAt` and `updatedAt` (leases use the database's clock).
   *
   * @default {Date.now}
   */
  readonly now?: () => number;
  /**
   * Makes lease tokens and the ids of synthetic repair messages.
   *
   * @default {() => crypto.randomUUID()}
   */
  readonly newId?: () => string;
}

/** A held writer lease of {@linkcode postgresStorage}. */
export interface PostgresSessionWriter extends SessionWriter {
  /** The fence counter of the session's lease row when this lease was taken (grows with every take-over). */
  readonly fence: number;
  /**
   * `true` once a renewal found the lease expired or taken over, or once no
   * renewal has been answered for `leaseMs` (measured from when the last
   * answered one was sent: the lease may have expired on the server); every
   * write with it is then refused with `SESSION_LEASE_LOST`.
   */
  readonly lost: boolean;
}

/**
 * A {@linkcode SessionStorage} on PostgreSQL, with live tails and an explicit
 * close.
 */
export interface PostgresSessionStorage extends SessionStorage, AsyncDisposable {
  /** The schema holding the tables. */
  readonly schema: string;
  /** Run the schema migrations now (they also run before the first operation). */
  migrate(): Promise<void>;
  /**
   * The headers of the stored subagent descendants of a session (see
   * `SessionStorage.listSubagentDescendants`), found level by level down the
   * index on the `parent_id` column: no other session's header is read.
   */
  listSubagentDescendants(sessionId: string): Promise<SessionHeader[]>;
  /**
   * Follow a session's log from `fromSeq`: every stored event in order, then
   * each new one as another instance appends it (LISTEN/NOTIFY with a catch-up
   * read by seq, so nothing is missed between reading and listening; polling
   * when the client cannot listen). Ends when `signal` aborts or the session
   * is deleted, and when the log is another life than `incarnation` (when given).
   *
   * @throws {HarnessError} `SESSION_NOT_FOUND` when the session does not exist at the start (and no `incarnation`
   *   was given: then the iteration ends).
   */
  follow(sessionId: string, options?: StorageFollowOptions): AsyncIterable<SessionEvent>;
  /** Stop renewing held leases and listening; the client itself stays open (the caller owns it). */
  close(): Promise<void>;
}

/** Options the tests use: a small page budget exercises paging with small events. */
interface InternalOptions extends PostgresStorageOptions {
  /** The byte budget of one page read (see PAGE_BYTES). */
  readonly pageBytes?: number;
}

/** How many times a load starts again when the session is deleted and created again while it is read. */
const LOAD_ATTEMPTS = 3;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,39}$/;

function num(value: unknown): number {
  return typeof value === "number" ? value : Number(value);
}

function leaseLost(sessionId: string, action: string): HarnessError {
  return new HarnessError(
    "SESSION_LEASE_LOST",
    `The writer lease of session ${JSON.stringify(sessionId)} expired or was taken over: cannot ${action}`,
    { details: { sessionId, action } },
  );
}

function writeFailed(sessionId: string, action: string, cause: unknown): HarnessError {
  if (HarnessError.isInstance(cause)) return cause;
  // Not "refused": a connection lost after the commit fails the call too (the next write finds the outcome).
  return new HarnessError(
    "SESSION_WRITE_FAILED",
    `Writing to PostgreSQL failed (${action}, session ${JSON.stringify(sessionId)}): ${
      (cause as Error)?.message ?? String(cause)
    }`,
    { cause, details: { sessionId, action } },
  );
}

/** The UTF-8 length of a text, without encoding it. */
function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 2; // four bytes for the pair's two code units
        i++;
      } else bytes += 2;
    } else bytes += 2;
  }
  return bytes;
}

/** Milliseconds on a clock that never goes back (leases are timed on it, not on the wall clock). */
const monotonic = (): number => performance.now();

class PgWriter implements PostgresSessionWriter {
  readonly sessionId: string;
  readonly token: string;
  readonly fence: number;
  #released = false;
  #lost = false;
  #timer: ReturnType<typeof setInterval> | undefined;
  readonly #storage: PgStorage;
  readonly #leaseMs: number;
  readonly #renewEveryMs: number;
  // The lease is surely held until then (monotonic ms): the last answered renewal's send time plus the lease.
  #heldUntil: number;
  #renewing = false;

  constructor(storage: PgStorage, sessionId: string, token: string, fence: number, leaseMs: number, sentAt: number) {
    this.#storage = storage;
    this.sessionId = sessionId;
    this.token = token;
    this.fence = fence;
    this.#leaseMs = leaseMs;
    this.#heldUntil = sentAt + leaseMs;
    this.#renewEveryMs = Math.max(10, leaseMs / 3);
    this.#timer = setInterval(() => this.#renew(), this.#renewEveryMs);
    unrefTimer(this.#timer);
  }

  get released(): boolean {
    return this.#released;
  }

  get lost(): boolean {
    if (!this.#lost && !this.#released && monotonic() >= this.#heldUntil) this.markLost();
    return this.#lost;
  }

  // One renewal at a time, each waiting at most until the next is due: a stalled connection does not pile renewals
  // up, and the lease is given up (lost) once none has been answered for a whole lease.
  #renew(): void {
    if (this.lost || this.#renewing) return;
    this.#renewing = true;
    const sentAt = monotonic();
    deadline(this.#storage.renew(this), this.#renewEveryMs).then((held) => {
      if (!held) this.markLost();
      else this.#heldUntil = Math.max(this.#heldUntil, sentAt + this.#leaseMs);
    }, () => {/* unanswered or failed: retried at the next tick, until the lease is past */}).finally(() => {
      this.#renewing = false;
    });
  }

  markLost(): void {
    this.#lost = true;
    this.#stop();
  }

  #stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    this.#stop();
    this.#storage.forget(this);
    if (!this.#lost) await this.#storage.releaseLease(this);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}

class PgStorage implements PostgresSessionStorage {
  readonly kind = "postgres";
  readonly schema: string;
  readonly #db: PostgresExecutor;
  readonly #sql: Statements;
  readonly #known: ReaderVocabulary;
  readonly #now: () => number;
  readonly #newId: () => string;
  readonly #leaseMs: number;
  readonly #timeoutMs: number;
  readonly #pageBytes: number;
  readonly #writers = new Set<PgWriter>();
  readonly #tail: PostgresTail;
  #ready: Promise<void> | undefined;

  constructor(options: InternalOptions) {
    if (typeof options !== "object" || options === null) throw invalidArgs("postgresStorage needs { client }");
    this.schema = options.schema ?? "dsh";
    if (typeof this.schema !== "string" || !SCHEMA_NAME.test(this.schema)) {
      throw invalidArgs(
        `The schema name ${JSON.stringify(this.schema)} is refused: use lower-case letters, digits and _ (at most 40)`,
      );
    }
    this.#leaseMs = options.leaseMs ?? 30_000;
    if (!Number.isFinite(this.#leaseMs) || this.#leaseMs < 50) throw invalidArgs("leaseMs must be at least 50");
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    if (!Number.isFinite(this.#timeoutMs) || this.#timeoutMs < 1 || this.#timeoutMs > 2 ** 31 - 1) {
      throw invalidArgs("timeoutMs must be a number of milliseconds from 1 to 2^31 - 1");
    }
    const pollMs = options.pollMs ?? 1000;
    if (!Number.isFinite(pollMs) || pollMs < 1) throw invalidArgs("pollMs must be a positive number");
    this.#pageBytes = options.pageBytes ?? PAGE_BYTES;
    if (!Number.isSafeInteger(this.#pageBytes) || this.#pageBytes < 1) throw invalidArgs("pageBytes must be positive");
    this.#db = toPostgresExecutor(options.client);
    this.#sql = statements(this.schema);
    this.#known = readerVocabulary(options.eventTypes);
    this.#now = options.now ?? Date.now;
    this.#newId = options.newId ?? (() => crypto.randomUUID());
    this.#tail = new PostgresTail(
      this.#db,
      this.#sql,
      { pollMs, timeoutMs: this.#timeoutMs, pageBytes: this.#pageBytes },
      () => this.#ensure(),
    );
  }

  get #file(): string {
    return `postgres:${this.schema}.session_events`;
  }

  migrate(): Promise<void> {
    this.#ready = undefined;
    return this.#ensure();
  }

  #ensure(): Promise<void> {
    this.#ready ??= migrate(this.#db, this.schema).catch((error) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  async #query(text: string, params: readonly unknown[], name?: string) {
    await this.#ensure();
    return await deadline(this.#db.query(text, params, name === undefined ? undefined : { name }), this.#timeoutMs);
  }

  /** A read: a driver error (the server is down, the connection dropped) is `SESSION_READ_FAILED`. */
  async #select(text: string, params: readonly unknown[], what: string, sessionId?: string) {
    try {
      return await this.#query(text, params);
    } catch (error) {
      throw readFailed(what, sessionId, error);
    }
  }

  #token(sessionId: string, writer: SessionWriter | undefined, action: string): string | null {
    if (writer === undefined) return null;
    if (!(writer instanceof PgWriter) || writer.sessionId !== sessionId) {
      throw invalidArgs(`The writer given is not a lease of session ${JSON.stringify(sessionId)} from this storage`);
    }
    if (writer.released) throw writerBusy(sessionId, `${action} with a released lease`);
    if (writer.lost) throw leaseLost(sessionId, action);
    return writer.token;
  }

  #refused(sessionId: string, writer: SessionWriter | undefined, action: string): HarnessError {
    if (writer === undefined) return writerBusy(sessionId, action);
    (writer as PgWriter).markLost();
    return leaseLost(sessionId, action);
  }

  #encode(events: readonly SessionEvent[]): { types: string[]; texts: string[]; bytes: number } {
    const types: string[] = [];
    const texts: string[] = [];
    let bytes = 0;
    for (const event of events) {
      const text = JSON.stringify(event);
      types.push(event.type);
      texts.push(text);
      bytes += utf8Length(text) + 1;
    }
    return { types, texts, bytes };
  }

  create(init: NewSessionHeader, options: StorageCreateOptions = {}): Promise<SessionHeader> {
    const header = makeHeader(init, this.#now);
    const events = options.events ?? [];
    validateBatchShape(events);
    return (async () => {
      const token = this.#token(header.id, options.writer, "create it");
      checkBatchContent(header.id, events, 0);
      const { types, texts, bytes } = this.#encode(events);
      const headerText = JSON.stringify({ type: "session", ...header });
      let rows;
      try {
        rows = await this.#query(this.#sql.create, [
          header.id,
          headerText,
          token,
          types,
          texts,
          this.#now(),
          bytes + headerText.length + 1,
          header.createdAt,
        ]);
      } catch (error) {
        throw writeFailed(header.id, "create", error);
      }
      const row = rows[0];
      if (row.lease_ok !== true) throw this.#refused(header.id, options.writer, "create it");
      if (row.applied === null || row.applied === undefined) throw alreadyExists(header.id);
      return header;
    })();
  }

  append(
    sessionId: string,
    events: readonly SessionEvent[],
    options: StorageAppendOptions,
  ): Promise<StorageAppendResult> {
    validateSessionId(sessionId);
    if (typeof options !== "object" || options === null) throw invalidArgs("append needs { expectedSeq }");
    validateExpectedSeq(options.expectedSeq);
    validateBatchShape(events);
    return (async () => {
      const token = this.#token(sessionId, options.writer, "append");
      checkBatchContent(sessionId, events, options.expectedSeq);
      return await this.#append(sessionId, events, options.expectedSeq, token, options.writer, "append");
    })();
  }

  async #append(
    sessionId: string,
    events: readonly SessionEvent[],
    expectedSeq: number,
    token: string | null,
    writer: SessionWriter | undefined,
    action: string,
  ): Promise<StorageAppendResult> {
    const { types, texts, bytes } = this.#encode(events);
    let rows;
    try {
      rows = await this.#query(
        this.#sql.append,
        [sessionId, expectedSeq, token, types, texts, this.#now(), bytes],
        this.#sql.appendName,
      );
    } catch (error) {
      throw writeFailed(sessionId, action, error);
    }
    const row = rows[0];
    if (row.applied !== null && row.applied !== undefined) return { nextSeq: num(row.applied) };
    if (row.stored === null || row.stored === undefined) throw notFound(sessionId);
    if (row.lease_ok !== true) throw this.#refused(sessionId, writer, action);
    throw seqMismatch(sessionId, expectedSeq, num(row.stored));
  }

  async #readLog(sessionId: string): Promise<{ header: SessionHeader; events: SessionEvent[] }> {
    for (let attempt = 1;; attempt++) {
      const log = await this.#readPages(sessionId);
      if (log !== undefined) return log;
      if (attempt === LOAD_ATTEMPTS) {
        throw new HarnessError(
          "SESSION_READ_FAILED",
          `Session ${JSON.stringify(sessionId)} was deleted and created again while it was loaded, ${attempt} times`,
          { details: { sessionId, what: "load" } },
        );
      }
    }
  }

  // The log as of its first page: later pages stop at that page's next_seq, and `undefined` (read it again) when
  // one of them finds the session gone or in another life (deleted and created again meanwhile).
  async #readPages(sessionId: string): Promise<{ header: SessionHeader; events: SessionEvent[] } | undefined> {
    let first: { header: SessionHeader; nextSeq: number; life: string } | undefined;
    const events: SessionEvent[] = [];
    let from = 0;
    for (;;) {
      const rows = await this.#select(
        this.#sql.page,
        [sessionId, from, first?.nextSeq ?? null, LOAD_PAGE_EVENTS, this.#pageBytes],
        "load",
        sessionId,
      );
      if (rows.length === 0) {
        if (first === undefined) throw notFound(sessionId);
        return undefined;
      }
      const row = rows[0];
      if (first === undefined) {
        const header = parseHeader(this.#parse(String(row.header), 1), this.#file, sessionId);
        first = { header, nextSeq: num(row.next_seq), life: lifeOf(row.header) };
      } else if (lifeOf(row.header) !== first.life) return undefined;
      // No event left below the bound (a missing row is found by the count check below).
      if (row.events === null || row.events === undefined) break;
      const to = num(row.last_seq) + 1;
      let page: SessionEvent[];
      try {
        page = JSON.parse(`[${row.events}]`);
      } catch {
        page = await this.#readRows(sessionId, from, to);
      }
      for (const event of page) events.push(event); // not push(...page): a spread of 100k items overflows the stack
      from = to;
      if (from >= first.nextSeq) break;
    }
    const { header, nextSeq } = first;
    if (events.length !== nextSeq) {
      throw corrupt(this.#file, nextSeq + 2, `the session has ${events.length} events where next_seq is ${nextSeq}`, {
        sessionId,
      });
    }
    for (let i = 0; i < events.length; i++) {
      const event = events[i];
      if (typeof event !== "object" || event === null || event.seq !== i || typeof event.type !== "string") {
        throw corrupt(this.#file, i + 2, `the event at position ${i} is not an event with seq ${i}`, { sessionId });
      }
      try {
        validateEnvelope(event, i);
        validateEventData(event.type, event.data, i);
      } catch (error) {
        throw corrupt(this.#file, i + 2, `event ${i} of session ${JSON.stringify(sessionId)} is malformed`, {
          sessionId,
          seq: i,
        }, error);
      }
      if (!readable(this.#known, event.type, event.ignorable)) throw unknownToReader(sessionId, i, event.type);
    }
    return { header, events };
  }

  #parse(text: string, line: number): unknown {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw corrupt(this.#file, line, "the record is not JSON", {}, error);
    }
  }

  async #readRows(sessionId: string, from: number, to: number): Promise<SessionEvent[]> {
    const rows = await this.#select(this.#sql.loadRows, [sessionId, from, to], "load", sessionId);
    return rows.map((row) => this.#parse(String(row.event), num(row.seq) + 2) as SessionEvent);
  }

  async #read(sessionId: string, commit: boolean, writer: SessionWriter | undefined): Promise<LoadedSession> {
    const token = commit ? this.#token(sessionId, writer, "repair it") : null;
    const { header, events } = await this.#readLog(sessionId);
    const repaired = repairStoredLog(sessionId, `${JSON.stringify(sessionId)} (${this.#file})`, events, this.#newId);
    const synthetic = repaired.syntheticEvents;
    const needsRepair = synthetic.length > 0;
    if (commit && needsRepair && writer === undefined) {
      // Only the lease holder writes a repair (a live lease: its holder's log is not a crash, it is running).
      const rows = await this.#select(this.#sql.leaseHeld, [sessionId], "load", sessionId);
      throw rows[0]?.held === true ? writerBusy(sessionId, "repair it") : repairRequired(sessionId);
    }
    if (commit && needsRepair) {
      await this.#append(sessionId, synthetic, events.length, token, writer, "repair it");
    }
    return {
      header,
      events: [...events, ...synthetic],
      repair: repairReport({ needsRepair, commit, syntheticEvents: synthetic, closedTurn: repaired.closedTurn }),
    };
  }

  load(sessionId: string, options: StorageAccessOptions = {}): Promise<LoadedSession> {
    validateSessionId(sessionId);
    return this.#read(sessionId, true, options.writer);
  }

  inspect(sessionId: string): Promise<LoadedSession> {
    validateSessionId(sessionId);
    return this.#read(sessionId, false, undefined);
  }

  async list(): Promise<SessionHeader[]> {
    const rows = await this.#select(this.#sql.list, [], "list");
    const headers: SessionHeader[] = [];
    for (const row of rows) {
      try {
        headers.push(parseHeader(JSON.parse(String(row.header)), this.#file, undefined));
      } catch {
        // Unreadable here (a newer format, a damaged header): load() says why.
      }
    }
    return headers.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * The headers of the stored subagent descendants of a session, found down the index on `parent_id` (no other
   * header is read); see `SessionStorage.listSubagentDescendants`.
   */
  listSubagentDescendants(sessionId: string): Promise<SessionHeader[]> {
    validateSessionId(sessionId);
    return (async () => {
      const rows = await this.#select(this.#sql.descendants, [sessionId], "list descendants", sessionId);
      const headers = new Map<string, SessionHeader>();
      for (const row of rows) {
        try {
          const header = parseHeader(JSON.parse(String(row.header)), this.#file, undefined);
          headers.set(header.id, header);
        } catch {
          // Unreadable here, as in list(): neither it nor what lies below it counts.
        }
      }
      // A session reached only through an unreadable header is left out, as it is from list().
      return subagentDescendants(sessionId, headers.values()).map((id) => headers.get(id)!);
    })();
  }

  stat(sessionId: string): Promise<SessionStat | undefined> {
    validateSessionId(sessionId);
    return (async () => {
      const rows = await this.#select(this.#sql.stat, [sessionId], "stat", sessionId);
      if (rows.length === 0) return undefined;
      const row = rows[0];
      return {
        header: parseHeader(this.#parse(String(row.header), 1), this.#file, sessionId),
        nextSeq: num(row.next_seq),
        size: num(row.size),
        updatedAt: num(row.updated_at),
        torn: false,
      };
    })();
  }

  delete(sessionId: string, options: StorageAccessOptions = {}): Promise<boolean> {
    validateSessionId(sessionId);
    return (async () => {
      const token = this.#token(sessionId, options.writer, "delete it");
      let rows;
      try {
        rows = await this.#query(this.#sql.delete, [sessionId, token]);
      } catch (error) {
        throw writeFailed(sessionId, "delete", error);
      }
      const outcome = rows[0]?.outcome;
      if (outcome === "busy") throw this.#refused(sessionId, options.writer, "delete it");
      return outcome === "deleted";
    })();
  }

  acquireWriter(sessionId: string): Promise<SessionWriter> {
    validateSessionId(sessionId);
    return (async () => {
      const token = this.#newId();
      await this.#ensure(); // the lease is timed from when the statement is sent, not from before the migrations
      const sentAt = monotonic();
      let rows;
      try {
        rows = await this.#query(this.#sql.acquire, [sessionId, token, this.#leaseMs]);
      } catch (error) {
        throw writeFailed(sessionId, "acquire the writer lease", error);
      }
      if (rows.length === 0) throw writerBusy(sessionId, "acquire the writer lease");
      const writer = new PgWriter(this, sessionId, token, num(rows[0].fence), this.#leaseMs, sentAt);
      this.#writers.add(writer);
      return writer;
    })();
  }

  /** Extend a lease; `false` when it expired or was taken over. */
  async renew(writer: PgWriter): Promise<boolean> {
    const rows = await this.#db.query(this.#sql.renew, [writer.sessionId, writer.token, this.#leaseMs]);
    return rows.length > 0;
  }

  async releaseLease(writer: PgWriter): Promise<void> {
    try {
      await deadline(this.#db.query(this.#sql.release, [writer.sessionId, writer.token]), this.#timeoutMs);
    } catch (error) {
      throw writeFailed(writer.sessionId, "release the writer lease", error);
    }
  }

  forget(writer: PgWriter): void {
    this.#writers.delete(writer);
  }

  follow(sessionId: string, options: StorageFollowOptions = {}): AsyncIterable<SessionEvent> {
    validateSessionId(sessionId);
    const fromSeq = options.fromSeq ?? 0;
    if (!Number.isSafeInteger(fromSeq) || fromSeq < 0) throw invalidArgs("fromSeq must be a non-negative integer");
    const incarnation = options.incarnation;
    if (incarnation !== undefined && typeof incarnation !== "string") throw invalidArgs("incarnation must be a string");
    return this.#tail.follow(sessionId, fromSeq, options.signal, this.#file, incarnation);
  }

  async close(): Promise<void> {
    for (const writer of [...this.#writers]) writer.markLost();
    this.#writers.clear();
    await this.#tail.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * Keep session logs in PostgreSQL; the tables are created on first use.
 *
 * @param options The client (a `pg` `Pool`, PGlite, a serverless driver), schema, lease and poll times.
 * @returns A {@linkcode PostgresSessionStorage}; `close()` it before ending the client.
 *
 * @example With PGlite (embedded PostgreSQL, no server)
 * ```ts
 * import { PGlite } from "@electric-sql/pglite";
 * import { postgresStorage } from "@dsh/harness/postgres";
 * import assert from "node:assert/strict";
 *
 * const db = new PGlite();
 * const storage = postgresStorage({ client: db });
 * await storage.create({ id: "s1", createdAt: 1 });
 * await storage.append("s1", [{ type: "todo/write", seq: 0, time: 2, data: { todos: [] } }], { expectedSeq: 0 });
 * assert.equal((await storage.load("s1")).events.length, 1);
 * await storage.close();
 * await db.close();
 * ```
 */
export function postgresStorage(options: PostgresStorageOptions): PostgresSessionStorage {
  return new PgStorage(options);
}
