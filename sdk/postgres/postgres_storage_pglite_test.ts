// The same storage suite on PGlite (PostgreSQL compiled to WebAssembly, in
// process): the executor seam over a client that is not \`pg\`.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { PGlite } from "@electric-sql/pglite";
import { storageContract } from "../persistence/_test_storage_contract.ts";
import { deleteTreeSuite } from "../persistence/_test_delete_tree.ts";
import { dropSchema, openTestPGlite, testSchema, todoEvents } from "./_test_postgres.ts";
import { type PostgresSessionStorage, postgresStorage } from "./postgres_storage.ts";
import { incarnationOf } from "../session/_incarnation.ts";
import type { SessionEvent } from "../session/session_events.ts";
import { serveHarness, withServer } from "../http/_test_client.ts";

const todos = todoEvents;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("postgresStorage() on PGlite", () => {
  let db: PGlite;
  before(async () => {
    db = await openTestPGlite();
  });
  after(async () => {
    await db?.close();
  });

  // One schema for the suite (DDL is slow in WebAssembly), emptied before each test.
  const schema = testSchema("pglite");
  const pglite = {
    name: "postgresStorage(PGlite)",
    make: async () => {
      const storage: PostgresSessionStorage = postgresStorage({ client: db, schema });
      await storage.migrate();
      await db.query(`TRUNCATE "${schema}".sessions, "${schema}".session_events, "${schema}".session_writers`);
      return { storage, after: () => storage.close() };
    },
  };
  storageContract(pglite);
  deleteTreeSuite(pglite);

  it("follow({ incarnation }) ends without a new life's events when the log was deleted and created again", async () => {
    const schema = testSchema();
    const storage = postgresStorage({ client: db, schema, pollMs: 60_000 });
    try {
      const old = await storage.create({ id: "t" }, { events: todos(2) });
      assert.equal(await storage.delete("t"), true);
      await storage.create({ id: "t" }, { events: todos(5) });
      const seen: number[] = [];
      for await (const event of storage.follow("t", { fromSeq: 2, incarnation: incarnationOf(old) })) {
        seen.push(event.seq);
        break; // (before, the tail went on with the new life, and waited for more)
      }
      assert.deepEqual(seen, [], "the new life's events are not the old one's continuation");
      assert.equal(await storage.delete("t"), true);
      // The life followed is gone: the iteration ends (it does not reject as for a session never seen).
      const after: number[] = [];
      for await (const event of storage.follow("t", { incarnation: incarnationOf(old) })) after.push(event.seq);
      assert.deepEqual(after, []);
    } finally {
      await storage.close();
      await dropSchema(db, schema);
    }
  });

  it("a stored-session event stream whose log is deleted and created again before its tail starts ends with event: end", async () => {
    // The stream read the old life (sent under its ids), then its tail read the new life from the same seq on and
    // sent it under the old incarnation's ids: a client resuming from them held two logs spliced.
    const schema = testSchema();
    const base = postgresStorage({ client: db, schema, pollMs: 60_000 });
    let tailing!: () => void;
    const tailStarts = new Promise<void>((resolve) => tailing = resolve);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => open = resolve);
    const storage = new Proxy(base, {
      get(target, key) {
        const value = Reflect.get(target, key, target);
        if (key !== "follow") return typeof value === "function" ? value.bind(target) : value;
        return (id: string, options: object) =>
          (async function* () {
            tailing();
            await gate;
            yield* target.follow(id, options) as AsyncIterable<SessionEvent>;
          })();
      },
    });
    try {
      const old = await base.create({ id: "s" }, { events: todos(2) });
      const served = await serveHarness({ storage });
      await withServer(served, async ({ events }) => {
        const stream = await events("s", {}, "?deltas=false");
        await tailStarts;
        assert.equal(await base.delete("s"), true);
        await base.create({ id: "s" }, { events: todos(5) });
        open();
        // (Before, the stream carried on with the new life's seqs 2 to 4, and waited for more.)
        const messages = await stream.until((m) => m.event === "end" || m.id?.endsWith(":2") === true);
        const ids = messages.filter((m) => m.id !== undefined).map((m) => m.id);
        assert.deepEqual(ids, [0, 1].map((seq) => `${incarnationOf(old)}:${seq}`));
        assert.equal(messages.at(-1)?.event, "end");
        await stream.close();
      });
    } finally {
      await base.close();
      await dropSchema(db, schema);
    }
  });

  it("a live tail follows appends through PGlite's listen()", async () => {
    const schema = testSchema();
    const storage = postgresStorage({ client: db, schema, pollMs: 60_000 });
    try {
      await storage.create({ id: "t" });
      const seen: number[] = [];
      const done = (async () => {
        for await (const event of storage.follow("t")) {
          seen.push(event.seq);
          if (seen.length === 10) break;
        }
      })();
      for (let i = 0; i < 10; i += 2) {
        await sleep(5);
        await storage.append("t", todos(2, i), { expectedSeq: i });
      }
      await done;
      assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    } finally {
      await storage.close();
      await dropSchema(db, schema);
    }
  });
});
