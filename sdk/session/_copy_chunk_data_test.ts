import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { copyChunkData, copySeqs } from "./_copy_chunk_data.ts";
import { copyLosslessJson } from "./lossless_json.ts";
import { appendChunk, Session } from "./session.ts";

describe("copyChunkData()", () => {
  it("copies delta and block-start payloads exactly as the generic copy does, frozen", () => {
    const payloads = [
      { turn: 1, step: 2, chunk: { type: "text-delta", index: 0, text: "Hi" } },
      { turn: 1, step: 1, chunk: { type: "reasoning-delta", index: 3, text: "" } },
      { turn: 4, step: 1, chunk: { type: "block-start", index: 1, blockType: "tool-call" } },
      { turn: 1, step: 1, chunk: { type: "tool-call-delta", index: 1, id: "c", argumentsDelta: "{" } },
      { turn: 1, step: 1, chunk: { type: "tool-call-delta", index: 1, id: "c", name: "add", argumentsDelta: "" } },
      { turn: 1, step: 1, chunk: { type: "block-end", index: 0, block: { type: "text", text: "Hi" } } },
      { turn: 1, step: 1, chunk: { type: "block-end", index: 2, block: { type: "reasoning", text: "" } } },
      {
        turn: 1,
        step: 1,
        chunk: { type: "block-end", index: 1, block: { type: "tool-call", id: "c", name: "add", arguments: "{}" } },
      },
      { turn: 1, step: 1, chunk: { type: "usage", usage: { inputTokens: 1, outputTokens: 2 } } },
      {
        turn: 1,
        step: 1,
        chunk: {
          type: "usage",
          usage: { inputTokens: 0, outputTokens: 2, cacheReadTokens: 3, cacheWriteTokens: 4, reasoningTokens: 1 },
        },
      },
      { turn: 1, step: 1, chunk: { type: "finish", reason: { kind: "stop" } } },
      { turn: 1, step: 1, chunk: { type: "finish", reason: { kind: "tool-calls" } } },
      { turn: 1, step: 1, chunk: { type: "finish", reason: { kind: "max-tokens" } } },
    ];
    for (const payload of payloads) {
      const copy = copyChunkData(payload)!;
      assert.deepEqual(copy, copyLosslessJson(payload, "data"));
      assert.notEqual(copy, payload);
      assert.ok(Object.isFrozen(copy) && Object.isFrozen(copy.chunk));
    }
  });

  it("leaves anything unusual to the generic walk", () => {
    const odd: unknown[] = [
      { turn: 1, step: 1, chunk: { type: "usage", usage: { inputTokens: 1.5, outputTokens: 1 } } },
      { turn: 1, step: 1, chunk: { type: "usage", usage: { inputTokens: 1, outputTokens: 1, costUsd: 2 } } },
      { turn: 1, step: 1, chunk: { type: "usage", usage: { inputTokens: -0, outputTokens: 1 } } },
      { turn: 1, step: 1, chunk: { type: "usage", usage: { inputTokens: 1, [Symbol("s")]: 1 } } },
      { turn: 1, step: 1, chunk: { type: "finish", reason: { kind: "stop" }, replayState: { a: 1 } } },
      { turn: 1, step: 1, chunk: { type: "finish", reason: { kind: "error", failure: { code: "X", message: "x" } } } },
      { turn: 1, step: 1, chunk: { type: "finish", reason: { kind: "stop", extra: 1 } } },
      { turn: 1, step: 1, chunk: { type: "block-end", index: 0, block: { type: "text", text: "x", extra: 1 } } },
      { turn: 1, step: 1, chunk: { type: "block-end", index: 0, block: { type: "image", mediaType: "image/png" } } },
      { turn: 1, step: 1, chunk: { type: "block-end", index: 0, block: { type: "tool-call", id: "c", name: "f" } } },
      {
        turn: 1,
        step: 1,
        chunk: { type: "block-end", index: 0, block: Object.defineProperty({ type: "text", text: "x" }, "h", {}) },
      },
      { turn: 1, step: 1, chunk: { type: "block-end", index: 0, block: [] } },
      { turn: 1, step: 1, chunk: { type: "text-delta", index: 0, text: "x", extra: 1 } },
      { turn: 1, step: 1, chunk: { type: "text-delta", index: -0, text: "x" } },
      { turn: 1, step: 1, chunk: { type: "text-delta", index: 0.5, text: "x" } },
      { turn: 1, step: 1, chunk: { type: "text-delta", index: 0, text: 5 } },
      { turn: 1, step: 1, chunk: { type: "text-delta", index: 0, text: "x", [Symbol("s")]: 1 } },
      { turn: 1, step: 1, chunk: new Map() },
      { turn: 1, step: 1, chunk: { type: "text-delta", index: 0, text: "x" }, more: true },
      { turn: -0, step: 1, chunk: { type: "text-delta", index: 0, text: "x" } },
      { turn: 1, step: 1, chunk: Object.defineProperty({ type: "text-delta", index: 0, text: "x" }, "hidden", {}) },
      Object.defineProperty({ turn: 1, step: 1, chunk: { type: "text-delta", index: 0, text: "x" } }, "hidden", {}),
    ];
    for (const payload of odd) assert.equal(copyChunkData(payload), undefined);
  });

  it("takes a chunk's keys in any order, and leaves a missing, renamed, extra or hidden key to the generic walk (fast-check)", () => {
    const chunks: Record<string, unknown>[] = [
      { type: "text-delta", index: 0, text: "Hi" },
      { type: "reasoning-delta", index: 2, text: "" },
      { type: "block-start", index: 1, blockType: "text" },
      { type: "tool-call-delta", index: 1, id: "c", argumentsDelta: "{" },
      { type: "tool-call-delta", index: 1, id: "c", name: "add", argumentsDelta: "" },
      { type: "block-end", index: 0, block: { type: "text", text: "Hi" } },
      { type: "usage", usage: { inputTokens: 1, outputTokens: 2 } },
      { type: "finish", reason: { kind: "stop" } },
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...chunks),
        fc.array(fc.nat(), { minLength: 5, maxLength: 5 }),
        fc.constantFrom("exact", "missing", "renamed", "extra", "hidden"),
        (chunk, ranks, mode) => {
          const keys = Object.keys(chunk).map((k, i) => [ranks[i], k] as const).sort((a, b) => a[0] - b[0])
            .map(([, k]) => k);
          // A tool-call delta without its optional name is another valid chunk: never the one dropped.
          const dropped = keys.find((k) => k !== "name")!;
          const reordered: Record<string, unknown> = {};
          for (const k of mode === "missing" || mode === "renamed" ? keys.filter((k) => k !== dropped) : keys) {
            reordered[k] = chunk[k];
          }
          if (mode === "renamed") reordered.other = chunk[dropped];
          if (mode === "extra") reordered.extra = 1;
          if (mode === "hidden") Object.defineProperty(reordered, "hidden", { value: 1 });
          const payload = { turn: 1, step: 1, chunk: reordered };
          const copy = copyChunkData(payload);
          if (mode !== "exact") return copy === undefined;
          assert.deepEqual(copy, copyLosslessJson(payload, "data"));
          return Object.isFrozen(copy!.chunk);
        },
      ),
    );
  });

  it("reads each property once: a getter's value is what is copied and checked", () => {
    let reads = 0;
    const chunk = {
      type: "text-delta",
      index: 0,
      get text() {
        reads++;
        return reads === 1 ? "first" : 42;
      },
    };
    const copy = copyChunkData({ turn: 1, step: 1, chunk }) as { chunk: { text: unknown } };
    assert.equal(reads, 1);
    assert.equal(copy.chunk.text, "first");
  });

  it("a revoked proxy or a throwing getter gets the generic walk's error, through append and appendChunk", () => {
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    const throwing = {
      type: "text-delta",
      index: 0,
      get text(): string {
        throw new RangeError("getter");
      },
    };
    for (const chunk of [revocable.proxy, { type: "block-end", index: 0, block: revocable.proxy }]) {
      assert.equal(copyChunkData({ turn: 1, step: 1, chunk }), undefined);
      const session = Session.create("s");
      session.append("turn/start", { turn: 1 });
      session.append("step/start", { turn: 1, step: 1 });
      assert.throws(() => session.append("assistant/chunk", { turn: 1, step: 1, chunk } as never), {
        code: "NOT_LOSSLESS_JSON",
      });
      assert.throws(() => appendChunk(session, 1, 1, chunk), { code: "NOT_LOSSLESS_JSON" });
      assert.equal(session.seq, 2);
    }
    assert.equal(copyChunkData({ turn: 1, step: 1, chunk: throwing }), undefined);
    const session = Session.create("s");
    session.append("turn/start", { turn: 1 });
    session.append("step/start", { turn: 1, step: 1 });
    assert.throws(() => appendChunk(session, 1, 1, throwing), RangeError);
    assert.equal(session.seq, 2);
  });

  it("an append that takes the generic path still rejects what is not lossless JSON", () => {
    const session = Session.create("s");
    session.append("turn/start", { turn: 1 });
    session.append("step/start", { turn: 1, step: 1 });
    assert.throws(
      () =>
        session.append("assistant/chunk", { turn: 1, step: 1, chunk: { type: "text-delta", index: -0, text: "x" } }),
      { code: "NOT_LOSSLESS_JSON" },
    );
    assert.equal(session.seq, 2);
  });

  it("appendChunk() commits what append('assistant/chunk', …) commits, and refuses what it refuses", () => {
    const chunks: unknown[] = [
      { type: "text-delta", index: 0, text: "Hi" },
      { type: "block-end", index: 0, block: { type: "text", text: "Hi" } },
      { type: "usage", usage: { inputTokens: 1, outputTokens: 2 } },
      { type: "finish", reason: { kind: "error", failure: { code: "X", message: "x" } } },
      { type: "finish", reason: { kind: "stop" }, replayState: { opaque: [1, 2] } },
      { type: "acme/custom", payload: { a: [1, "b"] } },
    ];
    const a = Session.create("a", undefined, { now: () => 5 });
    const b = Session.create("b", undefined, { now: () => 5 });
    for (const s of [a, b]) {
      s.append("turn/start", { turn: 1 });
      s.append("step/start", { turn: 1, step: 1 });
    }
    for (const chunk of chunks) {
      const viaAppend = a.append("assistant/chunk", { turn: 1, step: 1, chunk } as never);
      const viaChunk = appendChunk(b, 1, 1, chunk);
      assert.deepEqual(viaChunk, viaAppend);
      assert.ok(Object.isFrozen(viaChunk) && Object.isFrozen(viaChunk.data) && Object.isFrozen(viaChunk.data.chunk));
      assert.notEqual(viaChunk.data.chunk, chunk);
    }
    const bad: [number, number, unknown][] = [
      [1, 1, { type: "text-delta", index: -0, text: "x" }],
      [1, 1, { type: "text-delta", index: 0, text: () => "x" }],
      [0, 1, { type: "text-delta", index: 0, text: "x" }],
      [1, 0, { type: "block-end", index: 0, block: { type: "text", text: "x" } }],
      [1, 1.5, { type: "text-delta", index: 0, text: "x" }],
      [1, 1, undefined],
    ];
    for (const [turn, step, chunk] of bad) {
      const expected = (() => {
        try {
          a.append("assistant/chunk", { turn, step, chunk } as never);
        } catch (error) {
          return (error as { code?: string }).code;
        }
        return "accepted";
      })();
      assert.notEqual(expected, "accepted");
      assert.throws(() => appendChunk(b, turn, step, chunk), { code: expected });
    }
    assert.equal(a.seq, b.seq);
    // The chunk's own commit leaves the surface where the general one does: a surface event after it folds the same.
    for (const s of [a, b]) {
      s.append("user/message", {
        id: "u",
        role: "user",
        content: [{ type: "text", text: "x" }],
        source: { kind: "user" },
      }, {
        surfaceOp: "append",
      });
    }
    assert.deepEqual(b.surface.nodes, a.surface.nodes);
    assert.deepEqual(b.deriveMessages(), a.deriveMessages());
    assert.deepEqual(b.events, a.events);
    const c = Session.create("c");
    c.observe(() => {
      assert.throws(() => appendChunk(c, 1, 1, { type: "text-delta", index: 0, text: "x" }), {
        code: "APPEND_REENTERED",
      });
    });
    c.append("turn/start", { turn: 1 });
    let now = 0;
    const clock = Session.create("d", undefined, { now: () => now });
    now = -1;
    assert.throws(() => appendChunk(clock, 1, 1, { type: "text-delta", index: 0, text: "x" }), {
      code: "INVALID_ARGS",
    });
    assert.equal(clock.seq, 0);
  });
});

