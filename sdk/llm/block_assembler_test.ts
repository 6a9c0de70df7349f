import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { BlockAssembler, type StreamChunk } from "./mod.ts";
import { arbAssemblableStream } from "./_test_stream_arbitrary.ts";

function assemble(chunks: readonly StreamChunk[]): BlockAssembler {
  const assembler = new BlockAssembler();
  for (const chunk of chunks) assembler.push(chunk);
  return assembler;
}

const call = (index: number, id: string, argumentsDelta: string, name?: string): StreamChunk => ({
  type: "tool-call-delta",
  index,
  id,
  argumentsDelta,
  ...(name === undefined ? {} : { name }),
});

describe("BlockAssembler", () => {
  it("blocks() keeps blocks in first-seen order and assembles open blocks from their deltas", () => {
    const assembler = assemble([
      { type: "block-start", index: 0, blockType: "reasoning" },
      { type: "reasoning-delta", index: 0, text: "a" },
      { type: "text-delta", index: 1, text: "b" },
      { type: "reasoning-delta", index: 0, text: "c" },
      call(2, "c1", "{", "ls"),
      call(2, "c1", "}"),
      { type: "text-delta", index: 1, text: "d" },
    ]);
    assert.deepEqual(assembler.blocks(), [
      { type: "reasoning", text: "ac" },
      { type: "text", text: "bd" },
      { type: "tool-call", id: "c1", name: "ls", arguments: "{}" },
    ]);
    assert.equal(assembler.finished, false);
  });

  it("blocks() keeps the first block-end and ignores later deltas and ends for that index", () => {
    const assembler = assemble([
      { type: "text-delta", index: 0, text: "draft" },
      { type: "block-end", index: 0, block: { type: "text", text: "final" } },
      { type: "text-delta", index: 0, text: "late" },
      { type: "block-end", index: 0, block: { type: "text", text: "second" } },
      { type: "finish", reason: { kind: "stop" } },
    ]);
    assert.deepEqual(assembler.blocks(), [{ type: "text", text: "final" }]);
  });

  it("ignores deltas of another type than their block's", () => {
    const assembler = assemble([
      { type: "block-start", index: 0, blockType: "text" },
      { type: "reasoning-delta", index: 0, text: "wrong" },
      { type: "text-delta", index: 0, text: "right" },
      { type: "block-end", index: 0, block: { type: "reasoning", text: "wrong end" } },
    ]);
    assert.deepEqual(assembler.blocks(), [{ type: "text", text: "right" }]);
  });

  it("finish is stop until a finish chunk arrives, and nothing after finish counts", () => {
    const assembler = new BlockAssembler();
    assert.deepEqual(assembler.finish, { kind: "stop" });
    assembler.push({ type: "text-delta", index: 0, text: "x" });
    assembler.push({ type: "usage", usage: { inputTokens: 1, outputTokens: 2 } });
    assembler.push({ type: "usage", usage: { inputTokens: 9, outputTokens: 9 } });
    assembler.push({ type: "finish", reason: { kind: "tool-calls" }, replayState: { v: 1 } });
    assembler.push({ type: "text-delta", index: 0, text: "after" });
    assembler.push({ type: "finish", reason: { kind: "stop" } });
    assert.deepEqual(assembler.finish, { kind: "tool-calls" });
    assert.equal(assembler.finished, true);
    assert.deepEqual(assembler.usage, { inputTokens: 1, outputTokens: 2 });
    assert.deepEqual(assembler.replayState, { v: 1 });
    assert.deepEqual(assembler.blocks(), [{ type: "text", text: "x" }]);
  });

  it("a max-tokens finish drops tool calls and their replay entries", () => {
    const assembler = assemble([
      { type: "text-delta", index: 0, text: "Let me look" },
      call(1, "c1", '{"pa', "read"),
      {
        type: "finish",
        reason: { kind: "max-tokens" },
        replayState: { blocks: [{ sig: "t" }, { sig: "c" }], model: "m" },
      },
    ]);
    assert.deepEqual(assembler.blocks(), [{ type: "text", text: "Let me look" }]);
    assert.deepEqual(assembler.toolCalls(), []);
    assert.deepEqual(assembler.replayState, { blocks: [{ sig: "t" }], model: "m" });
  });

  it("toolCalls() lists the calls of a tool-calls finish; an opaque replay state is kept as is", () => {
    const assembler = assemble([
      call(0, "c1", "{}", "a"),
      { type: "block-end", index: 0, block: { type: "tool-call", id: "c1", name: "a", arguments: "{}" } },
      call(1, "c2", '{"x":1}', "b"),
      { type: "finish", reason: { kind: "tool-calls" }, replayState: "opaque" },
    ]);
    assert.deepEqual(assembler.toolCalls().map((c) => c.id), ["c1", "c2"]);
    assert.equal(assembler.replayState, "opaque");
  });

  it("interruptedBlocks() keeps text and reasoning with non-blank content, closed or open", () => {
    const assembler = assemble([
      { type: "reasoning-delta", index: 0, text: "thinking" },
      { type: "block-end", index: 0, block: { type: "reasoning", text: "thinking" } },
      { type: "text-delta", index: 1, text: "  \n" },
      call(2, "c1", "{", "x"),
      { type: "text-delta", index: 3, text: "partial ans" },
    ]);
    assert.deepEqual(assembler.interruptedBlocks(), [
      { type: "reasoning", text: "thinking" },
      { type: "text", text: "partial ans" },
    ]);
  });

  it("push() never throws on malformed input", () => {
    const assembler = new BlockAssembler();
    const junk = [null, 1, "x", {}, { type: "text-delta" }, { type: "block-end", index: -1, block: null }, {
      type: "finish",
      reason: null,
    }, { type: "block-start", index: 1.5, blockType: "image" }];
    for (const chunk of junk) assembler.push(chunk as unknown as StreamChunk);
    assert.deepEqual(assembler.blocks(), []);
    assert.equal(assembler.finished, false);
  });

  it("property: on valid streams it reproduces the blocks, and is deterministic and idempotent", () => {
    fc.assert(
      fc.property(arbAssemblableStream, ({ chunks, blocks, finish }) => {
        const a = assemble(chunks);
        const b = assemble(chunks);
        const expected = finish.kind === "max-tokens" ? blocks.filter((x) => x.type !== "tool-call") : blocks;
        assert.deepEqual(a.blocks(), expected);
        assert.deepEqual(a.blocks(), a.blocks());
        assert.deepEqual(a.blocks(), b.blocks());
        assert.deepEqual(a.finish, finish);
        assert.deepEqual(a.usage, b.usage);
        assert.deepEqual(a.interruptedBlocks(), b.interruptedBlocks());
      }),
      { numRuns: 300 },
    );
  });

  it("property: never throws and stays bounded on arbitrary chunk-like values", () => {
    const arbChunk = fc.oneof(
      fc.anything(),
      fc.record({
        type: fc.constantFrom(
          "block-start",
          "text-delta",
          "reasoning-delta",
          "tool-call-delta",
          "block-end",
          "usage",
          "finish",
        ),
        index: fc.oneof(fc.integer({ min: -2, max: 5 }), fc.anything()),
        text: fc.oneof(fc.string(), fc.anything()),
        blockType: fc.oneof(fc.constantFrom("text", "reasoning", "tool-call"), fc.anything()),
        block: fc.anything(),
        id: fc.anything(),
        argumentsDelta: fc.anything(),
        reason: fc.anything(),
        usage: fc.anything(),
      }, { requiredKeys: ["type"] }),
    );
    fc.assert(
      fc.property(fc.array(arbChunk, { maxLength: 40 }), (chunks) => {
        const assembler = assemble(chunks as StreamChunk[]);
        const blocks = assembler.blocks();
        assert.ok(blocks.length <= chunks.length);
        assembler.interruptedBlocks();
        assembler.toolCalls();
        void assembler.finish;
        void assembler.replayState;
      }),
      { numRuns: 300 },
    );
  });
});

