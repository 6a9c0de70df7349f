/**
 * `createHarnessApp()`: a harness as a Hono microservice (REST + SSE).
 *
 * The options and the wiring of the service; the `/sessions` routes are in `_session_routes.ts` (documented on
 * {@linkcode createHarnessApp} below), the middleware every request passes before a route in `_app_front.ts`, the
 * bearer check in `_bearer_guard.ts`, the `405` route table and mount path in `_route_table.ts`, pending approvals in
 * `_pending_approvals.ts`; bodies, problems, SSE and the session host are in their own files. A little
 * over the house limit: most of it is the public option types and the route documentation.
 *
 * @module
 */

// hono/tiny: the same Hono with the PatternRouter, ~2.4 KB gzip smaller in a worker bundle than the default
// SmartRouter (RegExp + Trie routers); this app has a few dozen routes, where either router is fast enough.
import { Hono } from "hono/tiny";
import type { Agent } from "../agent/agent.ts";
import type { Harness } from "../harness.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionStorage } from "../persistence/session_storage.ts";
import { storedPrefix } from "../persistence/_stored_prefix.ts";
import { ApprovalQueue, type PendingApproval } from "../tools/approval_queue.ts";
import { checkAppOptions, mountFront, noRouteFor } from "./_app_front.ts";
import { readStored } from "./_event_stream.ts";
import { pendingWithin } from "./_pending_approvals.ts";
import { HttpProblem, problemResponse, toProblem } from "./_problem.ts";
import { SessionHost } from "./_session_host.ts";
import { mountSessionRoutes } from "./_session_routes.ts";
import { type HttpPendingApproval, type HttpSessionSummary, summarizeLog } from "./session_summary.ts";
import { mountViewData } from "./view/_view_routes.ts";

/** One line of the request log. */
export interface RequestLogRecord {
  /** The request id (from a valid `X-Request-Id` header: letters, digits, `_` and `-`, at most 128; or generated). */
  readonly requestId: string;
  /** The HTTP method. */
  readonly method: string;
  /** The request path. */
  readonly path: string;
  /** The response status. */
  readonly status: number;
  /** Milliseconds until the response (for SSE: until the stream opened). */
  readonly durationMs: number;
  /** The problem code of an error response. */
  readonly code?: string;
  /** The error behind a 5xx response. */
  readonly error?: unknown;
}

/** Cross-origin access for browser clients (the `cors` option of {@linkcode createHarnessApp}). */
export interface HarnessCorsOptions {
  /** The origins allowed to call the service, e.g. `https://app.example.com`. */
  readonly origin: string | readonly string[];
  /**
   * Let browsers send credentials (cookies, HTTP auth) cross-origin.
   *
   * @default {false}
   */
  readonly credentials?: boolean;
  /**
   * Seconds a browser may cache a preflight answer.
   *
   * @default {600}
   */
  readonly maxAge?: number;
}

