/**
 * Session logs on PostgreSQL: {@linkcode postgresStorage} implements the
 * `SessionStorage` seam over any client that can run a statement (a `pg`
 * `Pool`, PGlite, serverless drivers), so that many harness instances share
 * sessions safely. A subpath of its own, so that the core bundle carries no
 * driver (the drivers are the application's dependencies).
 *
 * @example Sessions in PostgreSQL through a pg Pool (it connects on the first query)
 * ```ts
 * import pg from "pg";
 * import { postgresStorage } from "@dsh/harness/postgres";
 * import assert from "node:assert/strict";
 *
 * const pool = new pg.Pool({ connectionString: "postgres://app@127.0.0.1:5432/app" });
 * // An idle client whose connection drops (a server restart) emits "error": without a listener the process ends.
 * pool.on("error", (error) => console.error("PostgreSQL pool:", error.message));
 * const storage = postgresStorage({ client: pool, schema: "agents", leaseMs: 10_000 });
 * // createHarness({ storage, ... }) and createHarnessApp(harness) on every instance.
 * assert.equal(storage.kind, "postgres");
 * await storage.close();
 * await pool.end();
 * ```
 *
 * @module
 */

export { postgresStorage } from "./postgres_storage.ts";
export type { PostgresSessionStorage, PostgresSessionWriter, PostgresStorageOptions } from "./postgres_storage.ts";
export { postgresStorageKind } from "./postgres_storage_kind.ts";
export { toPostgresExecutor } from "./postgres_executor.ts";
export type {
  PostgresClient,
  PostgresExecutor,
  PostgresQueryOptions,
  PostgresRow,
  PostgresUnlisten,
} from "./postgres_executor.ts";
