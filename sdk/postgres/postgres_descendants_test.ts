// postgresStorage finds a session's subagent descendants down the indexed parent_id column (migration 6): a delete
// reads no other session's header, a database of an older build is backfilled when it is upgraded, and a delete keeps
// its contract (children first, refused whole when a lease is held, no orphan left).

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type pg from "pg";
import { headerRecord, makeHeader } from "../persistence/_header.ts";
import { deleteSessionTree, subagentDescendants } from "../persistence/_delete_tree.ts";
import { assertHeldLeaseRefusesDelete, assertNoOrphan, child, ids } from "../persistence/_test_delete_tree.ts";
import type { NewSessionHeader } from "../persistence/session_storage.ts";
import { createHarness } from "../harness.ts";
import { dropSchema, testPool, testSchema, todoEvents, useTestPostgres } from "./_test_postgres.ts";
import { migrationScript, SCHEMA_VERSION } from "./_migrations.ts";
import { statements } from "./_statements.ts";
import { type PostgresSessionStorage, postgresStorage } from "./postgres_storage.ts";
import {
  type PostgresClient,
  type PostgresExecutor,
  type PostgresRow,
  toPostgresExecutor,
} from "./postgres_executor.ts";

/** An executor that keeps every row its statements returned. */
function recording(inner: PostgresExecutor): PostgresExecutor & { rows: PostgresRow[] } {
  const rows: PostgresRow[] = [];
  return {
    rows,
    async query(text, params, options) {
      const result = await inner.query(text, params, options);
      rows.push(...result);
      return result;
    },
  };
}

/** A storage of a test, in a schema of its own, over a pool of its own. */
interface FreshStorage {
  readonly storage: PostgresSessionStorage;
  readonly pool: pg.Pool;
  readonly schema: string;
}

