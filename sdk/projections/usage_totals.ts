/**
 * `usageTotals`: token usage summed over a log, per session and per turn.
 *
 * @module
 */

import type { TokenUsage } from "../llm/stream_chunk.ts";
import { defineProjection, type ProjectionUnit } from "./projection_unit.ts";

/** The state of {@linkcode usageTotals}. */
export interface UsageTotalsState {
  /**
   * Usage of the session's own model calls, failed attempts included: every call of the log, except, for a fork read
   * with its header, the calls in the seed it copied from its parent (those are in `inherited`).
   */
  readonly total: TokenUsage;
  /**
   * A fork read with its header (`parentSession` and `seedLength`): the usage of the model calls in the seed it copied
   * from its parent, which its parent made and counts. Absent for a log that is no fork, or read without its header.
   */
  readonly inherited?: TokenUsage;
  /** Usage of the latest turn (open or ended; in a fork that has run none yet, the seed's last). */
  readonly turn: TokenUsage;
  /** `turn.step` of the latest step whose usage came in `usage` chunks. */
  readonly chunkStep?: string;
  /** Whether the current attempt of `chunkStep` has had its `usage` chunk (one counts per attempt, the first). */
  readonly attemptCounted?: boolean;
  /** Whether a turn is open (a compaction inside it counts in `turn`; a manual one between turns does not). */
  readonly turnOpen?: boolean;
  /** A fork's seed length, from its header: the events below it count in `inherited`, not in `total`. */
  readonly seedLength?: number;
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

/** `state` with `usage` added to the session's own total, or to the inherited one for an event of a fork's seed. */
function count(state: UsageTotalsState, seq: number, usage: TokenUsage): UsageTotalsState {
  if (state.seedLength !== undefined && seq < state.seedLength) {
    return { ...state, inherited: addUsage(state.inherited ?? ZERO, usage) };
  }
  return { ...state, total: addUsage(state.total, usage) };
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
 * A fork's log starts with the events it copied from its parent (`seedLength`
 * of them, then `session/end-seed`): the calls there are its parent's, spent
 * before the fork existed. Read with the header (a live session, a loaded one,
 * or `foldProjection(usageTotals, events, undefined, header)`), a fork's
 * `total` counts only the calls after its seed, what the fork itself spent,
 * and `inherited` holds the seed's; `turn` is the latest turn's usage wherever
 * it ran. Bare events are read as a log of their own: everything counts in
 * `total`.
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
 *
 * @example A fork's own usage, beside what its seed inherited
 * ```ts
 * import { foldProjection, type SessionEvent, type SessionHeader, usageTotals } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const usage = (seq: number, turn: number, inputTokens: number): SessionEvent => ({
 *   type: "assistant/chunk", seq, time: 0, data: { turn, step: 1, chunk: { type: "usage", usage: { inputTokens, outputTokens: 1 } } },
 * });
 * const events: SessionEvent[] = [
 *   { type: "turn/start", seq: 0, time: 0, data: { turn: 1 } },
 *   usage(1, 1, 100),
 *   { type: "turn/end", seq: 2, time: 0, data: { turn: 1, reason: { kind: "completed" } } },
 *   { type: "session/end-seed", seq: 3, time: 0, data: {} },
 *   { type: "turn/start", seq: 4, time: 0, data: { turn: 2 } },
 *   usage(5, 2, 7),
 * ];
 * const header: SessionHeader = { version: 1, id: "fork", createdAt: 0, parentSession: "parent", seedLength: 3 };
 * const state = foldProjection(usageTotals, events, undefined, header);
 * assert.deepEqual(state.total, { inputTokens: 7, outputTokens: 1 });
 * assert.deepEqual(state.inherited, { inputTokens: 100, outputTokens: 1 });
 * assert.equal(foldProjection(usageTotals, events).total.inputTokens, 107); // bare events: no seed known
 * ```
 */
export const usageTotals: ProjectionUnit<UsageTotalsState, TokenUsage> = defineProjection<
  UsageTotalsState,
  TokenUsage
>({
  name: "usageTotals",
  initial: (header) =>
    header?.parentSession !== undefined && typeof header.seedLength === "number"
      ? Object.freeze({ total: ZERO, inherited: ZERO, turn: ZERO, seedLength: header.seedLength })
      : Object.freeze({ total: ZERO, turn: ZERO }),
  fold(state, event) {
    switch (event.type) {
      case "turn/start": {
        // A new turn: the step bookkeeping of the last one is dropped.
        const { chunkStep: _step, attemptCounted: _counted, ...kept } = state;
        return { ...kept, turn: ZERO, turnOpen: true };
      }
      case "turn/end":
        return state.turnOpen === true ? { ...state, turnOpen: false } : state;
      case "compaction/end": {
        const usage = event.data.usage;
        if (usage === undefined) return state;
        const turn = state.turnOpen === true ? addUsage(state.turn, usage) : state.turn;
        return { ...count(state, event.seq, usage), turn };
      }
      case "assistant/chunk": {
        const { chunk, turn, step } = event.data;
        if (chunk.type !== "usage") return state;
        const key = `${turn}.${step}`;
        if (state.attemptCounted === true && state.chunkStep === key) return state;
        return {
          ...count(state, event.seq, chunk.usage),
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
        return { ...count(state, event.seq, usage), turn: addUsage(state.turn, usage) };
      }
    }
    return state;
  },
  view: (state) => state.total,
});
