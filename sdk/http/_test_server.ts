// Test support (not published): serve a fetch handler on 127.0.0.1, port 0,
// with the runtime's own server — Deno.serve, Bun.serve or @hono/node-server
// (the timeline's `listen()`, which tests and benches share).

import { listen } from "../../view/_listen.ts";

/** A server listening on loopback. */
export interface LoopbackServer {
  /** The base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Stop listening and drop open connections. */
  close(): Promise<void>;
}

/** Serve `fetch` on 127.0.0.1 with a free port. */
export async function serveOnLoopback(
  fetch: (request: Request) => Response | Promise<Response>,
): Promise<LoopbackServer> {
  const server = await listen(fetch, "127.0.0.1", 0);
  return { url: server.origin, close: () => server.close() };
}