describe("BlockAssembler ids and replay metadata", () => {
  it("gives a streamed tool call with no id the id call-<index>", () => {
    const assembler = assemble([
      { type: "text-delta", index: 0, text: "x" },
      { type: "tool-call-delta", index: 1, argumentsDelta: "{}" } as unknown as StreamChunk,
      { type: "tool-call-delta", index: 2, id: "", name: "read", argumentsDelta: "{}" },
      { type: "finish", reason: { kind: "tool-calls" } },
    ]);
    assert.deepEqual(assembler.toolCalls().map((c) => c.id), ["call-1", "call-2"]);
  });

  it("drops replay metadata whose per-block entries do not line up with the blocks", () => {
    const response = { responseId: "r" };
    const twoBlocks: StreamChunk[] = [
      { type: "block-end", index: 0, block: { type: "text", text: "one" } },
      { type: "block-end", index: 1, block: { type: "text", text: "two" } },
    ];
    const short = assemble([...twoBlocks, {
      type: "finish",
      reason: { kind: "stop" },
      replayState: { response, blocks: ["m0"] },
    }]);
    assert.equal(short.blocks().length, 2);
    assert.equal(short.replayState, undefined);
    const long = assemble([
      ...twoBlocks,
      { type: "finish", reason: { kind: "max-tokens" }, replayState: { response, blocks: ["m0", "m1", "m2"] } },
    ]);
    assert.equal(long.replayState, undefined);
    const aligned = { response, blocks: ["m0", "m1"] };
    assert.equal(
      assemble([...twoBlocks, { type: "finish", reason: { kind: "stop" }, replayState: aligned }]).replayState,
      aligned,
    );
    const noBlocks = { response };
    assert.equal(
      assemble([...twoBlocks, { type: "finish", reason: { kind: "stop" }, replayState: noBlocks }]).replayState,
      noBlocks,
    );
  });
});
