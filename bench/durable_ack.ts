// Benchmark of durable acknowledgements over the HTTP service: what it costs
// that a message is answered only once it is on storage, and that `wait: true`
// answers only once the turn's end is.
//
//   deno run -A bench/durable_ack.ts
//   bun bench/durable_ack.ts
//   node --import tsx bench/durable_ack.ts
//
// Options: `--messages N` (default 300) and `--turns N` (default 200). The
// app is driven in-process (`app.fetch`, no sockets) by a scripted model that
// answers at once, so the figures are the service's and the storage's own
// cost. Rows: no storage (the baseline: nothing to wait for), memoryStorage,
// fileStorage (plain JSONL, fsync per batch). "acks/s" is `POST /messages`
// (a 202 followup) one at a time, then from 16 concurrent clients (acks that
// arrive together share one write); p50/p99 are the latency of
// `wait: true` turns, one at a time.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHarness } from "../mod.ts";
import { fileStorage, memoryStorage, type SessionStorage } from "../sdk/persistence/mod.ts";
import { createHarnessApp } from "../sdk/http/mod.ts";
import { scriptedAdapter, textResponse } from "../testing/mod.ts";
import { numberOption, runtimeVersion } from "./_stats.ts";

const MESSAGES = numberOption("messages", "BENCH_MESSAGES", 300);
const TURNS = numberOption("turns", "BENCH_TURNS", 200);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

async function measure(name: string, storage: SessionStorage | undefined) {
  const harness = await createHarness({
    adapters: [scriptedAdapter((_r, n) => textResponse(`Answer ${n}`))],
    model: { provider: "scripted", model: "scripted-model" },
    invariants: false,
    ...(storage !== undefined ? { storage } : {}),
  });
  const app = createHarnessApp(harness, { auth: false, log: false });
  const post = async (path: string, body: unknown) => {
    const res = await app.fetch(
      new Request(`http://localhost${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return await res.json();
  };
  await post("/sessions", { id: "b" });
  // Acks one at a time (inject: no turn runs, so only the ack is measured).
  let t0 = performance.now();
  for (let i = 0; i < MESSAGES; i++) await post("/sessions/b/messages", { mode: "inject", content: `note ${i}` });
  const serialAcks = MESSAGES / ((performance.now() - t0) / 1000);
  // 16 clients at once.
  t0 = performance.now();
  await Promise.all(Array.from({ length: 16 }, async (_, c) => {
    for (let i = 0; i < Math.ceil(MESSAGES / 16); i++) {
      await post("/sessions/b/messages", { mode: "inject", content: `c${c} ${i}` });
    }
  }));
  const concurrentAcks = (16 * Math.ceil(MESSAGES / 16)) / ((performance.now() - t0) / 1000);
  // wait: true turns.
  const latencies: number[] = [];
  for (let i = 0; i < TURNS; i++) {
    const started = performance.now();
    const { result } = await post("/sessions/b/messages", { content: `turn ${i}`, wait: true });
    latencies.push(performance.now() - started);
    if (result.reason.kind !== "completed") throw new Error(`turn ${i} ended ${result.reason.kind}`);
  }
  latencies.sort((a, b) => a - b);
  await harness.dispose();
  if (storage !== undefined) {
    const { events } = await storage.load("b");
    const turnEnds = events.filter((e) => e.type === "turn/end").length;
    if (turnEnds !== TURNS) throw new Error(`${name}: ${turnEnds} turns stored, not ${TURNS}`);
  }
  return {
    name,
    serialAcks,
    concurrentAcks,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
  };
}

const dir = await mkdtemp(join(tmpdir(), "dsh-bench-ack-"));
try {
  await measure("warm-up", undefined); // JIT and module warm-up, not reported
  const rows = [
    await measure("no storage", undefined),
    await measure("memoryStorage", memoryStorage()),
    await measure("fileStorage", fileStorage(dir)),
  ];
  console.log(`durable acks, ${runtimeVersion()}, ${MESSAGES} messages, ${TURNS} wait: true turns`);
  console.log("| storage | acks/s, one client | acks/s, 16 clients | wait: true p50 ms | wait: true p99 ms |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${r.serialAcks.toFixed(0)} | ${r.concurrentAcks.toFixed(0)} | ${r.p50.toFixed(2)} | ${
        r.p99.toFixed(2)
      } |`,
    );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
