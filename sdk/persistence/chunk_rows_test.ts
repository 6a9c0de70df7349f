import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type { SessionEvent } from "../session/session_events.ts";
import { type ChunkRow, expandChunkRow, isChunkRow, packChunkRows, unpackChunkRows } from "./chunk_rows.ts";
import { LogBuilder } from "./_test_log.ts";

function delta(seq: number, time: number, chunk: unknown, turn = 1, step = 1): SessionEvent {
  return { type: "assistant/chunk", seq, time, data: { turn, step, chunk } } as SessionEvent;
}

describe("packChunkRows()", () => {
  it("packs a run of three text deltas into one text-chunks row with time offsets", () => {
    const events = [
      delta(4, 100, { type: "text-delta", index: 0, text: "a" }),
      delta(5, 103, { type: "text-delta", index: 0, text: "b" }),
      delta(6, 110, { type: "text-delta", index: 0, text: "c" }),
    ];
    assert.deepEqual(packChunkRows(events), [{
      type: "text-chunks",
      seq0: 4,
      time0: 100,
      data: { turn: 1, step: 1, index: 0, dt: [0, 3, 10], texts: ["a", "b", "c"] },
    }]);
  });

  it("leaves runs of two, and events that would lose fields, unpacked", () => {
    const events = [
      delta(0, 1, { type: "text-delta", index: 0, text: "a" }),
      delta(1, 2, { type: "text-delta", index: 0, text: "b" }),
      delta(2, 3, { type: "text-delta", index: 1, text: "c" }),
      { ...delta(3, 4, { type: "text-delta", index: 1, text: "d" }), ignorable: true } as SessionEvent,
      delta(4, 5.5, { type: "text-delta", index: 1, text: "e" }),
      delta(5, 6, { type: "tool-call-delta", index: 2, id: "c", name: "n", argumentsDelta: "" }),
      delta(6, 7, { type: "text-delta", index: 1, text: "f", extra: 1 }),
    ];
    const records = packChunkRows(events);
    assert.equal(records.length, events.length);
    records.forEach((record, i) => assert.equal(record, events[i]));
  });

  it("breaks runs on block index, delta type, step, tool call id and seq gaps", () => {
    const text = (seq: number, index = 0, step = 1) =>
      delta(seq, seq, { type: "text-delta", index, text: "x" }, 1, step);
    const call = (seq: number, id: string) =>
      delta(seq, seq, { type: "tool-call-delta", index: 3, id, argumentsDelta: "{" });
    const events = [
      text(0),
      text(1),
      text(2),
      text(3, 1),
      text(4, 1),
      text(5, 1, 2),
      call(6, "a"),
      call(7, "a"),
      call(8, "a"),
      call(9, "b"),
      delta(10, 10, { type: "reasoning-delta", index: 0, text: "r" }),
      delta(11, 11, { type: "reasoning-delta", index: 0, text: "r" }),
      delta(12, 12, { type: "reasoning-delta", index: 0, text: "r" }),
    ];
    const records = packChunkRows(events);
    assert.deepEqual(records.map((r) => r.type), [
      "text-chunks",
      "assistant/chunk",
      "assistant/chunk",
      "assistant/chunk",
      "tool-call-chunks",
      "assistant/chunk",
      "reasoning-chunks",
    ]);
    assert.equal((records[4] as ChunkRow).data.id, "a");
    assert.deepEqual(unpackChunkRows(records), events);
  });

  it("round-trips a realistic log and shrinks it", () => {
    const log = new LogBuilder();
    for (let turn = 1; turn <= 3; turn++) log.completeTurn(turn);
    const records = packChunkRows(log.events);
    assert.ok(records.length < log.events.length);
    assert.deepEqual(unpackChunkRows(JSON.parse(JSON.stringify(records))), log.events);
  });

  it("round-trips arbitrary delta sequences through JSON", () => {
    const arbChunk = fc.oneof(
      fc.record({ type: fc.constant("text-delta"), index: fc.nat(2), text: fc.string() }),
      fc.record({ type: fc.constant("reasoning-delta"), index: fc.nat(2), text: fc.string() }),
      fc.record({
        type: fc.constant("tool-call-delta"),
        index: fc.nat(2),
        id: fc.constantFrom("a", "b"),
        argumentsDelta: fc.string(),
      }),
      fc.record({ type: fc.constant("block-start"), index: fc.nat(2), blockType: fc.constant("text") }),
    );
    const arbLog = fc.array(fc.tuple(arbChunk, fc.nat(5), fc.nat(1)), { maxLength: 40 }).map((items) => {
      let time = 0;
      // JSON copy: fast-check records have null prototypes, stored events do not.
      return JSON.parse(
        JSON.stringify(items.map(([chunk, dt, step], seq) => delta(seq, time += dt, chunk, 1, step + 1))),
      );
    });
    fc.assert(fc.property(arbLog, (events) => {
      const records = JSON.parse(JSON.stringify(packChunkRows(events)));
      assert.deepEqual(unpackChunkRows(records), events);
    }));
  });

  it("refuses a minimum run below two", () => {
    assert.throws(() => packChunkRows([], { minRun: 1 }), RangeError);
  });
});

describe("expandChunkRow()", () => {
  it("rejects malformed rows", () => {
    const row: ChunkRow = {
      type: "text-chunks",
      seq0: 0,
      time0: 0,
      data: { turn: 1, step: 1, index: 0, dt: [0], texts: ["a"] },
    };
    assert.ok(isChunkRow(row));
    assert.equal(expandChunkRow(row)?.length, 1);
    assert.equal(expandChunkRow({ ...row, data: { ...row.data, dt: [0, 1] } }), undefined);
    assert.equal(expandChunkRow({ ...row, data: { ...row.data, texts: [1 as unknown as string] } }), undefined);
    assert.equal(expandChunkRow({ ...row, type: "tool-call-chunks" }), undefined);
    assert.equal(expandChunkRow({ ...row, data: { ...row.data, dt: [], texts: [] } }), undefined);
    assert.throws(() => unpackChunkRows([{ ...row, seq0: 0.5 }]), TypeError);
    assert.equal(isChunkRow({ type: "assistant/chunk" }), false);
  });
});
