/**
 * Agents in serverless functions: a fetch-style handler `(request) =>
 * Response` that keeps nothing in memory between requests, over any shared
 * {@linkcode SessionStorage} (`postgresStorage` for many machines,
 * `fileStorage` on a shared disk).
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { Harness } from "../harness.ts";
import { createHarnessApp, type HarnessAppOptions } from "./create_harness_app.ts";
import { keepsLostWriters } from "./_session_host.ts";
import { requestGate } from "./_app_front.ts";
import { flushWithRetries } from "../agent/_retry_flush.ts";
import { problemOf, problemResponse } from "./_problem.ts";

/** Options of {@linkcode createServerlessHandler}. */
export interface ServerlessHandlerOptions {
  /**
   * Make the harness that serves one request. Give it the shared storage
   * (build the storage and its client once, outside, and reuse them); the
   * handler disposes the harness, never the storage.
   */
  readonly harness: () => Promise<Harness>;
  /** Options of the app (token, limits, log); `approvals` is always off (no one could answer between requests). */
  readonly app?: Omit<HarnessAppOptions, "approvals">;
}

/**
 * Make a handler that serves each request with a fresh harness over shared
 * storage: the HTTP app resumes the session from its log, the handler waits
 * until every agent it woke is idle and durable (nothing may run after a
 * function returns), then disposes the harness, releasing the writer lease.
 * Any instance can serve the next request of a conversation; a session's own
 * system prompt, tools and model (given at `POST /sessions`) are stored in
 * its header and apply wherever it resumes.
 *
 * Prefer `"wait": true` on messages: the response then carries the turn's
 * outcome. An event stream of a session follows storage when the storage
 * can (`postgresStorage`): it then stays open and carries what any instance
 * writes; otherwise it ends with the request. When another instance is
 * driving the same session at that moment, the answer is `409
 * SESSION_WRITER_BUSY` or `409 SESSION_NOT_SAVED` (or `409
 * SESSION_SEQ_MISMATCH` when it wrote between this request's load and its
 * lease) and nothing of the request was stored. When this instance's writer
 * lease is lost while the request runs (the database was unreachable for
 * longer than the lease, or another instance took the session over), the
 * answer is `409 SESSION_LEASE_LOST`: part of the request's input may be
 * stored, so read the session before sending it again; the same holds for
 * `500 SESSION_NOT_SAVED` (a write that failed otherwise). A harness factory
 * that throws (storage unreachable at a cold start) is `503
 * HARNESS_UNAVAILABLE`, nothing of the request done; its error goes to the
 * console.
 *
 * What the app answers before any of its routes needs the harness is
 * answered before the factory runs, as the app answers it: a request
 * without the token or with a wrong one (401 `AUTH_REQUIRED`,
 * `MALFORMED_AUTHORIZATION`, `INVALID_TOKEN`), one the app refuses without
 * auth (403 `HOST_NOT_ALLOWED`, `CROSS_SITE_REQUEST`), a write to a
 * `readOnly` app (405), a malformed session id (400), a CORS preflight and
 * the timeline's pages. So a caller without the token never makes the
 * function build a harness. Every other request runs the factory once; keep
 * it cheap all the same (build the storage and its client once, outside).
 *
 * @param options How to build the harness for one request, and the app's options.
 * @returns A fetch-style handler.
 * @throws {HarnessError} `INVALID_ARGS` without a `harness` factory, and for app options the app refuses (no
 *   `token` while `auth` is on, a token a bearer header cannot carry, a limit out of range), here rather than at
 *   every request.
 *
 * @example Two handler instances sharing one storage continue one conversation
 * ```ts
 * import { createHarness, memoryStorage } from "@dsh/harness";
 * import { createServerlessHandler } from "@dsh/harness/http";
 * import { scriptedAdapter, textResponse } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * const storage = memoryStorage(); // use postgresStorage({ client }) across machines
 * const instance = () =>
 *   createServerlessHandler({
 *     harness: () =>
 *       createHarness({
 *         adapters: [scriptedAdapter(textResponse("Hello!"))],
 *         model: { provider: "scripted", model: "scripted-model" },
 *         storage,
 *       }),
 *     app: { token: "secret-token", log: false },
 *   });
 * const post = (path: string, body: unknown) =>
 *   new Request(`https://fn.example${path}`, {
 *     method: "POST",
 *     headers: { authorization: "Bearer secret-token", "content-type": "application/json" },
 *     body: JSON.stringify(body),
 *   });
 * assert.equal((await instance()(post("/sessions", { id: "chat", system: "Be brief." }))).status, 201);
 * const answer = await instance()(post("/sessions/chat/messages", { content: "Hi", wait: true }));
 * assert.equal((await answer.json()).result.text, "Hello!");
 * ```
 */
