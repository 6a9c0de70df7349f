// Benchmark of event-stream readers that stop reading: the time of 60
// `wait: true` turns with 40 SSE clients that opened the stream and never read
// it, against the same turns with none, on a loopback server.
//
//   deno run -A bench/slow_readers.ts
//   bun bench/slow_readers.ts
//   node --import tsx bench/slow_readers.ts
//
// Options: `--turns N` (default 60), `--readers N` (default 40), `--rounds N`
// (default 10: none, stalled, none, stalled… in one process; the best of each
// kind is reported, wall time and the server process's CPU time, which other
// load on the machine disturbs less, and the medians of the later half of the
// rounds, after the runtime's compilers have warmed up: the first rounds take
// two to four times as long). Each turn streams 200 text deltas. The stalled readers
// are raw TCP sockets in a child process (bench/_stalled_readers.ts) that read
// the response head and the `ready` event and then nothing: the kernel's
// buffers fill and the server meets backpressure, as with a user's stalled
// client, and the server's process does not pay for the clients. Each stream
// buffers at most `maxBufferedEvents` (4096 by default) items; a stalled reader
// is dropped past that, so the ratio should stay near 1 (the issue's target:
// under 2). The table also says how many readers the server dropped.
// `--no-deltas` makes the readers ask for `?deltas=false` (every event as
// `event: session`, the whole log: larger frames for the streamed chunks).
// `--storage` gives the harness `memoryStorage()`: the streams then carry only
// what is durable, and the deltas ahead of storage without ids.

import { spawn } from "node:child_process";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { createHarness, memoryStorage } from "../mod.ts";
import { createHarnessApp } from "../sdk/http/mod.ts";
import { serveOnLoopback } from "../sdk/http/_test_server.ts";
import { scriptedAdapter } from "../testing/mod.ts";
import { median, numberOption, runtimeVersion } from "./_stats.ts";

const TURNS = numberOption("turns", "BENCH_TURNS", 60);
const READERS = numberOption("readers", "BENCH_READERS", 40);
const ROUNDS = numberOption("rounds", "BENCH_ROUNDS", 10);
const QUERY = process.argv.includes("--no-deltas") ? "deltas=false" : "";
const STORAGE = process.argv.includes("--storage");

interface ReadersReport {
  readonly readers: number;
  readonly ended: number;
  readonly dropped: number;
  readonly bytes: number;
}

