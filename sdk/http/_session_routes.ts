// Internal: the `/sessions` routes of the HTTP app (moved out of `create_harness_app.ts`, which documents them
// on `createHarnessApp` and mounts them between its middleware and its catch-all). What they share with the
// app comes in `SessionRoutesContext`; the route bodies are as they were there.

import type { Agent } from "../agent/agent.ts";
import { TurnFailedError } from "../agent/turn_failed_error.ts";
import type { Harness } from "../harness.ts";
import type { LoadedSession } from "../persistence/session_storage.ts";
import type { SessionProjections } from "../projections/session_projections.ts";
import { turnBoundary } from "../projections/turn_boundary.ts";
import { Session } from "../session/session.ts";
import { renderTranscript } from "../session/transcript.ts";
import type { ApprovalQueue } from "../tools/approval_queue.ts";
import { approvalBody, cancelBody, createSessionBody, forkBody, messageBody, readBody, wakeBody } from "./_body.ts";
import {
  incarnationOf,
  type LastEventId,
  parseLastEventId,
  type readStored,
  type ResetReason,
  streamSessionEvents,
  streamStoredEvents,
} from "./_event_stream.ts";
import { belongsTo } from "./_pending_approvals.ts";
import { HttpProblem } from "./_problem.ts";
import { mountOf } from "./_route_table.ts";
import type { SessionHost } from "./_session_host.ts";
import type { HarnessApp } from "./create_harness_app.ts";
import { type HttpPendingApproval, type HttpSessionSummary, summarizeLog } from "./session_summary.ts";

/** What the session routes share with `createHarnessApp`: its options, session host, approvals and stored reads. */
export interface SessionRoutesContext {
  readonly harness: Harness;
  readonly host: SessionHost;
  readonly projections: SessionProjections;
  readonly maxBodyBytes: number;
  readonly keepAliveMs: number;
  readonly maxBuffered: number;
  readonly tailPollMs: number;
  readonly cancelWaitMs: number;
  readonly watchApprovals: (agent: Agent, listener: (pending: readonly unknown[]) => void) => () => void;
  readonly queue: ApprovalQueue | undefined;
  readonly pendingOf: (agent: Agent) => HttpPendingApproval[];
  readonly summary: (agent: Agent) => HttpSessionSummary;
  /** How much of a live session's log readers are told: with storage, the prefix on storage. */
  readonly storedEnd: (agent: Agent) => number;
  readonly readStoredSession: (id: string) => ReturnType<typeof readStored>;
  readonly inspectStored: (id: string) => Promise<LoadedSession>;
}

