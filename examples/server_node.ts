/**
 * The harness as an HTTP microservice on Node (also runs on Deno and Bun),
 * served by `@hono/node-server`, with sessions persisted to files.
 *
 * Run: `HARNESS_TOKEN=secret node --import tsx examples/server_node.ts`, then
 *
 * ```sh
 * curl -H 'Authorization: Bearer secret' -H 'Content-Type: application/json' \
 *   -d '{"id":"demo"}' http://127.0.0.1:8787/sessions
 * curl -N -H 'Authorization: Bearer secret' http://127.0.0.1:8787/sessions/demo/events &
 * curl -H 'Authorization: Bearer secret' -H 'Content-Type: application/json' \
 *   -d '{"content":"Hello"}' http://127.0.0.1:8787/sessions/demo/messages
 * ```
 *
 * @module
 */

import { serve } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import process from "node:process";
import { pathToFileURL } from "node:url";
import {
  closeOnSignal,
  createServerApp,
  type RunningServer,
  type ServerOptions,
  serverOptionsFromEnv,
} from "./server_app.ts";

/**
 * Serve the app with `@hono/node-server`.
 *
 * @param options Where to listen, storage, token and model.
 * @returns The running server.
 */
export async function startNodeServer(options: ServerOptions): Promise<RunningServer> {
  const { app, harness } = await createServerApp(options);
  const { server, port } = await new Promise<{ server: ReturnType<typeof serve>; port: number }>((resolve) => {
    // overrideGlobalObjects: false keeps the runtime's own Request and Response
    // (the adapter would otherwise swap in its own, which other servers in the
    // same process, e.g. Bun.serve, cannot return).
    const server = serve(
      { fetch: app.fetch, port: options.port, hostname: options.hostname, overrideGlobalObjects: false },
      (info: AddressInfo) => resolve({ server, port: info.port }),
    );
  });
  return {
    url: `http://${options.hostname}:${port}`,
    harness,
    async close() {
      // Stop the agents first: their event streams end, so no connection stays open. The server closes even when
      // a session's last write failed; that failure is reported afterwards.
      const disposed = harness.dispose();
      await disposed.catch(() => {});
      await new Promise<void>((resolve) => {
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      });
      await disposed;
    },
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const server = await startNodeServer(serverOptionsFromEnv());
  console.log(`Serving the harness on ${server.url}`);
  closeOnSignal(server);
}
