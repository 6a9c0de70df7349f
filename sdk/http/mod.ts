/**
 * `@dsh/harness/http`: a harness as a Hono microservice — REST routes for
 * sessions, messages, cancel, fork, transcripts and tool approvals, and a
 * resumable SSE event stream (`Last-Event-ID` = seq). Stop is explicit: a
 * client disconnect never cancels an agent. `createServerlessHandler` serves
 * the same routes from functions that keep nothing between requests, over
 * any shared storage.
 *
 * @example
 * ```ts
 * import { createHarness } from "@dsh/harness";
 * import { createHarnessApp } from "@dsh/harness/http";
 * import assert from "node:assert/strict";
 *
 * const harness = await createHarness();
 * assert.throws(() => createHarnessApp(harness), { code: "INVALID_ARGS" });
 * const app = createHarnessApp(harness, { auth: false, log: false });
 * const response = await app.request("/sessions");
 * assert.deepEqual(await response.json(), { sessions: [] });
 * await harness.dispose();
 * ```
 *
 * @module
 */

export {
  createHarnessApp,
  type HarnessApp,
  type HarnessAppEnv,
  type HarnessAppOptions,
  type HarnessCorsOptions,
  type RequestLogRecord,
} from "./create_harness_app.ts";
export { createServerlessHandler, type ServerlessHandlerOptions } from "./create_serverless_handler.ts";
export type { ProblemDetails, ProblemFieldError } from "./problem_details.ts";
export type { HttpPendingApproval, HttpSessionSummary } from "./session_summary.ts";
