// Internal: the routes of the session timeline.
//
// The pages and the client script carry no session data and are served
// without the bearer token (a browser cannot add a header to a navigation);
// `mountViewPages` must therefore be mounted before the auth middleware. The
// data they read — the log, the derived history at a seq — goes through
// `mountViewData`, mounted after it like every other route.

import type { Hono } from "hono";
import type { SessionHeader } from "../../session/session.ts";
import type { SessionEvent } from "../../session/session_events.ts";
import { incarnationOf } from "../../session/_incarnation.ts";
import { HttpProblem } from "../_problem.ts";
import { mountOf } from "../_route_table.ts";
import { checkSessionId } from "../_session_id.ts";
import { surfaceAt } from "./_surface_at.ts";

/** A session's log and header, live or stored (with storage, a live session's events only as far as stored). */
export type LogReader = (id: string) => Promise<{
  events: readonly SessionEvent[];
  header: SessionHeader;
  /** An agent drives the session in this process. */
  live: boolean;
  status: string;
}>;

const SEQ = /^\d{1,15}$/;

// deno-lint-ignore no-explicit-any
type AnyHono = Hono<any, any, any>;

// The page and its script (~20 KB gzip) are imported on the first page request:
// an app that never serves the timeline (an edge worker) does not load them,
// and a bundler with code splitting makes them a chunk of their own.
const viewPageModule = () => import("./_view_page.ts");
const clientScriptModule = () => import("./_view_client_script.ts");

/** `GET /view`, `/view/compare`, `/view/client.js` and `/sessions/:id/view`: no auth, no data. */
export function mountViewPages(app: AnyHono): void {
  const noStore = { "cache-control": "no-store" };
  app.get("/view", async (c) => c.html((await viewPageModule()).viewPage("index", mountOf(c, "/view")), 200, noStore));
  app.get(
    "/view/compare",
    async (c) => c.html((await viewPageModule()).viewPage("compare", mountOf(c, "/view/compare")), 200, noStore),
  );
  app.get("/view/client.js", async (c) =>
    c.body((await clientScriptModule()).VIEW_CLIENT_SCRIPT, 200, {
      "content-type": "text/javascript; charset=utf-8",
      ...noStore,
    }));
  app.get("/sessions/:id/view", async (c) => {
    const id = checkSessionId(c.req.param("id"));
    const { viewPage } = await viewPageModule();
    return c.html(viewPage("session", mountOf(c, "/sessions/:id/view"), id), 200, noStore);
  });
}

/**
 * `GET /sessions/:id/log?from=<seq>` (`{ id, header, incarnation, live, status, seq, events }`: `incarnation` names
 * this life of the log, as the ids of the event stream do, `<incarnation>:<seq>`) and
 * `GET /sessions/:id/surface?at=<seq>` (the derived history of the events before `at`).
 */
export function mountViewData(app: AnyHono, read: LogReader): void {
  app.get("/sessions/:id/log", async (c) => {
    const id = c.req.param("id");
    const from = c.req.query("from") ?? "0";
    if (!SEQ.test(from)) throw new HttpProblem(400, "INVALID_QUERY", "from must be a seq");
    const { events, header, live, status } = await read(id);
    const incarnation = incarnationOf(header);
    return c.json({ id, header, incarnation, live, status, seq: events.length, events: events.slice(Number(from)) });
  });
  app.get("/sessions/:id/surface", async (c) => {
    const id = c.req.param("id");
    const at = c.req.query("at");
    if (at !== undefined && !SEQ.test(at)) throw new HttpProblem(400, "INVALID_QUERY", "at must be a seq");
    const { events } = await read(id);
    return c.json({ id, ...surfaceAt(events, at === undefined ? events.length : Number(at)) });
  });
}
