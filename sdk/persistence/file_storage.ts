/**
 * `fileStorage(dir)`: the embedded {@linkcode SessionStorage} for scripts and
 * servers, identical on Deno, Bun and Node.
 *
 * Layout: `<dir>/<escaped id>/session.v1.jsonl` (or `session.v1.jsonl.zstd`
 * with `compression: "zstd"`), plus `writer.lock` while a writer lease is held.
 * A lock whose process is gone is taken over, by one process only: under
 * `writer.lock.takeover`, published as the lock is, and only while the lock is
 * still the one judged stale (a stale guard is moved aside and checked before
 * it is removed). A lock naming this process is live while this thread (any
 * copy of the module in it) holds its token, or while its holder renews it
 * (every 10 s; another thread's), and stale once not renewed for 30 s (an
 * earlier process with the same pid, as a restarted container's pid 1: its
 * sessions wait up to 30 s after the restart). A lock of another pid of this
 * pid namespace (a lock names its holder's: on Linux the boot id and the pid
 * namespace) is judged by whether that pid exists; one from another container
 * or machine sharing the directory, by its renewals alone: stale once not
 * renewed for 30 s (their clocks must agree within ~20 s, and a holder whose
 * process stalls that long can lose its lock to another; PostgreSQL's lease
 * fences such a writer, this lock cannot).
 *
 * Format versions (002 §9.3): the version is in the file name, `session.jsonl`
 * for v0 and `session.vN.jsonl` from v1 on. A session directory may hold
 * several generations; the highest version is the session's log. A newer
 * version than this build writes is refused (`SESSION_FORMAT_UNSUPPORTED`); an
 * older one is read through the static chain of adjacent migrations
 * (`_log_migrations.ts`, one module per vN → vN+1), and opening it for writing
 * (an append, or a load that repairs) publishes the current-version successor
 * beside it. A committed generation is never renamed, rewritten or deleted.
 * Ids are escaped (`[a-z0-9_-]` and inner dots kept, every other byte `%XX`);
 * ids with path separators, control characters, `.` or `..` are refused.
 *
 * Records (header schema `SESSION_FORMAT_VERSION`): the first line is the
 * header `{"type":"session","version":1,"id":…,"createdAt":…}`; every other
 * line is one event envelope as JSON, or a packed chunk row (see
 * `packChunkRows`) standing for a run of deltas. Under zstd the same lines are
 * stored as independent zstd frames: one for the header, then one per
 * appended batch, so `zstd -d` yields the plain file and a torn frame never
 * spoils earlier ones.
 *
 * Durability: the first write goes to a temp file that is fsynced and then
 * hard-linked to its name (never overwriting; exclusive create where links
 * are unsupported); each batch is written at the committed length and
 * fsynced before `append` resolves; a failed write is cut back to the
 * previous length. A failure of the file system (a full disk, no file handle
 * left, no permission) rejects as `SESSION_WRITE_FAILED` (writes, a load's
 * repair included) or `SESSION_READ_FAILED` (reads), its error as the cause.
 *
 * The storage itself (`_file_session_storage.ts`) is imported on the first
 * call that needs it: importing the core loads no log codec, zstd or lease
 * code. Bad arguments still throw synchronously, as the storage contract says.
 *
 * @module
 */

import type { SessionEvent } from "../session/session_events.ts";
import { invalidArgs } from "./_errors.ts";
import { makeHeader, validateSessionId } from "./_header.ts";
import { validateBatchShape, validateExpectedSeq } from "./_validate_batch.ts";
import type { StorageFactory } from "../_apply_config.ts";
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

/** Options of {@linkcode fileStorage}. */
export interface FileStorageOptions {
  /**
   * How new sessions are encoded. Existing sessions keep the encoding they were created with.
   *
   * @default {"none"}
   */
  readonly compression?: "none" | "zstd";
  /**
   * The zstd level.
   *
   * @default {3}
   */
  readonly compressionLevel?: number;
  /**
   * Store runs of three or more same-block deltas as packed chunk rows.
   *
   * @default {true}
   */
  readonly packChunks?: boolean;
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
   * The clock used for `createdAt`.
   *
   * @default {Date.now}
   */
  readonly now?: () => number;
  /**
   * Makes lease tokens, temp-file names and the ids of synthetic repair messages.
   *
   * @default {() => crypto.randomUUID()}
   */
  readonly newId?: () => string;
}

/**
 * The storage, loaded on the first call. Before it is loaded each method makes
 * the synchronous argument checks the storage makes (so that bad arguments
 * throw, not reject); calls made while it loads run in call order once it is
 * there; afterwards every call goes straight to it.
 */
class LazyFileStorage implements SessionStorage {
  readonly kind = "file";
  readonly #dir: string;
  readonly #options: FileStorageOptions;
  #storage: SessionStorage | undefined;
  #loading: Promise<SessionStorage> | undefined;

  constructor(dir: string, options: FileStorageOptions) {
    this.#dir = dir;
    this.#options = options;
  }

