/**
 * The one stream protocol every adapter speaks.
 *
 * Contract: a stream is a sequence of {@linkcode StreamChunk}s. Blocks are
 * numbered by `index` in first-seen order; deltas target an open block of the
 * same type; `usage` comes before `finish`, at most once; `finish` is last and
 * always present; a `finish` with open blocks is allowed only for `error` and
 * `aborted`. Tool-call arguments are raw strings. Once a stream has been
 * returned, failures are `finish` chunks with `error` / `aborted`, never throws.
 *
 * @module
 */

import type { ContentBlock } from "./messages.ts";
import type { LlmFailureData } from "./llm_failure.ts";

/** Token counts of one model call. The four input/output counters are disjoint. */
export interface TokenUsage {
  /** Input tokens not served from a cache. */
  readonly inputTokens: number;
  /** Output tokens, reasoning included. */
  readonly outputTokens: number;
  /** Input tokens read from the provider's cache. */
  readonly cacheReadTokens?: number;
  /** Input tokens written to the provider's cache. */
  readonly cacheWriteTokens?: number;
  /** Reasoning tokens, a part of `outputTokens`. */
  readonly reasoningTokens?: number;
}

/**
 * The finish vocabulary: kind → finish reason. An interface, so a plugin adds
 * its own kind with declaration merging in its own code;
 * {@linkcode FinishReason} is the union of its values.
 */
export interface FinishReasonMap {
  /** The model ended its answer. */
  stop: { readonly kind: "stop" };
  /** The model asks for tool calls. */
  "tool-calls": { readonly kind: "tool-calls" };
  /** The output hit `maxTokens`. */
  "max-tokens": { readonly kind: "max-tokens" };
  /** The call was cancelled. */
  aborted: { readonly kind: "aborted"; readonly failure: LlmFailureData };
  /** The call failed. */
  error: { readonly kind: "error"; readonly failure: LlmFailureData };
}

/** Why a model call ended: the values of {@linkcode FinishReasonMap}. */
export type FinishReason = FinishReasonMap[keyof FinishReasonMap];

/** The block types a stream can open. */
export type BlockType = "text" | "reasoning" | "tool-call";

/** One chunk of a model stream. */
export type StreamChunk =
  | { readonly type: "block-start"; readonly index: number; readonly blockType: BlockType }
  | { readonly type: "text-delta"; readonly index: number; readonly text: string }
  | { readonly type: "reasoning-delta"; readonly index: number; readonly text: string }
  | {
    readonly type: "tool-call-delta";
    readonly index: number;
    readonly id: string;
    readonly name?: string;
    readonly argumentsDelta: string;
  }
  | { readonly type: "block-end"; readonly index: number; readonly block: ContentBlock }
  | { readonly type: "usage"; readonly usage: TokenUsage }
  | { readonly type: "finish"; readonly reason: FinishReason; readonly replayState?: unknown };
