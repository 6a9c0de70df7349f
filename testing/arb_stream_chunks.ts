/**
 * A fast-check arbitrary of grammar-valid model streams.
 *
 * @module
 */

import fc from "fast-check";
import type { Arbitrary } from "fast-check";
import type { BlockType, ContentBlock, FinishReason, StreamChunk } from "../mod.ts";

/** Options of {@linkcode arbStreamChunks}. */
export interface ArbStreamChunksOptions {
  /**
   * The most blocks a stream has.
   *
   * @default {4}
   */
  maxBlocks?: number;
  /**
   * The most deltas a block has (each block has at least one).
   *
   * @default {4}
   */
  maxDeltas?: number;
}

const FINISHES: readonly FinishReason[] = [
  { kind: "stop" },
  { kind: "tool-calls" },
  { kind: "max-tokens" },
  { kind: "error", failure: { code: "SERVER", message: "The provider failed" } },
  { kind: "aborted", failure: { code: "ABORTED", message: "The call was aborted" } },
];

const TOOL_NAMES = ["read", "write", "search"] as const;

interface BlockPlan {
  readonly type: BlockType;
  readonly pieces: readonly string[];
  readonly name: string;
  /** End the block right after its last delta (else among the ends after every delta). */
  readonly endEarly: boolean;
}

function blockPlan(maxDeltas: number): Arbitrary<BlockPlan> {
  const deltas = Math.max(1, maxDeltas);
  return fc.record({
    type: fc.constantFrom<BlockType>("text", "reasoning", "tool-call"),
    texts: fc.array(fc.string({ maxLength: 8 }), { minLength: 1, maxLength: deltas }),
    args: fc.dictionary(
      fc.string({ maxLength: 4 }),
      fc.oneof(fc.integer(), fc.string({ maxLength: 6 }), fc.boolean()),
      {
        maxKeys: 3,
      },
    ),
    cuts: fc.array(fc.nat(), { maxLength: deltas - 1 }),
    name: fc.constantFrom(...TOOL_NAMES),
    endEarly: fc.boolean(),
  }).map(({ type, texts, args, cuts, name, endEarly }) => {
    if (type !== "tool-call") return { type, pieces: texts, name, endEarly };
    // Tool-call arguments are a JSON object streamed in pieces, cut at arbitrary points.
    const json = JSON.stringify(args);
    const at = [...new Set(cuts.map((c) => c % (json.length + 1)))].sort((a, b) => a - b);
    const pieces = [0, ...at].map((start, i) => json.slice(start, [...at, json.length][i]));
    return { type, pieces, name, endEarly };
  });
}

/**
 * An arbitrary of model streams that obey the stream grammar
 * (`checkStreamGrammar` finds no violation): text, reasoning and tool-call
 * blocks numbered by index in first-seen order, each opened by its
 * `block-start`, its deltas interleaved with the other open blocks' deltas
 * (a tool call's id on every delta, its name on the first, its arguments a
 * JSON object cut into pieces), ended by one `block-end` carrying the block
 * its deltas assemble to (right after its last delta or later, in any order);
 * then, optionally, one `usage`; then a `finish` (`stop`, `tool-calls`,
 * `max-tokens`, `error` or `aborted`). An `error` or `aborted` finish may
 * leave the blocks that were not ended early open, as the grammar allows.
 *
 * @param options Size limits.
 * @returns The arbitrary.
 *
 * @example
 * ```ts
 * import fc from "fast-check";
 * import { checkStreamGrammar } from "@dsh/harness";
 * import { arbStreamChunks } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * fc.assert(fc.property(arbStreamChunks(), (chunks) => {
 *   assert.deepEqual(checkStreamGrammar(chunks), []);
 *   assert.equal(chunks.at(-1)?.type, "finish");
 * }), { numRuns: 50 });
 * ```
 */
export function arbStreamChunks(options: ArbStreamChunksOptions = {}): Arbitrary<StreamChunk[]> {
  const maxBlocks = options.maxBlocks ?? 4;
  const maxDeltas = options.maxDeltas ?? 4;
  return fc.record({
    blocks: fc.array(blockPlan(maxDeltas), { maxLength: maxBlocks }),
    // Which open block (or the next unopened one) streams next, step by step.
    schedule: fc.array(fc.nat(), { maxLength: maxBlocks * maxDeltas }),
    // The order of the ends left for after the deltas.
    endOrder: fc.array(fc.nat(), { maxLength: maxBlocks }),
    usage: fc.option(fc.record({ inputTokens: fc.nat(10_000), outputTokens: fc.nat(10_000) }), { nil: undefined }),
    finish: fc.constantFrom(...FINISHES),
    leaveOpen: fc.boolean(),
  }).map(({ blocks, schedule, endOrder, usage, finish, leaveOpen }) => {
    const chunks: StreamChunk[] = [];
    const sent = blocks.map(() => 0);
    const assembled = blocks.map(() => "");
    const later: number[] = [];
    let opened = 0;
    const blockOf = (index: number): ContentBlock => {
      const plan = blocks[index];
      return plan.type === "tool-call"
        ? { type: "tool-call", id: `call_${index}`, name: plan.name, arguments: assembled[index] }
        : { type: plan.type, text: assembled[index] };
    };
    const stream = (index: number): void => {
      const plan = blocks[index];
      const piece = plan.pieces[sent[index]++];
      assembled[index] += piece;
      if (plan.type === "text") chunks.push({ type: "text-delta", index, text: piece });
      else if (plan.type === "reasoning") chunks.push({ type: "reasoning-delta", index, text: piece });
      else {
        chunks.push({
          type: "tool-call-delta",
          index,
          id: `call_${index}`,
          ...(sent[index] === 1 ? { name: plan.name } : {}),
          argumentsDelta: piece,
        });
      }
      if (sent[index] === plan.pieces.length) {
        if (plan.endEarly) chunks.push({ type: "block-end", index, block: blockOf(index) });
        else later.push(index);
      }
    };
    let step = 0;
    for (;;) {
      // The candidates: open blocks with pieces left, then the next block to open.
      const live: number[] = [];
      for (let i = 0; i < opened; i++) if (sent[i] < blocks[i].pieces.length) live.push(i);
      if (opened < blocks.length) live.push(opened);
      if (live.length === 0) break;
      const index = live[(schedule[step++] ?? 0) % live.length];
      if (index === opened) {
        chunks.push({ type: "block-start", index, blockType: blocks[index].type });
        opened++;
      }
      stream(index);
    }
    // The ends left for later, in a generated order; an error or aborted finish may leave them open.
    const ends = later.map((index, i) => ({ index, key: endOrder[i] ?? i })).sort((a, b) => a.key - b.key);
    const mayLeaveOpen = (finish.kind === "error" || finish.kind === "aborted") && leaveOpen;
    if (!mayLeaveOpen) {
      for (const { index } of ends) chunks.push({ type: "block-end", index, block: blockOf(index) });
    }
    if (usage !== undefined) chunks.push({ type: "usage", usage });
    chunks.push({ type: "finish", reason: finish });
    return chunks;
  });
}
