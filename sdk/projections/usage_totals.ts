/**
 * `usageTotals`: token usage summed over a log, per session and per turn.
 *
 * @module
 */

import type { TokenUsage } from "../llm/stream_chunk.ts";
import { defineProjection, type ProjectionUnit } from "./projection_unit.ts";

/** The state of {@linkcode usageTotals}. */
export interface UsageTotalsState {
  /** Usage of every model call of the log, failed attempts included. */
  readonly total: TokenUsage;
  /** Usage of the latest turn (open or ended). */
  readonly turn: TokenUsage;
  /** `turn.step` of the latest step whose usage came in `usage` chunks. */
  readonly chunkStep?: string;
  /** Whether the current attempt of `chunkStep` has had its `usage` chunk (one counts per attempt, the first). */
  readonly attemptCounted?: boolean;
  /** Whether a turn is open (a compaction inside it counts in `turn`; a manual one between turns does not). */
  readonly turnOpen?: boolean;
}

const ZERO: TokenUsage = Object.freeze({ inputTokens: 0, outputTokens: 0 });

/** Sum two usages; optional counters stay absent until one side has them. Internal (compaction sums with it too). */
export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  const sum: { -readonly [K in keyof TokenUsage]: TokenUsage[K] } = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
  };
  for (const key of ["cacheReadTokens", "cacheWriteTokens", "reasoningTokens"] as const) {
    if (a[key] !== undefined || b[key] !== undefined) sum[key] = (a[key] ?? 0) + (b[key] ?? 0);
  }
  return sum;
}

/**
 * Token accounting from the log: the `usage` chunk of each model call
 * counts (so failed attempts count too; a second one in the same call, which
 * the stream grammar forbids, does not, as the call's `assistant/message`
 * keeps the first); a step whose stream carried no usage chunk counts its
 * `assistant/message.usage` instead. A compaction's summary calls count
 * from its `compaction/end` (`usage`), in `turn` too when it ran inside the
 * turn (a threshold or overflow compaction).
 *
 * @example
 * ```ts
 * import { foldProjection, usageTotals } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const state = foldProjection(usageTotals, [
 *   { type: "turn/start", seq: 0, time: 0, data: { turn: 1 } },
 *   { type: "assistant/chunk", seq: 1, time: 0, data: { turn: 1, step: 1, chunk: { type: "usage", usage: { inputTokens: 3, outputTokens: 2 } } } },
 * ]);
 * assert.deepEqual(state.total, { inputTokens: 3, outputTokens: 2 });
 * ```
 */
export const usageTotals: ProjectionUnit<UsageTotalsState, TokenUsage> = defineProjection<
  UsageTotalsState,
  TokenUsage
>({
  name: "usageTotals",
  initial: () => Object.freeze({ total: ZERO, turn: ZERO }),
  fold(state, event) {
    switch (event.type) {
      case "turn/start":
        return { total: state.total, turn: ZERO, turnOpen: true };
      case "turn/end":
        return state.turnOpen === true ? { ...state, turnOpen: false } : state;
      case "compaction/end": {
        const usage = event.data.usage;
        if (usage === undefined) return state;
        const turn = state.turnOpen === true ? addUsage(state.turn, usage) : state.turn;
        return { ...state, total: addUsage(state.total, usage), turn };
      }
      case "assistant/chunk": {
        const { chunk, turn, step } = event.data;
        if (chunk.type !== "usage") return state;
        const key = `${turn}.${step}`;
        if (state.attemptCounted === true && state.chunkStep === key) return state;
        return {
          ...state,
          total: addUsage(state.total, chunk.usage),
          turn: addUsage(state.turn, chunk.usage),
          chunkStep: key,
          attemptCounted: true,
        };
      }
      case "llm/retry":
        // The next attempt's usage counts again.
        return state.attemptCounted === true ? { ...state, attemptCounted: false } : state;
      case "assistant/message": {
        const { usage, turn, step } = event.data;
        if (usage === undefined || state.chunkStep === `${turn}.${step}`) return state;
        return { ...state, total: addUsage(state.total, usage), turn: addUsage(state.turn, usage) };
      }
    }
    return state;
  },
  view: (state) => state.total,
});
