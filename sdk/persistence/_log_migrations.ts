// The chain of adjacent format migrations of stored session logs, chosen statically: entry N
// converts a decoded vN log into vN+1, one module per step. A log of an older version is read
// by running the steps from its version up to `LOG_FORMAT_VERSION`; a newer one is refused.

import type { SessionEvent } from "../session/session_events.ts";
import type { SessionHeader } from "./session_storage.ts";
import { migrateV0ToV1 } from "./_migrate_v0_to_v1.ts";

/** A decoded log: its header and its logical events (chunk rows expanded). */
export interface StoredLog {
  readonly header: SessionHeader;
  readonly events: readonly SessionEvent[];
}

/** One step of the chain. */
export type LogMigration = (log: StoredLog) => StoredLog;

const MIGRATIONS: readonly LogMigration[] = [migrateV0ToV1];

/** The format version this build writes: the number of steps in the chain. */
export const LOG_FORMAT_VERSION: number = MIGRATIONS.length;

/** Convert a log of format `from` (≤ the current version) into the current format. */
export function migrateLog(log: StoredLog, from: number): StoredLog {
  let current = log;
  for (let version = from; version < LOG_FORMAT_VERSION; version++) current = MIGRATIONS[version](current);
  return current;
}
