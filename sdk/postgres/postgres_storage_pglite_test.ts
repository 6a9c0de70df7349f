// The same storage suite on PGlite (PostgreSQL compiled to WebAssembly, in
// process): the executor seam over a client that is not \`pg\`.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { PGlite } from "@electric-sql/pglite";
import { storageContract } from "../persistence/_test_storage_contract.ts";
import { dropSchema, openTestPGlite, testSchema, todoEvents } from "./_test_postgres.ts";
import { type PostgresSessionStorage, postgresStorage } from "./postgres_storage.ts";

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
  storageContract({
    name: "postgresStorage(PGlite)",
    make: async () => {
      const storage: PostgresSessionStorage = postgresStorage({ client: db, schema });
      await storage.migrate();
      await db.query(`TRUNCATE "${schema}".sessions, "${schema}".session_events, "${schema}".session_writers`);
      return { storage, after: () => storage.close() };
    },
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
