// Internal: the file storage itself, loaded by `fileStorage()` (file_storage.ts) on first use, so that a
// program importing the core does not load the log codecs, zstd and the lease code until it stores a file.
// See file_storage.ts for the layout, format and durability rules.
//
// Longer than the house limit on purpose: the storage class keeps the write protocol (first publish,
// expected-seq append, fsync, rollback, lease checks) in one place, where its ordering can be read top to
// bottom; the codecs, lock, header and repair already live in their own files.

import type { SessionEvent } from "../session/session_events.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import { formatUnsupported, invalidArgs, notFound, repairRequired, seqMismatch, writerBusy } from "./_errors.ts";
import { type ReaderVocabulary, readerVocabulary } from "./_event_types.ts";
import {
  appendAt,
  encodeBatch,
  encodeNewFile,
  type Encoding,
  logFileName,
  parseLogFileName,
  publishNew,
  readHeader,
  readTail,
  truncateTo,
  type ZstdTailMarks,
} from "./_file_log.ts";
import { currentPid, errorCode, fsOps, joinPath, pidNamespace, syncDir } from "./_fs.ts";
import { escapeSessionId, makeHeader, validateSessionId } from "./_header.ts";
import { decodePlainLog, decodeZstdLog } from "./_log_decoder.ts";
import { LOG_FORMAT_VERSION, migrateLog } from "./_log_migrations.ts";
import { checkBatchContent, validateBatchShape, validateExpectedSeq } from "./_validate_batch.ts";
import { createLock, forgetLock, processLeases, readLiveLock, WriterLease } from "./_writer_lease.ts";
import type { FileStorageOptions } from "./file_storage.ts";
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

interface LocatedLog {
  readonly file: string;
  readonly encoding: Encoding;
  /** The format version its name stands for. */
  readonly version: number;
}

interface FileState extends LocatedLog {
  size: number;
  nextSeq: number;
  torn: boolean;
}

const LOCK_NAME = "writer.lock";
/** How many sessions' log states one instance keeps in memory (about half a kilobyte each). */
let MAX_CACHED_LOGS = 1024;

/** For tests: set how many log states an instance keeps; returns what puts the default back. */
export function cachedLogLimitForTests(limit: number): () => void {
  const previous = MAX_CACHED_LOGS;
  MAX_CACHED_LOGS = limit;
  return () => void (MAX_CACHED_LOGS = previous);
}

/** A file or folder that is not there (any more). */
function isGone(error: unknown): boolean {
  return errorCode(error) === "ENOENT" || errorCode(error) === "ENOTDIR";
}

/**
 * What a failed operation rejects with: a failure of the file system that is not one of the storage's own refusals
 * (a `HarnessError`) — too many open files, no permission, an I/O error — as the storage contract's `code`, the
 * error as its cause. They were passed on bare, so `harness.dispose()` rejected with an error that had no code, and
 * the HTTP app answered a moment's shortage of file handles 500 `INTERNAL` instead of 503.
 */
function failed(
  code: "SESSION_READ_FAILED" | "SESSION_WRITE_FAILED",
  what: string,
  sessionId?: string,
): (error: unknown) => never {
  return (error) => {
    if (HarnessError.isInstance(error)) throw error;
    throw new HarnessError(code, `${what} failed (${error instanceof Error ? error.message : String(error)})`, {
      cause: error,
      ...(sessionId !== undefined ? { details: { sessionId } } : {}),
    });
  };
}

/** How a session reads in a message. */
const named = (sessionId: string) => `session ${JSON.stringify(sessionId)}`;

class FileSessionStorage implements SessionStorage {
  readonly kind = "file";
  readonly #root: string;
  readonly #encoding: Encoding;
  readonly #level: number;
  readonly #packChunks: boolean;
  readonly #known: ReaderVocabulary;
  readonly #now: () => number;
  readonly #newId: () => string;
  readonly #states = new Map<string, FileState>();
  readonly #queues = new Map<string, Promise<unknown>>();
  /** Where each zstd file's last complete frame was, so a stat() reads from there on, not the whole file. */
  readonly #tailMarks: ZstdTailMarks = new Map();

