/**
 * Agents in serverless functions: a fetch-style handler `(request) => Response`
 * that keeps nothing in memory between requests. Every request builds a
 * harness over file storage, lets the HTTP app resume the session from its
 * log, waits until the agent is idle (nothing may run after a function
 * returns), and disposes the harness, which writes the log back. Any
 * instance can serve the next request of a conversation.
 *
 * Deploy anywhere that calls a fetch handler, with a shared directory (or
 * swap `fileStorage` for a shared storage backend):
 * - `HARNESS_TOKEN=secret HARNESS_DATA_DIR=/mnt/sessions deno serve -A examples/serverless.ts`
 * - `HARNESS_TOKEN=secret HARNESS_DATA_DIR=/mnt/sessions bun run examples/serverless.ts`
 *
 * Prefer `"wait": true` on messages: the response then carries the turn's
 * outcome. Input that no turn claims before the request ends (an `inject`
 * into an idle agent) is discarded when the harness is disposed: send such
 * context together with the next followup instead. Read the log with `GET /sessions/:id/events?follow=false`, which
 * replays it from storage and ends (a following stream ends when the request
 * does). Tool `ask` decisions are denied here (no one could answer them
 * between requests); use a programmatic approver instead.
 *
 * @module
 */

import process from "node:process";
import { createHarness, fileStorage, HarnessError, type LlmAdapter } from "../mod.ts";
import { deepseekAdapter } from "../adapters/mod.ts";
import { createHarnessApp } from "../sdk/http/mod.ts";
import { echoAdapter } from "./server_app.ts";

/** Options of {@linkcode createServerlessHandler}. */
export interface ServerlessOptions {
  /** Where session logs are stored (shared by every instance). */
  readonly dataDir: string;
  /** The bearer token clients must send. */
  readonly token: string;
  /** Makes the models for one request; default: DeepSeek with `apiKey`, else an offline echo model. */
  readonly adapters?: () => readonly LlmAdapter[];
  /** A DeepSeek API key. */
  readonly apiKey?: string;
}

/**
 * Make the handler. It holds only its options: every request starts from
 * storage.
 *
 * @param options Storage directory, token and models.
 * @returns A fetch-style handler.
 */
export function createServerlessHandler(options: ServerlessOptions): (request: Request) => Promise<Response> {
  return async (request) => {
    const live = options.adapters === undefined && options.apiKey !== undefined;
    const harness = await createHarness({
      adapters: options.adapters?.() ?? (live ? [deepseekAdapter({ apiKey: options.apiKey! })] : [echoAdapter()]),
      model: live ? { provider: "deepseek", model: "deepseek-chat" } : { provider: "echo", model: "echo-1" },
      system: "You are a helpful assistant.",
      storage: fileStorage(options.dataDir),
    });
    let body: Promise<ArrayBuffer> | undefined;
    let response: Response;
    try {
      const app = createHarnessApp(harness, { token: options.token, approvals: false });
      response = await app.fetch(request);
      // Let running turns finish: nothing may run after the function returns.
      const agents = harness.ctx.service("agents").list();
      await Promise.all(agents.map((agent) => (agent.status === "running" ? agent.whenIdle() : undefined)));
      // Answer only once every log is durable. Another instance serving the same session at the
      // same time holds its writer lease: resuming is then refused (409 SESSION_WRITER_BUSY), and
      // should the lease be lost later, the writes fail and so does the request.
      for (const agent of agents) {
        try {
          await harness.sessions.flush(agent.session);
        } catch (error) {
          response.body?.cancel().catch(() => {});
          return notSaved(agent.id, error);
        }
      }
      // Read the body while the harness goes away: an event stream ends when its agent is disposed.
      body = response.body === null ? undefined : response.arrayBuffer();
    } finally {
      await harness.dispose();
    }
    return new Response(body === undefined ? null : await body, { status: response.status, headers: response.headers });
  };
}

/** The problem+json answer when a session's log could not be written. */
function notSaved(sessionId: string, error: unknown): Response {
  const cause = error instanceof Error ? error.cause : undefined;
  const busy = HarnessError.isInstance(cause, "SESSION_WRITER_BUSY");
  const status = busy ? 409 : 500;
  const body = {
    type: "urn:dsh-harness:problem:SESSION_NOT_SAVED",
    title: busy ? "Conflict" : "Internal Server Error",
    status,
    code: "SESSION_NOT_SAVED",
    detail: busy
      ? `Session "${sessionId}" is being served by another instance; nothing of this request was saved`
      : `Session "${sessionId}" could not be saved`,
  };
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/problem+json" } });
}

/**
 * The options from the environment: `HARNESS_TOKEN` (required), `HARNESS_DATA_DIR`
 * (default `./.dsh-sessions`), `DEEPSEEK_API_KEY` (optional).
 *
 * @param env The environment.
 * @returns The options.
 * @throws {Error} When `HARNESS_TOKEN` is missing.
 */
export function serverlessOptionsFromEnv(env: Record<string, string | undefined> = process.env): ServerlessOptions {
  const token = env.HARNESS_TOKEN;
  if (!token) throw new Error("Set HARNESS_TOKEN to the bearer token clients must send");
  return { token, dataDir: env.HARNESS_DATA_DIR ?? "./.dsh-sessions", apiKey: env.DEEPSEEK_API_KEY || undefined };
}

/** The entry `deno serve` and Bun look for; the options are read per request, so nothing is cached. */
const entry: { fetch: (request: Request) => Promise<Response> } = {
  fetch: async (request) => await createServerlessHandler(serverlessOptionsFromEnv())(request),
};
export default entry;
