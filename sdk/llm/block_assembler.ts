/**
 * The one fold from stream chunks to content blocks.
 *
 * @module
 */

import type { ContentBlock, ReasoningBlock, TextBlock, ToolCallBlock } from "./messages.ts";
import type { BlockType, FinishReason, StreamChunk, TokenUsage } from "./stream_chunk.ts";

interface PartialBlock {
  readonly index: number;
  readonly type: BlockType;
  text: string;
  id: string;
  name: string;
  /** The block carried by the first `block-end`, once the block is closed. */
  ended: ContentBlock | undefined;
}

const STOP: FinishReason = Object.freeze({ kind: "stop" });

/**
 * Folds the chunks of one model call into content blocks, usage, the finish
 * reason and the adapter's replay state. The agent loop logs raw chunks and
 * feeds the same chunks here; every consumer that needs assembled content uses
 * this class rather than its own fold.
 *
 * Rules:
 * - blocks are kept by `index`, in first-seen order (which, for a valid
 *   stream, is index order);
 * - delta-only streams are tolerated: a delta for an unseen index opens a
 *   block of its type, and an open block assembles from its deltas;
 * - the first `block-end` of an index wins, and deltas for a closed index, or
 *   of another type than the block's, are ignored;
 * - the first `usage` wins; nothing after `finish` counts;
 * - without a `finish` chunk, {@linkcode BlockAssembler.finish} is `stop`;
 * - a tool call whose deltas carry no id gets `call-<index>`, so that its
 *   result can still be matched to it;
 * - when the replay state is an object with a `blocks` array, that array must
 *   hold one entry per assembled block (in first-seen order); if it does not,
 *   the replay state is dropped (`undefined`), since it cannot be matched to
 *   the blocks it describes;
 * - a `max-tokens` finish drops every tool-call block (a truncated call must
 *   not run) and the replay state's entries of those blocks too.
 *
 * Kept on purpose, though stricter or more tolerant than the reference: `push()`
 * never throws, whatever it is given (the assembler runs inside the loop's
 * stream consumer, where a throw would lose the whole call; grammar errors are
 * the {@linkcode StreamGrammarChecker}'s job), and the first `finish` wins
 * (later chunks cannot rewrite a call that has ended).
 *
 * @example Folding a stream
 * ```ts
 * import { BlockAssembler } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const assembler = new BlockAssembler();
 * assembler.push({ type: "reasoning-delta", index: 0, text: "Think" });
 * assembler.push({ type: "text-delta", index: 1, text: "Hel" });
 * assembler.push({ type: "text-delta", index: 1, text: "lo" });
 * assembler.push({ type: "tool-call-delta", index: 2, id: "c1", name: "read", argumentsDelta: '{"p":' });
 * assembler.push({ type: "tool-call-delta", index: 2, id: "c1", argumentsDelta: '"a"}' });
 * assembler.push({ type: "usage", usage: { inputTokens: 5, outputTokens: 9 } });
 * assembler.push({ type: "finish", reason: { kind: "tool-calls" } });
 * assert.deepEqual(assembler.blocks(), [
 *   { type: "reasoning", text: "Think" },
 *   { type: "text", text: "Hello" },
 *   { type: "tool-call", id: "c1", name: "read", arguments: '{"p":"a"}' },
 * ]);
 * assert.deepEqual(assembler.finish, { kind: "tool-calls" });
 * assert.equal(assembler.usage?.outputTokens, 9);
 * ```
 */
export class BlockAssembler {
  readonly #blocks = new Map<number, PartialBlock>();
  #usage: TokenUsage | undefined;
  #finish: FinishReason | undefined;
  #replayState: unknown;

