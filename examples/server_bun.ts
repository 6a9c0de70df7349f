/**
 * The harness as an HTTP microservice on Bun, served by `Bun.serve`, with
 * sessions persisted to files.
 *
 * Run: `HARNESS_TOKEN=secret bun run examples/server_bun.ts` (see
 * `server_node.ts` for curl commands).
 *
 * @module
 */

import {
  closeOnSignal,
  createServerApp,
  type RunningServer,
  type ServerOptions,
  serverOptionsFromEnv,
} from "./server_app.ts";

/** The part of Bun's API this example uses (typed here so the file also type-checks outside Bun). */
interface BunServe {
  serve(options: {
    port: number;
    hostname: string;
    fetch: (request: Request) => Response | Promise<Response>;
    /** Seconds a connection may be idle; 0 keeps event streams open between keep-alives. */
    idleTimeout?: number;
  }): { port: number; stop(closeActiveConnections?: boolean): Promise<void> | void };
}

/**
 * Serve the app with `Bun.serve`.
 *
 * @param options Where to listen, storage, token and model.
 * @returns The running server.
 * @throws {Error} When not running on Bun.
 */
export async function startBunServer(options: ServerOptions): Promise<RunningServer> {
  const bun = (globalThis as { Bun?: BunServe }).Bun;
  if (bun === undefined) throw new Error("server_bun.ts runs on Bun; use server_node.ts elsewhere");
  const { app, harness } = await createServerApp(options);
  const server = bun.serve({ port: options.port, hostname: options.hostname, fetch: app.fetch, idleTimeout: 0 });
  return {
    url: `http://${options.hostname}:${server.port}`,
    harness,
    async close() {
      // The server stops even when a session's last write failed; that failure is reported afterwards.
      const disposed = harness.dispose();
      await disposed.catch(() => {});
      await server.stop(true);
      await disposed;
    },
  };
}

if (import.meta.main) {
  const server = await startBunServer(serverOptionsFromEnv());
  console.log(`Serving the harness on ${server.url}`);
  closeOnSignal(server);
}
