/**
 * The per-node projection of the log into model history.
 *
 * @module
 */

import type { Message } from "../llm/messages.ts";
import type { SessionEvent } from "./session_events.ts";

/**
 * Project one surface node into the message the model sees.
 *
 * Rules: `user/message` and `system/message` → the message verbatim; `assistant/message` → its
 * message, unless the content is empty (a usage-only record), then `null`;
 * `tool/result` → its tool-result message; every other type → `null`. The
 * returned message is the event's own (frozen) data, not a copy.
 *
 * `Session.deriveMessages()` applies exactly this function to each node of
 * the surface, so external reconstructors cannot disagree with it.
 *
 * @param event Any session event.
 * @returns The derived message, or `null` when the event produces none.
 *
 * @example
 * ```ts
 * import { deriveEventMessage, type SessionEvent } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const event: SessionEvent = {
 *   type: "user/message",
 *   seq: 0,
 *   time: 0,
 *   data: { id: "m1", role: "user", content: [{ type: "text", text: "hi" }], source: { kind: "user" } },
 *   surfaceOp: "append",
 * };
 * assert.equal(deriveEventMessage(event), event.data);
 * assert.equal(deriveEventMessage({ type: "turn/start", seq: 1, time: 0, data: { turn: 1 } }), null);
 * ```
 */
export function deriveEventMessage(event: SessionEvent): Message | null {
  switch (event.type) {
    case "user/message":
    case "system/message":
      return event.data;
    case "assistant/message":
      return event.data.message.content.length === 0 ? null : event.data.message;
    case "tool/result":
      return event.data.message;
    default:
      return null;
  }
}
