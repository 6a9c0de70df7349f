/**
 * The harness as an HTTP microservice on Deno, served by `Deno.serve`, with
 * sessions persisted to files.
 *
 * Run: `HARNESS_TOKEN=secret deno run -A examples/server_deno.ts` (see
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

/**
 * Serve the app with `Deno.serve`.
 *
 * @param options Where to listen, storage, token and model.
 * @returns The running server.
 * @throws {Error} When not running on Deno.
 */
export async function startDenoServer(options: ServerOptions): Promise<RunningServer> {
  if (typeof Deno === "undefined") throw new Error("server_deno.ts runs on Deno; use server_node.ts elsewhere");
  const { app, harness } = await createServerApp(options);
  const controller = new AbortController();
  const server = Deno.serve(
    { port: options.port, hostname: options.hostname, signal: controller.signal, onListen() {} },
    app.fetch,
  );
  return {
    url: `http://${options.hostname}:${server.addr.port}`,
    harness,
    async close() {
      // Stop the agents first: their event streams end, so the graceful shutdown does not wait on them.
      // The server stops even when a session's last write failed; that failure is reported afterwards.
      const disposed = harness.dispose();
      await disposed.catch(() => {});
      controller.abort();
      await server.finished;
      await disposed;
    },
  };
}

if (import.meta.main) {
  const server = await startDenoServer(serverOptionsFromEnv());
  console.log(`Serving the harness on ${server.url}`);
  closeOnSignal(server);
}
