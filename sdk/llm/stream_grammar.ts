/**
 * The grammar of a model stream, as a checker that lists every violation.
 *
 * The rules (see {@linkcode StreamChunk}): a new block takes the next index
 * (0, 1, 2, … in first-seen order); a delta targets an open block of its own
 * type, opened by its `block-start`; a block ends at most once, with a block
 * of its own type, after its `block-start`; `usage` comes at most once and
 * before `finish`; `finish` is last and present; a `finish` other than
 * `error` / `aborted` leaves no block open. A delta or a `block-end` with no
 * `block-start` is reported at its own position (`delta-without-block-start`,
 * `block-end-without-block-start`); the checker then treats the block as
 * opened there, so that the rest of the stream is still checked. (The
 * {@linkcode BlockAssembler} stays tolerant of such streams; the checker does
 * not.)
 *
 * @module
 */

import type { BlockType, StreamChunk } from "./stream_chunk.ts";

/** The rule a chunk broke. */
export type GrammarRule =
  | "malformed-chunk"
  | "index-order"
  | "duplicate-block-start"
  | "delta-without-block-start"
  | "block-end-without-block-start"
  | "delta-type-mismatch"
  | "delta-after-block-end"
  | "tool-call-id-changed"
  | "duplicate-block-end"
  | "block-end-type-mismatch"
  | "duplicate-usage"
  | "chunk-after-finish"
  | "open-blocks-at-finish"
  | "missing-finish";

/** One violation of the stream grammar. */
export interface GrammarViolation {
  /** The rule broken. */
  readonly rule: GrammarRule;
  /** The position of the offending chunk in the stream (the stream's length for `missing-finish`). */
  readonly position: number;
  /** What is wrong, fact first. */
  readonly message: string;
}

interface BlockState {
  readonly type: BlockType;
  open: boolean;
  id?: string;
}

const DELTA_TYPES: Readonly<Record<string, BlockType>> = {
  "text-delta": "text",
  "reasoning-delta": "reasoning",
  "tool-call-delta": "tool-call",
};

const BLOCK_TYPES: ReadonlySet<string> = new Set(["text", "reasoning", "tool-call"]);

/**
 * An incremental stream-grammar checker: push chunks as they arrive, call
 * `end()` when the stream is over.
 *
 * @example
 * ```ts
 * import { StreamGrammarChecker } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const checker = new StreamGrammarChecker();
 * checker.push({ type: "block-start", index: 0, blockType: "text" });
 * checker.push({ type: "text-delta", index: 0, text: "Hi" });
 * checker.push({ type: "finish", reason: { kind: "stop" } });
 * checker.push({ type: "usage", usage: { inputTokens: 1, outputTokens: 1 } });
 * checker.end();
 * assert.deepEqual(checker.violations.map((v) => v.rule), ["open-blocks-at-finish", "chunk-after-finish"]);
 * ```
 */
export class StreamGrammarChecker {
  readonly #blocks = new Map<number, BlockState>();
  readonly #violations: GrammarViolation[] = [];
  #position = 0;
  #usageSeen = false;
  #finished = false;
  #ended = false;

  /** Every violation found so far, in stream order. */
  get violations(): readonly GrammarViolation[] {
    return this.#violations;
  }

  /** Whether a `finish` chunk has been seen. */
  get finished(): boolean {
    return this.#finished;
  }

