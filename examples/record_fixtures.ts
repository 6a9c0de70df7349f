/**
 * Record the demo fixtures with the real DeepSeek adapter.
 *
 * No network is needed: a local HTTP server (127.0.0.1, a free port) plays
 * recorded DeepSeek wire streams from `adapters/testdata/wire/` as SSE,
 * one per request, in the order each scenario lists them (`http-503` answers
 * one request with an HTTP 503 instead, to record a retry). The adapter, the
 * loop, the tool and the persistence are all real; each run is saved as a
 * fixture directory under `examples/fixtures/<scenario>/` (the session log
 * itself). The answer after the weather tool has no captured stream, so it
 * is written here in the same wire format (`weatherAnswerWire`).
 *
 * Run: `node --import tsx examples/record_fixtures.ts [wire-dir]`, then
 * `DSH_GOLDEN=update node --import tsx --test examples/golden_test.ts` to
 * refresh the golden transcripts, and review both diffs.
 *
 * @module
 */

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { deepseekAdapter } from "../adapters/mod.ts";
import { recordingAdapter } from "../replay/mod.ts";
import { fixtureDir, runScenario, type Scenario, SCENARIOS } from "./weather_agent.ts";

const WIRE_DIR = process.argv[2] ?? fileURLToPath(new URL("../adapters/testdata/wire/", import.meta.url));

/** A DeepSeek stream, as `data:` payloads, for the answer after the weather tool. */
function weatherAnswerWire(): string[] {
  const base = {
    id: "local-weather-answer",
    object: "chat.completion.chunk",
    created: 1764664600,
    model: "deepseek-reasoner",
  };
  const delta = (d: Record<string, unknown>, finish: string | null = null, usage: unknown = null) =>
    JSON.stringify({ ...base, choices: [{ index: 0, delta: d, logprobs: null, finish_reason: finish }], usage });
  const words = (text: string) => text.match(/\S+\s*/g) ?? [];
  const reasoning = "The tool says morning fog, clearing by noon, 17 °C. I'll summarise that briefly.";
  const answer =
    "San Francisco has morning fog that clears to sun by noon, around 17 °C with a 19 km/h breeze. Bring a light jacket for the morning.";
  const usage = {
    prompt_tokens: 412,
    completion_tokens: 58,
    total_tokens: 470,
    prompt_tokens_details: { cached_tokens: 384 },
    completion_tokens_details: { reasoning_tokens: 21 },
    prompt_cache_hit_tokens: 384,
    prompt_cache_miss_tokens: 28,
  };
  return [
    delta({ role: "assistant", content: null, reasoning_content: "" }),
    ...words(reasoning).map((w) => delta({ content: null, reasoning_content: w })),
    ...words(answer).map((w) => delta({ content: w, reasoning_content: null })),
    delta({ content: "", reasoning_content: null }, "stop", usage),
  ];
}

async function wirePayloads(name: string): Promise<string[]> {
  if (name === "weather-answer") return weatherAnswerWire();
  const text = await readFile(`${WIRE_DIR}/${name}.chunks.jsonl`, "utf8");
  return text.split("\n").filter((line) => line.trim() !== "");
}

/** Serve the queued wire streams as SSE, one per POST /chat/completions. */
async function startWireServer(
  queue: string[],
): Promise<{ baseURL: string; requests: unknown[]; close(): Promise<void> }> {
  const requests: unknown[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", async () => {
      const name = queue.shift();
      if (req.method !== "POST" || req.url !== "/chat/completions" || name === undefined) {
        res.writeHead(name === undefined ? 500 : 404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: name === undefined ? "No wire stream queued" : "Not found" } }));
        return;
      }
      requests.push(JSON.parse(body));
      if (name === "http-503") {
        res.writeHead(503, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "Server overloaded, please retry", type: "server_error" } }));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      for (const payload of await wirePayloads(name)) res.write(`data: ${payload}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function record(scenario: Scenario): Promise<void> {
  const queue = scenario.turns.flatMap((turn) => [...turn.wire]);
  const server = await startWireServer(queue);
  try {
    const recorder = recordingAdapter(deepseekAdapter({ apiKey: "local-wire-server", baseURL: server.baseURL }));
    const { session, results } = await runScenario(scenario, [recorder]);
    if (queue.length > 0) throw new Error(`Scenario ${scenario.name} left wire streams unplayed: ${queue.join(", ")}`);
    await recorder.save(fixtureDir(scenario.name), session);
    const reasons = results.map((r) => r.reason.kind).join(", ");
    console.log(
      `${scenario.name}: ${session.events.length} events, ${server.requests.length} requests, turns ${reasons}`,
    );
  } finally {
    await server.close();
  }
}

for (const scenario of SCENARIOS) await record(scenario);