describe("postgresStorage() finds descendants by parent_id", () => {
  const server = useTestPostgres();

  /**
   * Run `fn` on a postgresStorage in a new schema named after `prefix`, over a new pool of `max` connections (given to
   * the storage as `client(pool)`); the storage is closed, the schema dropped and the pool ended afterwards.
   */
  async function onFreshSchema(
    prefix: string,
    max: number,
    fn: (fresh: FreshStorage) => Promise<void>,
    client: (pool: pg.Pool) => PostgresClient | PostgresExecutor = (pool) => pool,
  ): Promise<void> {
    const pool = testPool(server.url, max);
    const schema = testSchema(prefix);
    const storage = postgresStorage({ client: client(pool), schema });
    try {
      await fn({ storage, pool, schema });
    } finally {
      await storage.close();
      await dropSchema(server.admin, schema);
      await pool.end();
    }
  }

  it("harness.deleteSession() reads no header of an unrelated session", async () => {
    let db!: ReturnType<typeof recording>;
    await onFreshSchema("desc", 4, async ({ storage }) => {
      const harness = await createHarness({ storage });
      try {
        await storage.create({ id: "p", createdAt: 1 }, { events: todoEvents(3) });
        await storage.create(child("p.a", "p"));
        await storage.create(child("p.b", "p"));
        await storage.create(child("p.a.c", "p.a", 2));
        // Forks of p, a session that only looks like p's child, 200 others, some with subagent children of their own.
        for (let i = 0; i < 200; i += 20) {
          await Promise.all(Array.from({ length: 20 }, (_, j) => {
            const n = i + j;
            if (n % 10 === 0) return storage.create({ id: `other${n}-fork`, createdAt: 2, parentSession: "p" });
            if (n % 10 === 1) return storage.create(child(`other${n}.call`, `other${n - 1}-fork`));
            return storage.create({ id: n % 10 === 2 ? `p.other${n}` : `other${n}`, createdAt: 3 });
          }));
        }
        db.rows.length = 0;
        assert.equal(await harness.deleteSession("p"), true);
        const read = JSON.stringify(db.rows);
        assert.doesNotMatch(read, /other\d/, "a row of an unrelated session was read");
        assert.ok(db.rows.length < 20, `${db.rows.length} rows were read`);
        const left = await ids(storage);
        assert.equal(left.length, 200);
        assert.ok(!left.some((id) => id === "p" || id.startsWith("p.a") || id === "p.b"), left.join(" "));
        await assertNoOrphan(storage);
      } finally {
        await harness.dispose();
      }
    }, (pool) => (db = recording(toPostgresExecutor(pool))));
  });

  it("the descendants statement walks the index on parent_id", async () => {
    await onFreshSchema("plan", 2, async ({ storage, pool, schema }) => {
      await storage.migrate();
      // Many sessions, one in ten a subagent child of the one before it, as the planner sees them once analysed.
      await pool.query(`INSERT INTO "${schema}".sessions (id, header, created_at, updated_at)
        SELECT 's' || i, json_build_object('type', 'session', 'version', 1, 'id', 's' || i, 'createdAt', i,
          'parentSession', CASE WHEN i % 10 = 1 THEN 's' || (i - 1) END, 'origin',
          CASE WHEN i % 10 = 1 THEN 'subagent' END)::text, i, i
        FROM generate_series(0, 19999) AS i`);
      await pool.query(`ANALYZE "${schema}".sessions`);
      const sql = statements(schema).descendants.replaceAll("$1", "'s40'");
      const { rows } = await pool.query(`EXPLAIN (FORMAT JSON) ${sql}`);
      const plan = JSON.stringify(rows[0]["QUERY PLAN"]);
      assert.match(plan, /sessions_parent_id/, plan);
      assert.doesNotMatch(plan, /"Seq Scan"/, plan);
      assert.deepEqual((await storage.listSubagentDescendants("s40")).map((h) => h.id), ["s41"]);
    });
  });

  it("a held lease anywhere in a deep tree refuses the delete, leaving no orphan; released, the tree goes whole", async () => {
    await onFreshSchema("tree", 4, async ({ storage }) => {
      // Two children a level, four levels under p.
      await storage.create({ id: "p", createdAt: 1 });
      const all = ["p"];
      for (let level = 1; level <= 4; level++) {
        for (const parent of all.filter((id) => id.split(".").length === level)) {
          for (const name of ["a", "b"]) {
            await storage.create(child(`${parent}.${name}`, parent, level));
            all.push(`${parent}.${name}`);
          }
        }
      }
      await storage.create({ id: "q", createdAt: 2 });
      assert.equal(all.length, 31);
      assert.deepEqual((await storage.listSubagentDescendants("p")).map((h) => h.id).sort(), all.slice(1).sort());
      // Children go before their parents, so a refused delete may have taken some of the tree: each round holds a
      // session the rounds before left stored, the last one the session's own.
      for (const held of ["p.b.a.b.a", "p.b.b.a", "p"]) await assertHeldLeaseRefusesDelete(storage, "p", held);
      assert.equal(await deleteSessionTree(storage, "p"), true);
      assert.deepEqual(await ids(storage), ["q"]);
      assert.deepEqual(await storage.listSubagentDescendants("p"), []);
    });
  });

  it("a database not in UTF-8 reads the parent of a header escaping a NUL or a lone surrogate too", async () => {
    // SQL_ASCII (what initdb makes under the C locale) and LATIN1 cannot hold U+FFFD: a header PostgreSQL reads only
    // with its NUL and lone surrogate escapes replaced must get an ASCII replacement there, or its child is missed.
    for (const encoding of ["SQL_ASCII", "LATIN1"]) {
      const database = testSchema(encoding.toLowerCase());
      await server.admin.query(
        `CREATE DATABASE "${database}" ENCODING '${encoding}' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`,
      );
      const url = new URL(server.url);
      url.pathname = `/${database}`;
      const pool = testPool(url.href, 2);
      const schema = testSchema("enc");
      const storage = postgresStorage({ client: pool, schema });
      try {
        await pool.query(migrationScript(schema, 5));
        // Written by a build before migration 6 (backfilled), then by this one (the trigger).
        const old = JSON.stringify(
          headerRecord(makeHeader({ ...child("p.old", "p"), profile: { system: "\ud83d" } }, () => 5)),
        );
        await pool.query(
          `INSERT INTO "${schema}".sessions (id, header, created_at, next_seq, size, updated_at)
            VALUES ('p.old', $1, 5, 0, 0, 5)`,
          [old],
        );
        await storage.migrate();
        await storage.create({ id: "p", createdAt: 1 });
        await storage.create({ ...child("p.new", "p"), profile: { system: "cut \ud83d, nul \u0000" } });
        await storage.create(child("p.new.c", "p.new", 2));
        await storage.create({ id: "q", createdAt: 2 });
        const { rows } = await pool.query(
          `SELECT id, parent_id FROM "${schema}".sessions WHERE id LIKE 'p.%' ORDER BY id`,
        );
        assert.deepEqual(rows.map((r) => [r.id, r.parent_id]), [["p.new", "p"], ["p.new.c", "p.new"], ["p.old", "p"]]);
        const found = (await storage.listSubagentDescendants("p")).map((h) => h.id).sort();
        assert.deepEqual(found, subagentDescendants("p", await storage.list()).sort(), encoding);
        assert.equal(await deleteSessionTree(storage, "p"), true);
        assert.deepEqual(await ids(storage), ["q"], encoding);
      } finally {
        await storage.close();
        await pool.end();
        await server.admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      }
    }
  });

  it("a header nested deeper than PostgreSQL parses names no parent, and fails neither the migration nor an insert", async () => {
    // Past any max_stack_depth the server allows: PostgreSQL's JSON parser recurses, a JavaScript one need not.
    const deep = (id: string) =>
      `{"type":"session","version":1,"id":"${id}","createdAt":5,"parentSession":"p","origin":"subagent","x":${
        "[".repeat(500_000)
      }${"]".repeat(500_000)}}`;
    await onFreshSchema("deep", 2, async ({ storage, pool, schema }) => {
      const s = `"${schema}"`;
      const insert = (id: string, header: string) =>
        pool.query(
          `INSERT INTO ${s}.sessions (id, header, created_at, next_seq, size, updated_at) VALUES ($1, $2, 5, 0, 0, 5)`,
          [id, header],
        );
      await pool.query(migrationScript(schema, 5));
      await insert("p", JSON.stringify(headerRecord(makeHeader({ id: "p", createdAt: 1 }, () => 5))));
      await insert("p.a", JSON.stringify(headerRecord(makeHeader(child("p.a", "p"), () => 5))));
      await insert("deep.old", deep("deep.old"));
      await storage.migrate();
      await insert("deep.new", deep("deep.new"));
      const { rows } = await pool.query(`SELECT id, parent_id, origin FROM ${s}.sessions ORDER BY id`);
      assert.deepEqual(rows.map((r) => [r.id, r.parent_id, r.origin]), [
        ["deep.new", null, null],
        ["deep.old", null, null],
        ["p", null, null],
        ["p.a", "p", "subagent"],
      ]);
      assert.deepEqual((await storage.listSubagentDescendants("p")).map((h) => h.id), ["p.a"]);
    });
  });

  it("a database of an older build gets parent_id backfilled, once, by instances starting at once", async () => {
    const schema = testSchema("old");
    const pools = [testPool(server.url, 1), testPool(server.url, 1)];
    const s = `"${schema}"`;
    // What a build before migration 6 writes on create: the header's text, no parent column.
    const insertOld = (init: NewSessionHeader | string, id?: string) => {
      const text = typeof init === "string" ? init : JSON.stringify(headerRecord(makeHeader(init, () => 5)));
      return server.admin.query(
        `INSERT INTO ${s}.sessions (id, header, created_at, next_seq, size, updated_at) VALUES ($1, $2, 5, 0, 0, 5)`,
        [id ?? (init as NewSessionHeader).id, text],
      );
    };
    const storages = pools.map((client) => postgresStorage({ client, schema }));
    try {
      await server.admin.query(migrationScript(schema, 5));
      await insertOld({ id: "p", createdAt: 1 });
      await insertOld(child("p.a", "p"));
      await insertOld(child("p.a.c", "p.a", 2));
      // A NUL and a lone surrogate escaped in another field (here a system prompt): PostgreSQL refuses to read such a
      // JSON text as it is, the columns are still filled.
      await insertOld({ ...child("p.odd", "p"), profile: { system: "nul \u0000 and \ud800" } });
      await insertOld({ id: "p-fork", createdAt: 2, parentSession: "p" });
      await insertOld("{ damaged", "broken");
      await insertOld(JSON.stringify({ type: "session", parentSession: 7, origin: "subagent" }), "numeric");
      await insertOld({ id: "q", createdAt: 3 });
      await insertOld(child("q.a", "q"));
      // Two headers naming each other as parent.
      await insertOld(child("x", "y"));
      await insertOld(child("y", "x"));

      await Promise.all(storages.map((storage) => storage.migrate()));
      const versions = await server.admin.query(`SELECT version FROM ${s}.schema_migrations ORDER BY version`);
      assert.deepEqual(versions.rows.map((r) => r.version), Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));
      const lineage = async () =>
        Object.fromEntries(
          (await server.admin.query(`SELECT id, parent_id, origin FROM ${s}.sessions ORDER BY id`)).rows
            .map((r) => [r.id, [r.parent_id, r.origin]]),
        );
      assert.deepEqual(await lineage(), {
        "broken": [null, null],
        "numeric": [null, "subagent"],
        "p": [null, null],
        "p-fork": ["p", null],
        "p.a": ["p", "subagent"],
        "p.a.c": ["p.a", "subagent"],
        "p.odd": ["p", "subagent"],
        "q": [null, null],
        "q.a": ["q", "subagent"],
        "x": ["y", "subagent"],
        "y": ["x", "subagent"],
      });
      // An instance of the older build still running inserts as before: the trigger fills the columns.
      await insertOld(child("p.late", "p"));
      assert.deepEqual((await lineage())["p.late"], ["p", "subagent"]);
      // Migrating again changes nothing.
      await storages[1].migrate();

      const storage = storages[0];
      assert.deepEqual((await storage.listSubagentDescendants("x")).map((h) => h.id), ["y"]);
      assert.equal(await deleteSessionTree(storage, "p"), true);
      assert.deepEqual(await ids(storage), ["p-fork", "q", "q.a", "x", "y"]);
      assert.notEqual((await server.admin.query(`SELECT 1 FROM ${s}.sessions WHERE id = 'broken'`)).rows.length, 0);
      // A session created now fills them through the same trigger.
      await storage.create({ ...child("q.b", "q"), profile: { system: "\u0000" } });
      assert.deepEqual((await lineage())["q.b"], ["q", "subagent"]);
      assert.equal(await deleteSessionTree(storage, "q"), true);
      assert.deepEqual(await ids(storage), ["p-fork", "x", "y"]);
    } finally {
      await Promise.all(storages.map((storage) => storage.close()));
      await dropSchema(server.admin, schema);
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });
});
