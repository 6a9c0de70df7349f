/**
 * `postgresStorageKind(makeClient)`: the factory that lets a JSONC
 * configuration say `storage: { kind: "postgres", urlEnv: "DATABASE_URL" }`.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { StorageFactory } from "../_apply_config.ts";
import type { PostgresClient, PostgresExecutor } from "./postgres_executor.ts";
import { postgresStorage, type PostgresStorageOptions } from "./postgres_storage.ts";

/**
 * Make the `postgres` storage factory for `createHarness({ config, storageKinds })`.
 * The connection string comes from the environment variable the configuration
 * names in `urlEnv`; `makeClient` turns it into a client of the application's
 * driver (the SDK carries none). Build the storage once per process and share
 * it: each call of the factory makes a new client.
 *
 * @param makeClient Makes a client (e.g. a `pg` `Pool`) from the connection string.
 * @param options Lease and poll times and the other storage options (`client` and `schema` come from here and the configuration).
 * @returns A storage factory for the `postgres` kind.
 * @throws {HarnessError} `CONFIG_STORAGE_URL_MISSING` (from the factory) when the variable is not set.
 *
 * @example Configured storage on a pg Pool
 * ```ts
 * import pg from "pg";
 * import { createHarness } from "@dsh/harness";
 * import { resolveConfig } from "@dsh/harness/config";
 * import { postgresStorageKind } from "@dsh/harness/postgres";
 * import assert from "node:assert/strict";
 *
 * const { config } = resolveConfig([
 *   {
 *     name: "app.jsonc",
 *     text: '{ "adapters": { "deepseek": null }, "storage": { "kind": "postgres", "urlEnv": "APP_DATABASE_URL" } }',
 *   },
 * ]);
 * const pools: pg.Pool[] = [];
 * const harness = await createHarness({
 *   config,
 *   env: (name) => (name === "APP_DATABASE_URL" ? "postgres://app@127.0.0.1:5432/app" : undefined),
 *   storageKinds: {
 *     postgres: postgresStorageKind((url) => {
 *       const pool = new pg.Pool({ connectionString: url });
 *       pool.on("error", (error) => console.error("PostgreSQL pool:", error.message)); // a dropped idle client
 *       pools.push(pool);
 *       return pool;
 *     }),
 *   },
 * });
 * assert.equal(harness.storage?.kind, "postgres");
 * await harness.dispose();
 * await pools[0].end();
 * ```
 */
export function postgresStorageKind(
  makeClient: (url: string) => PostgresClient | PostgresExecutor,
  options: Omit<PostgresStorageOptions, "client" | "schema"> = {},
): StorageFactory {
  return ({ config, env }) => {
    if (config.kind !== "postgres") {
      throw new HarnessError("INVALID_ARGS", `postgresStorageKind builds postgres storage, not ${config.kind}`);
    }
    const url = env(config.urlEnv);
    if (url === undefined || url === "") {
      throw new HarnessError(
        "CONFIG_STORAGE_URL_MISSING",
        `The PostgreSQL connection string variable ${config.urlEnv} is not set`,
        { details: { urlEnv: config.urlEnv } },
      );
    }
    return postgresStorage({ ...options, client: makeClient(url), schema: config.schema });
  };
}
