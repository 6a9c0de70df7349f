/**
 * Persistence: the storage seam ({@linkcode SessionStorage}), file and memory
 * storage, the stored format (JSONL, packed chunk rows, zstd frames), crash
 * repair of interrupted turns, and `persistencePlugin`, which writes live
 * sessions through the seam.
 *
 * @example Storing and reading back a session
 * ```ts
 * import { memoryStorage } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const storage = memoryStorage();
 * await storage.create({ id: "s1", createdAt: 0 });
 * await storage.append("s1", [{ type: "todo/write", seq: 0, time: 1, data: { todos: [] } }], { expectedSeq: 0 });
 * const { events, repair } = await storage.load("s1");
 * assert.equal(events.length, 1);
 * assert.equal(repair.repaired, false);
 * ```
 *
 * @module
 */

export type {
  LoadedSession,
  NewSessionHeader,
  RepairReport,
  SessionStat,
  SessionStorage,
  SessionWriter,
  StorageAccessOptions,
  StorageAppendOptions,
  StorageAppendResult,
  StorageCreateOptions,
  StorageFollowOptions,
} from "./session_storage.ts";
export { fileStorage, fileStorageKind } from "./file_storage.ts";
export type { FileStorageOptions } from "./file_storage.ts";
export { memoryStorage } from "./memory_storage.ts";
export type { MemoryStorageOptions } from "./memory_storage.ts";
export { repairSessionLog } from "./repair_session_log.ts";
export { type PersistenceOptions, persistencePlugin } from "./persistence_plugin.ts";
export type { RepairSessionLogOptions, RepairSessionLogResult } from "./repair_session_log.ts";
export { expandChunkRow, isChunkRow, MIN_CHUNK_RUN, packChunkRows, unpackChunkRows } from "./chunk_rows.ts";
export type { ChunkRow, ChunkRowType, PackChunkRowsOptions, StoredRecord } from "./chunk_rows.ts";
