// What a storage reads: every well-formed event by default (the vocabulary is
// open: a plugin's `SessionEventMap` augmentation needs no registration), or,
// for a strict reader given a list of plugin types, the core vocabulary plus
// that list, and any other event only when it is marked `ignorable: true`.
// Writes are never refused for their type: an event the session accepted is
// persisted, whatever reads it later.

import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionEventType } from "../session/session_events.ts";

const CORE_EVENT_TYPES: readonly SessionEventType[] = [
  "turn/start",
  "turn/end",
  "step/start",
  "step/end",
  "user/message",
  "system/message",
  "assistant/chunk",
  "assistant/message",
  "tool/call",
  "tool/result",
  "todo/write",
  "hook/invoked",
  "hook/result",
  "subagent/spawned",
  "request/header",
  "request/context",
  "session/end-seed",
  "agent/inbox/spliced",
  "llm/retry",
  "compaction/start",
  "compaction/summary",
  "compaction/prune",
  "compaction/end",
];

/** The event types a reader understands; `undefined` reads every type. */
export type ReaderVocabulary = ReadonlySet<string> | undefined;

/** The vocabulary of a reader: open without `extra`, else the core types plus `extra`. */
export function readerVocabulary(extra: Iterable<string> | undefined): ReaderVocabulary {
  if (extra === undefined) return undefined;
  return new Set<string>([...CORE_EVENT_TYPES, ...extra]);
}

/** Whether a reader with `vocabulary` loads an event of `type`. */
export function readable(vocabulary: ReaderVocabulary, type: string, ignorable: unknown): boolean {
  return vocabulary === undefined || ignorable === true || vocabulary.has(type);
}

/** The error of a stored event its reader does not know. */
export function unknownToReader(sessionId: string, seq: number, type: string): HarnessError {
  return new HarnessError(
    "SESSION_UNKNOWN_EVENT_TYPE",
    `Event ${seq} of session ${JSON.stringify(sessionId)} has type ${
      JSON.stringify(type)
    }, which this reader does not know, and it is not ignorable`,
    { details: { sessionId, seq, type } },
  );
}
