import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { BlockAssembler, checkStreamGrammar, type ContentBlock, type StreamChunk } from "../mod.ts";
import { arbStreamChunks } from "./mod.ts";

describe("arbStreamChunks()", () => {
  it("generates streams checkStreamGrammar accepts, whose block-ends carry what BlockAssembler assembles", () => {
    fc.assert(
      fc.property(arbStreamChunks(), (chunks) => {
        assert.deepEqual(checkStreamGrammar(chunks), []);
        const assembler = new BlockAssembler();
        for (const chunk of chunks) assembler.push(chunk);
        const finish = chunks.at(-1);
        assert.equal(finish?.type, "finish");
        assert.deepEqual(assembler.finish, finish.type === "finish" ? finish.reason : undefined);
        const ended = new Map<number, ContentBlock>();
        for (const chunk of chunks) if (chunk.type === "block-end") ended.set(chunk.index, chunk.block);
        // Blocks in index order: what its block-end carries (which its deltas fold to), else its deltas' fold
        // (a block an error or aborted finish left open); a max-tokens finish drops the tool calls.
        const starts = chunks.filter((c) => c.type === "block-start");
        starts.forEach((start, i) => assert.equal(start.index, i));
        const expected = starts.map((_, index) => ended.get(index) ?? assembledAt(chunks, index));
        for (const [index, block] of ended) assert.deepEqual(block, assembledAt(chunks, index));
        assert.deepEqual(
          assembler.blocks(),
          assembler.finish.kind === "max-tokens" ? expected.filter((b) => b.type !== "tool-call") : expected,
        );
      }),
      { numRuns: 500 },
    );
  });

  it("respects its size limits and can leave blocks open only at an error or aborted finish", () => {
    fc.assert(
      fc.property(arbStreamChunks({ maxBlocks: 2, maxDeltas: 1 }), (chunks) => {
        const starts = chunks.filter((c) => c.type === "block-start").length;
        const ends = chunks.filter((c) => c.type === "block-end").length;
        assert.ok(starts <= 2);
        assert.equal(chunks.filter((c) => c.type.endsWith("-delta")).length, starts);
        const finish = chunks.at(-1);
        if (ends < starts) assert.ok(finish?.type === "finish" && /^(error|aborted)$/.test(finish.reason.kind));
      }),
      { numRuns: 200 },
    );
  });
});

/** The block a stream's deltas for index `index` assemble to, folded here independently of BlockAssembler. */
function assembledAt(chunks: readonly StreamChunk[], index: number): ContentBlock {
  let text = "";
  let id = "";
  let name = "";
  let type: string | undefined;
  for (const chunk of chunks) {
    if (chunk.type === "block-start" && chunk.index === index) type = chunk.blockType;
    if (chunk.type === "text-delta" && chunk.index === index) text += chunk.text;
    if (chunk.type === "reasoning-delta" && chunk.index === index) text += chunk.text;
    if (chunk.type === "tool-call-delta" && chunk.index === index) {
      text += chunk.argumentsDelta;
      id = chunk.id;
      name = chunk.name ?? name;
    }
  }
  return type === "tool-call"
    ? { type: "tool-call", id, name, arguments: text }
    : { type: type as "text" | "reasoning", text };
}
