import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { assertInvariants, checkInvariants, SESSION_INVARIANT_CODES } from "./check_invariants.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionEvent } from "../session/session_events.ts";

type Raw = { type: string; data: unknown; surfaceOp?: unknown; sourceEventSeqs?: number[] };
const log = (...events: Raw[]): SessionEvent[] =>
  events.map((e, seq) => ({ seq, time: 0, ...e }) as unknown as SessionEvent);
const turnStart = (turn: number): Raw => ({ type: "turn/start", data: { turn } });
const turnEnd = (turn: number): Raw => ({ type: "turn/end", data: { turn, reason: { kind: "completed" } } });
const stepStart = (turn: number, step: number): Raw => ({ type: "step/start", data: { turn, step } });
const stepEnd = (turn: number, step: number): Raw => ({ type: "step/end", data: { turn, step } });
const chunk = (turn: number, step: number): Raw => ({
  type: "assistant/chunk",
  data: { turn, step, chunk: { type: "text-delta", index: 0, text: "x" } },
});
const call = (turn: number, step: number, callId: string): Raw => ({
  type: "tool/call",
  data: { turn, step, callId, name: "f", arguments: "{}" },
});
// A result message's id names its step and call: unique in a session (as message ids are), kept by its replacement.
const result = (turn: number, step: number, callId: string, extra: Partial<Raw> = {}, errorCode?: string): Raw => ({
  type: "tool/result",
  data: {
    turn,
    step,
    message: {
      id: `r-${turn}-${step}-${callId}`,
      role: "user",
      content: [{ type: "tool-result", toolCallId: callId, content: [] }],
      source: { kind: "tool", callId },
    },
    ...(errorCode ? { error: { name: "E", code: errorCode } } : {}),
  },
  surfaceOp: "append",
  ...extra,
});
const codes = (events: SessionEvent[]) => checkInvariants(events).map((v) => `${v.seq} ${v.code}`);

