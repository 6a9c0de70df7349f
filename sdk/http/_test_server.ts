// Test support (not published): serve a fetch handler on 127.0.0.1, port 0,
// with the runtime's own server — Deno.serve, Bun.serve or @hono/node-server.

import { serve } from "@hono/node-server";
import type { AddressInfo } from "node:net";

/** A server listening on loopback. */
export interface LoopbackServer {
  /** The base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Stop listening and drop open connections. */
  close(): Promise<void>;
}

type Fetch = (request: Request) => Response | Promise<Response>;

interface DenoLike {
  serve(
    options: { hostname: string; port: number; signal: AbortSignal; onListen?: (addr: unknown) => void },
    handler: Fetch,
  ): { addr: { port: number }; finished: Promise<void> };
}
interface BunLike {
  serve(options: { hostname: string; port: number; fetch: Fetch; idleTimeout?: number }): {
    port: number;
    stop(closeActive?: boolean): void | Promise<void>;
  };
}

/** Serve `fetch` on 127.0.0.1 with a free port. */
export function serveOnLoopback(fetch: Fetch): Promise<LoopbackServer> {
  const g = globalThis as { Deno?: DenoLike; Bun?: BunLike };
  if (g.Deno !== undefined) {
    const controller = new AbortController();
    const server = g.Deno.serve({ hostname: "127.0.0.1", port: 0, signal: controller.signal, onListen() {} }, fetch);
    return Promise.resolve({
      url: `http://127.0.0.1:${server.addr.port}`,
      close: async () => {
        controller.abort();
        await server.finished;
      },
    });
  }
  if (g.Bun !== undefined) {
    const server = g.Bun.serve({ hostname: "127.0.0.1", port: 0, fetch, idleTimeout: 0 });
    return Promise.resolve({
      url: `http://127.0.0.1:${server.port}`,
      close: async () => {
        await server.stop(true);
      },
    });
  }
  return new Promise((resolve) => {
    const server = serve(
      { fetch, hostname: "127.0.0.1", port: 0, overrideGlobalObjects: false },
      (info: AddressInfo) => {
        resolve({
          url: `http://127.0.0.1:${info.port}`,
          close: () =>
            new Promise<void>((done) => {
              (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
              server.close(() => done());
            }),
        });
      },
    );
  });
}