/** Start the stalled readers in a child process of the same runtime; resolves once all are stalled. */
function stalledReaders(url: string, readers: number) {
  const script = fileURLToPath(new URL("./_stalled_readers.ts", import.meta.url));
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  const args = g.Deno !== undefined
    ? ["run", "-A", script]
    : g.Bun !== undefined
    ? [script]
    : ["--import", "tsx", script];
  const child = spawn(process.execPath, [...args, url, String(readers), ...(QUERY ? [QUERY] : [])], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  let out = "";
  const lines: string[] = [];
  const waiters: ((line: string) => void)[] = [];
  child.stdout.on("data", (chunk: Uint8Array) => {
    out += new TextDecoder().decode(chunk);
    for (let i = out.indexOf("\n"); i >= 0; i = out.indexOf("\n")) {
      const line = out.slice(0, i);
      out = out.slice(i + 1);
      const waiter = waiters.shift();
      if (waiter !== undefined) waiter(line);
      else lines.push(line);
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const nextLine = () =>
    Promise.race([
      new Promise<string>((resolve) => {
        const line = lines.shift();
        if (line !== undefined) resolve(line);
        else waiters.push(resolve);
      }),
      exited.then((code) => {
        throw new Error(`stalled readers exited with ${code}`);
      }),
    ]);
  return {
    ready: nextLine().then((line) => {
      if (line !== "ready") throw new Error(`stalled readers said ${line}`);
    }),
    /** Let the readers read everything to the end of their streams. */
    async drain(): Promise<ReadersReport> {
      child.stdin.write("drain\n");
      const report = JSON.parse(await nextLine()) as ReadersReport;
      await exited;
      return report;
    },
    kill: () => child.kill(),
  };
}

async function measure(
  readers: number,
): Promise<{ ms: number; cpu: number; sys: number; report?: ReadersReport }> {
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
    ...(STORAGE ? { storage: memoryStorage() } : {}),
  });
  const app = createHarnessApp(harness, { auth: false, log: false });
  const server = await serveOnLoopback(app.fetch);
  let clients: ReturnType<typeof stalledReaders> | undefined;
  let disposed = false;
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
    if (readers > 0) {
      clients = stalledReaders(`${server.url}/sessions/s`, readers);
      await clients.ready;
    }
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    for (let i = 0; i < TURNS; i++) {
      const { result } = await post("/sessions/s/messages", { content: `turn ${i}`, wait: true });
      if (result.reason.kind !== "completed") throw new Error(`turn ${i} ended ${result.reason.kind}`);
    }
    const ms = performance.now() - t0;
    const used = process.cpuUsage(c0);
    const cpu = (used.user + used.system) / 1000;
    const sys = used.system / 1000;
    if (clients === undefined) return { ms, cpu, sys };
    // Disposing ends every stream still served with `event: end`; the readers then read theirs to the end.
    const report = clients.drain();
    await harness.dispose();
    disposed = true;
    return { ms, cpu, sys, report: await report };
  } finally {
    clients?.kill();
    await server.close();
    if (!disposed) await harness.dispose();
  }
}

type Run = { ms: number; cpu: number; sys: number };
const none: Run[] = [];
const stalled: Run[] = [];
let report: ReadersReport | undefined;
for (let round = 0; round < ROUNDS; round++) {
  none.push(await measure(0));
  const run = await measure(READERS);
  stalled.push(run);
  report = run.report;
}
const best = (runs: Run[], key: "ms" | "cpu") => Math.min(...runs.map((r) => r[key]));
const each = (runs: Run[], key: "ms" | "cpu" | "sys") => runs.map((r) => r[key].toFixed(0)).join(", ");
console.log(
  `slow readers, ${runtimeVersion()}, ${TURNS} turns of 200 deltas, best of ${ROUNDS} rounds${
    QUERY ? `, readers ask ?${QUERY}` : ""
  }${STORAGE ? ", memoryStorage()" : ""}`,
);
console.log(
  "| readers that stopped reading | turns took ms (each round) | ratio | server CPU ms (each round) | ratio | dropped by the server |",
);
console.log("| ---: | ---: | ---: | ---: | ---: | ---: |");
console.log(
  `| 0 | ${best(none, "ms").toFixed(0)} (${each(none, "ms")}) | 1.00 | ${best(none, "cpu").toFixed(0)} (${
    each(none, "cpu")
  }) | 1.00 | |`,
);
console.log(
  `| ${READERS} | ${best(stalled, "ms").toFixed(0)} (${each(stalled, "ms")}) | ${
    (best(stalled, "ms") / best(none, "ms")).toFixed(2)
  } | ${best(stalled, "cpu").toFixed(0)} (${each(stalled, "cpu")}) | ${
    (best(stalled, "cpu") / best(none, "cpu")).toFixed(2)
  } | ${report?.dropped ?? "?"} of ${READERS} (${((report?.bytes ?? 0) / READERS / 1e6).toFixed(1)} MB each) |`,
);
console.log(`server system CPU ms (each round): none ${each(none, "sys")}; ${READERS} readers ${each(stalled, "sys")}`);
const laterMedian = (runs: Run[], key: "ms" | "cpu") =>
  median(runs.slice(Math.floor(runs.length / 2)).map((r) => r[key]));
console.log(
  `medians of rounds ${Math.floor(ROUNDS / 2) + 1}–${ROUNDS}: turns took ${
    laterMedian(none, "ms").toFixed(1)
  } ms with none, ${laterMedian(stalled, "ms").toFixed(1)} with ${READERS} (ratio ${
    (laterMedian(stalled, "ms") / laterMedian(none, "ms")).toFixed(2)
  }); server CPU ${laterMedian(none, "cpu").toFixed(1)} / ${laterMedian(stalled, "cpu").toFixed(1)} ms (ratio ${
    (laterMedian(stalled, "cpu") / laterMedian(none, "cpu")).toFixed(2)
  })`,
);