/** Options of {@linkcode createHarnessApp}. */
export interface HarnessAppOptions {
  /**
   * The bearer token clients must send (`Authorization: Bearer <token>`).
   * Required unless `auth` is `false`.
   */
  readonly token?: string;
  /**
   * Require the bearer token. Turning it off must be explicit. Without it,
   * being able to reach the app is the only credential, so a `POST` or
   * `DELETE` a browser sends from another site (`Sec-Fetch-Site: cross-site`
   * or `same-site`, or an `Origin` whose host is not the request's `Host`) is
   * refused with 403 `CROSS_SITE_REQUEST` unless its origin is one of
   * `cors.origin`, and a request for a host name other than `localhost`,
   * `*.localhost`, an IP address or one of `allowedHosts` is refused with 403
   * `HOST_NOT_ALLOWED` (a page whose name an attacker points at this address,
   * DNS rebinding, is the app's own origin to the browser): a page the user
   * visits cannot drive the agents, nor read the sessions.
   *
   * @default {true}
   */
  readonly auth?: boolean;
  /**
   * With `auth: false`, the host names the app is served under besides
   * `localhost`, `*.localhost` and IP addresses (`Host` without the port; a
   * leading `.` allows the name and every name under it); other names are
   * refused with 403 `HOST_NOT_ALLOWED`. Unused with auth: a page on another
   * name has no token.
   *
   * @default {[]}
   */
  readonly allowedHosts?: readonly string[];
  /**
   * Serve reads only: every `POST` and `DELETE` is answered 405
   * `METHOD_NOT_ALLOWED` (`Allow` lists what is left) before it reaches a
   * session or the storage, so no agent is resumed, no lease taken and
   * nothing written. The bearer check comes first: without a valid token the
   * answer is the same 401 as on every route, so a caller without it learns
   * neither which routes exist nor that the app is read-only. The timeline
   * program (`serveView`, `dsh-view`) serves its folder this way. A read-only
   * app answers no approvals (`approvals` is off unless given, and `true` is
   * refused): a queue it registered would take every question and could
   * never answer one.
   *
   * @default {false}
   */
  readonly readOnly?: boolean;
  /**
   * The largest request body accepted, in bytes; larger ones get 413.
   *
   * @default {1048576}
   */
  readonly maxBodyBytes?: number;
  /**
   * Milliseconds between keep-alive comments on event streams (below Bun's
   * default 10 s idle timeout and common proxy timeouts).
   *
   * @default {5000}
   */
  readonly keepAliveMs?: number;
  /**
   * Answer tool `ask` decisions over HTTP: an approval queue is registered
   * with the harness's `approvals` service. Not with `readOnly` (its approval
   * routes could not be posted to): there it is off, and `true` is refused.
   *
   * @default {true, false with readOnly}
   */
  readonly approvals?: boolean;
  /**
   * The longest `POST /sessions/:id/cancel` waits, in milliseconds, for the
   * cancelled turn to end (a model call, a tool or a durability checkpoint is
   * left at once; a dynamic prompt section that does not heed the abort is
   * waited for): past it the route answers 202 with `settled: false`. Not a
   * bound on storage: like every write route, the answer comes once storage
   * holds what it acknowledges (the discard, and the turn's end when
   * settled), so a stalled storage delays it (or fails it, as a failed write
   * does) rather than turning it into a 202.
   *
   * @default {10000}
   */
  readonly cancelWaitMs?: number;
  /**
   * Receives one record per request; `false` silences the log.
   *
   * @default {one JSON line per request on the console}
   */
  readonly log?: ((record: RequestLogRecord) => void) | false;
  /**
   * The most items (events, each chunk a delta frame carries, status changes)
   * an event stream buffers for a reader that does not keep up; past it the
   * reader is dropped (its response ends with `event: dropped`, data
   * `{"reason":"slow-reader"}`) and resumes with its `Last-Event-ID`, so a
   * stalled client never slows an agent.
   *
   * @default {4096}
   */
  readonly maxBufferedEvents?: number;
  /**
   * Milliseconds between checks for new records while tailing a session that is
   * only in storage (written by another process).
   *
   * @default {1000}
   */
  readonly tailPollMs?: number;
  /**
   * Answer cross-origin requests from these origins (Hono's `cors` middleware:
   * preflights, `Authorization`, `Content-Type`, `Last-Event-ID` and
   * `X-Request-Id` allowed, `X-Request-Id` and `Location` exposed). Off unless given.
   */
  readonly cors?: HarnessCorsOptions;
  /** Generates request ids. @default {crypto.randomUUID} */
  readonly newRequestId?: () => string;
  /**
   * Serve the session timeline: the pages `/view`, `/sessions/:id/view` and
   * `/view/compare` (no data in them, so no token: the page asks for it) and
   * their data routes `/sessions/:id/log` and `/sessions/:id/surface` (token required).
   *
   * @default {true}
   */
  readonly view?: boolean;
}

