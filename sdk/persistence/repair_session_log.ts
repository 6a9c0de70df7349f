/**
 * Crash repair of a session log whose final turn (or a compaction) was left open.
 *
 * @module
 */

import type { ToolCallBlock, UserMessage } from "../llm/messages.ts";
import type { SessionEvent } from "../session/session_events.ts";

/** Options of {@linkcode repairSessionLog}. */
export interface RepairSessionLogOptions {
  /**
   * Makes the ids of synthetic tool-result messages.
   *
   * @default {() => crypto.randomUUID()}
   */
  readonly newId?: () => string;
}

/** What {@linkcode repairSessionLog} returns. */
export interface RepairSessionLogResult {
  /** The repaired log: the input events followed by the synthetic ones. */
  readonly events: readonly SessionEvent[];
  /** The synthetic events (empty when the log was balanced). */
  readonly syntheticEvents: readonly SessionEvent[];
  /** The turn that was open, if any. */
  readonly closedTurn?: number;
}

interface PendingCall {
  readonly callId: string;
  /** The seq of the `assistant/message` naming the call. */
  assistantSeq?: number;
  /** The seq of the `tool/call` that started it. */
  callSeq?: number;
  resulted: boolean;
}

// What the model reads in place of a result: what happened, then what to do.
const NOT_STARTED_TEXT =
  "The tool call was interrupted before the harness recorded it as started. Retry it if it is still needed.";
const OUTCOME_UNKNOWN_TEXT = "The tool call was interrupted while it ran and no result was recorded: its outcome " +
  "is unknown. Retry it only if it is read-only or idempotent; if it may have changed something, check the " +
  "current state (or ask the user) before retrying.";

const COMPACTION_INTERRUPTED =
  "INTERRUPTED: the session stopped before the compaction finished; the conversation was not compacted";

// The summary message compactSession() writes in place of the nodes it compacts.
function isCompactionSummary(message: UserMessage): boolean {
  const source = message.source;
  return source.kind === "plugin" && source.plugin === "compaction";
}

function resultCallId(message: UserMessage): string | undefined {
  if (message.source.kind === "tool") return message.source.callId;
  for (const block of message.content) if (block.type === "tool-result") return block.toolCallId;
  return undefined;
}

/**
 * Close an interrupted final turn, as a cold reload after a crash must.
 *
 * When the last `turn/start` has no `turn/end`, the log is extended, in this
 * order, with: an error `tool/result` for every tool call of the open step's
 * `assistant/message` that has none — error `ToolNotStartedError` / code
 * `TOOL_NOT_STARTED` when no `tool/call` was logged (its `sourceEventSeqs`
 * names the `assistant/message`), `ToolOutcomeUnknownError` /
 * `TOOL_OUTCOME_UNKNOWN` when it was (naming the `tool/call`) — in the
 * model's call order, each telling the model whether to retry; then
 * `step/end` if a step is open; then `turn/end` with reason `interrupted`.
 * A `tool/call` that no `assistant/message` names gets no result: the model's
 * history has no call for it to answer, and providers reject a tool result
 * without its call.
 * A `compaction/start` without its `compaction/end` (the process ended during
 * the summary call) is closed first, inside or outside a turn: outcome
 * `completed` when its summary message had already replaced the older
 * messages, else `failed` with an `INTERRUPTED:` error (the conversation is
 * as it was).
 * Synthetic events reuse the last event's time. A balanced log is returned
 * unchanged. Torn bytes are the storage's business, not this function's.
 *
 * @param events A contiguous log (`seq` equal to position).
 * @param options How to make message ids.
 * @returns The repaired log and what was added.
 *
 * @example Closing a turn cut short while a tool ran
 * ```ts
 * import { repairSessionLog, type SessionEvent } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const model = { kind: "model", provider: "p", model: "m" } as const;
 * const log: SessionEvent[] = [
 *   { type: "turn/start", seq: 0, time: 1, data: { turn: 1 } },
 *   { type: "step/start", seq: 1, time: 2, data: { turn: 1, step: 1 } },
 *   {
 *     type: "assistant/message", seq: 2, time: 3, surfaceOp: "append",
 *     data: { turn: 1, step: 1, message: { id: "a1", role: "assistant", source: model, content: [
 *       { type: "tool-call", id: "c1", name: "ls", arguments: "{}" },
 *     ] } },
 *   },
 *   { type: "tool/call", seq: 3, time: 4, data: { turn: 1, step: 1, callId: "c1", name: "ls", arguments: "{}" } },
 * ];
 * const { syntheticEvents } = repairSessionLog(log, { newId: () => "r1" });
 * assert.deepEqual(syntheticEvents.map((e) => e.type), ["tool/result", "step/end", "turn/end"]);
 * assert.deepEqual(syntheticEvents[0].sourceEventSeqs, [3]);
 * assert.deepEqual(syntheticEvents[2].data, { turn: 1, reason: { kind: "interrupted" } });
 * ```
 */
