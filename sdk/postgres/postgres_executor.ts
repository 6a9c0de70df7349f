/**
 * The small executor seam `postgresStorage` talks to: run one SQL statement
 * with `$n` parameters and get its rows back, and (optionally) listen to a
 * notification channel. A `pg` `Pool` or `Client`, a PGlite instance and the
 * query function of a serverless driver all fit it as they are
 * ({@linkcode toPostgresExecutor} adapts them); no driver is imported here.
 *
 * @module
 */

import { unrefTimer } from "../kernel/_unref_timer.ts";
import { HarnessError } from "../kernel/harness_error.ts";

/** A row as a driver returns it: column name to value. */
export type PostgresRow = Record<string, unknown>;

/** Stop listening; idempotent. */
export type PostgresUnlisten = () => Promise<void>;

/** Options of one {@linkcode PostgresExecutor.query} call. */
export interface PostgresQueryOptions {
  /**
   * A name under which the statement may be prepared once per connection and
   * reused (the text of a name never changes). An executor may ignore it.
   */
  readonly name?: string;
}

/**
 * What `postgresStorage` needs from a PostgreSQL connection.
 *
 * Every statement it sends is a single statement that is atomic on its own,
 * so any pooling mode (session, transaction, HTTP) works.
 */
export interface PostgresExecutor {
  /** Run one statement with positional parameters (`$1`, `$2`, …) and resolve to its rows. */
  query(text: string, params?: readonly unknown[], options?: PostgresQueryOptions): Promise<readonly PostgresRow[]>;
  /**
   * Call `onNotify` with the payload of every notification on `channel` until
   * the returned function is called. Absent when the connection cannot
   * listen (HTTP drivers); live tails then poll.
   */
  listen?(channel: string, onNotify: (payload: string) => void): Promise<PostgresUnlisten>;
}

/** A `pg` pool client as far as listening needs it. */
interface PgListenClient {
  query(text: string): Promise<unknown>;
  on(event: "notification", fn: (message: { channel: string; payload?: string }) => void): unknown;
  on(event: "error", fn: (error: unknown) => void): unknown;
  release(destroy?: boolean | Error): void;
}

/**
 * The connection objects {@linkcode toPostgresExecutor} adapts: a
 * {@linkcode PostgresExecutor}, anything whose `query(text, params)` resolves
 * to `{ rows }` or to the rows (a `pg` `Pool`, PGlite, serverless drivers),
 * optionally with PGlite's `listen(channel, fn)` or `pg`'s `connect()`.
 */
export type PostgresClient = {
  // deno-lint-ignore no-explicit-any
  query(text: string, params?: any[]): Promise<unknown>;
} & object;

