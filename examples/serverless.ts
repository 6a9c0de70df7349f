/**
 * Agents in serverless functions: `createServerlessHandler` from
 * `@dsh/harness/http`, a fetch-style handler `(request) => Response` that
 * keeps nothing in memory between requests. Every request builds a harness
 * over file storage, lets the HTTP app resume the session from its log,
 * waits until the agent is idle (nothing may run after a function returns),
 * and disposes the harness, which writes the log back. Any instance can
 * serve the next request of a conversation. Across machines, use
 * `postgresStorage` from `@dsh/harness/postgres` instead of `fileStorage`.
 *
 * Deploy anywhere that calls a fetch handler, with a shared directory (or
 * swap `fileStorage` for a shared storage backend):
 * - `HARNESS_TOKEN=secret HARNESS_DATA_DIR=/mnt/sessions deno serve -A examples/serverless.ts`
 * - `HARNESS_TOKEN=secret HARNESS_DATA_DIR=/mnt/sessions bun run examples/serverless.ts`
 *
 * Prefer `"wait": true` on messages: the response then carries the turn's
 * outcome. Input that no turn claims before the request ends (an `inject`
 * into an idle agent) stays queued in the stored log: the next request that
 * resumes the session takes it into its next turn. Read the log with
 * `GET /sessions/:id/events?follow=false&deltas=false`, which replays it from storage and ends (a following stream ends when the request
 * does). Tool `ask` decisions are denied here (no one could answer them
 * between requests); use a programmatic approver instead.
 *
 * @module
 */

import process from "node:process";
import { createHarness, fileStorage, type LlmAdapter } from "../mod.ts";
import { deepseekAdapter } from "../adapters/mod.ts";
import { createServerlessHandler as serverlessHandler } from "../sdk/http/mod.ts";
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
 * Make the handler: `createServerlessHandler` from `@dsh/harness/http` with a
 * harness per request over file storage. It holds only its options: every
 * request starts from storage.
 *
 * @param options Storage directory, token and models.
 * @returns A fetch-style handler.
 */
export function createServerlessHandler(options: ServerlessOptions): (request: Request) => Promise<Response> {
  const live = options.adapters === undefined && options.apiKey !== undefined;
  const storage = fileStorage(options.dataDir);
  return serverlessHandler({
    harness: () =>
      createHarness({
        adapters: options.adapters?.() ?? (live ? [deepseekAdapter({ apiKey: options.apiKey! })] : [echoAdapter()]),
        model: live ? { provider: "deepseek", model: "deepseek-chat" } : { provider: "echo", model: "echo-1" },
        system: "You are a helpful assistant.",
        storage,
      }),
    app: { token: options.token },
  });
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
