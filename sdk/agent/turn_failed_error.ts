/**
 * The error `agent.run()` rejects with when its turn ends in `error`.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import { LlmFailure, type LlmFailureData } from "../llm/llm_failure.ts";
import type { TurnEndReasonMap } from "../session/session_events.ts";
import type { RunResult } from "./agent.ts";

/** A {@linkcode RunResult} whose turn ended in `error`. */
export interface FailedRunResult extends RunResult {
  /** Why the turn ended: always `{ kind: "error", error }`. */
  readonly reason: TurnEndReasonMap["error"];
}

/**
 * A turn that ended in `error` (an unknown route, a refused connection, an
 * auth failure, retries spent…), as `agent.run()` reports it.
 *
 * The code is always `TURN_FAILED`, so one check tells a failed turn from the
 * other rejections of `run()` (`INPUT_DISCARDED`, `AGENT_DISPOSED`); the
 * model-call failure's own code (`AUTH`, `TRANSPORT`, `NO_ADAPTER`…) is on
 * {@linkcode TurnFailedError.failure} and on the `cause`, an
 * {@linkcode LlmFailure}. {@linkcode TurnFailedError.result} is what `run()`
 * would have resolved to (text so far, usage, turn number). The turn itself
 * is closed and logged like any other: the agent stays usable.
 *
 * @example Catching a failed turn
 * ```ts
 * import { createHarness, HarnessError, LlmFailure, TurnFailedError } from "@dsh/harness";
 * import { scriptedAdapter } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * const harness = await createHarness({
 *   adapters: [scriptedAdapter({ throw: new LlmFailure("AUTH", "Bad key", { status: 401 }) })],
 *   model: { provider: "scripted", model: "scripted-model" },
 * });
 * const agent = await harness.createAgent();
 * const error = await agent.run("Hi").catch((e) => e);
 * assert.ok(HarnessError.isInstance(error, "TURN_FAILED"));
 * assert.ok(error instanceof TurnFailedError);
 * assert.equal(error.failure.code, "AUTH");
 * assert.equal(error.result.turn, 1);
 * await harness.dispose();
 * ```
 */
export class TurnFailedError extends HarnessError {
  /** The turn's outcome, as `run()` would have resolved it. */
  readonly result: FailedRunResult;

  /**
   * Create the error.
   *
   * @param result The outcome of a turn that ended in `error`.
   */
  constructor(result: FailedRunResult) {
    const failure = result.reason.error;
    super("TURN_FAILED", `Turn ${result.turn} failed: ${failure.message} (${failure.code})`, {
      cause: new LlmFailure(failure.code, failure.message, {
        status: failure.status,
        providerRetryAfterMs: failure.providerRetryAfterMs,
        requestId: failure.requestId,
      }),
      details: { turn: result.turn, failureCode: failure.code },
    });
    this.name = "TurnFailedError";
    this.result = result;
  }

  /** The model-call failure that ended the turn (`result.reason.error`). */
  get failure(): LlmFailureData {
    return this.result.reason.error;
  }
}
