/**
 * Normalising a session log for comparison: times and generated ids out.
 *
 * @module
 */

import type { SessionEvent } from "../mod.ts";

/** Options of {@linkcode normalizeLog}. */
export interface NormalizeLogOptions {
  /**
   * The token an id becomes, from its rank of first appearance (from 1).
   *
   * @default {(n) => `<id-${n}>`}
   */
  readonly idToken?: (n: number) => string;
}

function generatedIds(event: SessionEvent): string[] {
  switch (event.type) {
    case "user/message":
    case "system/message":
      return [event.data.id];
    case "assistant/message":
    case "tool/result":
      return [event.data.message.id];
    case "agent/inbox/spliced":
      return event.data.inserted.flatMap((entry) => [entry.id, entry.message.id]);
    default:
      return [];
  }
}

/**
 * The generated session ids an event names: a spawned child's id, or, when it is `<parent>.<callId>`, the
 * parent's (the session's own) id, so the child reads `<token>.<callId>` and keeps the call id the model chose.
 */
function generatedSessionIds(event: SessionEvent): string[] {
  if (event.type !== "subagent/spawned") return [];
  const { session, callId } = event.data;
  if (typeof session !== "string") return [];
  const suffix = typeof callId === "string" ? `.${callId}` : undefined;
  return suffix !== undefined && session.endsWith(suffix) && session.length > suffix.length
    ? [session.slice(0, -suffix.length)]
    : [session];
}

/**
 * A copy of a log with every `time` set to 0 and every generated id (the ids
 * of messages and inbox entries) replaced by a token numbered by first
 * appearance, in every `id` field where it occurs. Generated session ids (a
 * spawned subagent's `<parent>.<callId>`, whose parent part is the session's
 * own id) are tokenised too, wherever a string is one or starts with one and
 * a dot (`subagent/spawned`'s `session`, a task result's `meta.childSession`):
 * the child reads `<id-n>.<callId>`. Tool call ids, which the model chose,
 * are kept, and every retry's `delayMs` set to 0 (the retry policy's jitter).
 * Two runs of the same scenario with different clocks, id generators and
 * retry jitter normalise to the same log.
 *
 * @param events The log.
 * @param options How ids are tokenised.
 * @returns The normalised copy (plain objects, not frozen).
 *
 * @example
 * ```ts
 * import type { SessionEvent } from "@dsh/harness";
 * import { normalizeLog } from "@dsh/harness/replay";
 * import assert from "node:assert/strict";
 *
 * const log: SessionEvent[] = [{
 *   type: "user/message",
 *   seq: 0,
 *   time: 1712,
 *   data: { id: "9f2c", role: "user", content: [{ type: "text", text: "Hi" }], source: { kind: "user" } },
 *   surfaceOp: "append",
 * }];
 * const [event] = normalizeLog(log);
 * assert.equal(event.time, 0);
 * assert.equal(event.type === "user/message" && event.data.id, "<id-1>");
 * ```
 */
export function normalizeLog(events: readonly SessionEvent[], options: NormalizeLogOptions = {}): SessionEvent[] {
  const token = options.idToken ?? ((n: number) => `<id-${n}>`);
  const ids = new Map<string, string>();
  const sessions = new Map<string, string>();
  for (const event of events) {
    for (const id of generatedIds(event)) if (!ids.has(id)) ids.set(id, token(ids.size + 1));
    for (const id of generatedSessionIds(event)) {
      if (!sessions.has(id)) {
        const known = ids.get(id) ?? token(ids.size + 1);
        ids.set(id, known);
        sessions.set(id, known);
      }
    }
  }
  const lengths = [...new Set([...sessions.keys()].map((id) => id.length))].sort((a, b) => b - a);
  const session = (text: string): string => {
    const whole = sessions.get(text);
    if (whole !== undefined) return whole;
    // A prefix of a known id's length followed by a dot: a few lookups per string, whatever its length.
    for (const length of lengths) {
      if (text.length > length + 1 && text[length] === ".") {
        const parent = sessions.get(text.slice(0, length));
        if (parent !== undefined) return parent + text.slice(length);
      }
    }
    return text;
  };
  const replace = (value: unknown): unknown => {
    if (typeof value === "string") return sessions.size > 0 ? session(value) : value;
    if (Array.isArray(value)) return value.map(replace);
    if (typeof value === "object" && value !== null) {
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, k === "id" && typeof v === "string" ? ids.get(v) ?? v : replace(v)]),
      );
    }
    return value;
  };
  return events.map((event) => {
    const copy = { ...(replace(event) as SessionEvent), time: 0 };
    // A retry's delay carries the retry policy's jitter: it differs between runs of the same program.
    if (copy.type === "llm/retry") return { ...copy, data: { ...copy.data, delayMs: 0 } } as SessionEvent;
    return copy;
  });
}