describe("copySeqs()", () => {
  it("copies a plain dense array of seqs as the generic copy does, frozen", () => {
    for (const seqs of [[], [0], [3, 4, 9], [7, 2, 2]]) {
      const copy = copySeqs(seqs)!;
      assert.deepEqual(copy, copyLosslessJson(seqs, "sourceEventSeqs"));
      assert.notEqual(copy, seqs);
      assert.ok(Object.isFrozen(copy));
    }
  });

  it("leaves anything else to the generic walk, which accepts or rejects it as before", () => {
    const extra = Object.assign([1, 2], { note: "x" });
    const hidden = [1, 2];
    Object.defineProperty(hidden, "note", { value: "x", enumerable: false });
    const symbol = Object.assign([1], { [Symbol("s")]: 1 });
    const sparse = [1, , 3];
    class Seqs extends Array<number> {}
    const others: unknown[] = [
      extra,
      hidden,
      symbol,
      sparse,
      Seqs.from([1, 2]),
      [1.5],
      [-1],
      [-0],
      [NaN],
      ["1"],
      [[1]],
      { 0: 1, length: 1 },
      "1",
      undefined,
    ];
    for (const value of others) assert.equal(copySeqs(value), undefined, String(value));
    // Through append: the fast copy and the generic walk give the same events and the same errors.
    const session = Session.create("s", undefined, { now: () => 0 });
    session.append("turn/start", { turn: 1 });
    const message = (id: string) => ({
      turn: 1,
      step: 1,
      message: {
        id,
        role: "assistant" as const,
        content: [],
        source: { kind: "model" as const, provider: "p", model: "m" },
      },
    });
    const event = session.append("assistant/message", message("a"), { surfaceOp: "append", sourceEventSeqs: [0] });
    assert.deepEqual(event.sourceEventSeqs, [0]);
    assert.ok(Object.isFrozen(event.sourceEventSeqs));
    for (const seqs of [extra, hidden, sparse, [-0], [NaN]]) {
      assert.throws(
        () =>
          session.append("assistant/message", message("b"), { surfaceOp: "append", sourceEventSeqs: seqs as number[] }),
        { code: "NOT_LOSSLESS_JSON" },
      );
    }
    assert.throws(
      () => session.append("assistant/message", message("b"), { surfaceOp: "append", sourceEventSeqs: [1.5] }),
      { code: "SOURCE_SEQS_INVALID" },
    );
    assert.equal(session.seq, 2);
  });
});
