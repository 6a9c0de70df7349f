// Internal: GET /sessions/:id/events — the session log as a resumable SSE stream.
//
// Contract: every committed event is sent once, in seq order, as `event: session`
// with `id: <seq>`; a client that reconnects with `Last-Event-ID: n` gets seq n+1
// onwards. Live streaming deltas (`event: delta`) and status changes
// (`event: status`) carry no id, so they never move the resume point. A comment
// line is written every `keepAliveMs`; `event: approvals` lists the
// session's pending tool approvals whenever they change. The stream ends (`event: end`) when the
// agent is disposed (or, with `follow: false`, right after the log); a client
// disconnect only unsubscribes — it never cancels.

import type { Context } from "hono";
import { type SSEStreamingApi, streamSSE } from "hono/streaming";
import type { Agent, AgentStatus } from "../agent/agent.ts";
import type { HarnessCtx } from "../harness.ts";
import type { SessionEvent } from "../session/session_events.ts";

type Item =
  | { readonly kind: "event"; readonly event: SessionEvent }
  | { readonly kind: "status"; readonly status: AgentStatus }
  | { readonly kind: "approvals"; readonly pending: readonly unknown[] }
  | { readonly kind: "end" };

/** A push queue read by one consumer; `close()` wakes a pending read at once. */
class ItemQueue {
  readonly #items: Item[] = [];
  #wake: (() => void) | undefined;
  #closed = false;

  push(item: Item): void {
    if (this.#closed) return;
    this.#items.push(item);
    this.#wake?.();
  }

  close(): void {
    this.#closed = true;
    this.#wake?.();
  }

  /** The next item, or `undefined` once closed (pending items are dropped on close). */
  async next(): Promise<Item | undefined> {
    while (!this.#closed) {
      const item = this.#items.shift();
      if (item !== undefined) return item;
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
    return undefined;
  }
}

/** Options of {@linkcode streamSessionEvents}. */
export interface EventStreamOptions {
  /** The first seq to send. */
  readonly from: number;
  /** Send live streaming deltas. */
  readonly deltas: boolean;
  /** Keep the stream open for live events; `false` ends it after the log (`event: end`). */
  readonly follow: boolean;
  /** Milliseconds between keep-alive comments. */
  readonly keepAliveMs: number;
  /** Subscribe to this session's pending approvals; returns the unsubscriber. */
  readonly watchApprovals?: (listener: (pending: readonly unknown[]) => void) => () => void;
}

function deltaOf(event: SessionEvent): Record<string, unknown> | undefined {
  if (event.type !== "assistant/chunk") return undefined;
  const { turn, step, chunk } = event.data;
  const base = { seq: event.seq, turn, step, index: "index" in chunk ? chunk.index : undefined };
  if (chunk.type === "text-delta") return { ...base, blockType: "text", text: chunk.text };
  if (chunk.type === "reasoning-delta") return { ...base, blockType: "reasoning", text: chunk.text };
  if (chunk.type === "tool-call-delta") {
    return { ...base, blockType: "tool-call", id: chunk.id, name: chunk.name, text: chunk.argumentsDelta };
  }
  return undefined;
}

/** Serve a session's log, then its live events, as SSE. */
export function streamSessionEvents(
  c: Context,
  ctx: HarnessCtx,
  agent: Agent,
  options: EventStreamOptions,
): Response {
  return streamSSE(c, async (stream: SSEStreamingApi) => {
    const queue = new ItemQueue();
    // Subscribe before reading the backlog: every event committed after it is
    // then in the queue, and seq tells the two apart.
    const unobserve = agent.session.observe((event) => queue.push({ kind: "event", event }));
    const offStatus = ctx.on("agent/status", (a, status) => {
      if (a === agent) queue.push({ kind: "status", status });
    });
    const offDisposed = ctx.on("agent/disposed", (a) => {
      if (a === agent) queue.push({ kind: "end" });
    });
    const unwatch = options.watchApprovals?.((pending) => queue.push({ kind: "approvals", pending }));
    const onAbort = () => queue.close();
    // Only the response body's cancellation means the client left: Deno aborts
    // `request.signal` as soon as a response is returned, streaming or not.
    stream.onAbort(onAbort);
    const keepAlive = setInterval(() => {
      stream.write(": keep-alive\n\n").catch(() => queue.close());
    }, options.keepAliveMs);
    try {
      const length = agent.session.seq;
      let next = Math.min(options.from, length);
      const backlog = agent.session.slice(next, length);
      await stream.writeSSE({
        event: "ready",
        data: JSON.stringify({ id: agent.id, seq: length, status: agent.status }),
      });
      for (const event of backlog) {
        if (stream.aborted) break;
        await stream.writeSSE({ event: "session", id: String(event.seq), data: JSON.stringify(event) });
        next = event.seq + 1;
      }
      if (!options.follow && !stream.aborted) {
        await stream.writeSSE({ event: "end", data: JSON.stringify({ id: agent.id, seq: next }) });
        return;
      }
      while (!stream.aborted) {
        const item = await queue.next();
        if (item === undefined) break;
        if (item.kind === "end") {
          await stream.writeSSE({ event: "end", data: JSON.stringify({ id: agent.id, seq: next }) });
          break;
        }
        if (item.kind === "approvals") {
          await stream.writeSSE({ event: "approvals", data: JSON.stringify({ pending: item.pending }) });
          continue;
        }
        if (item.kind === "status") {
          await stream.writeSSE({ event: "status", data: JSON.stringify({ status: item.status }) });
          continue;
        }
        const { event } = item;
        if (event.seq < next) continue;
        // Never skip a seq: fill any gap from the log (cannot happen with a synchronous observer, but costs nothing).
        for (const missed of agent.session.slice(next, event.seq)) {
          await stream.writeSSE({ event: "session", id: String(missed.seq), data: JSON.stringify(missed) });
        }
        await stream.writeSSE({ event: "session", id: String(event.seq), data: JSON.stringify(event) });
        next = event.seq + 1;
        const delta = options.deltas ? deltaOf(event) : undefined;
        if (delta !== undefined) await stream.writeSSE({ event: "delta", data: JSON.stringify(delta) });
      }
    } catch {
      // A write to a closed connection: the client is gone; nothing to report.
    } finally {
      clearInterval(keepAlive);
      unobserve();
      offStatus();
      offDisposed();
      unwatch?.();
      queue.close();
    }
  });
}

/** Serve a stored (not live) log as SSE, ending after it: nothing is resumed. */
export function streamStoredEvents(c: Context, id: string, events: readonly SessionEvent[], from: number): Response {
  return streamSSE(c, async (stream: SSEStreamingApi) => {
    try {
      await stream.writeSSE({ event: "ready", data: JSON.stringify({ id, seq: events.length, status: "stored" }) });
      for (let seq = from; seq < events.length && !stream.aborted; seq++) {
        await stream.writeSSE({ event: "session", id: String(seq), data: JSON.stringify(events[seq]) });
      }
      if (!stream.aborted) await stream.writeSSE({ event: "end", data: JSON.stringify({ id, seq: events.length }) });
    } catch {
      // The client is gone.
    }
  });
}