/** Mounts `POST`/`GET /sessions` and every `/sessions/:id` route on `app`. */
export function mountSessionRoutes(app: HarnessApp, context: SessionRoutesContext): void {
  const { harness, host, projections, maxBodyBytes, keepAliveMs, maxBuffered, tailPollMs, cancelWaitMs } = context;
  /** The turn the agent's log has open (a `turn/start` with no `turn/end` after it), if any. */
  const openTurn = (agent: Agent) => projections.stateOf(agent.session, turnBoundary).open?.turn;
  const { watchApprovals, queue, pendingOf, summary, storedEnd, readStoredSession, inspectStored } = context;

  app.post("/sessions", async (c) => {
    const body = await readBody(c.req.raw, createSessionBody, maxBodyBytes);
    const agent = await host.create(body);
    c.header("location", `${mountOf(c, "/sessions")}/sessions/${agent.id}`);
    return c.json(summary(agent), 201);
  });

  app.get("/sessions", async (c) => {
    const live = (await host.readableAgents()).map(summary);
    const stored = (await host.storedOnly()).map((s) => ({ ...s, live: false, status: "stored" as const }));
    return c.json({ sessions: [...live, ...stored] });
  });

  app.get("/sessions/:id", async (c) => {
    const id = c.req.param("id");
    const agent = await host.readable(id);
    if (agent !== undefined) return c.json(summary(agent));
    const loaded = await inspectStored(id);
    const result: HttpSessionSummary = {
      id,
      live: false,
      status: "stored",
      ...summarizeLog(loaded, projections),
      createdAt: loaded.header.createdAt,
      ...(loaded.header.parentSession !== undefined ? { parentSession: loaded.header.parentSession } : {}),
      pendingApprovals: [],
    };
    return c.json(result);
  });

  app.delete("/sessions/:id", async (c) => {
    const id = c.req.param("id");
    if (!(await host.remove(id))) throw new HttpProblem(404, "SESSION_NOT_FOUND", `Session "${id}" does not exist`);
    return c.body(null, 204);
  });

  app.post("/sessions/:id/messages", async (c) => {
    const body = await readBody(c.req.raw, messageBody, maxBodyBytes);
    const agent = await host.agent(c.req.param("id"));
    const content = body.content;
    if (body.wait && body.mode === "followup") {
      // A turn that ended in error is still the answer to "wait for my turn": the input was taken and the
      // turn closed, so the route answers 200 with `result.reason.kind === "error"`, not a problem (a client
      // that retried on 5xx would queue the message twice).
      const result = await agent.run(content).catch((error: unknown) =>
        error instanceof TurnFailedError ? error.result : Promise.reject(error)
      );
      return c.json({ mode: body.mode, result });
    }
    const entry = agent[body.mode](content);
    if (body.wait) {
      // Until idle, through a maintenance task too (a resume's SessionStart hook, a compaction) after which the input
      // runs; an inject, which wakes nothing, does not hold it.
      await agent.whenIdle();
      await agent.flushed();
      return c.json({ id: entry.id, messageId: entry.message.id, mode: body.mode, status: agent.status });
    }
    // Acknowledged means durable: the answer waits for the batch holding the inbox splice.
    const status = agent.status;
    await agent.flushed();
    return c.json({ id: entry.id, messageId: entry.message.id, mode: body.mode, status }, 202);
  });

  app.post("/sessions/:id/cancel", async (c) => {
    const body = await readBody(c.req.raw, cancelBody, maxBodyBytes);
    const agent = await host.agent(c.req.param("id"));
    const wasRunning = agent.status === "running";
    const queued = agent.inbox.size;
    const turn = wasRunning ? openTurn(agent) : undefined;
    agent.cancel("user", { keepInbox: body.keepInbox });
    // Something was cancelled: a running turn, or queued input the cancel discarded.
    const cancelled = wasRunning || (!body.keepInbox && queued > 0);
    // The cancelled turn ends a little after the abort (once what it awaits settles: a model call or tool at once, a
    // dynamic prompt section or a storage write when it is done): the answer waits for its turn/end (bounded), so
    // that a 200 means the turn is over as cancelled, not left open for a crash to close as interrupted.
    const settled = turn === undefined || await turnEnded(agent, turn, cancelWaitMs, openTurn);
    const status = agent.status;
    // Acknowledged means durable: the inbox discard and what the turn logged (its end, when settled) are stored
    // before the answer; before, a crash right after it brought the discarded input back on the next resume.
    await agent.flushed();
    return c.json({ id: agent.id, cancelled, settled, status }, settled ? 200 : 202);
  });

  app.post("/sessions/:id/wake", async (c) => {
    const body = await readBody(c.req.raw, wakeBody, maxBodyBytes);
    const agent = await host.agent(c.req.param("id"));
    agent.wake();
    // Also through a maintenance task the resume started (a SessionStart hook), after which the input runs.
    if (body.wait) await agent.whenIdle();
    const status = agent.status;
    await agent.flushed();
    return c.json({ id: agent.id, status, queued: agent.inbox.count("next-turn") }, body.wait ? 200 : 202);
  });

  app.get("/sessions/:id/events", async (c) => {
    const lastEventId = c.req.header("last-event-id");
    const fromQuery = c.req.query("from");
    let from = 0;
    let claimed: LastEventId | undefined;
    if (lastEventId !== undefined && lastEventId.trim() !== "") {
      claimed = parseLastEventId(lastEventId);
      if (claimed === undefined) {
        throw new HttpProblem(400, "INVALID_LAST_EVENT_ID", "Last-Event-ID must be the id of an event");
      }
      from = claimed.seq + 1;
    } else if (fromQuery !== undefined) {
      if (!/^\d{1,15}$/.test(fromQuery)) throw new HttpProblem(400, "INVALID_QUERY", "from must be a seq");
      from = Number(fromQuery);
    }
    const id = c.req.param("id");
    // Where the stream starts: a Last-Event-ID of another life of the log, or
    // beyond it, restarts from seq 0 with `event: reset`; `?from=` beyond the log is refused.
    const start = (incarnation: string, length: number): { from: number; reset?: ResetReason } => {
      if (claimed?.incarnation !== undefined && claimed.incarnation !== incarnation) {
        return { from: 0, reset: "incarnation" };
      }
      if (from <= length) return { from };
      if (claimed !== undefined) return { from: 0, reset: "ahead" };
      throw new HttpProblem(
        400,
        "INVALID_QUERY",
        `The stream cannot start at seq ${from}: the log of session "${id}" has ${length} events`,
      );
    };
    const streamOptions = {
      deltas: c.req.query("deltas") !== "false",
      follow: c.req.query("follow") !== "false",
      keepAliveMs,
      maxBuffered,
      pollMs: tailPollMs,
      storage: harness.storage,
      watchApprovals,
      pendingApprovals: pendingOf,
    };
    const agent = await host.readable(id);
    if (agent === undefined) {
      // Reading or tailing a stored session resumes nothing and takes no lease.
      const stored = await readStoredSession(id);
      return streamStoredEvents(
        c,
        {
          id,
          header: stored.header,
          events: stored.events,
          storage: harness.storage!,
          ctx: harness.ctx,
          live: () => host.live(id),
        },
        { ...streamOptions, ...start(incarnationOf(stored.header), stored.events.length) },
      );
    }
    return streamSessionEvents(c, harness.ctx, agent, {
      ...streamOptions,
      ...start(incarnationOf(agent.session.header), agent.session.seq),
    });
  });

  app.get("/sessions/:id/transcript", async (c) => {
    const id = c.req.param("id");
    const format = c.req.query("format") ??
      (c.req.header("accept")?.includes("application/json") ? "json" : "markdown");
    if (format !== "markdown" && format !== "json") {
      throw new HttpProblem(400, "INVALID_QUERY", "format must be markdown or json");
    }
    const agent = await host.readable(id);
    // A live session as far as it is stored (all of it without storage); else what storage holds.
    const end = agent === undefined ? undefined : storedEnd(agent);
    const whole = agent !== undefined && end === agent.session.seq;
    const events = agent === undefined
      ? (await inspectStored(id)).events
      : whole
      ? agent.session.events
      : agent.session.slice(0, end);
    if (format === "markdown") {
      return c.body(renderTranscript(events), 200, { "content-type": "text/markdown; charset=utf-8" });
    }
    const session = whole ? agent.session : Session.create(id, events);
    return c.json({ id, seq: events.length, messages: session.deriveMessages() });
  });

  app.get("/sessions/:id/projections", async (c) => {
    const id = c.req.param("id");
    const agent = await host.readable(id);
    // A stored session with its header: a fork's projections tell its seed from its own events. A live one as far as
    // it is stored, folded incrementally.
    if (agent !== undefined) {
      const upTo = storedEnd(agent);
      return c.json({ id, seq: upTo, projections: projections.snapshot(agent.session, { upTo }) });
    }
    const stored = await inspectStored(id);
    return c.json({ id, seq: stored.events.length, projections: projections.snapshot(stored) });
  });

  app.post("/sessions/:id/fork", async (c) => {
    const body = await readBody(c.req.raw, forkBody, maxBodyBytes);
    const source = await host.agent(c.req.param("id"));
    const child = await host.fork(source, body.boundary, body.id);
    c.header("location", `${mountOf(c, "/sessions/:id/fork")}/sessions/${child.id}`);
    return c.json(summary(child), 201);
  });

  app.get("/sessions/:id/approvals", async (c) => {
    const id = c.req.param("id");
    const agent = await host.readable(id);
    if (agent === undefined) await inspectStored(id); // a stored session has no pending question
    return c.json({ approvals: agent === undefined ? [] : pendingOf(agent) });
  });

  app.post("/sessions/:id/approvals/:callId", async (c) => {
    const body = await readBody(c.req.raw, approvalBody, maxBodyBytes);
    const id = c.req.param("id");
    const agent = host.live(id);
    // Only a live session can have a question pending: a stored one is not resumed (nor its lease taken) to say no.
    if (agent === undefined) await inspectStored(id);
    const callId = c.req.param("callId");
    const waiting = agent === undefined
      ? undefined
      : queue?.pending().find((p) => p.callId === callId && belongsTo(p, agent));
    // The answer itself writes nothing to the session: the call's outcome (its result, or the denial) is logged by
    // the turn, which checkpoints it; a crash before that loses the question with the turn, and the answer with it.
    if (queue === undefined || waiting === undefined || !queue.answer(waiting, body.decision === "allow")) {
      throw new HttpProblem(404, "APPROVAL_NOT_FOUND", `No approval is pending for call "${callId}" of this session`);
    }
    return c.json({ callId, outcome: body.decision === "allow" ? "allowed-once" : "rejected" });
  });
}

/**
 * Whether `turn` of the agent ends (its `turn/end` is in the log) within `ms`; also settles when the agent goes idle
 * without ending it (a defect left it open: no end is coming).
 */
async function turnEnded(
  agent: Agent,
  turn: number,
  ms: number,
  openTurn: (agent: Agent) => number | undefined,
): Promise<boolean> {
  const ended = () => openTurn(agent) !== turn;
  if (ended()) return true;
  let done!: () => void;
  const over = new Promise<void>((resolve) => (done = resolve));
  const stop = agent.listen((update) => {
    if (update.kind === "event" && update.event.type === "turn/end" && update.event.data.turn === turn) done();
  });
  const timer = setTimeout(done, ms);
  try {
    await Promise.race([over, agent.whenIdle()]);
  } finally {
    clearTimeout(timer);
    stop();
  }
  return ended();
}