  /**
   * Feed the next chunk.
   *
   * @param chunk The next chunk, in stream order.
   */
  push(chunk: StreamChunk): void {
    if (this.#finish !== undefined || typeof chunk !== "object" || chunk === null) return;
    switch (chunk.type) {
      case "block-start":
        if (isBlockType(chunk.blockType)) this.#block(chunk.index, chunk.blockType);
        break;
      case "text-delta":
      case "reasoning-delta": {
        const block = this.#block(chunk.index, chunk.type === "text-delta" ? "text" : "reasoning");
        if (block && typeof chunk.text === "string") block.text += chunk.text;
        break;
      }
      case "tool-call-delta": {
        const block = this.#block(chunk.index, "tool-call");
        if (!block) break;
        if (block.id === "" && typeof chunk.id === "string") block.id = chunk.id;
        if (block.name === "" && typeof chunk.name === "string") block.name = chunk.name;
        if (typeof chunk.argumentsDelta === "string") block.text += chunk.argumentsDelta;
        break;
      }
      case "block-end": {
        const type = (chunk.block as { type?: unknown } | undefined)?.type;
        if (!isBlockType(type) || !isIndex(chunk.index)) break;
        const block = this.#blocks.get(chunk.index) ?? this.#block(chunk.index, type);
        if (block && block.ended === undefined && block.type === type) block.ended = chunk.block;
        break;
      }
      case "usage":
        this.#usage ??= chunk.usage;
        break;
      case "finish":
        if (typeof chunk.reason !== "object" || chunk.reason === null) break;
        this.#finish = chunk.reason;
        this.#replayState = chunk.replayState;
        break;
    }
  }

  /** Whether a `finish` chunk has been pushed. */
  get finished(): boolean {
    return this.#finish !== undefined;
  }

  /** Why the call ended: the `finish` chunk's reason, or `stop` when none has arrived. */
  get finish(): FinishReason {
    return this.#finish ?? STOP;
  }

  /** The usage reported, if any. */
  get usage(): TokenUsage | undefined {
    return this.#usage;
  }

  /**
   * The adapter's replay state from the `finish` chunk, pruned of the entries
   * of dropped tool calls on `max-tokens`, or `undefined` when its per-block
   * entries do not line up with the blocks (see the class rules).
   */
  get replayState(): unknown {
    const state = this.#replayState;
    if (!isBlockReplayState(state)) return state;
    if (state.blocks.length !== this.#blocks.size) return undefined;
    if (this.#finish?.kind !== "max-tokens") return state;
    const kept: boolean[] = [...this.#blocks.values()].map((b) => b.type !== "tool-call");
    if (kept.every(Boolean)) return state;
    return { ...state, blocks: state.blocks.filter((_, i) => kept[i]) };
  }

  /**
   * The assembled blocks, in first-seen order: closed blocks as their first
   * `block-end` carried them, open blocks from their deltas. On a `max-tokens`
   * finish, tool-call blocks are left out.
   *
   * @returns A fresh array.
   */
  blocks(): ContentBlock[] {
    const dropToolCalls = this.#finish?.kind === "max-tokens";
    const out: ContentBlock[] = [];
    for (const block of this.#blocks.values()) {
      if (dropToolCalls && block.type === "tool-call") continue;
      out.push(assemble(block));
    }
    return out;
  }

  /**
   * The tool calls to run: the tool-call blocks of {@linkcode BlockAssembler.blocks}.
   *
   * @returns A fresh array, empty on a `max-tokens` finish.
   */
  toolCalls(): ToolCallBlock[] {
    return this.blocks().filter((b): b is ToolCallBlock => b.type === "tool-call");
  }

  /**
   * What to keep of a stream cut short: the text and reasoning blocks, closed
   * or open, whose text is not blank. Tool calls are left out, since they were
   * never dispatched.
   *
   * @returns A fresh array, in first-seen order.
   */
  interruptedBlocks(): (TextBlock | ReasoningBlock)[] {
    const out: (TextBlock | ReasoningBlock)[] = [];
    for (const block of this.#blocks.values()) {
      if (block.type === "tool-call") continue;
      const assembled = assemble(block) as TextBlock | ReasoningBlock;
      if (typeof assembled.text === "string" && assembled.text.trim() !== "") out.push(assembled);
    }
    return out;
  }

  #block(index: unknown, type: BlockType): PartialBlock | undefined {
    if (!isIndex(index)) return undefined;
    const existing = this.#blocks.get(index);
    if (existing === undefined) {
      const block: PartialBlock = { index, type, text: "", id: "", name: "", ended: undefined };
      this.#blocks.set(index, block);
      return block;
    }
    // Deltas for a closed block, or of another type, are ignored.
    return existing.ended === undefined && existing.type === type ? existing : undefined;
  }
}

function assemble(block: PartialBlock): ContentBlock {
  if (block.ended !== undefined) return block.ended;
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text };
    case "reasoning":
      return { type: "reasoning", text: block.text };
    case "tool-call":
      return { type: "tool-call", id: block.id || `call-${block.index}`, name: block.name, arguments: block.text };
  }
}

function isIndex(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

function isBlockType(value: unknown): value is BlockType {
  return value === "text" || value === "reasoning" || value === "tool-call";
}

function isBlockReplayState(value: unknown): value is { blocks: unknown[] } {
  return typeof value === "object" && value !== null && Array.isArray((value as { blocks?: unknown }).blocks);
}