/** The Hono environment of the app: `c.get("requestId")` in added routes. */
export interface HarnessAppEnv {
  /** The per-request variables (`c.get(name)`). */
  Variables: {
    /** The request id. */
    requestId: string;
    /** The problem code of an error response, for the log. */
    problemCode: string | undefined;
    /** The error behind a 5xx response, for the log. */
    fault: unknown;
  };
}

/** The app returned by {@linkcode createHarnessApp}: a Hono app; add routes or mount it. */
export type HarnessApp = Hono<HarnessAppEnv>;

/**
 * Serve a harness over HTTP as a Hono app.
 *
 * Routes (JSON bodies; errors are `application/problem+json` with a stable `code`):
 * - `POST /sessions` `{ id?, provider?, model?, system?, tools?, reasoningEffort?, temperature?, maxTokens? }`
 *   creates an agent (201); `system` is added to the harness's prompt for this session (taken literally: no
 *   `{{variables}}`), `tools` names the registered tools it may use (both stored in the session's header with
 *   its model, so they apply to its forks and wherever it resumes). An `id` in use (live here, or stored) is 409
 *   `SESSION_ALREADY_EXISTS`; so is the loser of two creations of one `id` that race, in this app or on another
 *   instance over the same storage (where the writer lease settles the race, not a `SESSION_WRITER_BUSY` for the
 *   client): one gets 201, the other leaves nothing behind, live or stored. Distinct ids never conflict.
 * - `GET /sessions` (`{ sessions }`: a summary per live session, then `{ id, live: false, status: "stored",
 *   createdAt, parentSession? }` per session only in storage), `GET /sessions/:id` (status, turn count,
 *   usage, pending approvals), `DELETE /sessions/:id` (stops the agent and deletes the stored log with those of
 *   its subagent descendants, children first, as `harness.deleteSession` does).
 * - `POST /sessions/:id/messages` `{ mode?: "followup" | "steer" | "inject", content, wait? }` queues input
 *   (202); with `wait: true` it answers once the agent is idle (200, with the turn's outcome for a followup,
 *   a turn that ended in `error` included: `result.reason` says so; `agent.run()` would reject instead).
 *   With storage, the answer comes only once the input (and, with `wait: true`, the turn's end) is on storage.
 * - `POST /sessions/:id/wake` `{ wait? }`: runs the input queued for the session (`agent.wake()`), e.g. a
 *   followup that was acknowledged when the process serving it died: a session resumed from storage starts no
 *   turn by itself. Answers `{ id, status, queued }` (202; 200 once idle with `wait: true`).
 * - `POST /sessions/:id/cancel` `{ keepInbox? }`: the only way to stop a turn (a maintenance task too). Answers
 *   `{ id, cancelled, settled, status }`: `cancelled` when a turn was running or queued input was discarded. It
 *   answers once the cancelled turn has ended and its `turn/end` (`aborted`) and the discard are stored: 200 with
 *   `settled: true` (at once when no turn was running). A turn still ending after `cancelWaitMs` (held by what does
 *   not heed the abort: a dynamic prompt section) gets 202 with `settled: false`: the cancel is under way, its end
 *   not yet stored (a crash then leaves the turn `interrupted`); the event stream or `GET /sessions/:id` says when
 *   it is over. Storage is not bounded by `cancelWaitMs`: as every write, the answer waits for it to hold what it
 *   acknowledges. A client that disconnects from any request, the event stream
 *   included, never cancels the agent.
 * - `GET /sessions/:id/events`: SSE. First `event: ready` (`{ id, seq, status, incarnation }`: the log's length and
 *   life when the stream starts), then every event of the log once, in seq order, with `id: <incarnation>:<seq>`
 *   (with storage, only events already on storage): streamed deltas (text, reasoning or tool-call) as
 *   `event: delta` (`{ seq, turn, step, index, blockType, text, id?, name?, last? }`: the text to append to
 *   block `index`; consecutive chunks of one block that reach the stream together come as one frame with their
 *   joined text, `seq` the first chunk's, `last` the last's, which the id names), every other event as
 *   `event: session`; then `event: status`, `event: approvals` (`{ pending }`, the session's pending approvals
 *   whenever they change, and at once when a reader joins a live session while some are pending) and keep-alive
 *   comments. With storage a delta
 *   goes out as soon as it is committed, ahead of storage and so without an id (and so possibly before session
 *   frames of lower seqs still on their way to storage: the seq order holds for frames with ids): it is on storage
 *   once a frame with a later id arrives, and a stream resumed from an earlier id sends it again, with its id (a client that
 *   reconnects drops the text of the deltas it got without an id since its last id, and takes them again from the
 *   stream). `?deltas=false` sends
 *   every event as `event: session` (the whole log, e.g. to mirror it). Resume with `Last-Event-ID` (or
 *   `?from=<seq>` for the first seq wanted); an id of another incarnation of the log (deleted and created
 *   again) or beyond it gets `event: reset` and the log from seq 0. `?follow=false` ends the stream after the
 *   log (`event: end`). A session only in storage is read and tailed without being resumed and without its
 *   writer lease. A reader more than `maxBufferedEvents` behind is dropped (`event: dropped`). A stream that
 *   cannot go on ends with `event: end` too: when the harness is disposed, and, carrying `error: { code, message }`,
 *   when the stored log cannot be read.
 * - `GET /sessions/:id/transcript?format=markdown|json` (markdown by default; JSON is `{ id, seq, messages }`).
 * - `GET /sessions/:id/projections`: `{ id, seq, projections }`, the client view of every registered projection unit
 *   (`turnBoundary`, `todos`, `usageTotals`, `childSessions`, …), live or stored.
 * - With storage, what these routes and `GET /sessions[/:id]` report of a live session's log (its transcript, `seq`,
 *   turn count, usage, projections) is the part on storage, as for the event stream: an answer streamed but not yet
 *   stored is not in the transcript, so nothing they show is lost by a crash. The `status` is the agent's own.
 * - `POST /sessions/:id/fork` `{ boundary?, id? }`: a new live session seeded with the log up to `boundary`
 *   (inclusive, a turn boundary outside a compaction; default the whole log), driven by its own agent (201); 409
 *   `OPEN_TURN` / `OPEN_COMPACTION` for a boundary inside a turn / a compaction, 409 `SESSION_ALREADY_EXISTS` for a
 *   child `id` in use or made first by a racing request, as for `POST /sessions`.
 * - `GET /sessions/:id/approvals` (`{ approvals }`: each `{ sessionId, callId, toolName, args, reason? }`), the
 *   questions of the session and of its live subagents below it (a session whose header has `origin: "subagent"`,
 *   up its `parentSession` chain), each naming the session that asks; the summary's `pendingApprovals` and the
 *   stream's `event: approvals` list the same. `POST /sessions/:id/approvals/:callId`
 *   `{ decision: "allow" | "reject" }` answers at the asking session's route only (a subagent's call ids are its
 *   own, and two subagents may use the same one); a session only in storage has none pending and answers 404
 *   `APPROVAL_NOT_FOUND` without being resumed.
 *
 * Session ids are 1–128 letters, digits, `_`, `-` or inner `.` (a subagent child's id is `<parent>.<call id>`;
 * nothing a path can be made of), whose length plus twice their capitals is at most 255 (a capital takes three bytes of a file storage's directory name). Every response
 * carries `X-Request-Id` (Hono's request-id middleware: the client's, when it is 1–128 letters, digits, `_`
 * or `-`, else a new one), which the log records. Bearer auth is Hono's bearer-auth middleware (the token
 * must be RFC 6750 token68 text), checked before anything else a route does (a `readOnly` app's 405 included); its
 * refusals are problem+json, all 401: `AUTH_REQUIRED` without an `Authorization` header (`WWW-Authenticate: Bearer
 * realm="dsh-harness"`), `MALFORMED_AUTHORIZATION` for one that is not `Bearer <token>` (another scheme, no token,
 * characters no token has) and `INVALID_TOKEN` for a token that is not the app's (both with `error="invalid_token"`).
 *
 * With `storage` set on the harness, stored sessions are listed too, resumed
 * (`harness.resumeAgent`) on first use by any route that needs an agent,
 * summarized, transcribed and caught up on without resuming, and deleted by
 * `DELETE`. Unless `approvals` is `false` (or the app is `readOnly`), the app registers an approval
 * queue with the harness's `approvals` service: it then answers every tool
 * `ask` of the harness's agents, through the approval routes (serve one app
 * per harness: the queue registered last is asked first).
 *
 * @param harness The harness to serve.
 * @param options The token (or `auth: false`), limits and logging.
 * @returns The app; serve it with `Deno.serve(app.fetch)`, `Bun.serve(app)` or `@hono/node-server`.
 * @throws {HarnessError} `INVALID_ARGS` when no token is given and auth is not explicitly disabled, or when
 * `readOnly` is combined with `approvals: true`.
 *
 * @example Creating a session over HTTP
 * ```ts
 * import { createHarness } from "@dsh/harness";
 * import { createHarnessApp } from "@dsh/harness/http";
 * import { scriptedAdapter, textResponse } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * const harness = await createHarness({
 *   adapters: [scriptedAdapter(textResponse("Hello!"))],
 *   model: { provider: "scripted", model: "scripted-model" },
 * });
 * const app = createHarnessApp(harness, { token: "secret", log: false });
 * const headers = { authorization: "Bearer secret", "content-type": "application/json" };
 *
 * const created = await app.request("/sessions", { method: "POST", headers, body: JSON.stringify({ id: "s1" }) });
 * assert.equal(created.status, 201);
 * const sent = await app.request("/sessions/s1/messages", {
 *   method: "POST",
 *   headers,
 *   body: JSON.stringify({ content: "Hi", wait: true }),
 * });
 * assert.equal((await sent.json()).result.text, "Hello!");
 *
 * const denied = await app.request("/sessions/s1");
 * assert.equal(denied.status, 401);
 * assert.equal((await denied.json()).code, "AUTH_REQUIRED");
 * await harness.dispose();
 * ```
 */
