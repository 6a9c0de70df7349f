import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type pg from "pg";
import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionEvent } from "../session/session_events.ts";
import { storageContract } from "../persistence/_test_storage_contract.ts";
import { deleteTreeSuite } from "../persistence/_test_delete_tree.ts";
import { LogBuilder } from "../persistence/_test_log.ts";
import { loadUnderLease } from "../persistence/_test_lease.ts";
import { dropSchema, testPool, testSchema, todoEvents, useTestPostgres } from "./_test_postgres.ts";
import { migrationScript, SCHEMA_VERSION } from "./_migrations.ts";
import { type PostgresSessionWriter, postgresStorage, type PostgresStorageOptions } from "./postgres_storage.ts";
import { postgresStorageKind } from "./postgres_storage_kind.ts";
import { type PostgresExecutor, type PostgresQueryOptions, toPostgresExecutor } from "./postgres_executor.ts";
import { statements } from "./_statements.ts";
import { createHarness } from "../harness.ts";
import { resolveConfig } from "../config/resolve_config.ts";
import { scriptedAdapter, textResponse } from "../../testing/scripted_adapter.ts";

const code = (c: string) => (error: unknown) => HarnessError.isInstance(error, c);

const todos = todoEvents;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("postgresStorage() on a PostgreSQL server", () => {
  const server = useTestPostgres();

  /** A storage on a fresh schema of its own pool; `after` drops both. */
  const make = (options: { leaseMs?: number; pollMs?: number } = {}) => {
    const pool = testPool(server.url, 4);
    const schema = testSchema();
    const storage = postgresStorage({ client: pool, schema, ...options });
    return Promise.resolve({
      storage,
      pool,
      schema,
      async after() {
        await storage.close();
        await pool.end();
        await dropSchema(server.admin, schema);
      },
    });
  };

  storageContract({ name: "postgresStorage(pg.Pool)", make });
  deleteTreeSuite({ name: "postgresStorage(pg.Pool)", make });

  it("two writers racing for a session: exactly one wins, nothing interleaves", async () => {
    const a = await make();
    const b = postgresStorage({ client: testPool(server.url, 4), schema: a.schema });
    try {
      await a.storage.create({ id: "race" });
      const results = await Promise.allSettled([a.storage.acquireWriter("race"), b.acquireWriter("race")]);
      assert.deepEqual(results.map((r) => r.status).sort(), ["fulfilled", "rejected"]);
      const lost = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
      assert.ok(HarnessError.isInstance(lost.reason, "SESSION_WRITER_BUSY"));
      const [winner, other] = results[0].status === "fulfilled" ? [a.storage, b] : [b, a.storage];
      const writer = (results.find((r) => r.status === "fulfilled") as PromiseFulfilledResult<PostgresSessionWriter>)
        .value;
      // Racing appends at the same seq, many rounds: exactly one wins each round.
      for (let round = 0; round < 10; round++) {
        const seq = round * 2;
        const outcome = await Promise.allSettled([
          winner.append("race", todos(2, seq), { expectedSeq: seq, writer }),
          other.append("race", todos(2, seq), { expectedSeq: seq }),
        ]);
        assert.equal(outcome[0].status, "fulfilled");
        assert.equal(outcome[1].status, "rejected");
        assert.ok(HarnessError.isInstance((outcome[1] as PromiseRejectedResult).reason, "SESSION_WRITER_BUSY"));
      }
      await writer.release();
      // Without leases, racing appends at the same expected seq: one wins per round.
      for (let round = 0; round < 10; round++) {
        const seq = 20 + round * 3;
        const outcome = await Promise.allSettled([
          a.storage.append("race", todos(3, seq), { expectedSeq: seq }),
          b.append("race", todos(3, seq), { expectedSeq: seq }),
        ]);
        assert.deepEqual(outcome.map((r) => r.status).sort(), ["fulfilled", "rejected"]);
        const reason = (outcome.find((r) => r.status === "rejected") as PromiseRejectedResult).reason;
        assert.ok(HarnessError.isInstance(reason, "SESSION_SEQ_MISMATCH"), String(reason));
      }
      const loaded = await b.load("race");
      assert.deepEqual(loaded.events, todos(50));
    } finally {
      await b.close();
      await a.after();
    }
  });

  it("a stale writer (expired lease taken over, older token) is refused and writes nothing", async () => {
    const a = await make({ leaseMs: 300 });
    const b = postgresStorage({ client: a.pool, schema: a.schema, leaseMs: 300 });
    try {
      await a.storage.create({ id: "s" });
      const first = await a.storage.acquireWriter("s") as PostgresSessionWriter;
      await a.storage.append("s", todos(2), { expectedSeq: 0, writer: first });
      // While renewed, nobody else gets the lease.
      await sleep(450);
      await assert.rejects(b.acquireWriter("s"), code("SESSION_WRITER_BUSY"));
      // The first instance stops renewing (as if it froze); the lease expires and b takes over.
      await a.storage.close();
      await sleep(400);
      const second = await b.acquireWriter("s") as PostgresSessionWriter;
      assert.ok(second.fence > first.fence, `fence ${second.fence} > ${first.fence}`);
      await assert.rejects(
        a.storage.append("s", todos(1, 2), { expectedSeq: 2, writer: first }),
        code("SESSION_LEASE_LOST"),
      );
      await assert.rejects(a.storage.delete("s", { writer: first }), code("SESSION_LEASE_LOST"));
      assert.equal((await b.stat("s"))?.nextSeq, 2);
      await b.append("s", todos(1, 2), { expectedSeq: 2, writer: second });
      await assert.rejects(b.append("s", todos(1, 3), { expectedSeq: 3 }), code("SESSION_WRITER_BUSY"));
      await second.release();
      assert.deepEqual((await b.load("s")).events, todos(3));
    } finally {
      await b.close();
      await a.after();
    }
  });

  it("a silent partition: calls fail after timeoutMs, renewals do not pile up, the writer knows its lease is lost", async () => {
    const pool = testPool(server.url, 8);
    const schema = testSchema();
    const real = toPostgresExecutor(pool);
    let stalled = false;
    let unanswered = 0;
    // The driver as it behaves when packets vanish: statements are sent and never answered.
    const client: PostgresExecutor = {
      query(text, params, options) {
        if (!stalled) return real.query(text, params, options);
        unanswered++;
        return new Promise(() => {});
      },
    };
    const storage = postgresStorage({ client, schema, leaseMs: 300, timeoutMs: 150 });
    const other = postgresStorage({ client: pool, schema, leaseMs: 300 });
    const within = <T>(ms: number, promise: Promise<T>) =>
      Promise.race([promise, sleep(ms).then(() => Promise.reject(new Error(`still waiting after ${ms} ms`)))]);
    try {
      await storage.create({ id: "s" });
      const writer = await storage.acquireWriter("s") as PostgresSessionWriter;
      await storage.append("s", todos(2), { expectedSeq: 0, writer });
      await sleep(450); // past one lease: renewed meanwhile
      assert.equal(writer.lost, false);

      stalled = true;
      const started = Date.now();
      await within(2000, assert.rejects(storage.stat("s"), code("SESSION_READ_FAILED")));
      await within(
        2000,
        assert.rejects(storage.append("s", todos(1, 2), { expectedSeq: 2 }), code("SESSION_WRITE_FAILED")),
      );
      const tail = storage.follow("s")[Symbol.asyncIterator]();
      await within(2000, assert.rejects(tail.next(), code("SESSION_READ_FAILED")));
      assert.ok(Date.now() - started < 1500, `the three calls took ${Date.now() - started} ms`);
      await sleep(900); // three leases: nine renewal ticks
      assert.equal(writer.lost, true, "no renewal was answered for a whole lease");
      const renewals = unanswered - 3;
      assert.ok(renewals >= 1 && renewals <= 4, `${renewals} renewals sent into the partition`);
      // Refused here, without a statement: the lease may be another instance's by now.
      await assert.rejects(storage.append("s", todos(1, 2), { expectedSeq: 2, writer }), code("SESSION_LEASE_LOST"));
      assert.equal(unanswered, renewals + 3);

      // The partition heals: the lease expired on the server too, another instance takes the session over.
      stalled = false;
      const next = await other.acquireWriter("s") as PostgresSessionWriter;
      assert.ok(next.fence > writer.fence);
      await other.append("s", todos(1, 2), { expectedSeq: 2, writer: next });
      assert.equal(writer.lost, true);
      await next.release();
    } finally {
      stalled = false;
      await storage.close();
      await other.close();
      await pool.end();
      await dropSchema(server.admin, schema);
    }
  });

  it("fence counters never go back, across a delete and a re-create of the same id", async () => {
    const { storage, after } = await make();
    try {
      const fences: number[] = [];
      for (let life = 0; life < 3; life++) {
        await storage.create({ id: "s" });
        for (let take = 0; take < 2; take++) {
          const writer = await storage.acquireWriter("s") as PostgresSessionWriter;
          fences.push(writer.fence);
          await writer.release();
        }
        // Deleted without a writer (the lease row is expired), then with one (its row is live).
        if (life % 2 === 0) assert.equal(await storage.delete("s"), true);
        else {
          const writer = await storage.acquireWriter("s") as PostgresSessionWriter;
          fences.push(writer.fence);
          assert.equal(await storage.delete("s", { writer }), true);
          await writer.release();
        }
      }
      for (let i = 1; i < fences.length; i++) assert.ok(fences[i] > fences[i - 1], `fences ${fences.join(", ")}`);
    } finally {
      await after();
    }
  });

  it("a take-over waits for an append in flight, which holds the lease row until it commits", async () => {
    const a = await make();
    const poolB = testPool(server.url, 2);
    const b = postgresStorage({ client: poolB, schema: a.schema });
    const blocker = await server.admin.connect();
    const waiting = async (pattern: string) => {
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(20)) {
        const { rows } = await server.admin.query(
          `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
          [`%${pattern}%`],
        );
        if (rows.length > 0) return;
      }
      throw new Error(`no statement like ${pattern} waited for a lock`);
    };
    try {
      await a.storage.create({ id: "s" });
      const first = await a.storage.acquireWriter("s") as PostgresSessionWriter;
      // The append takes the lease row, then waits for the session row, held here.
      await blocker.query("BEGIN");
      await blocker.query(`SELECT 1 FROM "${a.schema}".sessions WHERE id = 's' FOR UPDATE`);
      await server.admin.query(`UPDATE "${a.schema}".session_writers SET expires_at = clock_timestamp() + '300 ms'`);
      const append = a.storage.append("s", todos(1), { expectedSeq: 0, writer: first });
      await waiting("append_events");
      await sleep(400);
      // The lease has expired by the clock, but its row is held by the append: the take-over waits.
      let settled = false;
      const takeOver = b.acquireWriter("s").finally(() => settled = true);
      await waiting("session_writers");
      assert.equal(settled, false);
      await blocker.query("COMMIT");
      assert.deepEqual(await append, { nextSeq: 1 });
      const second = await takeOver as PostgresSessionWriter;
      assert.ok(second.fence > first.fence);
      await assert.rejects(
        a.storage.append("s", todos(1, 1), { expectedSeq: 1, writer: first }),
        code("SESSION_LEASE_LOST"),
      );
      await b.append("s", todos(1, 1), { expectedSeq: 1, writer: second });
      assert.deepEqual((await b.load("s", { writer: second })).events, todos(2));
    } finally {
      await blocker.query("ROLLBACK").catch(() => {});
      blocker.release();
      await b.close();
      await poolB.end();
      await a.after();
    }
  });

  it("a delete waiting for the session row holds the lease row: a resume's acquire waits, then finds no session", async () => {
    // delete_session() checked the lease without a lock, then waited for the session row: a lease taken in that gap,
    // and a log loaded under it, went unseen, and the resumer (finding its session gone) stored the log again.
    const a = await make();
    const poolB = testPool(server.url, 2);
    const b = postgresStorage({ client: poolB, schema: a.schema });
    const blocker = await server.admin.connect();
    const lockWait = async (pattern: string) => {
      const { rows } = await server.admin.query(
        `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
        [`%${pattern}%`],
      );
      return rows.length > 0;
    };
    try {
      await a.storage.create({ id: "s" }, { events: todos(2) });
      await blocker.query("BEGIN");
      await blocker.query(`SELECT 1 FROM "${a.schema}".sessions WHERE id = 's' FOR UPDATE`);
      const deleted = a.storage.delete("s");
      for (const deadline = Date.now() + 10_000; !await lockWait("delete_session"); await sleep(20)) {
        assert.ok(Date.now() < deadline, "the delete waits for the session row");
      }
      // A resumer on another instance: the lease, then the load under it.
      let settled = false;
      const resumed = (async () => {
        const writer = await b.acquireWriter("s");
        try {
          return await b.load("s", { writer });
        } finally {
          await writer.release();
        }
      })().finally(() => settled = true);
      resumed.catch(() => {});
      for (const deadline = Date.now() + 10_000; !settled && !await lockWait("session_writers"); await sleep(20)) {
        assert.ok(Date.now() < deadline, "the acquire either waits or settles");
      }
      await blocker.query("COMMIT");
      assert.equal(await deleted, true);
      // The delete was acknowledged: nobody holds the deleted log.
      await assert.rejects(resumed, code("SESSION_NOT_FOUND"));
      assert.equal(await b.stat("s"), undefined);
      // A delete of a session that is not there leaves no lease row behind.
      assert.equal(await a.storage.delete("none"), false);
      const { rows } = await server.admin.query(
        `SELECT 1 FROM "${a.schema}".session_writers WHERE session_id = 'none'`,
      );
      assert.equal(rows.length, 0);
    } finally {
      await blocker.query("ROLLBACK").catch(() => {});
      blocker.release();
      await b.close();
      await poolB.end();
      await a.after();
    }
  });

  it("a lease whose holder stopped renewing expires: the open turn is repaired by the next writer", async () => {
    const a = await make({ leaseMs: 200 });
    const b = postgresStorage({ client: a.pool, schema: a.schema, leaseMs: 200 });
    try {
      const log = new LogBuilder();
      log.completeTurn(1);
      log.push({ type: "turn/start", data: { turn: 2 } });
      log.push({ type: "step/start", data: { turn: 2, step: 1 } });
      const writer = await a.storage.acquireWriter("open");
      await a.storage.create({ id: "open" }, { events: log.events, writer });
      await assert.rejects(b.load("open"), code("SESSION_WRITER_BUSY"));
      await a.storage.close();
      await sleep(300);
      // No lease is held now; only a lease holder writes the repair.
      await assert.rejects(b.load("open"), code("SESSION_REPAIR_REQUIRED"));
      const loaded = await loadUnderLease(b, "open");
      assert.equal(loaded.repair.committed, true);
      assert.equal(loaded.repair.closedTurn, 2);
      assert.equal((await b.stat("open"))?.nextSeq, loaded.events.length);
    } finally {
      await b.close();
      await a.after();
    }
  });

  it("a live tail on one instance follows appends made by another", async () => {
    const a = await make({ pollMs: 60_000 });
    const readerPool = testPool(server.url, 2);
    const b = postgresStorage({ client: readerPool, schema: a.schema, pollMs: 60_000 });
    const abort = new AbortController();
    try {
      await a.storage.create({ id: "t" }, { events: todos(3) });
      const seen: SessionEvent[] = [];
      const done = (async () => {
        for await (const event of b.follow("t", { fromSeq: 1, signal: abort.signal })) {
          seen.push(event);
          if (seen.length === 2 + 40) break;
        }
      })();
      for (let i = 3; i < 43; i += 4) {
        await a.storage.append("t", todos(4, i), { expectedSeq: i });
        await sleep(5);
      }
      // The poll interval is a minute, so only notifications can have woken the tail.
      await done;
      assert.deepEqual(seen, todos(43).slice(1));
      await assert.rejects(async () => {
        for await (const _ of b.follow("missing")) break;
      }, code("SESSION_NOT_FOUND"));
    } finally {
      abort.abort();
      await b.close();
      await readerPool.end();
      await a.after();
    }
  });

  it("a tail ends when its session is deleted and created again, without the new log's events", async () => {
    const a = await make({ pollMs: 50 });
    try {
      await a.storage.create({ id: "r" }, { events: todos(3) });
      const seen: number[] = [];
      const done = (async () => {
        for await (const event of a.storage.follow!("r")) seen.push(event.seq);
      })();
      while (seen.length < 3) await sleep(5);
      // Another life of the id, made between two reads of the tail (the delete sends no notification).
      await a.storage.delete("r");
      await a.storage.create({ id: "r" }, { events: todos(5) });
      await done;
      assert.deepEqual(seen, [0, 1, 2]);
    } finally {
      await a.after();
    }
  });

  /** An executor on `pool` that counts page reads and may run `beforePage(n)` before the n-th (from 1). */
  const pageCounter = (pool: pg.Pool, schema: string, beforePage?: (n: number) => Promise<void>) => {
    const inner = toPostgresExecutor(pool);
    const page = statements(schema).page;
    const counter = {
      pages: 0,
      executor: {
        async query(text: string, params?: readonly unknown[], options?: PostgresQueryOptions) {
          if (text === page) {
            counter.pages++;
            await beforePage?.(counter.pages);
          }
          return await inner.query(text, params, options);
        },
        listen: inner.listen,
      } satisfies PostgresExecutor,
    };
    return counter;
  };

  it("load, inspect and follow read a log in pages bounded by bytes, each page holding at least one event", async () => {
    const a = await make();
    const counter = pageCounter(a.pool, a.schema);
    // A budget of about three small events; event 7 alone is over it.
    const options = { client: counter.executor, schema: a.schema, pollMs: 50, pageBytes: 250 };
    const paged = postgresStorage(options as PostgresStorageOptions);
    try {
      const events = todos(20);
      events[7] = {
        ...todos(1, 7)[0],
        data: { todos: [{ content: "x".repeat(2000), status: "pending" }] },
      } as SessionEvent;
      await a.storage.create({ id: "before", createdAt: 1 }, { events: todos(4) });
      await a.storage.create({ id: "paged", createdAt: 2 }, { events: events.slice(0, 5) });
      await a.storage.append("paged", events.slice(5), { expectedSeq: 5 });
      await a.storage.create({ id: "after", createdAt: 3 }, { events: todos(4) });
      const loaded = await paged.load("paged");
      assert.deepEqual(loaded.events, events);
      assert.ok(counter.pages > 3, `${counter.pages} pages`);
      // A budget under one event: a page per event.
      const single = postgresStorage({ ...options, pageBytes: 1 } as PostgresStorageOptions);
      counter.pages = 0;
      assert.deepEqual((await single.load("paged")).events, events);
      assert.equal(counter.pages, 20);
      await single.close();
      // The page boundary falls inside each session: neither neighbour's events come in.
      assert.deepEqual((await paged.inspect("before")).events, todos(4));
      assert.deepEqual((await paged.inspect("after")).events, todos(4));
      const followed: SessionEvent[] = [];
      for await (const event of paged.follow("paged")) {
        followed.push(event);
        if (followed.length === events.length) break;
      }
      assert.deepEqual(followed, events);
      // An empty log is one page.
      await a.storage.create({ id: "empty", createdAt: 4 });
      const before = counter.pages;
      assert.deepEqual((await paged.load("empty")).events, []);
      assert.equal(counter.pages - before, 1);
    } finally {
      await paged.close();
      await a.after();
    }
  });

  it("a load whose session is deleted and created again between two pages reads the new log, or fails with SESSION_READ_FAILED", async () => {
    const a = await make();
    let recreate: (n: number) => boolean = () => false;
    let life = 0;
    const counter = pageCounter(a.pool, a.schema, async (n) => {
      if (!recreate(n)) return;
      await a.storage.delete("r");
      life++;
      await a.storage.create({ id: "r", createdAt: 10 + life }, { events: todos(10 + life) });
    });
    const options = { client: counter.executor, schema: a.schema, pageBytes: 200 };
    const paged = postgresStorage(options as PostgresStorageOptions);
    try {
      await a.storage.create({ id: "r", createdAt: 1 }, { events: todos(10) });
      // Once, before the second page: the load starts again and reads the new life whole.
      recreate = (n) => n === 2;
      const loaded = await paged.load("r");
      assert.equal(loaded.header.createdAt, 11);
      assert.deepEqual(loaded.events, todos(11));
      // Before the second page of every attempt: the load gives up.
      counter.pages = 0;
      recreate = (n) => n % 2 === 0;
      await assert.rejects(paged.inspect("r"), (error: unknown) => {
        assert.ok(HarnessError.isInstance(error, "SESSION_READ_FAILED"), String(error));
        assert.match((error as Error).message, /deleted and created again while it was loaded/);
        return true;
      });
      // Deleted between two pages (and not created again): not found.
      counter.pages = 0;
      recreate = () => false;
      const gone = pageCounter(a.pool, a.schema, async (n) => {
        if (n === 2) await a.storage.delete("r");
      });
      const reader = postgresStorage({ ...options, client: gone.executor } as PostgresStorageOptions);
      await assert.rejects(reader.inspect("r"), code("SESSION_NOT_FOUND"));
      await reader.close();
    } finally {
      await paged.close();
      await a.after();
    }
  });

  it("counts stored size in UTF-8 bytes; a read the driver fails is SESSION_READ_FAILED", async () => {
    const a = await make();
    try {
      const one = (content: string) => {
        const [event] = todos(1);
        return [{ ...event, data: { todos: [{ content, status: "pending" }] } }] as SessionEvent[];
      };
      await a.storage.create({ id: "ascii", createdAt: 1 }, { events: one("e".repeat(1000)) });
      await a.storage.create({ id: "utf-8", createdAt: 1 }, { events: one("é".repeat(1000)) });
      const ascii = (await a.storage.stat("ascii"))!.size;
      assert.equal((await a.storage.stat("utf-8"))!.size - ascii, 1000); // ids of one length: the header counts too
      await a.pool.end(); // every later query fails in the driver
      for (const read of [() => a.storage.load("ascii"), () => a.storage.stat("ascii"), () => a.storage.list()]) {
        await assert.rejects(read(), code("SESSION_READ_FAILED"));
      }
      await assert.rejects(a.storage.acquireWriter("ascii"), code("SESSION_WRITE_FAILED"));
    } finally {
      await a.storage.close();
      await dropSchema(server.admin, a.schema);
    }
  });

  it("reads at first use with the server down are SESSION_READ_FAILED, the migration's failure kept as the cause", async () => {
    const down = { query: () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:5432")) };
    const storage = postgresStorage({ client: down, schema: testSchema() });
    try {
      const reads = [
        () => storage.list(),
        () => storage.stat("x"),
        () => storage.load("x"),
        () => storage.inspect("x"),
        async () => {
          for await (const _ of storage.follow("x")) break;
        },
      ];
      for (const read of reads) {
        await assert.rejects(read(), (error: unknown) => {
          assert.ok(HarnessError.isInstance(error, "SESSION_READ_FAILED"), String(error));
          const cause = (error as Error).cause;
          assert.ok(HarnessError.isInstance(cause, "SESSION_WRITE_FAILED"), String(cause));
          assert.match(String((cause as Error).cause), /ECONNREFUSED/);
          return true;
        });
      }
      // A write still says the write failed.
      await assert.rejects(storage.create({ id: "x" }), code("SESSION_WRITE_FAILED"));
    } finally {
      await storage.close();
    }
  });

  it("migrations are versioned, idempotent, safe when instances start at once, and refuse a newer schema", async () => {
    const schema = testSchema("m");
    const pools = [testPool(server.url, 1), testPool(server.url, 1), testPool(server.url, 1)];
    try {
      // An older build's schema first (version 1), then three instances upgrade it at once.
      await pools[0].query(migrationScript(schema, 1));
      const storages = pools.map((client) => postgresStorage({ client, schema }));
      await Promise.all(storages.map((s) => s.migrate()));
      await Promise.all(storages.map((s) => s.migrate()));
      const { rows } = await server.admin.query(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
      assert.deepEqual(rows.map((r) => r.version), Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));
      await storages[0].create({ id: "x" });
      assert.equal((await storages[2].list()).length, 1);
      await server.admin.query(
        `INSERT INTO "${schema}".schema_migrations (version, description) VALUES (999, 'future')`,
      );
      const fresh = postgresStorage({ client: pools[1], schema });
      await assert.rejects(fresh.list(), code("STORAGE_SCHEMA_UNSUPPORTED"));
      // Fresh schemas migrated at once from nothing.
      const other = testSchema("m");
      await Promise.all(pools.map((client) => postgresStorage({ client, schema: other }).migrate()));
      await dropSchema(server.admin, other);
    } finally {
      for (const pool of pools) await pool.end();
      await dropSchema(server.admin, schema);
    }
  });

  it("keeps event JSON exactly, a NUL escape and astral characters included", async () => {
    const { storage, after } = await make();
    try {
      const odd: SessionEvent = {
        type: "todo/write",
        seq: 0,
        time: 2,
        data: { todos: [{ content: 'nul \u0000 emoji 🧪 quote " backslash \\ 1e-7', status: "pending" }] },
      };
      await storage.create({ id: "odd" }, { events: [odd] });
      assert.deepEqual((await storage.load("odd")).events, [odd]);
    } finally {
      await after();
    }
  });

  it("persists any well-formed type; a strict reader refuses unknown ones; a malformed row is SESSION_CORRUPT", async () => {
    const { storage, pool, schema, after } = await make();
    const strict = postgresStorage({ client: pool, schema, eventTypes: ["my/known"] });
    try {
      const mine = { type: "my/event", seq: 0, time: 1, data: { n: 1 } } as unknown as SessionEvent;
      await storage.create({ id: "open" }, { events: [mine] });
      assert.deepEqual((await storage.load("open")).events, [mine]);
      await assert.rejects(
        strict.inspect("open"),
        (e: unknown) => HarnessError.isInstance(e, "SESSION_UNKNOWN_EVENT_TYPE") && e.details?.seq === 0,
      );
      await storage.create({ id: "bad" }, { events: todos(2) });
      // A row damaged outside the storage: valid JSON, but not an event the session would accept.
      await pool.query(
        `UPDATE ${schema}.session_events SET event = '{"type":"todo/write","seq":1,"time":1,"data":{}}'
         WHERE session_id = 'bad' AND seq = 1`,
      );
      await assert.rejects(
        storage.inspect("bad"),
        (e: unknown) =>
          HarnessError.isInstance(e, "SESSION_CORRUPT") && e.details?.sessionId === "bad" && e.details?.seq === 1 &&
          /session "bad"/.test(e.message) && /event 1/.test(e.message),
      );
    } finally {
      await strict.close();
      await after();
    }
  });

  it("refuses bad options and an unknown writer", async () => {
    assert.throws(() => postgresStorage({ client: server.admin, schema: "Bad-Name" }), code("INVALID_ARGS"));
    assert.throws(() => postgresStorage({ client: {} as never }), code("INVALID_ARGS"));
    for (const timeoutMs of [0, NaN, 2 ** 31]) {
      assert.throws(() => postgresStorage({ client: server.admin, timeoutMs }), code("INVALID_ARGS"));
    }
    const { storage, after } = await make();
    try {
      await storage.create({ id: "s" });
      const foreign = { sessionId: "s", token: "x", released: false } as never;
      await assert.rejects(storage.append("s", todos(1), { expectedSeq: 0, writer: foreign }), code("INVALID_ARGS"));
    } finally {
      await after();
    }
  });
  it("harness.fork() and forkAgent() of a stored session write children that keep its prefix and profile", async () => {
    const { storage, after } = await make();
    const profile = { system: "Be brief", tools: ["read_file"], model: "scripted-model" };
    const harnessOn = (...texts: string[]) =>
      createHarness({
        adapters: [scriptedAdapter(texts.map((t) => textResponse(t)))],
        model: { provider: "scripted", model: "scripted-model" },
        storage,
      });
    try {
      const first = await harnessOn("one", "two");
      const source = await first.createAgent({ id: "src", profile });
      await source.run("first");
      const boundary = source.session.seq - 1;
      await source.run("second");
      await first.dispose();

      const second = await harnessOn("alt");
      const agent = await second.forkAgent("src", { boundary, id: "agent-child" });
      assert.equal((await agent.run("another second")).text, "alt");
      const session = await second.fork("src", boundary, "session-child");
      await second.sessions.flush(session);
      await assert.rejects(second.fork("src", boundary - 1, "bad"), code("OPEN_TURN"));
      await second.dispose();

      const parent = (await storage.inspect("src")).events;
      for (const id of ["agent-child", "session-child"]) {
        const { header, events } = await storage.inspect(id);
        assert.equal(header.parentSession, "src", id);
        assert.deepEqual(header.profile, profile, id);
        assert.equal(header.seedLength, boundary + 1, id);
        assert.deepEqual(events.slice(0, boundary + 1), parent.slice(0, boundary + 1), id);
      }
      assert.equal(await storage.stat("bad"), undefined);
    } finally {
      await after();
    }
  });

  it('a configuration with storage { kind: "postgres", urlEnv } stores sessions in PostgreSQL', async () => {
    const schema = testSchema("cfg");
    const text = JSON.stringify({
      adapters: { deepseek: null },
      model: { provider: "scripted", model: "scripted-model" },
      storage: { kind: "postgres", urlEnv: "TEST_PG_URL", schema },
    });
    const { config } = resolveConfig([{ name: "app.jsonc", text }]);
    assert.deepEqual(config.storage, { kind: "postgres", urlEnv: "TEST_PG_URL", schema });
    assert.throws(
      () => resolveConfig([{ name: "bad.jsonc", text: '{ "storage": { "kind": "postgres" } }' }]),
      (error: unknown) => HarnessError.isInstance(error) && /urlEnv/.test(String(error.details?.path ?? error.message)),
    );
    const adapters = [scriptedAdapter(textResponse("Stored."))];
    await assert.rejects(createHarness({ config, adapters }), code("CONFIG_STORAGE_KIND"));
    const pools: pg.Pool[] = [];
    const kind = postgresStorageKind((url) => {
      const pool = testPool(url, 2);
      pools.push(pool);
      return pool;
    });
    await assert.rejects(
      createHarness({ config, adapters, env: () => undefined, storageKinds: { postgres: kind } }),
      code("CONFIG_STORAGE_URL_MISSING"),
    );
    const env = (name: string) => (name === "TEST_PG_URL" ? server.url : undefined);
    const harness = await createHarness({ config, adapters, env, storageKinds: { postgres: kind } });
    try {
      const agent = await harness.createAgent({ id: "configured" });
      assert.equal((await agent.run("Hello")).text, "Stored.");
      const { rows } = await server.admin.query(`SELECT next_seq FROM "${schema}".sessions WHERE id = 'configured'`);
      assert.ok(Number(rows[0].next_seq) > 5);
    } finally {
      await harness.dispose();
      await (harness.storage as { close?: () => Promise<void> }).close?.();
      for (const pool of pools) await pool.end();
      await dropSchema(server.admin, schema);
    }
  });
});