export function createServerlessHandler(options: ServerlessHandlerOptions): (request: Request) => Promise<Response> {
  if (typeof options?.harness !== "function") {
    throw new HarnessError("INVALID_ARGS", "createServerlessHandler needs { harness: () => Promise<Harness> }");
  }
  const appOptions: HarnessAppOptions = { ...options.app, approvals: false };
  // The app's checks that need no harness (the token first of all), made before the factory runs.
  const gate = requestGate(appOptions);
  return async (request) => {
    const gated = await gate(request);
    if (gated instanceof Response) return gated;
    let harness: Harness;
    try {
      harness = await options.harness();
    } catch (error) {
      // Storage unreachable at a cold start, say: an answer with a code (nothing of the request was done), and the
      // reason in the function's log rather than to the client (it may name the storage's address).
      console.error("[@dsh/harness] createServerlessHandler: the harness factory failed:", error);
      return problem(
        503,
        "HARNESS_UNAVAILABLE",
        "The function could not make its harness (its log says why); nothing of this request was done",
      );
    }
    keepsLostWriters.add(harness); // a failed write is answered for below, not by resuming the session
    let body: Promise<ArrayBuffer> | undefined;
    let response: Response;
    let failed: Response | undefined;
    try {
      // The id the gate gave the request: one id per request, in the log and the answer.
      const app = createHarnessApp(harness, { ...appOptions, newRequestId: () => gated.requestId });
      response = await app.fetch(request);
      const agents = harness.ctx.service("agents").list();
      // Nothing was woken (a list, a summary, an event stream that follows storage): the
      // response needs no agent, so it is returned as it is, streaming included.
      if (agents.length === 0) return response;
      // Let running turns finish: nothing may run after the function returns.
      await Promise.all(agents.map((agent) => (agent.status === "running" ? agent.whenIdle() : undefined)));
      // Answer only once every log is durable.
      for (const agent of agents) {
        try {
          // As agent.flushed(): a write that failed for a moment is tried again before it is answered for.
          await flushWithRetries(() => harness.sessions.flush(agent.session));
        } catch (error) {
          response.body?.cancel().catch(() => {});
          failed = notSaved(agent.id, error);
          return failed;
        }
      }
      // Read the body while the harness goes away: an event stream ends when its agent is disposed.
      body = response.body === null ? undefined : response.arrayBuffer();
    } finally {
      try {
        await harness.dispose();
      } catch (error) {
        // The last write of a disposed agent failed (a failed flush already answered for it).
        if (failed === undefined) {
          body?.catch(() => {});
          failed = notSaved(sessionOf(error) ?? "", error);
          body = undefined;
        }
      }
    }
    if (failed !== undefined) return failed;
    return new Response(body === undefined ? null : await body, { status: response.status, headers: response.headers });
  };
}

/** The session an error of disposal names, if any (the first one of several). */
function sessionOf(error: unknown): string | undefined {
  const first = error instanceof AggregateError ? error.errors[0] : error;
  const id = HarnessError.isInstance(first) ? (first.details as { sessionId?: unknown })?.sessionId : undefined;
  return typeof id === "string" ? id : undefined;
}

/**
 * The problem+json answer when a session's log could not be written. Only a
 * refused lease (`SESSION_WRITER_BUSY`: another instance held the session
 * before this one wrote anything) means nothing of the request was stored; a
 * lease lost mid-request (`SESSION_LEASE_LOST`) may come after some of its
 * writes, and so may any other failure.
 */
function notSaved(sessionId: string, error: unknown): Response {
  const cause = error instanceof Error && error.cause !== undefined ? error.cause : error;
  const code = HarnessError.isInstance(cause) ? cause.code : undefined;
  const conflict = code === "SESSION_WRITER_BUSY" || code === "SESSION_LEASE_LOST";
  const status = conflict ? 409 : 500;
  const detail = code === "SESSION_WRITER_BUSY"
    ? `Session "${sessionId}" is being served by another instance; nothing of this request was saved`
    : code === "SESSION_LEASE_LOST"
    ? `Session "${sessionId}" was taken over by another instance while this request ran: its input may be partly ` +
      `stored; read the session before sending it again`
    : `Session "${sessionId}" could not be saved: its input may be partly stored; read the session before sending ` +
      `it again`;
  return problem(status, code === "SESSION_LEASE_LOST" ? code : "SESSION_NOT_SAVED", detail);
}

/** An `application/problem+json` answer, as the app writes them. */
function problem(status: number, code: string, detail: string): Response {
  return problemResponse(problemOf(status, code, detail));
}
