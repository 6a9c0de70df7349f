// The event types a storage reads without `ignorable: true`: the core
// vocabulary of `SessionEventMap`, plus any the application registers through
// the storage options (its own `SessionEventMap` augmentations).

import type { SessionEventType } from "../session/session_events.ts";

const CORE_EVENT_TYPES: readonly SessionEventType[] = [
  "turn/start",
  "turn/end",
  "step/start",
  "step/end",
  "user/message",
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

/** The set of known event types: the core ones plus `extra`. */
export function knownEventTypes(extra: Iterable<string> = []): ReadonlySet<string> {
  return new Set<string>([...CORE_EVENT_TYPES, ...extra]);
}
