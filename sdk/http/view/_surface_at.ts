// Internal: what the model saw at a point of the log — the derived history
// (foldSurface + deriveEventMessage, the same pair deriveMessages() uses)
// beside the log's message events, each marked on or off the surface.

import type { Message } from "../../llm/messages.ts";
import { deriveEventMessage } from "../../session/derive_event_message.ts";
import { foldSurface } from "../../session/fold_surface.ts";
import type { SessionEvent } from "../../session/session_events.ts";
import { isSurfaceEventType } from "../../session/surface_manager.ts";

/** One message of the derived history, with the surface node it comes from. */
export interface SurfaceMessage {
  readonly seq: number;
  readonly message: Message;
  /** The node replaces `start..end` (a compaction summary, or a replaced tool result). */
  readonly replaces?: { readonly start: number; readonly end: number };
}

/** One message event of the full log, and whether the model still sees it. */
export interface SurfaceLogEntry {
  readonly seq: number;
  readonly type: string;
  readonly role?: string;
  readonly text: string;
  /** On the surface: the model sees it (usage-only assistant messages are on it but derive nothing). */
  readonly visible: boolean;
  /** The replace node that shadowed it. */
  readonly shadowedBy?: number;
}

/** The body of `GET /sessions/:id/surface?at=<seq>`. */
export interface SurfaceView {
  readonly at: number;
  readonly messages: readonly SurfaceMessage[];
  readonly replacements: readonly { seq: number; start: number; end: number; shadowedSeqs: readonly number[] }[];
  readonly log: readonly SurfaceLogEntry[];
}

function textOf(message: Message | undefined): string {
  if (message === undefined) return "";
  const parts: string[] = [];
  for (const block of message.content) {
    if (block.type === "text") parts.push(block.text);
    else if (block.type === "tool-call") parts.push(`${block.name}(${block.arguments})`);
    else if (block.type === "tool-result") {
      for (const inner of block.content) if (inner.type === "text") parts.push(inner.text);
    }
  }
  const text = parts.join(" ").replace(/\s+/g, " ").trim();
  return text.length > 240 ? text.slice(0, 239) + "…" : text;
}

/** The message a surface event carries (what deriveEventMessage() takes, usage-only assistant records too). */
function messageOf(event: SessionEvent): Message | undefined {
  if (event.type === "user/message" || event.type === "system/message") return event.data;
  if (event.type === "assistant/message" || event.type === "tool/result") return event.data.message;
  return undefined;
}

/** The derived history of the prefix `events[0..at)` and the message events beside it. */
export function surfaceAt(events: readonly SessionEvent[], at: number): SurfaceView {
  const prefix = events.slice(0, Math.max(0, Math.min(at, events.length)));
  const { nodes, replacements } = foldSurface(prefix);
  const shadowedBy = new Map<number, number>();
  for (const r of replacements) for (const seq of r.shadowedSeqs) shadowedBy.set(seq, r.seq);
  const onSurface = new Set(nodes);
  const messages: SurfaceMessage[] = [];
  for (const seq of nodes) {
    const event = prefix[seq];
    const message = deriveEventMessage(event);
    if (message === null) continue;
    const op = event.surfaceOp;
    messages.push({
      seq,
      message,
      ...(typeof op === "object" && op !== null ? { replaces: { start: op.start, end: op.end } } : {}),
    });
  }
  const log: SurfaceLogEntry[] = [];
  for (const event of prefix) {
    if (!isSurfaceEventType(event.type)) continue;
    const message = messageOf(event);
    const by = shadowedBy.get(event.seq);
    log.push({
      seq: event.seq,
      type: event.type,
      ...(message !== undefined ? { role: message.role } : {}),
      text: textOf(message),
      visible: onSurface.has(event.seq),
      ...(by !== undefined ? { shadowedBy: by } : {}),
    });
  }
  return { at: prefix.length, messages, replacements, log };
}