function rowsOf(result: unknown): readonly PostgresRow[] {
  if (Array.isArray(result)) return result;
  if (typeof result === "object" && result !== null && Array.isArray((result as { rows?: unknown }).rows)) {
    return (result as { rows: PostgresRow[] }).rows;
  }
  throw new HarnessError("INVALID_ARGS", "The PostgreSQL client's query() resolved to neither rows nor { rows }");
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * Adapt a driver's connection object to a {@linkcode PostgresExecutor}.
 *
 * - `query` results of the form `{ rows }` (pg, PGlite) or a bare array
 *   (serverless query functions) are both accepted.
 * - Listening uses the object's own `listen(channel, fn)` when it has one
 *   (PGlite), else `connect()` (a `pg` `Pool`: one dedicated connection holds
 *   every `LISTEN`), else none.
 * - On a `pg` `Pool`, a query given a `name` runs as a named prepared
 *   statement, which each connection parses and plans once. When the server
 *   does not have it (a transaction pooler moved the connection, `DISCARD
 *   ALL`), that query, which the server refused before running it, is sent
 *   again unprepared and this executor stops naming statements.
 *
 * @param client A `pg` `Pool`, a PGlite instance, or any object with `query(text, params)`.
 * @returns An executor over it.
 *
 * @example Any object with `query(text, params)` fits
 * ```ts
 * import { toPostgresExecutor } from "@dsh/harness/postgres";
 * import assert from "node:assert/strict";
 *
 * const seen: string[] = [];
 * const executor = toPostgresExecutor({
 *   query: (text: string) => {
 *     seen.push(text);
 *     return Promise.resolve({ rows: [{ one: 1 }] });
 *   },
 * });
 * assert.deepEqual(await executor.query("select 1 as one"), [{ one: 1 }]);
 * assert.equal(executor.listen, undefined);
 * ```
 */
export function toPostgresExecutor(client: PostgresClient | PostgresExecutor): PostgresExecutor {
  if (typeof client !== "object" || client === null || typeof client.query !== "function") {
    throw new HarnessError("INVALID_ARGS", "postgresStorage needs a client with query(text, params)");
  }
  const source = client as PostgresClient & {
    listen?: (channel: string, fn: (payload: string) => void) => Promise<unknown>;
    connect?: () => Promise<unknown>;
    totalCount?: unknown;
  };
  const query = async (text: string, params: readonly unknown[] = []) =>
    rowsOf(await source.query(text, params as unknown[]));
  if (typeof source.listen === "function") {
    const listen = source.listen.bind(source);
    return {
      query,
      async listen(channel, onNotify) {
        const unlisten = await listen(channel, onNotify);
        let done = false;
        return async () => {
          if (done) return;
          done = true;
          if (typeof unlisten === "function") await unlisten();
        };
      },
    };
  }
  // A pg Pool (it has connect() and counts its clients); a bare pg Client cannot lend a connection.
  if (typeof source.connect === "function" && "totalCount" in source) {
    return {
      query: pgPoolQuery(source),
      listen: pgPoolListener(source.connect.bind(source) as () => Promise<PgListenClient>),
    };
  }
  return { query };
}

/**
 * SQLSTATEs of a named statement the server refused before running anything:
 * it does not exist on this connection (26000), or another of that name does (42P05).
 */
const PREPARED_REFUSED = new Set(["26000", "42P05"]);

/** Queries on a pg Pool: named ones as prepared statements, until the server refuses one. */
function pgPoolQuery(
  pool: PostgresClient,
): (text: string, params?: readonly unknown[], options?: PostgresQueryOptions) => Promise<readonly PostgresRow[]> {
  let prepare = true;
  return async (text, params = [], options) => {
    const values = params as unknown[];
    const name = options?.name;
    if (prepare && name !== undefined) {
      try {
        return rowsOf(await pool.query({ name, text, values } as never));
      } catch (error) {
        if (!PREPARED_REFUSED.has((error as { code?: string })?.code ?? "")) throw error;
        prepare = false;
      }
    }
    return rowsOf(await pool.query(text, values));
  };
}

const RELISTEN_FIRST_MS = 100;
const RELISTEN_MAX_MS = 30_000;

/** LISTEN on one dedicated pool connection shared by every channel and subscriber. */
function pgPoolListener(
  connect: () => Promise<PgListenClient>,
): (channel: string, onNotify: (payload: string) => void) => Promise<PostgresUnlisten> {
  const subscribers = new Map<string, Set<(payload: string) => void>>();
  let connection: Promise<PgListenClient> | undefined;
  let current: PgListenClient | undefined;
  const returned = new WeakSet<PgListenClient>();
  let chain: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = chain.then(fn);
    chain = next.catch(() => {});
    return next;
  };
  const open = () => {
    connection ??= connect().then((client) => {
      client.on("notification", (message) => {
        for (const fn of subscribers.get(message.channel) ?? []) fn(message.payload ?? "");
      });
      client.on("error", () => {
        // The connection broke: forget it, and listen to the channels still wanted on a new one (tails poll
        // meanwhile). Once handed back to the pool, the pool owns its errors: release only once.
        if (returned.has(client)) return;
        returned.add(client);
        if (connection !== undefined && current === client) connection = undefined;
        client.release(true);
        relistenLater();
      });
      current = client;
      return client;
    }, (error) => {
      connection = undefined;
      throw error;
    });
    return connection;
  };
  // After a broken connection (a server restart, a failover): LISTEN again on a new one, retrying with a growing
  // delay while the server is away. Without it every tail would poll for the rest of the process's life.
  let retry: ReturnType<typeof setTimeout> | undefined;
  let delay = RELISTEN_FIRST_MS;
  const relistenLater = (): void => {
    if (retry !== undefined || subscribers.size === 0) return;
    retry = setTimeout(() => {
      retry = undefined;
      void serial(async () => {
        if (subscribers.size === 0) return;
        try {
          // LISTEN is idempotent: on a connection a new subscriber opened meanwhile, it adds the others' channels.
          const client = await open();
          for (const channel of subscribers.keys()) await client.query(`LISTEN ${quoteIdent(channel)}`);
          delay = RELISTEN_FIRST_MS;
        } catch {
          delay = Math.min(delay * 2, RELISTEN_MAX_MS);
          relistenLater();
        }
      });
    }, delay);
    unrefTimer(retry);
  };
  return (channel, onNotify) =>
    serial(async () => {
      let set = subscribers.get(channel);
      if (set === undefined) {
        set = new Set();
        subscribers.set(channel, set);
        try {
          await (await open()).query(`LISTEN ${quoteIdent(channel)}`);
        } catch (error) {
          subscribers.delete(channel);
          throw error;
        }
      }
      set.add(onNotify);
      let done = false;
      return () => {
        if (done) return Promise.resolve();
        done = true;
        return serial(async () => {
          set.delete(onNotify);
          if (set.size > 0 || subscribers.get(channel) !== set) return;
          subscribers.delete(channel);
          const client = await connection;
          if (client === undefined) return;
          await client.query(`UNLISTEN ${quoteIdent(channel)}`).catch(() => {});
          if (subscribers.size === 0 && connection !== undefined && !returned.has(client)) {
            connection = undefined;
            returned.add(client);
            client.release();
          }
        });
      };
    });
}
