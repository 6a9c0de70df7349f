import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { commitPlain, SurfaceManager } from "./surface_manager.ts";
import { foldSurface } from "./fold_surface.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionEvent, SurfaceOp } from "./session_events.ts";

type Extra = { surfaceOp?: SurfaceOp; sourceEventSeqs?: number[] };
const user = (seq: number, extra: Extra = { surfaceOp: "append" }): SessionEvent =>
  ({
    type: "user/message",
    seq,
    time: 0,
    data: { id: `m${seq}`, role: "user", content: [{ type: "text", text: `u${seq}` }], source: { kind: "user" } },
    ...extra,
  }) as SessionEvent;
const result = (seq: number, text: string, extra: Extra = { surfaceOp: "append" }, id = "r1"): SessionEvent =>
  ({
    type: "tool/result",
    seq,
    time: 0,
    data: {
      turn: 1,
      step: 1,
      message: {
        id,
        role: "user",
        content: [{ type: "tool-result", toolCallId: "c1", content: [{ type: "text", text }] }],
        source: { kind: "tool", callId: "c1" },
      },
    },
    ...extra,
  }) as SessionEvent;
const todo = (seq: number, extra: Extra = {}): SessionEvent =>
  ({ type: "todo/write", seq, time: 0, data: { todos: [] }, ...extra }) as SessionEvent;
const replace = (start: number, end: number, sourceEventSeqs?: number[]): Extra => ({
  surfaceOp: { op: "replace", start, end },
  ...(sourceEventSeqs ? { sourceEventSeqs } : {}),
});

// Fold `log`, then check that committing `candidate` fails with `code` and changes nothing.
function rejects(log: SessionEvent[], candidate: SessionEvent, code: string): void {
  const manager = new SurfaceManager(log);
  const nodes = manager.nodes;
  assert.throws(() => manager.commit(candidate), (e) => HarnessError.isInstance(e, code));
  assert.equal(manager.nodes, nodes);
  assert.equal(manager.nextSeq, log.length);
  assert.throws(() => foldSurface([...log, candidate]), (e) => HarnessError.isInstance(e, code));
}

