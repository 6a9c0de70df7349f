/**
 * `serveView()`: the session timeline over a folder of stored sessions, with
 * no server to write.
 *
 * @module
 */

import { stat } from "node:fs/promises";
import { createHarness, type Harness } from "../sdk/harness.ts";
import { HarnessError } from "../sdk/kernel/harness_error.ts";
import { fileStorage } from "../sdk/persistence/file_storage.ts";
import { createHarnessApp } from "../sdk/http/create_harness_app.ts";
import { listen } from "./_listen.ts";

/** Options of {@linkcode serveView}. */
export interface ServeViewOptions {
  /**
   * The interface to listen on.
   *
   * @default {"127.0.0.1"}
   */
  readonly hostname?: string;
  /**
   * The port; 0 takes any free port.
   *
   * @default {8788}
   */
  readonly port?: number;
  /**
   * The bearer token the page must send; `false` serves without authentication (then only requests for
   * `localhost`, an IP address or `hostname` are answered: a page on another name may be another site's).
   *
   * @default {a random token, carried in the printed URL's fragment}
   */
  readonly token?: string | false;
}

/** A running timeline server. */
export interface ViewServer {
  /** The index page, with the token in the fragment (`#token=…`) when auth is on; the fragment never reaches the server. */
  readonly url: string;
  /** `http://host:port`. */
  readonly origin: string;
  /** The token clients must send, or `undefined` without authentication. */
  readonly token: string | undefined;
  /** The harness reading the folder (no model adapters: stored sessions are only read). */
  readonly harness: Harness;
  /** Stop listening and dispose the harness. */
  close(): Promise<void>;
}

/**
 * Serve the timeline of the sessions stored in `dir` (a `fileStorage` root, e.g. the
 * `HARNESS_DATA_DIR` of the server examples): the index at `/view`, each session at
 * `/sessions/:id/view`, comparisons at `/view/compare?a=…&b=…`. Nothing is written:
 * the sessions are read without being resumed, and every `POST` or `DELETE` is
 * answered 405 (the app's `readOnly`; 401 without the token, as every request).
 *
 * From a shell: `deno run -A jsr:@dsh/harness/view ./sessions`, or `npx dsh-view ./sessions`
 * inside a checkout; both print the URL.
 *
 * @param dir The folder of stored sessions.
 * @param options Where to listen and the token.
 * @returns The running server.
 * @throws {HarnessError} `INVALID_ARGS` when `dir` is not a folder or the port is not a port number;
 * `LISTEN_FAILED`, naming `host:port`, when it cannot listen there (the port is taken).
 *
 * @example
 * ```ts
 * import { serveView } from "@dsh/harness/view";
 * import assert from "node:assert/strict";
 * import { mkdtemp, rm } from "node:fs/promises";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 *
 * const dir = await mkdtemp(join(tmpdir(), "dsh-view-"));
 * const server = await serveView(dir, { port: 0 });
 * assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/view#token=/);
 * const index = await fetch(new URL("/view", server.origin));
 * assert.equal(index.status, 200);
 * await index.body?.cancel();
 * const sessions = await fetch(new URL("/sessions", server.origin), {
 *   headers: { authorization: `Bearer ${server.token}` },
 * });
 * assert.deepEqual(await sessions.json(), { sessions: [] });
 * await server.close();
 * await rm(dir, { recursive: true });
 * ```
 */
export async function serveView(dir: string, options: ServeViewOptions = {}): Promise<ViewServer> {
  const info = await stat(dir).catch(() => undefined);
  if (info === undefined || !info.isDirectory()) {
    throw new HarnessError("INVALID_ARGS", `Cannot serve the timeline of ${dir}: it is not a folder`);
  }
  const port = options.port ?? 8788;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new HarnessError("INVALID_ARGS", `Cannot listen on port ${port}: a port is an integer from 0 to 65535`);
  }
  const hostname = options.hostname ?? "127.0.0.1";
  const token = options.token === false ? undefined : options.token ?? randomToken();
  const harness = await createHarness({ storage: fileStorage(dir) });
  try {
    const app = createHarnessApp(harness, {
      // Without a token, a request must name localhost, an IP address or the host listened on (DNS rebinding).
      ...(token === undefined ? { auth: false, allowedHosts: [hostname] } : { token }),
      log: false,
      approvals: false,
      // Reads only: no POST or DELETE resumes, forks, deletes or leases a stored session.
      readOnly: true,
    });
    const server = await listen(app.fetch, hostname, port);
    return {
      url: `${server.origin}/view${token === undefined ? "" : `#token=${encodeURIComponent(token)}`}`,
      origin: server.origin,
      token,
      harness,
      close: async () => {
        try {
          await harness.dispose();
        } finally {
          await server.close();
        }
      },
    };
  } catch (error) {
    await harness.dispose();
    throw error;
  }
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_");
}
