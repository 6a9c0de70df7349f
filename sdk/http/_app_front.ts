// Internal: what every request of the HTTP app passes before a route (moved out of `create_harness_app.ts`): the
// request log, the request id, the Host check and the cross-site refusal of an app served without auth, CORS, the
// timeline's pages (they hold no data), the bearer check, the read-only refusal of writes and the session id check;
// and the 404/405 answer for what no route takes. None of it needs the harness: the serverless handler runs it
// (`requestGate`) before it makes one, so that a request without the token costs no harness.

// hono/tiny, as the app itself (see create_harness_app.ts).
import { Hono } from "hono/tiny";
import type { Context } from "hono";
import { cors } from "hono/cors";
import { requestId } from "hono/request-id";
import { HarnessError } from "../kernel/harness_error.ts";
import { bearerGuard, TOKEN_SYNTAX } from "./_bearer_guard.ts";
import { hostGuard } from "./_host_guard.ts";
import { HttpProblem, problemResponse, toProblem } from "./_problem.ts";
import { allowedMethods, mountOf } from "./_route_table.ts";
import { checkSessionId } from "./_session_id.ts";
import { mountViewPages } from "./view/_view_routes.ts";
import type { HarnessApp, HarnessAppEnv, HarnessAppOptions, RequestLogRecord } from "./create_harness_app.ts";

/** Whether a request of `method` writes (what a read-only app refuses, and what a cross-site check guards). */
const writes = (method: string) => method !== "GET" && method !== "HEAD" && method !== "OPTIONS";

function defaultLog(record: RequestLogRecord): void {
  const { error, ...rest } = record;
  const line = JSON.stringify({ level: record.status >= 500 ? "error" : "info", ...rest });
  if (error !== undefined) console.error(line, error);
  else console.log(line);
}

/** The app's limits, as {@linkcode checkAppOptions} read them from its options (defaults filled in). */
export interface AppLimits {
  readonly maxBodyBytes: number;
  readonly keepAliveMs: number;
  readonly maxBuffered: number;
  readonly tailPollMs: number;
  readonly cancelWaitMs: number;
}

/**
 * Refuse the options the app cannot serve with: auth on without a token, or a token a bearer header could not carry;
 * `readOnly` with `approvals: true`; a limit that is not a number of its kind. The app checks them when it is made,
 * the serverless handler when it is made (rather than at every request).
 *
 * @returns The limits, defaults filled in.
 * @throws {HarnessError} `INVALID_ARGS`.
 */
export function checkAppOptions(options: HarnessAppOptions): AppLimits {
  if (options.auth !== false) {
    if (typeof options.token !== "string" || options.token.length === 0) {
      throw new HarnessError(
        "INVALID_ARGS",
        "Cannot create the HTTP app without a bearer token; pass token, or auth: false to serve without authentication",
      );
    }
    if (!TOKEN_SYNTAX.test(options.token)) {
      // RFC 6750's token68: a header carrying any other token would be refused as malformed.
      throw new HarnessError(
        "INVALID_ARGS",
        "The bearer token may hold only letters, digits and -._~+/ (then = padding), as RFC 6750 allows",
      );
    }
  }
  if (options.readOnly === true && options.approvals === true) {
    throw new HarnessError(
      "INVALID_ARGS",
      "A read-only app cannot answer approvals (its approval routes refuse POST); leave approvals unset or false",
    );
  }
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  const keepAliveMs = options.keepAliveMs ?? 5_000;
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes <= 0) {
    throw new HarnessError("INVALID_ARGS", "maxBodyBytes must be a positive integer");
  }
  const maxBuffered = options.maxBufferedEvents ?? 4096;
  const tailPollMs = options.tailPollMs ?? 1000;
  if (!Number.isInteger(maxBuffered) || maxBuffered <= 0) {
    throw new HarnessError("INVALID_ARGS", "maxBufferedEvents must be a positive integer");
  }
  if (!(tailPollMs > 0)) throw new HarnessError("INVALID_ARGS", "tailPollMs must be a positive number");
  if (!(keepAliveMs > 0)) throw new HarnessError("INVALID_ARGS", "keepAliveMs must be a positive number");
  const cancelWaitMs = options.cancelWaitMs ?? 10_000;
  if (!(cancelWaitMs >= 0) || cancelWaitMs > 2_147_483_647) {
    throw new HarnessError("INVALID_ARGS", "cancelWaitMs must be a number of milliseconds, at least 0");
  }
  return { maxBodyBytes, keepAliveMs, maxBuffered, tailPollMs, cancelWaitMs };
}

/**
 * The answer to a request no route takes: 405 `METHOD_NOT_ALLOWED` (with `Allow`) on a route of other methods (a
 * write, on a read-only app), else 404 `NOT_FOUND`. A parent app that mounts this one answers unknown routes with its
 * own not-found handler, so the app also registers it as a catch-all route, last.
 */
export function noRouteFor(options: HarnessAppOptions): (c: Context<HarnessAppEnv>) => never {
  const readOnly = options.readOnly === true;
  return (c) => {
    const routed = allowedMethods(c.req.path.slice(mountOf(c, "/*").length), options.view !== false);
    const allowed = readOnly ? routed?.filter((method) => !writes(method)) : routed;
    if (allowed !== undefined) {
      throw new HttpProblem(405, "METHOD_NOT_ALLOWED", `${c.req.method} is not allowed on ${c.req.path}`, {
        headers: { allow: allowed.join(", ") },
      });
    }
    throw new HttpProblem(404, "NOT_FOUND", `No route matches ${c.req.method} ${c.req.path}`);
  };
}

/**
 * Mount the front on `app`, in the order a request meets it. The options are checked (`checkAppOptions`) already.
 *
 * @param quiet Says of a request that the log skips it (those the gate lets through: the app serving them logs them).
 */
