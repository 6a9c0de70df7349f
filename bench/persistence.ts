// Benchmark of fileStorage: write throughput and load time of a 100,000-event
// session (a realistic mix, mostly stream chunks), each next to a baseline
// measured in the same run, and the compression ratios.
//
//   deno run -A bench/persistence.ts
//   bun bench/persistence.ts
//   node --import tsx bench/persistence.ts
//
// Optional arguments: the number of events (default 100000) and the batch size
// (default 100; the persistence plugin's 200 ms window gathers about that many
// events while a model streams).
//
// Baselines: "write" is JSON.stringify of each event, appended to a file one
// batch at a time with an fsync per batch (the same durability as
// fileStorage, so the difference is the format: packing, checks, zstd);
// "load" is reading that file and JSON.parse of each line. Loads are the best
// of three runs. MB/s counts the
// bytes of the events as plain JSON lines, the same figure for every row.

import { mkdtemp, open, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileStorage } from "../sdk/persistence/mod.ts";
import type { SessionEvent } from "../sdk/session/session_events.ts";
import { zstd } from "../sdk/persistence/_zstd.ts";

const args = (globalThis as { process?: { argv: string[] } }).process?.argv.slice(2) ??
  (globalThis as { Deno?: { args: string[] } }).Deno?.args ?? [];
const TOTAL = Number(args[0] ?? 100_000);
const BATCH = Number(args[1] ?? 100);