  static cachedLogStates(storage: SessionStorage): number {
    if (!(storage instanceof FileSessionStorage)) throw new TypeError("not a file storage of this module");
    return storage.#states.size;
  }

  constructor(dir: string, options: FileStorageOptions) {
    this.#root = dir;
    this.#encoding = options.compression === "zstd" ? "zstd" : "plain";
    this.#level = options.compressionLevel ?? 3;
    this.#packChunks = options.packChunks ?? true;
    this.#known = readerVocabulary(options.eventTypes);
    this.#now = options.now ?? Date.now;
    this.#newId = options.newId ?? (() => crypto.randomUUID());
  }

  #dir(sessionId: string): string {
    validateSessionId(sessionId);
    return joinPath(this.#root, escapeSessionId(sessionId));
  }

  /** Run `fn` after every earlier operation on the same session of this instance. */
  #exclusive<T>(dir: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(dir) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const settled = run.then(() => {}, () => {});
    this.#queues.set(dir, settled);
    settled.then(() => {
      if (this.#queues.get(dir) === settled) this.#queues.delete(dir);
    });
    return run;
  }

  /**
   * The log file of a session: the generation with the highest format version
   * among the session's files, its encoding and version; `undefined` when
   * there is none. A newer version than this build writes is refused.
   */
  async #locate(dir: string): Promise<LocatedLog | undefined> {
    const cached = this.#states.get(dir);
    if (cached !== undefined) return cached;
    let names: string[];
    try {
      names = await fsOps.readdir(dir);
    } catch (error) {
      if (errorCode(error) === "ENOENT" || errorCode(error) === "ENOTDIR") return undefined;
      throw error;
    }
    let best: LocatedLog | undefined;
    for (const name of names.sort()) {
      const parsed = parseLogFileName(name);
      if (parsed === undefined || (best !== undefined && parsed.version <= best.version)) continue;
      best = { file: joinPath(dir, name), ...parsed };
    }
    if (best !== undefined && best.version > LOG_FORMAT_VERSION) {
      throw formatUnsupported(best.file, best.version, LOG_FORMAT_VERSION);
    }
    return best;
  }

  /**
   * Cache what this instance knows of a session's log, the latest last: past {@linkcode MAX_CACHED_LOGS} sessions the
   * least recently cached is forgotten (a reader instance, which holds no lease to give up, loads and stats sessions
   * without end; a forgotten state is read afresh at its next use, as after another instance's write).
   */
  #remember(dir: string, state: FileState): void {
    this.#states.delete(dir);
    this.#states.set(dir, state);
    if (this.#states.size > MAX_CACHED_LOGS) this.#forget(this.#states.keys().next().value!);
  }

  /** Forget what this instance cached about a session's log (its location, size, seq, zstd tail mark). */
  #forget(dir: string): void {
    const cached = this.#states.get(dir);
    this.#states.delete(dir);
    if (cached !== undefined) this.#tailMarks.delete(cached.file);
  }

  /**
   * `read(located)` on the session's log, or `undefined` when there is none.
   * A location this instance cached can be gone: another instance deleted the
   * session, or deleted it and created it again (maybe with another encoding,
   * so under another name). Then the entry is forgotten and the log located
   * again. A log found afresh and gone before it was read was deleted in
   * between: there is none.
   */
  async #onLog<T>(dir: string, read: (located: LocatedLog) => Promise<T>): Promise<[LocatedLog, T] | undefined> {
    for (let cached = this.#states.has(dir);; cached = false) {
      const located = await this.#locate(dir);
      if (located === undefined) return undefined;
      try {
        return [located, await read(located)];
      } catch (error) {
        if (!isGone(error)) throw error;
        this.#forget(dir);
        if (!cached) return undefined;
      }
    }
  }

  /** Decode a whole log file and bring it to the current format. */
  async #decode(located: LocatedLog, sessionId: string | undefined, vocabulary: ReaderVocabulary) {
    const bytes = await fsOps.readFile(located.file);
    const decoded = located.encoding === "plain"
      ? decodePlainLog(bytes, located.file, sessionId, vocabulary)
      : await decodeZstdLog(bytes, located.file, sessionId, vocabulary);
    const migrated = migrateLog({ header: decoded.header, events: decoded.events }, located.version);
    return { ...decoded, header: migrated.header, events: [...migrated.events] };
  }

  /**
   * Publish the current-format successor of an older log beside it (the
   * source is never renamed, rewritten or deleted), holding `events`.
   */
  async #publishSuccessor(
    dir: string,
    located: LocatedLog,
    header: SessionHeader,
    events: readonly SessionEvent[],
  ): Promise<FileState> {
    const bytes = await encodeNewFile(header, events, this.#encodeOptions(located.encoding));
    const name = logFileName(LOG_FORMAT_VERSION, located.encoding);
    await publishNew(dir, name, bytes, header.id, this.#newId());
    const state: FileState = {
      file: joinPath(dir, name),
      encoding: located.encoding,
      version: LOG_FORMAT_VERSION,
      size: bytes.length,
      nextSeq: events.length,
      torn: false,
    };
    this.#remember(dir, state);
    return state;
  }

  /** Check the right to write: the in-process table, then another process's lock file. */
  async #checkWriter(dir: string, sessionId: string, writer: SessionWriter | undefined, action: string) {
    processLeases.check(dir, sessionId, writer, action);
    if (writer === undefined && await readLiveLock(joinPath(dir, LOCK_NAME)) !== undefined) {
      throw writerBusy(sessionId, action);
    }
  }

  #encodeOptions(encoding: Encoding) {
    return { encoding, level: this.#level, packChunks: this.#packChunks };
  }

  create(init: NewSessionHeader, options: StorageCreateOptions = {}): Promise<SessionHeader> {
    const header = makeHeader(init, this.#now);
    const events = options.events ?? [];
    validateBatchShape(events);
    const dir = this.#dir(header.id);
    return this.#exclusive(dir, async () => {
      checkBatchContent(header.id, events, 0);
      await this.#checkWriter(dir, header.id, options.writer, "create it");
      await fsOps.mkdir(dir).catch((error) => {
        throw new HarnessError("SESSION_WRITE_FAILED", `Making the folder ${dir} failed`, {
          cause: error,
          details: { sessionId: header.id, file: dir },
        });
      });
      await syncDir(this.#root);
      if (await this.#locate(dir) !== undefined) {
        throw new HarnessError("SESSION_ALREADY_EXISTS", `Session ${JSON.stringify(header.id)} already exists`, {
          details: { sessionId: header.id },
        });
      }
      const encoding = this.#encoding;
      const bytes = await encodeNewFile(header, events, this.#encodeOptions(encoding));
      const name = logFileName(LOG_FORMAT_VERSION, encoding);
      await publishNew(dir, name, bytes, header.id, this.#newId());
      const file = joinPath(dir, name);
      this.#remember(dir, {
        file,
        encoding,
        version: LOG_FORMAT_VERSION,
        size: bytes.length,
        nextSeq: events.length,
        torn: false,
      });
      return header;
    }).catch(failed("SESSION_WRITE_FAILED", `Creating ${named(header.id)}`, header.id));
  }

  /** The cached state of a session, re-read when the file changed behind this instance's back. */
  async #state(dir: string, sessionId: string): Promise<FileState> {
    let located = await this.#locate(dir);
    if (located === undefined) throw notFound(sessionId);
    const cached = this.#states.get(dir);
    if (cached !== undefined) {
      const size = await fsOps.stat(cached.file).then((stat) => stat.size, (error) => {
        if (isGone(error)) return -1;
        throw error;
      });
      if (size === cached.size) return cached;
      if (size === -1) {
        // Deleted (and maybe created again, under another name) by another instance: located afresh.
        this.#forget(dir);
        located = await this.#locate(dir);
        if (located === undefined) throw notFound(sessionId);
      }
    }
    if (located.version < LOG_FORMAT_VERSION) {
      // Opening an older log for writing publishes its successor; the source stays as it is.
      const decoded = await this.#decode(located, sessionId, undefined);
      if (decoded.validBytes < decoded.totalBytes) {
        return { ...located, size: decoded.validBytes, nextSeq: decoded.events.length, torn: true };
      }
      return await this.#publishSuccessor(dir, located, decoded.header, decoded.events);
    }
    const tail = await readTail(located.file, located.encoding, undefined, this.#tailMarks);
    const state = { ...located, size: tail.size, nextSeq: tail.nextSeq, torn: tail.torn };
    this.#remember(dir, state);
    return state;
  }

  append(
    sessionId: string,
    events: readonly SessionEvent[],
    options: StorageAppendOptions,
  ): Promise<StorageAppendResult> {
    const dir = this.#dir(sessionId);
    if (typeof options !== "object" || options === null) throw invalidArgs("append needs { expectedSeq }");
    validateExpectedSeq(options.expectedSeq);
    validateBatchShape(events);
    return this.#exclusive(dir, async () => {
      checkBatchContent(sessionId, events, options.expectedSeq);
      await this.#checkWriter(dir, sessionId, options.writer, "append");
      const state = await this.#state(dir, sessionId);
      if (state.torn) {
        throw new HarnessError(
          "SESSION_REPAIR_REQUIRED",
          `Session ${JSON.stringify(sessionId)} has a torn tail; load it to repair before appending`,
          { details: { sessionId, file: state.file } },
        );
      }
      if (options.expectedSeq !== state.nextSeq) throw seqMismatch(sessionId, options.expectedSeq, state.nextSeq);
      if (events.length === 0) return { nextSeq: state.nextSeq };
      const bytes = await encodeBatch(events, this.#encodeOptions(state.encoding));
      try {
        state.size = await appendAt(state.file, bytes, state.size, sessionId);
      } catch (error) {
        this.#states.delete(dir);
        throw error;
      }
      state.nextSeq += events.length;
      return { nextSeq: state.nextSeq };
    }).catch(failed("SESSION_WRITE_FAILED", `Appending to ${named(sessionId)}`, sessionId));
  }

  async #read(dir: string, sessionId: string, commit: boolean, writer?: SessionWriter): Promise<LoadedSession> {
    const found = await this.#onLog(dir, (located) => this.#decode(located, sessionId, this.#known));
    if (found === undefined) throw notFound(sessionId);
    const [located, decoded] = found;
    const repaired = repairStoredLog(sessionId, located.file, decoded.events, this.#newId);
    const truncatedBytes = decoded.totalBytes - decoded.validBytes;
    const needsRepair = truncatedBytes > 0 || repaired.syntheticEvents.length > 0 || decoded.missingNewline === true;
    let size = decoded.validBytes;
    if (commit && needsRepair && writer === undefined) {
      // Only the lease holder writes a repair: two loaders repairing at once would cut and append over each other.
      await this.#checkWriter(dir, sessionId, writer, "repair it");
      throw repairRequired(sessionId);
    }
    if (commit && needsRepair && located.version < LOG_FORMAT_VERSION) {
      // An older log is repaired into its successor; the source is never cut or appended to.
      await this.#checkWriter(dir, sessionId, writer, "repair it");
      await this.#publishSuccessor(dir, located, decoded.header, repaired.events);
    } else if (commit && needsRepair) {
      await this.#checkWriter(dir, sessionId, writer, "repair it");
      if (truncatedBytes > 0) await truncateTo(located.file, decoded.validBytes, sessionId);
      if (decoded.missingNewline === true) {
        size = await appendAt(located.file, new TextEncoder().encode("\n"), size, sessionId);
      }
      if (repaired.syntheticEvents.length > 0) {
        const batch = await encodeBatch(repaired.syntheticEvents, this.#encodeOptions(located.encoding));
        size = await appendAt(located.file, batch, size, sessionId);
      }
    }
    if ((commit || !needsRepair) && located.version === LOG_FORMAT_VERSION) {
      this.#remember(dir, { ...located, size, nextSeq: repaired.events.length, torn: false });
    }
    return {
      header: decoded.header,
      events: repaired.events,
      repair: repairReport({
        needsRepair,
        commit,
        truncatedBytes,
        tornTail: decoded.tornLine === undefined
          ? undefined
          : { file: located.file, offset: decoded.validBytes, line: decoded.tornLine },
        closedTurn: repaired.closedTurn,
        syntheticEvents: repaired.syntheticEvents,
      }),
    };
  }

  load(sessionId: string, options: StorageAccessOptions = {}): Promise<LoadedSession> {
    const dir = this.#dir(sessionId);
    return this.#exclusive(dir, () => this.#read(dir, sessionId, true, options.writer))
      .catch(failed("SESSION_READ_FAILED", `Loading ${named(sessionId)}`, sessionId));
  }

  inspect(sessionId: string): Promise<LoadedSession> {
    const dir = this.#dir(sessionId);
    return this.#exclusive(dir, () => this.#read(dir, sessionId, false))
      .catch(failed("SESSION_READ_FAILED", `Reading ${named(sessionId)}`, sessionId));
  }

  list(): Promise<SessionHeader[]> {
    return this.#list().catch(failed("SESSION_READ_FAILED", `Listing the sessions in ${this.#root}`));
  }

  async #list(): Promise<SessionHeader[]> {
    let names: string[];
    try {
      names = await fsOps.readdir(this.#root);
    } catch (error) {
      if (errorCode(error) === "ENOENT") return [];
      throw error;
    }
    const headers: SessionHeader[] = [];
    for (const name of names) {
      if (name.startsWith(".")) continue;
      const dir = joinPath(this.#root, name);
      try {
        const found = await this.#onLog(dir, (located) => readHeader(located.file, located.encoding, undefined));
        if (found === undefined) continue;
        const header = found[1];
        if (escapeSessionId(header.id) === name) headers.push(header);
      } catch (error) {
        // Sessions this build cannot read are not listed; load() reports why.
        if (!HarnessError.isInstance(error)) throw error;
      }
    }
    return headers.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  stat(sessionId: string): Promise<SessionStat | undefined> {
    const dir = this.#dir(sessionId);
    return this.#exclusive(dir, async () => {
      const found = await this.#onLog(dir, async (located): Promise<SessionStat> => {
        const header = await readHeader(located.file, located.encoding, sessionId);
        const tail = await readTail(located.file, located.encoding, undefined, this.#tailMarks);
        if (located.version < LOG_FORMAT_VERSION) {
          // The seqs of an older log are those of its migration.
          const decoded = await this.#decode(located, sessionId, undefined);
          return {
            header: decoded.header,
            nextSeq: decoded.events.length,
            size: tail.size,
            updatedAt: tail.updatedAt,
            torn: tail.torn,
          };
        }
        return { header, nextSeq: tail.nextSeq, size: tail.size, updatedAt: tail.updatedAt, torn: tail.torn };
      });
      return found?.[1];
    }).catch(failed("SESSION_READ_FAILED", `Reading ${named(sessionId)}`, sessionId));
  }

  delete(sessionId: string, options: StorageAccessOptions = {}): Promise<boolean> {
    const dir = this.#dir(sessionId);
    return this.#exclusive(dir, async () => {
      if (options.writer !== undefined) {
        await this.#checkWriter(dir, sessionId, options.writer, "delete it");
        // Located afresh: another instance may have deleted it since this one cached it.
        this.#forget(dir);
        const located = await this.#locate(dir);
        // A folder gone meanwhile has nothing left to remove; one that cannot be listed (no file handle left) fails
        // the delete: it had answered true with the log still there.
        const names = await fsOps.readdir(dir).catch((error) => {
          if (isGone(error)) return [] as string[];
          throw error;
        });
        for (const name of names) if (parseLogFileName(name) !== undefined) await fsOps.rm(joinPath(dir, name));
        return located !== undefined;
      }
      // Without a writer, the delete holds the lease itself until the folder is gone. It had checked that no lock was
      // live and then removed the folder: a writer in another process that took the lease in between (and loaded the
      // log) went unseen, and its lock was removed with the folder. Such a writer is now refused, or this delete is.
      // Nothing stored under that id (no folder, or no root yet): nothing to delete, and no lease or folder made. A
      // folder that could not be read (no file handle left, say) is not taken for none: the delete fails.
      const missing = await fsOps.readdir(dir).then(() => false, (error) => {
        if (isGone(error)) return true;
        throw error;
      });
      if (missing) {
        this.#forget(dir);
        return false;
      }
      let lease: SessionWriter;
      try {
        lease = await this.#acquire(dir, sessionId);
      } catch (error) {
        throw HarnessError.isInstance(error, "SESSION_WRITER_BUSY") ? writerBusy(sessionId, "delete it") : error;
      }
      try {
        this.#forget(dir);
        const located = await this.#locate(dir);
        await fsOps.rm(dir);
        return located !== undefined;
      } finally {
        await lease.release().catch(() => {/* its lock went with the folder */});
      }
    }).catch(failed("SESSION_WRITE_FAILED", `Deleting ${named(sessionId)}`, sessionId));
  }

  acquireWriter(sessionId: string): Promise<SessionWriter> {
    const dir = this.#dir(sessionId);
    return this.#acquire(dir, sessionId);
  }

  async #acquire(dir: string, sessionId: string): Promise<SessionWriter> {
    if (!processLeases.reserve(dir)) throw writerBusy(sessionId, "acquire the writer lease");
    const lockPath = joinPath(dir, LOCK_NAME);
    const token = this.#newId();
    try {
      await fsOps.mkdir(dir);
      const created = await createLock(lockPath, {
        token,
        pid: currentPid(),
        host: await pidNamespace(),
        acquiredAt: this.#now(),
      });
      if (!created) throw writerBusy(sessionId, "acquire the writer lease");
    } catch (error) {
      processLeases.drop(dir);
      if (HarnessError.isInstance(error)) throw error;
      // A full disk, say: no lock was published (createLock removes its temp file).
      throw new HarnessError("SESSION_WRITE_FAILED", `Taking the writer lease of ${lockPath} failed`, {
        cause: error,
        details: { sessionId, file: lockPath },
      });
    }
    const lease: WriterLease = new WriterLease(sessionId, dir, token, async () => {
      processLeases.drop(dir, lease);
      const live = await readLiveLock(lockPath).catch(() => undefined);
      if (live?.token === token) await fsOps.unlink(lockPath).catch(() => {});
      forgetLock(token);
      // What this instance cached about the log serves its writer: once the lease is given up, the next use reads
      // the log's state afresh (another instance may write it next), so a long-lived instance does not keep an entry
      // for every session it ever wrote (after the operations under way on it).
      void this.#exclusive(dir, () => Promise.resolve(this.#forget(dir)));
    });
    processLeases.set(dir, lease);
    return lease;
  }
}

/** How many sessions' log states `storage` (one of {@linkcode openFileStorage}'s) holds in memory: for tests. */
export function cachedLogStates(storage: SessionStorage): number {
  return FileSessionStorage.cachedLogStates(storage);
}

/** The storage over `dir` (arguments already checked by `fileStorage()`). */
export function openFileStorage(dir: string, options: FileStorageOptions): SessionStorage {
  return new FileSessionStorage(dir, options);
}
