// Internal: serve a fetch handler with the runtime's own server — Deno.serve,
// Bun.serve, or @hono/node-server on Node (imported only there).

import type { AddressInfo } from "node:net";
import { HarnessError } from "../sdk/kernel/harness_error.ts";

type Fetch = (request: Request) => Response | Promise<Response>;

/** A listening server. */
export interface Listening {
  /** `http://host:port`. */
  readonly origin: string;
  close(): Promise<void>;
}

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

/** What a listen error code means, in words every runtime shares (their own messages differ, and Deno's names no address). */
const REASONS: Record<string, string> = {
  EADDRINUSE: "the port is already in use",
  EADDRNOTAVAIL: "the address is not one of this machine's",
  EACCES: "permission denied",
};

/** A failed listen as one coded error that names the address, whatever the runtime threw. */
function listenFailed(cause: unknown, hostname: string, host: string, port: number): HarnessError {
  const errno = (cause as { code?: unknown } | null)?.code;
  const code = typeof errno === "string" ? errno : undefined;
  const reason = (code !== undefined ? REASONS[code] : undefined) ??
    (cause instanceof Error ? cause.message : String(cause));
  return new HarnessError("LISTEN_FAILED", `Cannot listen on ${host}:${port}: ${reason}`, {
    cause,
    details: { hostname, port, errno: code },
  });
}

/**
 * Listen on `hostname:port` (port 0: any free port).
 *
 * @throws {HarnessError} `LISTEN_FAILED` when the runtime cannot listen there (the port is taken, the address is not
 * this machine's), naming `host:port`.
 */
export async function listen(fetch: Fetch, hostname: string, port: number): Promise<Listening> {
  const host = hostname.includes(":") ? `[${hostname}]` : hostname;
  try {
    return await listenOn(fetch, hostname, host, port);
  } catch (cause) {
    if (HarnessError.isInstance(cause)) throw cause;
    throw listenFailed(cause, hostname, host, port);
  }
}

async function listenOn(fetch: Fetch, hostname: string, host: string, port: number): Promise<Listening> {
  const g = globalThis as { Deno?: DenoLike; Bun?: BunLike };
  if (g.Deno !== undefined) {
    const controller = new AbortController();
    const server = g.Deno.serve({ hostname, port, signal: controller.signal, onListen() {} }, fetch);
    return {
      origin: `http://${host}:${server.addr.port}`,
      close: async () => {
        controller.abort();
        await server.finished;
      },
    };
  }
  if (g.Bun !== undefined) {
    // idleTimeout 0: event streams stay open between keep-alive comments.
    const server = g.Bun.serve({ hostname, port, fetch, idleTimeout: 0 });
    return {
      origin: `http://${host}:${server.port}`,
      close: async () => {
        await server.stop(true);
      },
    };
  }
  let serve: typeof import("@hono/node-server").serve;
  try {
    ({ serve } = await import("@hono/node-server"));
  } catch (cause) {
    throw new HarnessError(
      "UNSUPPORTED_RUNTIME",
      "Serving the timeline on Node needs @hono/node-server: install it beside @dsh/harness (npm i @hono/node-server)",
      { cause },
    );
  }
  return await new Promise((resolve, reject) => {
    const server = serve({ fetch, hostname, port, overrideGlobalObjects: false }, (info: AddressInfo) => {
      resolve({
        origin: `http://${host}:${info.port}`,
        close: () =>
          new Promise<void>((done) => {
            (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
            server.close(() => done());
          }),
      });
    });
    server.once("error", reject);
  });
}
