// Test support (not published): one harness instance for the multi-instance
// tests — the serverless handler over postgresStorage, served on loopback by
// the runtime's own server (Deno, Bun or Node). Prints "URL <base url>".
//
// Arguments: <database url> <schema> <lease ms>. The model answers every
// request with a short streamed text; a user message containing "hang" makes
// it stream a little and then never finish (the test kills the process).

import process from "node:process";
import pg from "pg";
import { createHarness } from "../harness.ts";
import { createServerlessHandler } from "../http/create_serverless_handler.ts";
import { serveOnLoopback } from "../http/_test_server.ts";
import { scriptedAdapter, textResponse } from "../../testing/scripted_adapter.ts";
import type { GenerateOptions } from "../llm/llm_adapter.ts";
import { postgresStorage } from "./postgres_storage.ts";

const [url, schema, leaseMs] = process.argv.slice(-3);
const pool = new pg.Pool({ connectionString: url, max: 8 });
pool.on("error", () => {});
const storage = postgresStorage({ client: pool, schema, leaseMs: Number(leaseMs), pollMs: 500 });
await storage.migrate();

function lastUserText(request: GenerateOptions): string {
  const last = request.messages.at(-1);
  return last?.content.map((b) => (b.type === "text" ? b.text : "")).join("") ?? "";
}

const runtime = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node";
const model = scriptedAdapter((request) => {
  const text = lastUserText(request);
  const { chunks } = textResponse(`${runtime} heard: ${text}`);
  return text.includes("hang") ? { hang: true, chunks: chunks.slice(0, 2) } : { chunks };
});

const handler = createServerlessHandler({
  harness: () =>
    createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      system: "Multi-instance test.",
      storage,
      batchWindowMs: 20,
    }),
  app: { auth: false, log: false },
});
const server = await serveOnLoopback(handler);
process.stdout.write(`URL ${server.url}\n`);
