/**
 * A fast-check arbitrary of valid session logs.
 *
 * @module
 */

import fc from "fast-check";
import type { Arbitrary } from "fast-check";
import type { SessionEvent } from "../mod.ts";
import { buildLog } from "./_build_log.ts";
import { turnPlan } from "./_log_plan.ts";

/** Options of {@linkcode arbSessionLog}. */
export interface ArbSessionLogOptions {
  /**
   * The most turns a log has.
   *
   * @default {4}
   */
  maxTurns?: number;
  /**
   * The most steps a turn has.
   *
   * @default {3}
   */
  maxSteps?: number;
}

/**
 * An arbitrary of valid session logs, shaped as the agent loop, compaction
 * and the hook bridge write them: complete turns with steps, user messages
 * and contexts, request headers and contexts, model calls streamed as
 * grammar-valid streams (`checkStreamGrammar`: reasoning, text and tool-call
 * blocks, optional usage, a finish with an optional replay state) whose
 * assistant message is what the chunks assemble and names them in
 * `sourceEventSeqs` (some usage-only); failed attempts retried inside the
 * step (`llm/retry`, the failed chunks in no message), after a compaction
 * when the context overflowed; streams cancelled mid-way (an `interrupted`
 * message of the partial text and reasoning, or none, and the turn ends
 * aborted), failed (the turn ends in error) or cut at `max-tokens` (tool
 * calls dropped); tool calls and results (and tool-call blocks that never
 * started, with no `tool/call` and a `TOOL_NOT_STARTED` result); hooks
 * (`hook/invoked` and `hook/result`: UserPromptSubmit before the first step,
 * with its context in the step, or cancelled with the turn; PreToolUse and
 * PostToolUse around each call, with PostToolUse contexts after the
 * results; Stop before `turn/end`, without a result when the turn was
 * cancelled); compactions in their brackets (`compaction/start`,
 * `compaction/summary`, the summary replacing the nodes before the kept
 * turns, `compaction/end`, or a failed or skipped one) between turns, before
 * a turn's first step and after an overflow; todo writes, spawned subagents,
 * inbox splices; a plugin's replaces of random surface ranges (widened to
 * whole tool call/result pairs) and tool-result content replaces. Every
 * generated log passes `checkInvariants` and is built through
 * `Session.append`, so it is also accepted by the session's own validation,
 * and loads as a replay fixture.
 *
 * @param options Size limits.
 * @returns The arbitrary.
 *
 * @example
 * ```ts
 * import fc from "fast-check";
 * import { arbSessionLog, checkInvariants } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * fc.assert(fc.property(arbSessionLog(), (log) => {
 *   assert.deepEqual(checkInvariants(log), []);
 * }), { numRuns: 20 });
 * ```
 */
export function arbSessionLog(options: ArbSessionLogOptions = {}): Arbitrary<readonly SessionEvent[]> {
  const maxTurns = options.maxTurns ?? 4;
  const maxSteps = options.maxSteps ?? 3;
  return fc.array(turnPlan(maxSteps), { maxLength: maxTurns }).map(buildLog);
}