  #call<T>(check: () => void, call: (storage: SessionStorage) => Promise<T>): Promise<T> {
    if (this.#storage !== undefined) return call(this.#storage);
    check();
    this.#loading ??= import("./_file_session_storage.ts").then(({ openFileStorage }) =>
      this.#storage = openFileStorage(this.#dir, this.#options)
    );
    return this.#loading.then(call);
  }

  create(init: NewSessionHeader, options: StorageCreateOptions = {}): Promise<SessionHeader> {
    return this.#call(() => {
      makeHeader(init, () => 0); // checks only: the storage makes the header with the real clock
      validateBatchShape(options.events ?? []);
    }, (storage) => storage.create(init, options));
  }

  append(
    sessionId: string,
    events: readonly SessionEvent[],
    options: StorageAppendOptions,
  ): Promise<StorageAppendResult> {
    return this.#call(() => {
      validateSessionId(sessionId);
      if (typeof options !== "object" || options === null) throw invalidArgs("append needs { expectedSeq }");
      validateExpectedSeq(options.expectedSeq);
      validateBatchShape(events);
    }, (storage) => storage.append(sessionId, events, options));
  }

  load(sessionId: string, options: StorageAccessOptions = {}): Promise<LoadedSession> {
    return this.#call(() => validateSessionId(sessionId), (storage) => storage.load(sessionId, options));
  }

  inspect(sessionId: string): Promise<LoadedSession> {
    return this.#call(() => validateSessionId(sessionId), (storage) => storage.inspect(sessionId));
  }

  list(): Promise<SessionHeader[]> {
    return this.#call(() => {}, (storage) => storage.list());
  }

  stat(sessionId: string): Promise<SessionStat | undefined> {
    return this.#call(() => validateSessionId(sessionId), (storage) => storage.stat(sessionId));
  }

  delete(sessionId: string, options: StorageAccessOptions = {}): Promise<boolean> {
    return this.#call(() => validateSessionId(sessionId), (storage) => storage.delete(sessionId, options));
  }

  acquireWriter(sessionId: string): Promise<SessionWriter> {
    return this.#call(() => validateSessionId(sessionId), (storage) => storage.acquireWriter(sessionId));
  }
}

/**
 * Store sessions as files under `dir`, one directory per session (see the
 * module documentation for the layout, format and durability rules).
 *
 * @param dir The root directory; created on first write.
 * @param options Compression, chunk packing, extra event types, clock, ids.
 * @returns A {@linkcode SessionStorage} over the directory.
 *
 * @example Write, reload, and repair after a crash
 * ```ts
 * import { fileStorage, type SessionEvent } from "@dsh/harness";
 * import assert from "node:assert/strict";
 * import { mkdtemp, rm } from "node:fs/promises";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 *
 * const dir = await mkdtemp(join(tmpdir(), "sessions-"));
 * const storage = fileStorage(dir, { compression: "zstd" });
 * await storage.create({ id: "s1", createdAt: 0 });
 * await using writer = await storage.acquireWriter("s1");
 * const events: SessionEvent[] = [
 *   { type: "turn/start", seq: 0, time: 1, data: { turn: 1 } },
 *   { type: "step/start", seq: 1, time: 2, data: { turn: 1, step: 1 } },
 * ];
 * await storage.append("s1", events, { expectedSeq: 0, writer });
 *
 * // The process "crashed" mid-turn: loading closes the turn.
 * const loaded = await storage.load("s1", { writer });
 * assert.deepEqual(loaded.events.slice(0, 2), events);
 * assert.deepEqual(loaded.events.map((e) => e.type).slice(2), ["step/end", "turn/end"]);
 * assert.equal(loaded.repair.committed, true);
 * await writer.release();
 * await rm(dir, { recursive: true });
 * ```
 */
export function fileStorage(dir: string, options: FileStorageOptions = {}): SessionStorage {
  if (typeof dir !== "string" || dir === "") throw invalidArgs("fileStorage needs a directory path");
  if (options.compressionLevel !== undefined && !Number.isInteger(options.compressionLevel)) {
    throw invalidArgs(`compressionLevel must be an integer, got ${options.compressionLevel}`);
  }
  return new LazyFileStorage(dir, options);
}

/**
 * The `file` storage factory for `createHarness({ config, storageKinds })`: builds
 * {@linkcode fileStorage} from a configured `{ kind: "file", dir, compression? }`. The results of
 * `loadConfig()` and `resolveConfig()` (`@dsh/harness/config`) carry it already; pass it yourself
 * only with a configuration object you built, so that programs that never store files (an edge
 * worker) do not bundle file storage.
 *
 * @param options Options of every storage it builds (the configured `compression` wins).
 * @returns The factory.
 * @throws {HarnessError} `INVALID_ARGS` (when the factory runs) for a configuration that is not a `file` storage.
 *
 * @example
 * ```ts
 * import { createHarness, fileStorageKind } from "@dsh/harness";
 * import { DEFAULT_CONFIG } from "@dsh/harness/config";
 * import { scriptedAdapter, textResponse } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 * import { mkdtemp, rm } from "node:fs/promises";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 *
 * const dir = await mkdtemp(join(tmpdir(), "sessions-"));
 * const harness = await createHarness({
 *   config: {
 *     ...DEFAULT_CONFIG,
 *     adapters: {},
 *     model: { provider: "scripted", model: "scripted-model" },
 *     storage: { kind: "file", dir },
 *   },
 *   storageKinds: { file: fileStorageKind() },
 *   adapters: [scriptedAdapter([textResponse("hi")])],
 * });
 * await (await harness.createAgent({ id: "s1" })).run("hello");
 * await harness.dispose();
 * assert.deepEqual((await harness.storage!.list()).map((h) => h.id), ["s1"]);
 * await rm(dir, { recursive: true });
 * ```
 */
export function fileStorageKind(options: FileStorageOptions = {}): StorageFactory {
  return ({ config }) => {
    if (config.kind !== "file") throw invalidArgs(`fileStorageKind builds "file" storage, not "${config.kind}"`);
    return fileStorage(config.dir, {
      ...options,
      ...(config.compression !== undefined ? { compression: config.compression } : {}),
    });
  };
}
