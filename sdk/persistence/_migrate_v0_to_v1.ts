// Migration of a stored session log from format v0 to v1.
//
// v0 is the log `session.jsonl[.zstd]` (header `{"type":"session","version":1,…}`, one event
// envelope or packed chunk row per line). v1 moved the format version into the file name
// (`session.v1.jsonl[.zstd]`, 002 §9.3) and kept the records: the header and the events carry
// over unchanged, so this step is the identity on the logical log. It exists so that the chain
// has exactly one module per adjacent step, and a later v1 → v2 change adds its own module.

import type { StoredLog } from "./_log_migrations.ts";

/** Convert a decoded v0 log into a v1 log. */
export function migrateV0ToV1(log: StoredLog): StoredLog {
  return { header: log.header, events: log.events };
}