export function mountFront(
  app: HarnessApp,
  options: HarnessAppOptions,
  quiet?: (c: Context<HarnessAppEnv>) => boolean,
): void {
  const auth = options.auth ?? true;
  const readOnly = options.readOnly === true;
  const log = options.log === false ? undefined : options.log ?? defaultLog;
  const newRequestId = options.newRequestId ?? (() => crypto.randomUUID());
  const noRoute = noRouteFor(options);

  app.use("*", async (c, next) => {
    const started = performance.now();
    await next();
    // Hono's request-id (below) picks the id; a route that returns its own Response (problem+json, the event
    // stream) does not carry the header it set, so it is set here on whatever response goes out.
    const id = c.get("requestId");
    try {
      c.res.headers.set("x-request-id", id);
    } catch {
      c.res = new Response(c.res.body, c.res);
      c.res.headers.set("x-request-id", id);
    }
    // Every body is what its Content-Type says: browsers must not sniff another type.
    c.res.headers.set("x-content-type-options", "nosniff");
    if (quiet?.(c)) return;
    log?.({
      requestId: id,
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      durationMs: Math.round((performance.now() - started) * 10) / 10,
      ...(c.get("problemCode") !== undefined ? { code: c.get("problemCode") } : {}),
      ...(c.get("fault") !== undefined ? { error: c.get("fault") } : {}),
    });
  });
  app.use("*", requestId({ headerName: "X-Request-Id", limitLength: 128, generator: () => newRequestId() }));
  // Without auth, only names that cannot be rebound to this address (DNS rebinding), or the ones given.
  if (auth === false) app.use("*", hostGuard(options.allowedHosts));
  if (options.cors !== undefined) {
    app.use(
      "*",
      cors({
        origin: typeof options.cors.origin === "string" ? options.cors.origin : [...options.cors.origin],
        allowMethods: readOnly ? ["GET"] : ["GET", "POST", "DELETE"],
        allowHeaders: ["Authorization", "Content-Type", "Last-Event-ID", "X-Request-Id"],
        exposeHeaders: ["X-Request-Id", "Location"],
        credentials: options.cors.credentials ?? false,
        maxAge: options.cors.maxAge ?? 600,
      }),
    );
  }
  if (!readOnly && auth === false) {
    const trusted = new Set(options.cors === undefined ? [] : [options.cors.origin].flat());
    app.use("*", async (c, next) => {
      if (writes(c.req.method) && crossSite(c.req.raw, trusted)) {
        throw new HttpProblem(
          403,
          "CROSS_SITE_REQUEST",
          `${c.req.method} ${c.req.path} came from another site; without authentication only the app's own origin and cors.origin may write`,
        );
      }
      await next();
    });
  }
  // The timeline's pages hold no data: a browser navigates to them without the token.
  if (options.view !== false) mountViewPages(app);
  if (auth !== false) app.use("*", bearerGuard(options.token!));
  // After the token: a caller without it learns neither which routes exist nor that the app only reads.
  if (readOnly) {
    app.use("*", async (c, next) => {
      if (writes(c.req.method)) noRoute(c);
      await next();
    });
  }
  app.use("/sessions/:id/*", async (c, next) => {
    checkSessionId(c.req.param("id"));
    await next();
  });
  app.use("/sessions/:id", async (c, next) => {
    checkSessionId(c.req.param("id"));
    await next();
  });
}

/**
 * The front of the app on its own: what the app answers a request before any route needs the harness (a refusal —
 * no token or a wrong one, a host or a site refused without auth, a write to a read-only app, a bad session id —, a
 * timeline page, a CORS preflight), or, for a request that goes on to a route, the request id it was given. The
 * answers are the app's own, logged as it logs them; a request let through is not logged here (the app that serves
 * it logs it), and the app that serves it gives it the same id (`newRequestId: () => requestId`): one id per request,
 * made once.
 *
 * @throws {HarnessError} `INVALID_ARGS` for options the app refuses (see `checkAppOptions`).
 */
export function requestGate(
  options: HarnessAppOptions,
): (request: Request) => Promise<Response | { readonly requestId: string }> {
  checkAppOptions(options);
  // The requests let through, with their ids.
  const through = new WeakMap<Request, string>();
  const gate: HarnessApp = new Hono<HarnessAppEnv>();
  mountFront(gate, options, (c) => through.has(c.req.raw));
  gate.onError((error, c) => {
    const { body, headers, fault } = toProblem(error, c.req.path, c.get("requestId") ?? "");
    c.set("problemCode", body.code);
    if (fault) c.set("fault", error);
    return problemResponse(body, headers);
  });
  gate.all("*", (c) => {
    through.set(c.req.raw, c.get("requestId"));
    return c.body(null, 204);
  });
  return async (request) => {
    const response = await gate.fetch(request);
    const requestId = through.get(request);
    if (requestId === undefined) return response;
    through.delete(request);
    await response.body?.cancel();
    return { requestId };
  };
}

// Whether a browser sent the request from another site: its Fetch Metadata says so, or (a browser without it) its
// Origin names another host than the request's. Non-browser clients send neither header.
function crossSite(request: Request, trusted: ReadonlySet<string>): boolean {
  const headers = request.headers;
  const origin = headers.get("origin");
  // `cors.origin: "*"` lets every site in, on purpose.
  if (trusted.has("*") || (origin !== null && trusted.has(origin))) return false;
  const site = headers.get("sec-fetch-site");
  if (site !== null) return site === "cross-site" || site === "same-site";
  if (origin === null) return false;
  try {
    return new URL(origin).host !== (headers.get("host") ?? new URL(request.url).host);
  } catch {
    return true; // "null" (a sandboxed page, a file) or garbage: not this app's own origin
  }
}
