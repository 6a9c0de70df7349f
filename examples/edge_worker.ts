/**
 * Agents on the edge: a Workers-style module (`export default { fetch }`, as
 * Cloudflare Workers, Deno Deploy and Bun call it) that serves the HTTP app
 * over memory storage with an OpenAI-compatible model. It reaches no `node:`
 * module, so it bundles for `platform=browser` or `platform=neutral`:
 *
 *   npx esbuild examples/edge_worker.ts --bundle --minify --format=esm --platform=neutral --outfile=worker.js
 *
 * edge_bundle_test.ts builds it that way and serves a turn from the
 * bundle; `npm run bench` reports its size. Sessions live in the isolate's
 * memory: for sessions that outlive an isolate, pass a `SessionStorage` of
 * your own (a database, a KV store) instead of `memoryStorage()`.
 *
 * Settings come from the worker's environment: `HARNESS_TOKEN` (required),
 * `OPENAI_API_KEY`, `OPENAI_BASE_URL` (default `https://api.openai.com/v1`),
 * `OPENAI_MODEL` (default `gpt-4o-mini`).
 *
 * @module
 */

import { createHarness, defineTool, type Harness, memoryStorage } from "../mod.ts";
import { openaiCompatibleAdapter } from "../adapters/mod.ts";
import { createHarnessApp } from "../sdk/http/mod.ts";
import { z } from "zod";

/** The worker's environment (Workers pass it as the second argument of `fetch`). */
export interface EdgeEnv {
  /** The bearer token clients must send. */
  readonly HARNESS_TOKEN?: string;
  /** The model provider's API key. */
  readonly OPENAI_API_KEY?: string;
  /** An OpenAI-compatible endpoint. */
  readonly OPENAI_BASE_URL?: string;
  /** The model to call. */
  readonly OPENAI_MODEL?: string;
}

const clock = defineTool({
  name: "clock",
  description: "The current time, as an ISO 8601 string",
  parameters: z.object({}),
  output: { schema: z.string(), render: (_args, now) => now },
  execute: () => new Date().toISOString(),
});

/**
 * Make the fetch handler for one isolate: the harness is built on the first
 * request and kept while the isolate lives.
 *
 * @param env The settings.
 * @param options `fetch` for the model calls (tests pass a fake one).
 * @returns A fetch-style handler.
 */
export function createEdgeHandler(
  env: EdgeEnv,
  options: { readonly fetch?: typeof fetch } = {},
): (request: Request) => Promise<Response> {
  if (!env.HARNESS_TOKEN) throw new Error("Set HARNESS_TOKEN");
  const model = env.OPENAI_MODEL ?? "gpt-4o-mini";
  let app: Promise<(request: Request) => Response | Promise<Response>> | undefined;
  const start = async () => {
    const harness: Harness = await createHarness({
      adapters: [
        openaiCompatibleAdapter({
          provider: "openai",
          baseURL: env.OPENAI_BASE_URL ?? "https://api.openai.com/v1",
          ...(env.OPENAI_API_KEY !== undefined ? { apiKey: env.OPENAI_API_KEY } : {}),
          models: [{ id: model, contextWindow: 128_000 }],
          ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
        }),
      ],
      model: { provider: "openai", model },
      system: "You are a helpful assistant.",
      tools: [clock],
      storage: memoryStorage(),
    });
    const http = createHarnessApp(harness, { token: env.HARNESS_TOKEN, approvals: false, log: false });
    return (request: Request) => http.fetch(request);
  };
  return async (request) => (await (app ??= start()))(request);
}

let handler: ((request: Request) => Promise<Response>) | undefined;

export default {
  /** The Workers entry point. */
  fetch(request: Request, env: EdgeEnv): Promise<Response> {
    handler ??= createEdgeHandler(env);
    return handler(request);
  },
};