/** A deterministic pseudo-random generator (mulberry32). */
function rng(seed: number): () => number {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ("the of and to in is that for it as with was on be by this are from at or an have not which but " +
  "function return const value error file session event stream model tool result query index buffer").split(" ");

/** A balanced session log of exactly `total` events: turns of reasoning, text and tool-call streams, tool results. */
function makeSession(total: number): SessionEvent[] {
  const random = rng(7);
  const word = () => WORDS[Math.floor(random() * WORDS.length)];
  const events: SessionEvent[] = [];
  let time = 1_750_000_000_000;
  const push = (event: Omit<SessionEvent, "seq" | "time">) => {
    time += Math.floor(random() * 30);
    events.push({ ...event, seq: events.length, time } as SessionEvent);
  };
  const model = { kind: "model", provider: "deepseek", model: "deepseek-chat" } as const;
  for (let turn = 1; events.length < total; turn++) {
    push({ type: "turn/start", data: { turn } });
    for (let step = 1; step <= 2 && events.length < total; step++) {
      push({ type: "step/start", data: { turn, step } });
      if (step === 1) {
        push({
          type: "user/message",
          data: {
            id: `u-${turn}`,
            role: "user",
            content: [{ type: "text", text: Array.from({ length: 40 }, word).join(" ") }],
            source: { kind: "user" },
          },
          surfaceOp: "append",
        } as never);
      }
      const seqs: number[] = [];
      const chunk = (c: unknown) => {
        seqs.push(events.length);
        push({ type: "assistant/chunk", data: { turn, step, chunk: c } } as never);
      };
      const content: unknown[] = [];
      const streamed = (index: number, type: "reasoning" | "text", n: number) => {
        chunk({ type: "block-start", index, blockType: type });
        let text = "";
        for (let i = 0; i < n; i++) {
          const delta = (i ? " " : "") + word();
          text += delta;
          chunk({ type: `${type}-delta`, index, text: delta });
        }
        chunk({ type: "block-end", index, block: { type, text } });
        content.push({ type, text });
      };
      streamed(0, "reasoning", 120 + Math.floor(random() * 80));
      streamed(1, "text", 80 + Math.floor(random() * 60));
      const callId = `call-${turn}-${step}`;
      if (step === 1) {
        chunk({ type: "block-start", index: 2, blockType: "tool-call" });
        chunk({ type: "tool-call-delta", index: 2, id: callId, name: "read_file", argumentsDelta: "" });
        const args = JSON.stringify({ path: `src/${word()}/${word()}.ts`, limit: 200 });
        for (let i = 0; i < args.length; i += 4) {
          chunk({ type: "tool-call-delta", index: 2, id: callId, argumentsDelta: args.slice(i, i + 4) });
        }
        const block = { type: "tool-call", id: callId, name: "read_file", arguments: args };
        chunk({ type: "block-end", index: 2, block });
        content.push(block);
      }
      chunk({ type: "usage", usage: { inputTokens: 1200, outputTokens: 300, cacheReadTokens: 4000 } });
      chunk({ type: "finish", reason: { kind: step === 1 ? "tool-calls" : "stop" } });
      push({
        type: "assistant/message",
        data: { turn, step, message: { id: `a-${turn}-${step}`, role: "assistant", content, source: model } },
        surfaceOp: "append",
        sourceEventSeqs: seqs,
      } as never);
      if (step === 1) {
        push({ type: "tool/call", data: { turn, step, callId, name: "read_file", arguments: "{}" } });
        push({
          type: "tool/result",
          data: {
            turn,
            step,
            message: {
              id: `r-${turn}`,
              role: "user",
              content: [{
                type: "tool-result",
                toolCallId: callId,
                content: [{ type: "text", text: Array.from({ length: 400 }, word).join(" ") }],
              }],
              source: { kind: "tool", callId },
            },
          },
          surfaceOp: "append",
          sourceEventSeqs: [events.length - 1],
        } as never);
      }
      push({ type: "step/end", data: { turn, step } });
    }
    push({ type: "turn/end", data: { turn, reason: { kind: "completed" } } });
  }
  // Cut after the last whole turn (a loaded log must not need repair) and pad with standalone events.
  let end = total;
  while (end > 0 && events[end - 1].type !== "turn/end") end--;
  const out = events.slice(0, end);
  while (out.length < total) {
    out.push({ type: "todo/write", seq: out.length, time, data: { todos: [{ content: word(), status: "pending" }] } });
  }
  return out;
}

interface Row {
  readonly name: string;
  readonly ms: number;
  readonly bytes?: number;
}

async function time(fn: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** The best of `n` runs (loads are repeatable; the first run also pays for compilation). */
async function best(n: number, fn: () => Promise<void>): Promise<number> {
  let min = Infinity;
  for (let i = 0; i < n; i++) min = Math.min(min, await time(fn));
  return min;
}

const runtime = (globalThis as { Deno?: { version: { deno: string } } }).Deno
  ? `deno ${(globalThis as unknown as { Deno: { version: { deno: string } } }).Deno.version.deno}`
  : (globalThis as { Bun?: { version: string } }).Bun
  ? `bun ${(globalThis as unknown as { Bun: { version: string } }).Bun.version}`
  : `node ${(globalThis as unknown as { process: { version: string } }).process.version}`;

const dir = await mkdtemp(join(tmpdir(), "dsh-bench-persistence-"));
try {
  const events = makeSession(TOTAL);
  const chunkShare = events.filter((e) => e.type === "assistant/chunk").length / events.length;
  const lines = events.map((e) => JSON.stringify(e) + "\n");
  const logicalBytes = lines.reduce((n, line) => n + new TextEncoder().encode(line).length, 0);
  const encoder = new TextEncoder();

  // Baseline write: JSON.stringify + append per batch, fsync per batch.
  const baselineFile = join(dir, "baseline.jsonl");
  const baselineWrite = await time(async () => {
    const handle = await open(baselineFile, "a");
    try {
      for (let i = 0; i < events.length; i += BATCH) {
        let text = "";
        for (const event of events.slice(i, i + BATCH)) text += JSON.stringify(event) + "\n";
        await handle.write(encoder.encode(text));
        await handle.sync();
      }
    } finally {
      await handle.close();
    }
  });
  const baselineLoad = await best(3, async () => {
    const text = await readFile(baselineFile, "utf8");
    const parsed = text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
    if (parsed.length !== events.length) throw new Error("Baseline lost events");
  });

  const writes: Row[] = [{ name: "baseline JSON.stringify + append", ms: baselineWrite, bytes: logicalBytes }];
  const loads: Row[] = [{ name: "baseline JSON.parse of the lines", ms: baselineLoad }];
  const sizes: Record<string, number> = {};
  for (const compression of ["none", "zstd"] as const) {
    const root = join(dir, compression);
    const storage = fileStorage(root, { compression });
    const ms = await time(async () => {
      await storage.create({ id: "bench", createdAt: 0 });
      const writer = await storage.acquireWriter("bench");
      for (let i = 0; i < events.length; i += BATCH) {
        await storage.append("bench", events.slice(i, i + BATCH), { expectedSeq: i, writer });
      }
      await writer.release();
    });
    const file = join(root, "bench", compression === "zstd" ? "session.v1.jsonl.zstd" : "session.v1.jsonl");
    sizes[compression] = (await stat(file)).size;
    writes.push({ name: `fileStorage ${compression === "zstd" ? "zstd" : "plain"}`, ms, bytes: logicalBytes });
    let loaded = 0;
    const loadMs = await best(3, async () => {
      loaded = (await fileStorage(root).load("bench")).events.length;
    });
    if (loaded !== events.length) throw new Error(`Loaded ${loaded} of ${events.length} events`);
    loads.push({ name: `fileStorage ${compression === "zstd" ? "zstd" : "plain"} load()`, ms: loadMs });
  }
  const baselineSize = (await stat(baselineFile)).size;

  const pad = (s: string, n: number) => s.padEnd(n);
  const num = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits });
  console.log(`\nPersistence benchmark — ${runtime}, zstd: ${(await zstd()).name}`);
  console.log(
    `${num(events.length)} events (${num(chunkShare * 100)}% assistant/chunk), ${
      num(logicalBytes / 1e6, 1)
    } MB as JSON lines, batches of ${BATCH}, fsync per batch\n`,
  );
  console.log(`| ${pad("write", 36)} | ${pad("ms", 9)} | ${pad("events/s", 11)} | ${pad("MB/s", 7)} |`);
  console.log(`|${"-".repeat(38)}|${"-".repeat(11)}|${"-".repeat(13)}|${"-".repeat(9)}|`);
  for (const row of writes) {
    const s = row.ms / 1000;
    console.log(
      `| ${pad(row.name, 36)} | ${pad(num(row.ms), 9)} | ${pad(num(events.length / s), 11)} | ${
        pad(num((row.bytes ?? 0) / 1e6 / s, 1), 7)
      } |`,
    );
  }
  console.log(`\n| ${pad("load", 36)} | ${pad("ms", 9)} | ${pad("events/s", 11)} |`);
  console.log(`|${"-".repeat(38)}|${"-".repeat(11)}|${"-".repeat(13)}|`);
  for (const row of loads) {
    console.log(`| ${pad(row.name, 36)} | ${pad(num(row.ms), 9)} | ${pad(num(events.length / (row.ms / 1000)), 11)} |`);
  }
  console.log(`\n| ${pad("size on disk", 36)} | ${pad("MB", 9)} | ${pad("ratio", 11)} |`);
  console.log(`|${"-".repeat(38)}|${"-".repeat(11)}|${"-".repeat(13)}|`);
  for (
    const [name, size] of [
      ["baseline JSONL (no packing)", baselineSize],
      ["fileStorage plain (packed rows)", sizes.none],
      ["fileStorage zstd (packed rows)", sizes.zstd],
    ] as const
  ) {
    console.log(`| ${pad(name, 36)} | ${pad(num(size / 1e6, 2), 9)} | ${pad(num(baselineSize / size, 2) + "x", 11)} |`);
  }
  console.log(`\nzstd ratio (plain packed / zstd): ${num(sizes.none / sizes.zstd, 2)}x`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
