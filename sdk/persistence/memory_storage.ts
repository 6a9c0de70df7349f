/**
 * `memoryStorage()`: a {@linkcode SessionStorage} in memory, for tests and
 * serverless warm instances. Same contract as `fileStorage` (seq checks,
 * writer leases, repair of an open final turn on `load`), without bytes:
 * nothing can be torn, and `stat().size` is 0.
 *
 * @module
 */

import { deepFreeze } from "../session/deep_freeze.ts";
import type { SessionEvent } from "../session/session_events.ts";
import { alreadyExists, invalidArgs, notFound, repairRequired, seqMismatch, writerBusy } from "./_errors.ts";
import { readable, type ReaderVocabulary, readerVocabulary, unknownToReader } from "./_event_types.ts";
import { makeHeader, validateSessionId } from "./_header.ts";
import { checkBatchContent, validateBatchShape, validateExpectedSeq } from "./_validate_batch.ts";
import { LeaseTable, WriterLease } from "./_writer_lease.ts";
import { repairReport, repairStoredLog } from "./_check_stored_log.ts";
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
} from "./session_storage.ts";

/** Options of {@linkcode memoryStorage}. */
export interface MemoryStorageOptions {
  /**
   * Make this a strict reader: the plugin event types it understands. A
   * loaded event of a type outside the core vocabulary and this list is then
   * refused (`SESSION_UNKNOWN_EVENT_TYPE`) unless it is marked
   * `ignorable: true`. Writes are never refused for their type.
   *
   * @default {every well-formed event type is read}
   */
  readonly eventTypes?: Iterable<string>;
  /**
   * The clock used for `createdAt` and `updatedAt`.
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

interface StoredSession {
  readonly header: SessionHeader;
  readonly events: SessionEvent[];
  updatedAt: number;
}

/** A detached, frozen copy with exactly what a JSON store would keep. */
function stored<T>(value: T): T {
  return deepFreeze(JSON.parse(JSON.stringify(value)));
}

class MemorySessionStorage implements SessionStorage {
  readonly kind = "memory";
  readonly #sessions = new Map<string, StoredSession>();
  readonly #leases = new LeaseTable();
  readonly #known: ReaderVocabulary;
  readonly #now: () => number;
  readonly #newId: () => string;

  constructor(options: MemoryStorageOptions) {
    this.#known = readerVocabulary(options.eventTypes);
    this.#now = options.now ?? Date.now;
    this.#newId = options.newId ?? (() => crypto.randomUUID());
  }

  #get(sessionId: string): StoredSession {
    validateSessionId(sessionId);
    const session = this.#sessions.get(sessionId);
    if (session === undefined) throw notFound(sessionId);
    return session;
  }

  create(init: NewSessionHeader, options: StorageCreateOptions = {}): Promise<SessionHeader> {
    const header = stored(makeHeader(init, this.#now));
    const events = options.events ?? [];
    validateBatchShape(events);
    try {
      checkBatchContent(header.id, events, 0);
      this.#leases.check(header.id, header.id, options.writer, "create it");
      if (this.#sessions.has(header.id)) throw alreadyExists(header.id);
      this.#sessions.set(header.id, { header, events: events.map(stored), updatedAt: this.#now() });
      return Promise.resolve(header);
    } catch (error) {
      return Promise.reject(error);
    }
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
    try {
      checkBatchContent(sessionId, events, options.expectedSeq);
      const session = this.#get(sessionId);
      this.#leases.check(sessionId, sessionId, options.writer, "append");
      if (options.expectedSeq !== session.events.length) {
        throw seqMismatch(sessionId, options.expectedSeq, session.events.length);
      }
      const copies = events.map(stored);
      for (const event of copies) session.events.push(event);
      if (copies.length > 0) session.updatedAt = this.#now();
      return Promise.resolve({ nextSeq: session.events.length });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #read(sessionId: string, commit: boolean, writer?: SessionWriter): LoadedSession {
    const session = this.#get(sessionId);
    for (const event of session.events) {
      if (!readable(this.#known, event.type, event.ignorable)) throw unknownToReader(sessionId, event.seq, event.type);
    }
    const repaired = repairStoredLog(sessionId, `${JSON.stringify(sessionId)} (memory)`, session.events, this.#newId);
    const synthetic = repaired.syntheticEvents.map(stored);
    const needsRepair = synthetic.length > 0;
    if (commit && needsRepair) {
      this.#leases.check(sessionId, sessionId, writer, "repair it");
      if (writer === undefined) throw repairRequired(sessionId);
      for (const event of synthetic) session.events.push(event);
      session.updatedAt = this.#now();
    }
    return {
      header: session.header,
      events: commit ? session.events.slice() : [...session.events, ...synthetic],
      repair: repairReport({ needsRepair, commit, syntheticEvents: synthetic, closedTurn: repaired.closedTurn }),
    };
  }

  load(sessionId: string, options: StorageAccessOptions = {}): Promise<LoadedSession> {
    validateSessionId(sessionId);
    try {
      return Promise.resolve(this.#read(sessionId, true, options.writer));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  inspect(sessionId: string): Promise<LoadedSession> {
    validateSessionId(sessionId);
    try {
      return Promise.resolve(this.#read(sessionId, false));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  list(): Promise<SessionHeader[]> {
    const headers = [...this.#sessions.values()].map((s) => s.header);
    return Promise.resolve(
      headers.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
    );
  }

  stat(sessionId: string): Promise<SessionStat | undefined> {
    validateSessionId(sessionId);
    try {
      const session = this.#sessions.get(sessionId);
      return Promise.resolve(
        session === undefined ? undefined : {
          header: session.header,
          nextSeq: session.events.length,
          size: 0,
          updatedAt: session.updatedAt,
          torn: false,
        },
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  delete(sessionId: string, options: StorageAccessOptions = {}): Promise<boolean> {
    validateSessionId(sessionId);
    try {
      this.#leases.check(sessionId, sessionId, options.writer, "delete it");
      return Promise.resolve(this.#sessions.delete(sessionId));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  acquireWriter(sessionId: string): Promise<SessionWriter> {
    validateSessionId(sessionId);
    try {
      if (!this.#leases.reserve(sessionId)) throw writerBusy(sessionId, "acquire the writer lease");
      const lease: WriterLease = new WriterLease(sessionId, sessionId, this.#newId(), () => {
        this.#leases.drop(sessionId, lease);
        return Promise.resolve();
      });
      this.#leases.set(sessionId, lease);
      return Promise.resolve(lease);
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

/**
 * Keep sessions in memory, with the same contract as `fileStorage`.
 *
 * @param options Extra event types, clock, ids.
 * @returns A {@linkcode SessionStorage} held by this process.
 *
 * @example Appends are checked against the stored next seq
 * ```ts
 * import { HarnessError, memoryStorage } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const storage = memoryStorage();
 * await storage.create({ id: "s1" });
 * const event = { type: "turn/start", seq: 0, time: 1, data: { turn: 1 } } as const;
 * await storage.append("s1", [event], { expectedSeq: 0 });
 * await assert.rejects(
 *   storage.append("s1", [{ ...event, seq: 0 }], { expectedSeq: 0 }),
 *   (error) => HarnessError.isInstance(error, "SESSION_SEQ_MISMATCH"),
 * );
 * assert.equal((await storage.stat("s1"))?.nextSeq, 1);
 * ```
 */
export function memoryStorage(options: MemoryStorageOptions = {}): SessionStorage {
  return new MemorySessionStorage(options);
}
