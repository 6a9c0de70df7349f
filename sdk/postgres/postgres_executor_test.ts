import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { toPostgresExecutor } from "./postgres_executor.ts";
import { dropSchema, testPool, testSchema, todoEvents, useTestPostgres } from "./_test_postgres.ts";
import { postgresStorage } from "./postgres_storage.ts";

/** A stand-in for a pg Pool that records what it is asked and fails as told. */
function fakePool(fail: (query: unknown) => Error | undefined) {
  const seen: unknown[] = [];
  return {
    seen,
    totalCount: 0,
    connect: () => Promise.reject(new Error("not used")),
    query(query: unknown, values?: unknown[]) {
      seen.push(values === undefined ? query : { text: query, values });
      const error = fail(query);
      return error === undefined ? Promise.resolve({ rows: [{ ok: true }] }) : Promise.reject(error);
    },
  };
}

const coded = (code: string) => Object.assign(new Error(`error ${code}`), { code });

describe("toPostgresExecutor() on a pg Pool", () => {
  it("sends a named query as a prepared statement and an unnamed one as text", async () => {
    const pool = fakePool(() => undefined);
    const executor = toPostgresExecutor(pool);
    await executor.query("select $1::int", [1], { name: "q1" });
    await executor.query("select 2", []);
    assert.deepEqual(pool.seen, [{ name: "q1", text: "select $1::int", values: [1] }, {
      text: "select 2",
      values: [],
    }]);
  });

  it("when the server has no such prepared statement, sends the query again as text and names no more", async () => {
    for (const code of ["26000", "42P05"]) {
      const pool = fakePool((query) => typeof query === "object" ? coded(code) : undefined);
      const executor = toPostgresExecutor(pool);
      assert.deepEqual(await executor.query("select 1", [], { name: "q" }), [{ ok: true }]);
      await executor.query("select 1", [], { name: "q" });
      assert.deepEqual(pool.seen, [{ name: "q", text: "select 1", values: [] }, { text: "select 1", values: [] }, {
        text: "select 1",
        values: [],
      }]);
    }
  });

  it("any other error of a named query is the caller's, sent once", async () => {
    const pool = fakePool(() => coded("23505"));
    const executor = toPostgresExecutor(pool);
    await assert.rejects(executor.query("insert", [], { name: "q" }), /23505/);
    assert.equal(pool.seen.length, 1);
  });
});

const todos = todoEvents;

describe("postgresStorage appends as a prepared statement on a PostgreSQL server", () => {
  const server = useTestPostgres();

  it("prepares the append once per connection, and goes on unprepared when the server dropped it", async () => {
    const pool = testPool(server.url, 1);
    const schema = testSchema();
    const storage = postgresStorage({ client: pool, schema });
    try {
      await storage.create({ id: "s" });
      const writer = await storage.acquireWriter("s");
      await storage.append("s", todos(1), { expectedSeq: 0, writer });
      await storage.append("s", todos(1, 1), { expectedSeq: 1, writer });
      const prepared = async () =>
        (await pool.query(`SELECT name FROM pg_prepared_statements WHERE name LIKE 'dsh_append_%'`)).rows.length;
      assert.equal(await prepared(), 1);
      // As a transaction pooler or DISCARD ALL would leave the connection.
      await pool.query("DEALLOCATE ALL");
      await storage.append("s", todos(1, 2), { expectedSeq: 2, writer });
      await storage.append("s", todos(1, 3), { expectedSeq: 3, writer });
      assert.equal(await prepared(), 0);
      await writer.release();
      assert.deepEqual((await storage.load("s")).events, todos(4));
    } finally {
      await storage.close();
      await dropSchema(pool, schema);
      await pool.end();
    }
  });
});

describe("toPostgresExecutor() listening on a pg Pool", () => {
  it("listens again on a new connection after the old one broke (a server restart)", async () => {
    type Handler = (value: never) => void;
    const clients: { queries: string[]; handlers: Map<string, Handler>; released: boolean }[] = [];
    let refuse = 1; // the first reconnect finds the server still away
    const pool = {
      totalCount: 0,
      query: () => Promise.resolve({ rows: [] }),
      connect() {
        if (clients.length > 0 && refuse-- > 0) return Promise.reject(new Error("server starting up"));
        const client = { queries: [] as string[], handlers: new Map<string, Handler>(), released: false };
        clients.push(client);
        return Promise.resolve({
          query: (text: string) => Promise.resolve(void client.queries.push(text)),
          on: (event: string, fn: Handler) => void client.handlers.set(event, fn),
          release: () => void (client.released = true),
        });
      },
    };
    const executor = toPostgresExecutor(pool as never);
    const heard: string[] = [];
    const unlisten = await executor.listen!("appends", (payload) => void heard.push(payload));
    assert.deepEqual(clients[0].queries, ['LISTEN "appends"']);
    clients[0].handlers.get("error")!(new Error("terminating connection") as never);
    assert.equal(clients[0].released, true);
    // Retried with a growing delay until the server is back (100 ms, then 200 ms here).
    for (let waited = 0; clients.length < 2 || clients[1].queries.length === 0; waited += 10) {
      assert.ok(waited < 5000, "no new LISTEN");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.deepEqual(clients[1].queries, ['LISTEN "appends"']);
    clients[1].handlers.get("notification")!({ channel: "appends", payload: "3 s" } as never);
    assert.deepEqual(heard, ["3 s"]);
    // Broken again; this time another channel's subscriber opens the new connection before the retry runs: the
    // retry still listens to the first channel on it.
    clients[1].handlers.get("error")!(new Error("terminating connection") as never);
    const unlistenOther = await executor.listen!("others", () => {});
    assert.deepEqual(clients[2].queries, ['LISTEN "others"']);
    for (let waited = 0; !clients[2].queries.includes('LISTEN "appends"'); waited += 10) {
      assert.ok(waited < 5000, "the first channel was not listened to again");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    clients[2].handlers.get("notification")!({ channel: "appends", payload: "4 s" } as never);
    assert.deepEqual(heard, ["3 s", "4 s"]);
    await unlistenOther();
    await unlisten();
  });
});