describe("SurfaceManager", () => {
  it("appends surface events and skips the others", () => {
    const manager = new SurfaceManager([user(0), todo(1), user(2)]);
    assert.deepEqual(manager.nodes, [0, 2]);
    assert.equal(manager.replaceGeneration, 0);
    assert.equal(manager.surface.nodes, manager.nodes);
  });

  it("replaces an inclusive range in place, counting generations", () => {
    const manager = new SurfaceManager([user(0), user(1), user(2), user(3)]);
    const r = manager.commit(user(4, replace(1, 2, [1, 2, 0])));
    assert.deepEqual(r, { seq: 4, start: 1, end: 2, shadowedSeqs: [1, 2] });
    assert.deepEqual(manager.nodes, [0, 4, 3]);
    assert.equal(manager.replaceGeneration, 1);
    manager.commit(user(5, replace(4, 4, [4])));
    assert.deepEqual(manager.nodes, [0, 5, 3]);
    assert.equal(manager.replaceGeneration, 2);
    assert.equal(manager.has(4), false);
  });

  it("rejects a non-contiguous seq", () => rejects([user(0)], user(2), "SEQ_NOT_CONTIGUOUS"));

  it("rejects a missing surfaceOp on surface types and surface metadata elsewhere", () => {
    rejects([], user(0, {}), "SURFACE_OP_MISSING");
    rejects([], todo(0, { surfaceOp: "append" }), "SURFACE_OP_FORBIDDEN");
    rejects([], todo(0, { sourceEventSeqs: [] }), "SURFACE_OP_FORBIDDEN");
  });

  it("rejects malformed ops", () => {
    for (
      const op of [
        "prepend",
        { op: "swap", start: 0, end: 0 },
        { op: "replace", start: 0 },
        {
          op: "replace",
          start: 0,
          end: 1.5,
        },
        { op: "replace", start: 0, end: 0, extra: 1 },
        null,
        [],
      ]
    ) {
      rejects([user(0)], user(1, { surfaceOp: op as SurfaceOp, sourceEventSeqs: [0] }), "SURFACE_OP_INVALID");
    }
  });

  it("rejects bad sourceEventSeqs", () => {
    const log = [user(0), user(1)];
    rejects(log, user(2, { surfaceOp: "append", sourceEventSeqs: "0" as unknown as number[] }), "SOURCE_SEQS_INVALID");
    rejects(log, user(2, { surfaceOp: "append", sourceEventSeqs: [] }), "SOURCE_SEQS_INVALID");
    rejects(log, result(2, "x", { surfaceOp: "append", sourceEventSeqs: [] }), "SOURCE_SEQS_INVALID");
    rejects(log, user(2, { surfaceOp: "append", sourceEventSeqs: [0, 0] }), "SOURCE_SEQS_INVALID");
    // A repeat after the order breaks, and one of an earlier seq than the one before it.
    rejects(log, user(2, { surfaceOp: "append", sourceEventSeqs: [0, 1, 0] }), "SOURCE_SEQS_INVALID");
    rejects(log, user(2, { surfaceOp: "append", sourceEventSeqs: [1, 0, 1] }), "SOURCE_SEQS_INVALID");
    rejects(log, user(2, { surfaceOp: "append", sourceEventSeqs: [0.5] }), "SOURCE_SEQS_INVALID");
    rejects(log, user(2, { surfaceOp: "append", sourceEventSeqs: [-1] }), "SOURCE_SEQS_INVALID");
    rejects(log, user(2, { surfaceOp: "append", sourceEventSeqs: [2] }), "SOURCE_SEQS_INVALID");
    // Distinct sources in any order are accepted.
    new SurfaceManager(log).commit(user(2, { surfaceOp: "append", sourceEventSeqs: [1, 0] }));
    // An assistant message may cite a known-empty stream.
    const manager = new SurfaceManager(log);
    manager.commit({
      type: "assistant/message",
      seq: 2,
      time: 0,
      data: {
        turn: 1,
        step: 1,
        message: { id: "a", role: "assistant", content: [], source: { kind: "model", provider: "p", model: "m" } },
      },
      surfaceOp: "append",
      sourceEventSeqs: [],
    });
    assert.deepEqual(manager.nodes, [0, 1, 2]);
  });

  it("rejects a replace range off the surface or reversed", () => {
    const log = [user(0), todo(1), user(2), user(3, replace(2, 2, [2]))];
    rejects(log, user(4, replace(1, 1, [1])), "REPLACE_RANGE_INVALID"); // not a surface event
    rejects(log, user(4, replace(2, 2, [2])), "REPLACE_RANGE_INVALID"); // shadowed
    rejects(log, user(4, replace(0, 9, [0])), "REPLACE_RANGE_INVALID"); // future
    rejects(log, user(4, replace(3, 0, [0, 3])), "REPLACE_RANGE_INVALID"); // start after end
  });

  it("requires the sources to cover every shadowed node", () => {
    const log = [user(0), user(1), user(2)];
    rejects(log, user(3, replace(0, 2, [0, 2])), "REPLACE_SOURCES_INCOMPLETE");
    rejects(log, user(3, replace(0, 0)), "REPLACE_SOURCES_INCOMPLETE");
  });

  it("lets a tool result replace one tool result, changing only the inner content", () => {
    const log = [result(0, "long output"), user(1)];
    const manager = new SurfaceManager(log);
    manager.commit(result(2, "[pruned]", replace(0, 0, [0])));
    assert.deepEqual(manager.nodes, [2, 1]);
    rejects(log, result(2, "x", replace(0, 1, [0, 1])), "TOOL_RESULT_REPLACE_INVALID");
    rejects(log, result(2, "x", replace(1, 1, [1])), "TOOL_RESULT_REPLACE_INVALID");
    rejects(log, result(2, "x", replace(0, 0, [0]), "other-id"), "TOOL_RESULT_REPLACE_INVALID");
  });

  it("folds a window from baseSeq, failing a replace that reaches before it", () => {
    const log = [user(0), user(1), user(2), user(3, replace(2, 2, [2])), user(4, replace(0, 1, [0, 1]))];
    const window = new SurfaceManager(log.slice(2, 4), 2);
    assert.deepEqual(window.nodes, [3]);
    assert.equal(window.baseSeq, 2);
    assert.throws(() => window.commit(log[4]), (e) => HarnessError.isInstance(e, "REPLACE_RANGE_INVALID"));
    assert.throws(() => new SurfaceManager(log.slice(2), 1), (e) => HarnessError.isInstance(e, "SEQ_NOT_CONTIGUOUS"));
    assert.throws(() => new SurfaceManager([], -1), (e) => HarnessError.isInstance(e, "INVALID_ARGS"));
  });
});

describe("commitPlain()", () => {
  it("advances a manager as commit() does for a non-surface event, with the same seq error", () => {
    const log = [user(0), todo(1), todo(2), user(3), todo(4)];
    const general = new SurfaceManager(), plain = new SurfaceManager();
    for (const event of log) {
      general.commit(event);
      if (event.type === "todo/write") commitPlain(plain, event);
      else plain.commit(event);
      assert.equal(plain.nextSeq, general.nextSeq);
      assert.deepEqual(plain.nodes, general.nodes);
    }
    for (const seq of [4, 6, 0]) {
      assert.throws(() => general.commit(todo(seq)), (e) => HarnessError.isInstance(e, "SEQ_NOT_CONTIGUOUS"));
      assert.throws(() => commitPlain(plain, todo(seq)), (e) => HarnessError.isInstance(e, "SEQ_NOT_CONTIGUOUS"));
    }
    assert.equal(plain.nextSeq, 5);
    commitPlain(plain, todo(5));
    plain.commit(user(6, replace(3, 3, [3])));
    assert.deepEqual(plain.nodes, [0, 6]);
  });
});

describe("foldSurface()", () => {
  it("returns the nodes and every replacement with the seqs it shadowed", () => {
    const log = [user(0), user(1), todo(2), user(3, replace(0, 1, [0, 1])), user(4), user(5, replace(3, 4, [3, 4]))];
    assert.deepEqual(foldSurface(log), {
      nodes: [5],
      replacements: [
        { seq: 3, start: 0, end: 1, shadowedSeqs: [0, 1] },
        { seq: 5, start: 3, end: 4, shadowedSeqs: [3, 4] },
      ],
    });
    assert.deepEqual(foldSurface(log.slice(4, 5), 4).nodes, [4]);
    assert.throws(() => foldSurface(log.slice(4), 4), (e) => HarnessError.isInstance(e, "REPLACE_RANGE_INVALID"));
  });
});
