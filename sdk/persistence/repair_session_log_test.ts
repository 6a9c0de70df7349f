import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { SessionEvent } from "../session/session_events.ts";
import { repairSessionLog } from "./repair_session_log.ts";
import { LogBuilder } from "./_test_log.ts";

function ids() {
  let n = 0;
  return () => `id${++n}`;
}

describe("repairSessionLog()", () => {
  it("returns a balanced log unchanged", () => {
    const log = new LogBuilder();
    log.completeTurn(1);
    log.push({ type: "todo/write", data: { todos: [] } });
    const result = repairSessionLog(log.events);
    assert.equal(result.events, log.events);
    assert.deepEqual(result.syntheticEvents, []);
    assert.equal(result.closedTurn, undefined);
  });

  it("returns an empty log unchanged", () => {
    assert.deepEqual(repairSessionLog([]).syntheticEvents, []);
  });

  it("closes a turn that opened no step with turn/end interrupted at the last time", () => {
    const log = new LogBuilder();
    log.completeTurn(1);
    log.push({ type: "turn/start", data: { turn: 2 } });
    log.push({ type: "todo/write", data: { todos: [] }, time: 5_000 });
    const { events, syntheticEvents, closedTurn } = repairSessionLog(log.events);
    assert.equal(closedTurn, 2);
    assert.deepEqual(syntheticEvents, [
      { type: "turn/end", seq: log.events.length, time: 5_000, data: { turn: 2, reason: { kind: "interrupted" } } },
    ]);
    assert.deepEqual(events, [...log.events, ...syntheticEvents]);
  });

  it("closes an open step cut mid-stream with step/end then turn/end", () => {
    const log = new LogBuilder();
    log.push({ type: "turn/start", data: { turn: 1 } });
    log.push({ type: "step/start", data: { turn: 1, step: 1 } });
    log.push({
      type: "assistant/chunk",
      data: { turn: 1, step: 1, chunk: { type: "text-delta", index: 0, text: "x" } },
    });
    const { syntheticEvents } = repairSessionLog(log.events);
    assert.deepEqual(syntheticEvents.map((e) => [e.type, e.seq, e.data]), [
      ["step/end", 3, { turn: 1, step: 1 }],
      ["turn/end", 4, { turn: 1, reason: { kind: "interrupted" } }],
    ]);
  });

  it("gives calls without results TOOL_NOT_STARTED or TOOL_OUTCOME_UNKNOWN error results, in model order", () => {
    const log = new LogBuilder();
    log.completeTurn(1);
    log.push({ type: "turn/start", data: { turn: 2 } });
    log.push({ type: "step/start", data: { turn: 2, step: 1 } });
    const message = log.stream(2, 1, ["a", "b", "c"], { calls: ["k1", "k2", "k3"] });
    const call1 = log.toolCall(2, 1, "k1");
    log.toolResult(2, 1, "k1", call1.seq);
    const call2 = log.toolCall(2, 1, "k2");
    const last = log.events[log.events.length - 1];
    const { syntheticEvents } = repairSessionLog(log.events, { newId: ids() });
    const expectedResult = (
      seq: number,
      callId: string,
      [name, code]: [string, string],
      source: number,
      text: string,
      id: string,
    ) => ({
      type: "tool/result",
      seq,
      time: last.time,
      data: {
        turn: 2,
        step: 1,
        message: {
          id,
          role: "user",
          content: [{ type: "tool-result", toolCallId: callId, content: [{ type: "text", text }], isError: true }],
          source: { kind: "tool", callId },
        },
        error: { name, code },
      },
      surfaceOp: "append",
      sourceEventSeqs: [source],
    });
    const n = log.events.length;
    assert.deepEqual(syntheticEvents, [
      expectedResult(
        n,
        "k2",
        ["ToolOutcomeUnknownError", "TOOL_OUTCOME_UNKNOWN"],
        call2.seq,
        "The tool call was interrupted while it ran and no result was recorded: its outcome is unknown. Retry it " +
          "only if it is read-only or idempotent; if it may have changed something, check the current state (or " +
          "ask the user) before retrying.",
        "id1",
      ),
      expectedResult(
        n + 1,
        "k3",
        ["ToolNotStartedError", "TOOL_NOT_STARTED"],
        message.seq,
        "The tool call was interrupted before the harness recorded it as started. Retry it if it is still needed.",
        "id2",
      ),
      { type: "step/end", seq: n + 2, time: last.time, data: { turn: 2, step: 1 } },
      { type: "turn/end", seq: n + 3, time: last.time, data: { turn: 2, reason: { kind: "interrupted" } } },
    ] as unknown as SessionEvent[]);
  });

  it("gives a tool/call that no assistant/message names no result: it only closes the step and the turn", () => {
    const log = new LogBuilder();
    log.push({ type: "turn/start", data: { turn: 1 } });
    log.push({ type: "step/start", data: { turn: 1, step: 1 } });
    log.toolCall(1, 1, "orphan");
    const { syntheticEvents } = repairSessionLog(log.events);
    assert.deepEqual(syntheticEvents.map((e) => e.type), ["step/end", "turn/end"]);
  });

  it("only repairs the open step: calls of closed steps are left alone", () => {
    const log = new LogBuilder();
    log.push({ type: "turn/start", data: { turn: 1 } });
    log.push({ type: "step/start", data: { turn: 1, step: 1 } });
    log.stream(1, 1, ["a"], { calls: ["old"] });
    log.push({ type: "step/end", data: { turn: 1, step: 1 } });
    const { syntheticEvents } = repairSessionLog(log.events);
    assert.deepEqual(syntheticEvents.map((e) => e.type), ["turn/end"]);
  });

  describe("a compaction the process stopped in", () => {
    const summary = (log: LogBuilder, start: number, end: number) =>
      log.push({
        type: "user/message",
        data: {
          id: "sum",
          role: "user",
          content: [{ type: "text", text: "Summary of the earlier conversation:\n\nhi" }],
          source: { kind: "plugin", plugin: "compaction", form: "summary" },
        },
        surfaceOp: { op: "replace", start, end },
        sourceEventSeqs: [start, end],
      } as Omit<SessionEvent, "seq" | "time">);

    it("between turns, before its summary: compaction/end failed, no turn closed", () => {
      const log = new LogBuilder();
      log.completeTurn(1);
      log.push({ type: "compaction/start", data: { reason: "manual" }, time: 7_000 });
      const { events, syntheticEvents, closedTurn } = repairSessionLog(log.events);
      assert.equal(closedTurn, undefined);
      assert.deepEqual(syntheticEvents, [{
        type: "compaction/end",
        seq: log.events.length,
        time: 7_000,
        data: {
          outcome: "failed",
          error: "INTERRUPTED: the session stopped before the compaction finished; the conversation was not compacted",
        },
      }]);
      assert.deepEqual(events, [...log.events, ...syntheticEvents]);
    });

    it("after its summary replaced the older messages: compaction/end completed", () => {
      const log = new LogBuilder();
      log.completeTurn(1);
      log.completeTurn(2);
      const nodes = log.events.filter((e) => e.surfaceOp !== undefined).map((e) => e.seq);
      log.push({ type: "compaction/start", data: { reason: "manual" } });
      log.push({ type: "compaction/summary", data: { summary: "hi", start: nodes[0], end: nodes[1] } });
      summary(log, nodes[0], nodes[1]);
      const { syntheticEvents } = repairSessionLog(log.events);
      assert.deepEqual(syntheticEvents.map((e) => [e.type, e.data]), [["compaction/end", { outcome: "completed" }]]);
    });

    it("inside a step (after an overflow): compaction/end, then step/end and turn/end", () => {
      const log = new LogBuilder();
      log.push({ type: "turn/start", data: { turn: 1 } });
      log.push({ type: "step/start", data: { turn: 1, step: 1 } });
      log.push({ type: "compaction/start", data: { reason: "overflow" } });
      const { syntheticEvents, closedTurn } = repairSessionLog(log.events);
      assert.equal(closedTurn, 1);
      assert.deepEqual(syntheticEvents.map((e) => [e.type, e.seq]), [
        ["compaction/end", 3],
        ["step/end", 4],
        ["turn/end", 5],
      ]);
    });

    it("leaves a finished compaction alone", () => {
      const log = new LogBuilder();
      log.completeTurn(1);
      log.push({ type: "compaction/start", data: { reason: "manual" } });
      log.push({ type: "compaction/end", data: { outcome: "skipped" } });
      assert.deepEqual(repairSessionLog(log.events).syntheticEvents, []);
    });
  });
});