export function createHarnessApp(harness: Harness, options: HarnessAppOptions = {}): HarnessApp {
  const { maxBodyBytes, keepAliveMs, maxBuffered, tailPollMs, cancelWaitMs } = checkAppOptions(options);
  const host = new SessionHost(harness);
  const projections = harness.ctx.service("sessionProjections");

  // The live agent of an id (none once the harness is disposed): a subagent's question is listed on its parents.
  const live = (id: string): Agent | undefined => {
    try {
      return host.live(id);
    } catch {
      return undefined;
    }
  };
  const approvalWatchers = new Set<(pending: readonly PendingApproval[]) => void>();
  // One function for the whole app: event streams with the same options share one live feed.
  const watchApprovals = (agent: Agent, listener: (pending: readonly unknown[]) => void) => {
    // Only when this session's own list changed: the queue is the app's, and another session's question is not news
    // here (nor is it this stream's business when one is asked).
    let last = JSON.stringify(queue === undefined ? [] : pendingWithin(queue.pending(), agent, live));
    const watch = (pending: readonly PendingApproval[]) => {
      const mine = pendingWithin(pending, agent, live);
      const text = JSON.stringify(mine);
      if (text === last) return;
      last = text;
      listener(mine);
    };
    approvalWatchers.add(watch);
    return () => void approvalWatchers.delete(watch);
  };
  let queue: ApprovalQueue | undefined;
  if (options.approvals ?? options.readOnly !== true) {
    const service = harness.ctx.get("approvals");
    if (service !== undefined) {
      queue = new ApprovalQueue({
        onChange: (pending) => {
          for (const watch of approvalWatchers) watch(pending);
        },
      });
      service.register(queue.approver, harness.ctx);
    }
  }
  const pendingOf = (agent: Agent): HttpPendingApproval[] => pendingWithin(queue?.pending() ?? [], agent, live);

  // How much of a live session's log a reader is told: with storage, only the prefix on storage (as the event stream
  // and the timeline's data), so that nothing a restart would lose is reported; all of it without storage.
  const storedEnd = (agent: Agent): number => {
    const session = agent.session;
    return harness.storage === undefined ? session.seq : Math.min(storedPrefix(session) ?? 0, session.seq);
  };

  const summary = (agent: Agent): HttpSessionSummary => ({
    id: agent.id,
    live: true,
    status: agent.status,
    provider: agent.options.provider,
    model: agent.options.model,
    ...summarizeLog(agent.session, projections, storedEnd(agent)),
    createdAt: agent.session.header.createdAt,
    ...(agent.session.header.parentSession !== undefined ? { parentSession: agent.session.header.parentSession } : {}),
    pendingApprovals: pendingOf(agent),
  });

  const app: HarnessApp = new Hono<HarnessAppEnv>();

  mountFront(app, options);

  app.onError(async (error, c) => {
    // A session whose writer lost its lease is let go of, so that its next request resumes it from storage.
    await host.evictAfter(error);
    const { body, headers, fault } = toProblem(error, c.req.path, c.get("requestId") ?? "");
    c.set("problemCode", body.code);
    if (fault) c.set("fault", error);
    return problemResponse(body, headers);
  });
  // Unknown routes: a parent app that mounts this one (`parent.route("/api", app)`) answers them with its own
  // not-found handler, so a catch-all route (registered last) answers them here too.
  const noRoute = noRouteFor(options);
  app.notFound(noRoute);

  mountSessionRoutes(app, {
    harness,
    host,
    projections,
    maxBodyBytes,
    keepAliveMs,
    maxBuffered,
    tailPollMs,
    cancelWaitMs,
    watchApprovals,
    queue,
    pendingOf,
    summary,
    storedEnd,
    readStoredSession,
    inspectStored,
  });

  if (options.view !== false) {
    mountViewData(app, async (id) => {
      const agent = await host.readable(id);
      if (agent !== undefined) {
        // With storage, as the event stream: only what is on storage, so a page never holds an event a restart loses.
        const session = agent.session;
        const end = storedEnd(agent);
        const events = end === session.seq ? session.events : session.slice(0, end);
        return { events, header: session.header, live: true, status: agent.status };
      }
      const { events, header } = await inspectStored(id);
      return { events, header, live: false, status: "stored" };
    });
  }

  // A stored session's log read by `read`, a missing storage or session answered 404 `SESSION_NOT_FOUND`.
  async function fromStorage<T>(id: string, read: (storage: SessionStorage) => Promise<T>): Promise<T> {
    const storage = harness.storage;
    if (storage === undefined) throw new HttpProblem(404, "SESSION_NOT_FOUND", `Session "${id}" does not exist`);
    try {
      return await read(storage);
    } catch (error) {
      if (HarnessError.isInstance(error, "SESSION_NOT_FOUND")) {
        throw new HttpProblem(404, "SESSION_NOT_FOUND", `Session "${id}" does not exist`);
      }
      throw error;
    }
  }
  function readStoredSession(id: string) {
    return fromStorage(id, (storage) => readStored(storage, id));
  }
  function inspectStored(id: string) {
    return fromStorage(id, (storage) => storage.inspect(id));
  }

  app.all("*", noRoute);

  return app;
}