export function repairSessionLog(
  events: readonly SessionEvent[],
  options: RepairSessionLogOptions = {},
): RepairSessionLogResult {
  let openTurn: number | undefined;
  let openStep: { turn: number; step: number } | undefined;
  let calls = new Map<string, PendingCall>();
  // A compaction a crash cut short: its start, and whether its summary already replaced the older nodes.
  let compaction: { replaced: boolean } | undefined;

  const callOf = (callId: string): PendingCall => {
    let call = calls.get(callId);
    if (call === undefined) calls.set(callId, call = { callId, resulted: false });
    return call;
  };

  for (const event of events) {
    switch (event.type) {
      case "turn/start":
        openTurn = event.data.turn;
        openStep = undefined;
        calls = new Map();
        break;
      case "turn/end":
        openTurn = undefined;
        openStep = undefined;
        break;
      case "step/start":
        openStep = { turn: event.data.turn, step: event.data.step };
        calls = new Map();
        break;
      case "step/end":
        openStep = undefined;
        break;
      case "assistant/message":
        for (const block of event.data.message.content) {
          if (block.type !== "tool-call") continue;
          const call = callOf((block as ToolCallBlock).id);
          call.assistantSeq ??= event.seq;
        }
        break;
      case "tool/call":
        callOf(event.data.callId).callSeq ??= event.seq;
        break;
      case "compaction/start":
        compaction = { replaced: false };
        break;
      case "compaction/end":
        compaction = undefined;
        break;
      case "user/message":
        if (compaction !== undefined && event.surfaceOp !== "append" && isCompactionSummary(event.data)) {
          compaction.replaced = true;
        }
        break;
      case "tool/result": {
        const callId = resultCallId(event.data.message);
        if (callId !== undefined) callOf(callId).resulted = true;
        break;
      }
    }
  }

  if (openTurn === undefined && compaction === undefined) return { events, syntheticEvents: [] };

  const newId = options.newId ?? (() => crypto.randomUUID());
  const last = events[events.length - 1];
  const time = last.time;
  let seq = last.seq + 1;
  const synthetic: SessionEvent[] = [];

  // The innermost bracket first: a compaction runs inside a step (after a context overflow), inside a turn before
  // its first step (over the threshold) or between turns (a manual one).
  if (compaction !== undefined) {
    synthetic.push({
      type: "compaction/end",
      seq: seq++,
      time,
      data: compaction.replaced ? { outcome: "completed" } : { outcome: "failed", error: COMPACTION_INTERRUPTED },
    });
  }
  if (openTurn === undefined) return { events: [...events, ...synthetic], syntheticEvents: synthetic };

  if (openStep !== undefined) {
    const { turn, step } = openStep;
    for (const call of calls.values()) {
      if (call.resulted || call.assistantSeq === undefined) continue;
      const started = call.callSeq !== undefined;
      const code = started ? "TOOL_OUTCOME_UNKNOWN" : "TOOL_NOT_STARTED";
      const message: UserMessage = {
        id: newId(),
        role: "user",
        content: [{
          type: "tool-result",
          toolCallId: call.callId,
          content: [{ type: "text", text: started ? OUTCOME_UNKNOWN_TEXT : NOT_STARTED_TEXT }],
          isError: true,
        }],
        source: { kind: "tool", callId: call.callId },
      };
      synthetic.push({
        type: "tool/result",
        seq: seq++,
        time,
        data: {
          turn,
          step,
          message,
          error: { name: started ? "ToolOutcomeUnknownError" : "ToolNotStartedError", code },
        },
        surfaceOp: "append",
        sourceEventSeqs: [(started ? call.callSeq : call.assistantSeq) as number],
      });
    }
    synthetic.push({ type: "step/end", seq: seq++, time, data: { turn, step } });
  }
  synthetic.push({ type: "turn/end", seq: seq++, time, data: { turn: openTurn, reason: { kind: "interrupted" } } });
  return { events: [...events, ...synthetic], syntheticEvents: synthetic, closedTurn: openTurn };
}
