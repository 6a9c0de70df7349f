// Benchmark of event-stream readers that stop reading: the time of 60
// `wait: true` turns with 40 SSE clients that opened the stream and never read
// it, against the same turns with none, on a loopback server.
//
//   deno run -A bench/slow_readers.ts
//   bun bench/slow_readers.ts
//   node --import tsx bench/slow_readers.ts
//
// Options: `--turns N` (default 60), `--readers N` (default 40). Each turn
// streams 200 text deltas. Each stream buffers at most `maxBufferedEvents`
// (4096 by default) items; a stalled reader is dropped past that, so the
// ratio should stay near 1 (the target: under 2).

import { createHarness } from "../mod.ts";
import { createHarnessApp } from "../sdk/http/mod.ts";
import { serveOnLoopback } from "../sdk/http/_test_server.ts";
import { scriptedAdapter } from "../testing/mod.ts";
import { numberOption, runtimeVersion } from "./_stats.ts";

const TURNS = numberOption("turns", "BENCH_TURNS", 60);
const READERS = numberOption("readers", "BENCH_READERS", 40);

async function measure(readers: number): Promise<number> {
  const harness = await createHarness({
    adapters: [scriptedAdapter((_r, n) => ({
      chunks: [
        { type: "block-start", index: 0, blockType: "text" },
        ...Array.from(
          { length: 200 },
          (_, i) => ({ type: "text-delta" as const, index: 0, text: `${n}.${i} lorem ipsum dolor sit amet ` }),
        ),
        { type: "block-end", index: 0, block: { type: "text", text: "" } },
        { type: "finish", reason: { kind: "stop" } },
      ],
    }))],
    model: { provider: "scripted", model: "scripted-model" },
    invariants: false,
  });
  const app = createHarnessApp(harness, { auth: false, log: false });
  const server = await serveOnLoopback(app.fetch);
  const controllers: AbortController[] = [];
  try {
    const post = async (path: string, body: unknown) => {
      const res = await fetch(server.url + path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return await res.json();
    };
    await post("/sessions", { id: "s" });
    for (let i = 0; i < readers; i++) {
      const controller = new AbortController();
      controllers.push(controller);
      // Open the stream, read the headers, never read the body.
      await fetch(`${server.url}/sessions/s/events`, { signal: controller.signal });
    }
    const t0 = performance.now();
    for (let i = 0; i < TURNS; i++) {
      const { result } = await post("/sessions/s/messages", { content: `turn ${i}`, wait: true });
      if (result.reason.kind !== "completed") throw new Error(`turn ${i} ended ${result.reason.kind}`);
    }
    return performance.now() - t0;
  } finally {
    for (const c of controllers) c.abort();
    await server.close();
    await harness.dispose();
  }
}

const none = await measure(0);
const stalled = await measure(READERS);
console.log(`slow readers, ${runtimeVersion()}, ${TURNS} turns of 200 deltas`);
console.log("| readers that stopped reading | turns took ms | ratio to none |");
console.log("| ---: | ---: | ---: |");
console.log(`| 0 | ${none.toFixed(0)} | 1.00 |`);
console.log(`| ${READERS} | ${stalled.toFixed(0)} | ${(stalled / none).toFixed(2)} |`);