describe("checkInvariants()", () => {
  it("accepts a well-formed log with two turns, steps, calls and results", () => {
    const events = log(
      turnStart(1),
      stepStart(1, 1),
      { type: "request/header", data: { header: { config: { provider: "p", model: "m" } }, reason: "initial" } },
      chunk(1, 1),
      call(1, 1, "c1"),
      result(1, 1, "c1"),
      result(1, 1, "c2", {}, "TOOL_NOT_STARTED"),
      stepEnd(1, 1),
      stepStart(1, 2),
      stepEnd(1, 2),
      turnEnd(1),
      { type: "agent/inbox/spliced", data: { target: "next-turn", start: 0, inserted: [] } },
      turnStart(2),
      { type: "todo/write", data: { todos: [] } },
      result(1, 1, "c1", { surfaceOp: { op: "replace", start: 5, end: 5 }, sourceEventSeqs: [5] }),
      stepStart(2, 1),
      stepEnd(2, 1),
      turnEnd(2),
    );
    assert.deepEqual(checkInvariants(events), []);
    assertInvariants(events);
  });

  it("reports a message id entered twice (MESSAGE_ID_REPEATED), not a replacement that keeps its id", () => {
    const user = (id: string): Raw => ({
      type: "user/message",
      data: { id, role: "user", content: [{ type: "text", text: "hi" }], source: { kind: "user" } },
      surfaceOp: "append",
    });
    const system = (id: string): Raw => ({
      type: "system/message",
      data: { id, role: "system", content: [{ type: "text", text: "note" }], source: { kind: "user" } },
      surfaceOp: "append",
    });
    const assistant = (id: string): Raw => ({
      type: "assistant/message",
      data: { turn: 1, step: 1, message: { id, role: "assistant", content: [], source: { kind: "model" } } },
      surfaceOp: "append",
      sourceEventSeqs: [],
    });
    const events = log(
      turnStart(1),
      stepStart(1, 1),
      system("ctx"),
      user("m1"),
      system("ctx"),
      assistant("m1"),
      call(1, 1, "c1"),
      result(1, 1, "c1"),
      stepEnd(1, 1),
      turnEnd(1),
      turnStart(2),
      result(1, 1, "c1", { surfaceOp: { op: "replace", start: 7, end: 7 }, sourceEventSeqs: [7] }),
      turnEnd(2),
    );
    assert.deepEqual(codes(events).filter((c) => c.endsWith("MESSAGE_ID_REPEATED")), [
      "4 MESSAGE_ID_REPEATED",
      "5 MESSAGE_ID_REPEATED",
    ]);
    assert.match(checkInvariants(events).find((v) => v.seq === 4)!.message, /"ctx" again \(seq 2\)/);
  });

  it("reports each broken invariant with its code and seq", () => {
    const cases: [SessionEvent[], string[]][] = [
      [log(turnStart(1), { ...turnEnd(1) }).map((e, i) => (i === 1 ? { ...e, seq: 5 } : e)), ["1 SEQ_NOT_CONTIGUOUS"]],
      [log(turnStart(1), turnStart(2)), ["1 TURN_NESTED"]],
      [log(turnStart(2)), ["0 TURN_NUMBER"]],
      [log(turnStart(1), turnEnd(1), turnStart(1), turnEnd(1)), ["2 TURN_NUMBER"]],
      [log(turnEnd(1)), ["0 TURN_END_MISMATCH"]],
      [log(turnStart(1), turnEnd(2)), ["1 TURN_END_MISMATCH"]],
      [log(turnStart(1), stepStart(1, 1), turnEnd(1)), ["2 STEP_OPEN_AT_TURN_END"]],
      [log(stepStart(1, 1)), ["0 STEP_OUTSIDE_TURN"]],
      [log(turnStart(1), stepStart(2, 1)), ["1 STEP_OUTSIDE_TURN"]],
      [log(turnStart(1), stepStart(1, 1), stepStart(1, 2)), ["2 STEP_NESTED"]],
      [log(turnStart(1), stepStart(1, 2)), ["1 STEP_NUMBER"]],
      [log(turnStart(1), stepStart(1, 1), stepEnd(1, 1), turnEnd(1), turnStart(2), stepStart(2, 2)), ["5 STEP_NUMBER"]],
      [log(turnStart(1), stepEnd(1, 1)), ["1 STEP_END_MISMATCH"]],
      [log(turnStart(1), stepStart(1, 1), chunk(1, 2)), ["2 EVENT_OUTSIDE_STEP"]],
      [log(chunk(1, 1)), ["0 EVENT_OUTSIDE_STEP"]],
      [log(turnStart(1), call(1, 1, "c")), ["1 EVENT_OUTSIDE_STEP"]],
      [log(turnStart(1), stepStart(1, 1), result(1, 1, "c")), ["2 TOOL_RESULT_WITHOUT_CALL"]],
      [
        log(turnStart(1), stepStart(1, 1), call(1, 1, "c"), stepEnd(1, 1), stepStart(1, 2), result(1, 2, "c")),
        ["5 TOOL_RESULT_WITHOUT_CALL"],
      ],
      [log(turnStart(1), stepStart(1, 1), result(1, 1, "c", {}, "TOOL_OUTCOME_UNKNOWN")), [
        "2 TOOL_RESULT_WITHOUT_CALL",
      ]],
      [log({ type: "request/context", data: { provider: "p", model: "m" } }), ["0 EVENT_OUTSIDE_TURN"]],
      [log({ type: "todo/write", data: { todos: [] } }), ["0 EVENT_OUTSIDE_TURN"]],
      [
        log(
          turnStart(1),
          stepStart(1, 1),
          call(1, 1, "c"),
          result(1, 1, "c"),
          stepEnd(1, 1),
          turnEnd(1),
          result(1, 1, "c", { surfaceOp: { op: "replace", start: 3, end: 3 }, sourceEventSeqs: [3] }),
        ),
        ["6 EVENT_OUTSIDE_TURN"],
      ],
      [log({ type: "user/message", data: {} }), ["0 SURFACE_OP_MISSING"]],
      [
        log({ type: "todo/write", data: { todos: [] }, surfaceOp: "append" }),
        ["0 SURFACE_OP_FORBIDDEN", "0 EVENT_OUTSIDE_TURN"],
      ],
    ];
    for (const [events, expected] of cases) assert.deepEqual(codes(events), expected, JSON.stringify(events));
  });

  it("reports entries that are not events instead of crashing on them", () => {
    const events = [null, { type: "turn/start", seq: 1, time: 0, data: null }] as unknown as SessionEvent[];
    assert.deepEqual(codes(events), ["0 INVALID_EVENT", "1 INVALID_EVENT"]);
  });

  it("stops checking the surface after its first violation but keeps checking the rest", () => {
    const events = log({ type: "user/message", data: {} }, { type: "user/message", data: {} }, turnEnd(1));
    assert.deepEqual(codes(events), ["0 SURFACE_OP_MISSING", "2 TURN_END_MISMATCH"]);
  });

  it("joins hook/result to a hook/invoked of the same turn, and keeps hook events inside turns", () => {
    const invoked = (id: string): Raw => ({
      type: "hook/invoked",
      data: { handlerId: id, event: "Stop", hook: "./stop.sh" },
    });
    const result = (id: string): Raw => ({ type: "hook/result", data: { handlerId: id, outcome: "continue" } });
    const events = log(
      turnStart(1),
      invoked("h1"),
      result("h1"),
      result("h2"),
      turnEnd(1),
      turnStart(2),
      result("h1"),
      turnEnd(2),
      invoked("h3"),
    );
    assert.deepEqual(codes(events), [
      "3 HOOK_RESULT_WITHOUT_INVOKE",
      "6 HOOK_RESULT_WITHOUT_INVOKE",
      "8 EVENT_OUTSIDE_TURN",
    ]);
  });

  it("pairs compaction/start with compaction/end, one at a time, and lets a log end inside one", () => {
    const start: Raw = { type: "compaction/start", data: { reason: "manual" } };
    const summary: Raw = { type: "compaction/summary", data: { summary: "s", start: 0, end: 0 } };
    const end: Raw = { type: "compaction/end", data: { outcome: "skipped" } };
    assert.deepEqual(codes(log(start, summary, end, start, end, turnStart(1), start, end, turnEnd(1), start)), []);
    assert.deepEqual(codes(log(start, start, end, end, summary)), [
      "1 COMPACTION_NESTED",
      "3 COMPACTION_UNPAIRED",
      "4 COMPACTION_UNPAIRED",
    ]);
  });

  it("pairs every tool-call block of a step's assistant message with exactly one result of its id", () => {
    const assistant = (turn: number, step: number, ...ids: string[]): Raw => ({
      type: "assistant/message",
      data: {
        turn,
        step,
        message: {
          id: `a-${turn}-${step}`,
          role: "assistant",
          content: ids.map((id) => ({ type: "tool-call", id, name: "f", arguments: "{}" })),
          source: { kind: "model", provider: "p", model: "m" },
        },
      },
      surfaceOp: "append",
    });
    const other = (callId: string, blockId: string): Raw => {
      const r = result(1, 1, callId) as { data: { message: { content: { toolCallId: string }[] } } } & Raw;
      return {
        ...r,
        data: {
          ...r.data,
          message: { ...r.data.message, content: [{ type: "tool-result", toolCallId: blockId, content: [] }] },
        },
      } as Raw;
    };
    const cases: [SessionEvent[], string[]][] = [
      // Valid: a started call and one that never started (repair's TOOL_NOT_STARTED), each answered once.
      [
        log(
          turnStart(1),
          stepStart(1, 1),
          assistant(1, 1, "c1", "c2"),
          call(1, 1, "c1"),
          result(1, 1, "c1"),
          result(1, 1, "c2", {}, "TOOL_NOT_STARTED"),
          stepEnd(1, 1),
        ),
        [],
      ],
      [
        log(
          turnStart(1),
          stepStart(1, 1),
          assistant(1, 1, "c1", "c2"),
          call(1, 1, "c1"),
          result(1, 1, "c1"),
          stepEnd(1, 1),
        ),
        ["5 TOOL_CALL_WITHOUT_RESULT"],
      ],
      [
        log(
          turnStart(1),
          stepStart(1, 1),
          assistant(1, 1, "c1"),
          call(1, 1, "c1"),
          result(1, 1, "c1"),
          result(1, 1, "c1"),
          stepEnd(1, 1),
        ),
        // The helper gives both results one message id.
        ["5 MESSAGE_ID_REPEATED", "5 TOOL_RESULT_DUPLICATE"],
      ],
      [
        log(turnStart(1), stepStart(1, 1), assistant(1, 1, "c1"), call(1, 1, "zz"), result(1, 1, "zz"), stepEnd(1, 1)),
        ["3 TOOL_CALL_ID_UNKNOWN", "4 TOOL_CALL_ID_UNKNOWN", "5 TOOL_CALL_WITHOUT_RESULT"],
      ],
      [
        log(turnStart(1), stepStart(1, 1), assistant(1, 1, "c1"), call(1, 1, "c1"), other("c1", "zz"), stepEnd(1, 1)),
        ["4 TOOL_RESULT_ID_MISMATCH"],
      ],
    ];
    for (const [events, expected] of cases) assert.deepEqual(codes(events), expected, JSON.stringify(events));

    // A replacement shadows a call and its results together, or puts a result of the same call in a result's place.
    const pair = [turnStart(1), stepStart(1, 1), assistant(1, 1, "c1"), call(1, 1, "c1"), result(1, 1, "c1")];
    const summary = (start: number, end: number, sources: number[]): Raw => ({
      type: "user/message",
      data: {
        id: "sum",
        role: "user",
        content: [{ type: "text", text: "s" }],
        source: { kind: "plugin", plugin: "c" },
      },
      surfaceOp: { op: "replace", start, end },
      sourceEventSeqs: sources,
    });
    const closed = [...pair, stepEnd(1, 1), turnEnd(1)];
    assert.deepEqual(codes(log(...closed, summary(2, 4, [2, 4]))), []);
    assert.deepEqual(codes(log(...closed, summary(2, 2, [2]))), ["7 TOOL_PAIR_SPLIT"]);
    assert.deepEqual(codes(log(...closed, summary(4, 4, [4]))), ["7 TOOL_PAIR_SPLIT"]);
    const pruned = result(1, 1, "c1", { surfaceOp: { op: "replace", start: 4, end: 4 }, sourceEventSeqs: [4] });
    assert.deepEqual(codes(log(...pair, stepEnd(1, 1), pruned, turnEnd(1), summary(2, 6, [2, 6]))), []);
    assert.deepEqual(codes(log(...pair, stepEnd(1, 1), pruned, turnEnd(1), summary(2, 2, [2]))), ["8 TOOL_PAIR_SPLIT"]);
  });

  it("checks the request order on the surface: each assistant message's calls, then their results, nothing between", () => {
    const asst = (turn: number, step: number, blocks: string[], extra: Partial<Raw> = {}, id = `a-${turn}-${step}`) =>
      ({
        type: "assistant/message",
        data: {
          turn,
          step,
          message: {
            id,
            role: "assistant",
            content: blocks.map((b) =>
              b.startsWith("text:")
                ? { type: "text", text: b.slice(5) }
                : { type: "tool-call", id: b, name: "f", arguments: "{}" }
            ),
            source: { kind: "model", provider: "p", model: "m" },
          },
        },
        surfaceOp: "append",
        ...extra,
      }) as Raw;
    const user = (id: string, content: unknown[] = [{ type: "text", text: "hi" }], extra: Partial<Raw> = {}): Raw => ({
      type: "user/message",
      data: { id, role: "user", content, source: { kind: "user" } },
      surfaceOp: "append",
      ...extra,
    });
    const system = (id: string): Raw => ({
      type: "system/message",
      data: { id, role: "system", content: [{ type: "text", text: "ctx" }], source: { kind: "plugin", plugin: "p" } },
      surfaceOp: "append",
    });
    const step = (...events: Raw[]): Raw[] => [turnStart(1), stepStart(1, 1), ...events, stepEnd(1, 1), turnEnd(1)];
    const cases: [string, SessionEvent[], string[]][] = [
      // Valid: calls, their results in any order, then a system context (the loop's tool contexts follow every result).
      [
        "valid",
        log(
          ...step(
            asst(1, 1, ["X", "Y"]),
            call(1, 1, "X"),
            call(1, 1, "Y"),
            result(1, 1, "Y"),
            result(1, 1, "X"),
            system("s"),
          ),
        ),
        [],
      ],
      // (a) Two assistant messages in one step, the first's call without a result.
      ["two assistant messages", log(...step(asst(1, 1, ["X"]), asst(1, 1, ["text:t"], {}, "a2"))), [
        "3 TOOL_RESULTS_INTERRUPTED",
      ]],
      // (b) One id twice in an assistant message.
      ["repeated id", log(...step(asst(1, 1, ["X", "X"]), call(1, 1, "X"), result(1, 1, "X"))), [
        "2 TOOL_CALL_ID_REPEATED",
      ]],
      // (c) A user or system message between a call and its result.
      ["user between", log(...step(asst(1, 1, ["X"]), user("u"), call(1, 1, "X"), result(1, 1, "X"))), [
        "3 TOOL_RESULTS_INTERRUPTED",
        "5 TOOL_RESULT_OUT_OF_PLACE",
      ]],
      [
        "system between",
        log(
          ...step(
            asst(1, 1, ["X", "Y"]),
            call(1, 1, "X"),
            call(1, 1, "Y"),
            result(1, 1, "X"),
            system("s"),
            result(1, 1, "Y"),
          ),
        ),
        ["6 TOOL_RESULTS_INTERRUPTED", "7 TOOL_RESULT_OUT_OF_PLACE"],
      ],
      // (d) A result before the assistant message holding its call.
      ["result first", log(...step(call(1, 1, "X"), result(1, 1, "X"), asst(1, 1, ["X"]))), [
        "3 TOOL_RESULT_OUT_OF_PLACE",
      ]],
      // (e) A user/message with a tool-result block for a call that does not exist.
      ["ghost result", log(...step(user("u", [{ type: "tool-result", toolCallId: "ghost", content: [] }]))), [
        "2 TOOL_RESULT_OUT_OF_PLACE",
      ]],
      // (f) A replacing assistant message bringing a call without a result.
      [
        "replacing call",
        log(
          turnStart(1),
          stepStart(1, 1),
          user("u1"),
          stepEnd(1, 1),
          turnEnd(1),
          turnStart(2),
          asst(2, 1, ["Z"], { surfaceOp: { op: "replace", start: 2, end: 2 }, sourceEventSeqs: [2] }),
          user("u2"),
          turnEnd(2),
        ),
        ["7 TOOL_RESULTS_INTERRUPTED"],
      ],
      // A problem a later replacement takes away was on the surface until then (a request may have carried it).
      [
        "replaced later",
        log(
          ...step(asst(1, 1, ["X"]), user("u"), call(1, 1, "X"), result(1, 1, "X")),
          turnStart(2),
          user("sum", undefined, { surfaceOp: { op: "replace", start: 2, end: 5 }, sourceEventSeqs: [2, 3, 5] }),
          turnEnd(2),
        ),
        ["3 TOOL_RESULTS_INTERRUPTED", "5 TOOL_RESULT_OUT_OF_PLACE"],
      ],
      // A call id again in a later step: its results pair with the message they follow.
      [
        "id reused in a later turn",
        log(
          ...step(asst(1, 1, ["X"]), call(1, 1, "X"), result(1, 1, "X")),
          turnStart(2),
          stepStart(2, 1),
          asst(2, 1, ["X"]),
          call(2, 1, "X"),
          result(2, 1, "X"),
          stepEnd(2, 1),
          turnEnd(2),
        ),
        [],
      ],
      // A log may end inside a step, its calls still waiting for results.
      ["open step", log(turnStart(1), stepStart(1, 1), asst(1, 1, ["X"]), call(1, 1, "X")), []],
    ];
    for (const [name, events, expected] of cases) assert.deepEqual(codes(events), expected, name);
  });

  it("documents every code it reports", () => {
    assert.equal(new Set(SESSION_INVARIANT_CODES).size, 26);
  });
});

describe("assertInvariants()", () => {
  it("throws INVARIANT_VIOLATION listing every violation", () => {
    const events = log(turnEnd(1), stepStart(1, 1));
    assert.throws(
      () => assertInvariants(events),
      (e) =>
        HarnessError.isInstance(e, "INVARIANT_VIOLATION") &&
        (e.details?.violations as unknown[]).length === 2 &&
        /seq 1 STEP_OUTSIDE_TURN/.test(e.message),
    );
  });
});