  /**
   * Check the next chunk.
   *
   * @param chunk The chunk, in stream order.
   * @returns The violations this chunk adds (often none).
   */
  push(chunk: StreamChunk): GrammarViolation[] {
    const position = this.#position++;
    const found: GrammarViolation[] = [];
    const report = (rule: GrammarRule, message: string) => {
      const violation = { rule, position, message };
      found.push(violation);
      this.#violations.push(violation);
    };
    if (typeof chunk !== "object" || chunk === null || typeof (chunk as { type?: unknown }).type !== "string") {
      report("malformed-chunk", "Chunk is not an object with a type");
      return found;
    }
    if (this.#finished) {
      report("chunk-after-finish", `Chunk "${chunk.type}" follows the finish chunk`);
      return found;
    }
    switch (chunk.type) {
      case "block-start": {
        if (!this.#validIndex(chunk.index, report) || !this.#validType(chunk.blockType, report)) break;
        if (this.#blocks.has(chunk.index)) {
          report("duplicate-block-start", `Block ${chunk.index} was already started`);
          break;
        }
        this.#open(chunk.index, chunk.blockType, report);
        break;
      }
      case "text-delta":
      case "reasoning-delta":
      case "tool-call-delta": {
        if (!this.#validIndex(chunk.index, report)) break;
        const type = DELTA_TYPES[chunk.type];
        const payload = chunk.type === "tool-call-delta" ? chunk.argumentsDelta : chunk.text;
        if (typeof payload !== "string") {
          report("malformed-chunk", `Chunk "${chunk.type}" carries no string payload`);
          break;
        }
        let block = this.#blocks.get(chunk.index);
        if (block === undefined) {
          report(
            "delta-without-block-start",
            `Chunk "${chunk.type}" targets block ${chunk.index}, which was not started`,
          );
          block = this.#open(chunk.index, type, report);
        }
        if (block.type !== type) {
          report("delta-type-mismatch", `Chunk "${chunk.type}" targets ${block.type} block ${chunk.index}`);
        } else if (!block.open) {
          report("delta-after-block-end", `Chunk "${chunk.type}" targets ended block ${chunk.index}`);
        } else if (chunk.type === "tool-call-delta") {
          if (typeof chunk.id !== "string" || chunk.id === "") {
            report("malformed-chunk", `Tool-call delta for block ${chunk.index} has no id`);
          } else if (block.id === undefined) block.id = chunk.id;
          else if (block.id !== chunk.id) {
            report("tool-call-id-changed", `Tool call ${chunk.index} changed id from "${block.id}" to "${chunk.id}"`);
          }
        }
        break;
      }
      case "block-end": {
        if (!this.#validIndex(chunk.index, report)) break;
        const blockType = (chunk.block as { type?: unknown } | undefined)?.type;
        if (typeof blockType !== "string" || !BLOCK_TYPES.has(blockType)) {
          report("malformed-chunk", `Block-end ${chunk.index} carries no text, reasoning or tool-call block`);
          break;
        }
        let block = this.#blocks.get(chunk.index);
        if (block === undefined) {
          report("block-end-without-block-start", `Block-end ${chunk.index} ends a block that was not started`);
          block = this.#open(chunk.index, blockType as BlockType, report);
        }
        if (!block.open) {
          report("duplicate-block-end", `Block ${chunk.index} was already ended`);
          break;
        }
        if (block.type !== blockType) {
          report(
            "block-end-type-mismatch",
            `Block-end ${chunk.index} carries a ${blockType} block for a ${block.type} block`,
          );
        }
        block.open = false;
        break;
      }
      case "usage":
        if (this.#usageSeen) report("duplicate-usage", "Usage was already reported");
        this.#usageSeen = true;
        break;
      case "finish": {
        this.#finished = true;
        const kind = (chunk.reason as { kind?: unknown } | undefined)?.kind;
        if (kind === "error" || kind === "aborted") break;
        const open = [...this.#blocks].filter(([, b]) => b.open).map(([i]) => i);
        if (open.length > 0) {
          report("open-blocks-at-finish", `Finish "${String(kind)}" leaves block(s) ${open.join(", ")} open`);
        }
        break;
      }
      default:
        report("malformed-chunk", `Unknown chunk type "${(chunk as { type: string }).type}"`);
    }
    return found;
  }

  /**
   * Declare the stream over.
   *
   * @returns The violations the end adds: `missing-finish` when no finish was seen.
   */
  end(): GrammarViolation[] {
    if (this.#ended || this.#finished) {
      this.#ended = true;
      return [];
    }
    this.#ended = true;
    const violation: GrammarViolation = {
      rule: "missing-finish",
      position: this.#position,
      message: "Stream ended without a finish chunk",
    };
    this.#violations.push(violation);
    return [violation];
  }

  #validIndex(index: unknown, report: (rule: GrammarRule, message: string) => void): index is number {
    if (typeof index === "number" && Number.isInteger(index) && index >= 0) return true;
    report("malformed-chunk", `Block index ${String(index)} is not a non-negative integer`);
    return false;
  }

  #validType(type: unknown, report: (rule: GrammarRule, message: string) => void): type is BlockType {
    if (typeof type === "string" && BLOCK_TYPES.has(type)) return true;
    report("malformed-chunk", `Block type ${String(type)} is not text, reasoning or tool-call`);
    return false;
  }

  #open(index: number, type: BlockType, report: (rule: GrammarRule, message: string) => void): BlockState {
    if (index !== this.#blocks.size) {
      report("index-order", `Block ${index} opens where block ${this.#blocks.size} was expected`);
    }
    const state: BlockState = { type, open: true };
    this.#blocks.set(index, state);
    return state;
  }
}

/**
 * Check a whole stream against the grammar.
 *
 * @param chunks The chunks of one model call, in order.
 * @returns Every violation, in stream order; empty for a valid stream.
 *
 * @example
 * ```ts
 * import { checkStreamGrammar } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const ok = checkStreamGrammar([
 *   { type: "block-start", index: 0, blockType: "text" },
 *   { type: "text-delta", index: 0, text: "Hello" },
 *   { type: "block-end", index: 0, block: { type: "text", text: "Hello" } },
 *   { type: "usage", usage: { inputTokens: 3, outputTokens: 1 } },
 *   { type: "finish", reason: { kind: "stop" } },
 * ]);
 * assert.deepEqual(ok, []);
 * const bad = checkStreamGrammar([{ type: "text-delta", index: 0, text: "cut" }]);
 * assert.deepEqual(bad.map((v) => [v.rule, v.position]), [["delta-without-block-start", 0], ["missing-finish", 1]]);
 * ```
 */
export function checkStreamGrammar(chunks: Iterable<StreamChunk>): GrammarViolation[] {
  const checker = new StreamGrammarChecker();
  for (const chunk of chunks) checker.push(chunk);
  checker.end();
  return [...checker.violations];
}
