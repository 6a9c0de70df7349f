// The plans arbSessionLog draws: what each turn and step of a generated log holds.

import fc from "fast-check";
import type { Arbitrary } from "fast-check";
import type { TurnEndReason } from "../mod.ts";

/** The model answer of a step's last attempt: the deltas of its reasoning and text blocks, its tool calls. */
export interface AnswerPlan {
  reasoning: number;
  text: number;
  calls: number;
  usage: boolean;
  replay: boolean;
}

export interface StepPlan {
  contexts: number;
  users: number;
  header: number;
  /** Attempts that failed and were retried before the last one: deltas streamed, and whether it overflowed. */
  retries: { deltas: number; overflow: boolean }[];
  answer: AnswerPlan;
  /** How the last attempt ends: 0 cancelled mid-stream, 1 failed, 2 max-tokens, else finished. */
  outcome: number;
  /** How many chunks of a cancelled or failed attempt arrive. */
  cut: number;
  notStarted: boolean;
  toolHooks: boolean;
  toolContext: boolean;
  todo: boolean;
  spawn: boolean;
  resultReplace: number | null;
}

/** A compaction: the turns kept, and whether the summary call succeeded (after a retry, with usage). */
export interface CompactionPlan {
  keep: number;
  completed: boolean;
  retried: boolean;
  usage: boolean;
}

export interface TurnPlan {
  noise: number[];
  /** A manual compaction between turns. */
  compaction: CompactionPlan | null;
  /** A plugin's replace of a random surface range (widened to whole tool pairs), by a user or assistant message. */
  replace: { a: number; b: number; assistant: boolean } | null;
  /** A UserPromptSubmit hook: 0 goes on, 1 adds context to the first step, 2 is cancelled (the turn ends aborted). */
  promptHook: number | null;
  /** A compaction over the threshold, before the first step. */
  threshold: CompactionPlan | null;
  stopHook: boolean;
  steps: StepPlan[];
  end: number;
}

/** How a turn whose steps all ended ends. */
export const REASONS: readonly TurnEndReason[] = [
  { kind: "completed" },
  { kind: "aborted", reason: "user" },
  { kind: "blocked" },
  { kind: "error", error: { message: "The provider failed", code: "SERVER", status: 500 } },
  { kind: "max-tokens" },
  { kind: "interrupted" },
];

function compactionPlan(): Arbitrary<CompactionPlan> {
  return fc.record({ keep: fc.nat({ max: 2 }), completed: fc.boolean(), retried: fc.boolean(), usage: fc.boolean() });
}

function stepPlan(): Arbitrary<StepPlan> {
  return fc.record({
    contexts: fc.nat({ max: 1 }),
    users: fc.nat({ max: 2 }),
    header: fc.nat({ max: 3 }),
    retries: fc.array(fc.record({ deltas: fc.nat({ max: 2 }), overflow: fc.boolean() }), { maxLength: 2 }),
    answer: fc.record({
      reasoning: fc.nat({ max: 2 }),
      text: fc.nat({ max: 3 }),
      calls: fc.nat({ max: 3 }),
      usage: fc.boolean(),
      replay: fc.boolean(),
    }),
    outcome: fc.nat({ max: 9 }),
    cut: fc.nat(),
    notStarted: fc.boolean(),
    toolHooks: fc.boolean(),
    toolContext: fc.boolean(),
    todo: fc.boolean(),
    spawn: fc.boolean(),
    resultReplace: fc.option(fc.nat(), { nil: null }),
  });
}

export function turnPlan(maxSteps: number): Arbitrary<TurnPlan> {
  return fc.record({
    noise: fc.array(fc.nat({ max: 2 }), { maxLength: 2 }),
    compaction: fc.option(compactionPlan(), { nil: null, freq: 3 }),
    replace: fc.option(fc.record({ a: fc.nat(), b: fc.nat(), assistant: fc.boolean() }), { nil: null }),
    promptHook: fc.option(fc.nat({ max: 2 }), { nil: null }),
    threshold: fc.option(compactionPlan(), { nil: null, freq: 3 }),
    stopHook: fc.boolean(),
    steps: fc.array(stepPlan(), { maxLength: maxSteps }),
    end: fc.nat({ max: REASONS.length - 1 }),
  });
}
