/**
 * Test helper: a fast-check arbitrary of valid model streams. Not published.
 *
 * @module
 */

import fc from "fast-check";
import type { ContentBlock } from "./messages.ts";
import type { BlockType, FinishReason, StreamChunk } from "./stream_chunk.ts";

/** A valid stream, with the blocks its deltas assemble to. */
export interface ValidStream {
  readonly chunks: StreamChunk[];
  /** The assembled blocks, in index order. */
  readonly blocks: ContentBlock[];
  readonly finish: FinishReason;
}

const finishes: FinishReason[] = [
  { kind: "stop" },
  { kind: "tool-calls" },
  { kind: "max-tokens" },
  { kind: "error", failure: { code: "SERVER", message: "Bad gateway" } },
  { kind: "aborted", failure: { code: "ABORTED", message: "Aborted" } },
];

/**
 * Arbitrary streams the assembler folds: interleaved deltas, block-starts
 * (optional when `deltaOnly` is allowed), block-ends, usage and finish.
 */
function arbStream(deltaOnly: boolean): fc.Arbitrary<ValidStream> {
  return fc.record({
    slots: fc.array(fc.record({ slot: fc.nat(4), text: fc.string({ maxLength: 6 }) }), { maxLength: 24 }),
    types: fc.tuple(...Array.from({ length: 5 }, () => fc.constantFrom<BlockType>("text", "reasoning", "tool-call"))),
    starts: fc.array(deltaOnly ? fc.boolean() : fc.constant(true), { minLength: 5, maxLength: 5 }),
    endOrder: fc.array(fc.nat(4), { maxLength: 5 }),
    usage: fc.option(fc.record({ inputTokens: fc.nat(1000), outputTokens: fc.nat(1000) }), { nil: undefined }),
    finish: fc.constantFrom(...finishes),
    closeAll: fc.boolean(),
  }).map(({ slots, types, starts, endOrder, usage, finish, closeAll }) => {
    const indexOfSlot = new Map<number, number>();
    const parts: { type: BlockType; text: string }[] = [];
    const chunks: StreamChunk[] = [];
    for (const { slot, text } of slots) {
      let index = indexOfSlot.get(slot);
      const type = types[slot];
      if (index === undefined) {
        index = indexOfSlot.size;
        indexOfSlot.set(slot, index);
        parts.push({ type, text: "" });
        if (starts[slot]) chunks.push({ type: "block-start", index, blockType: type });
      }
      parts[index].text += text;
      if (type === "text") chunks.push({ type: "text-delta", index, text });
      else if (type === "reasoning") chunks.push({ type: "reasoning-delta", index, text });
      else {chunks.push({
          type: "tool-call-delta",
          index,
          id: `call-${index}`,
          name: `tool${index}`,
          argumentsDelta: text,
        });}
    }
    const blocks: ContentBlock[] = parts.map(({ type, text }, index) =>
      type === "tool-call" ? { type, id: `call-${index}`, name: `tool${index}`, arguments: text } : { type, text }
    );
    // Successful finishes need every block closed; error/aborted may leave some open.
    const mustClose = finish.kind !== "error" && finish.kind !== "aborted";
    const order = [...new Set([...endOrder.filter((i) => i < blocks.length), ...blocks.keys()])];
    const closing = mustClose || closeAll ? order : order.slice(0, Math.floor(order.length / 2));
    for (const index of closing) chunks.push({ type: "block-end", index, block: blocks[index] });
    if (usage !== undefined) chunks.push({ type: "usage", usage });
    chunks.push({ type: "finish", reason: finish });
    return { chunks, blocks, finish };
  });
}

/** Arbitrary streams that obey the grammar: every block opens with its block-start. */
export const arbValidStream: fc.Arbitrary<ValidStream> = arbStream(false);

/** Arbitrary streams the assembler must fold alike: like {@linkcode arbValidStream}, but some blocks are delta-only. */
export const arbAssemblableStream: fc.Arbitrary<ValidStream> = arbStream(true);
