// Internal: GET /sessions/:id/events — the session log as a resumable SSE stream.
// Longer than the house limit on purpose: backlog, live tail, incarnation reset
// and the bounded reader buffer are one resumption contract.
//
// Contract: every event is sent once, in seq order, with `id:
// <incarnation>:<seq>`; a client that reconnects with that id as
// `Last-Event-ID` gets seq+1 onwards. A streamed delta (text, reasoning or
// tool-call chunk) goes as `event: delta`, a small frame a client appends to
// its block (consecutive chunks of one block written together, in a segment
// of the live feed or in a backlog, go as one frame: `seq` to `last`, the id
// naming the last), every other event as `event: session` (the event itself);
// with `deltas: false`, every event as `event: session`. With storage, only events
// already on storage are sent (the stream follows the persistence plugin's
// `session/durable` announcements), so a client never holds an event that a
// restarted server lacks; a delta goes out ahead of storage as soon as it is
// committed, without an id (the resume point does not move), and is not sent
// again unless the stream is resumed from before it. The incarnation names one
// life of the log (its header's random `incarnation` token; `createdAt` for
// older logs): a `Last-Event-ID` of another incarnation (the session was
// deleted and created again, even within the same millisecond), or one beyond
// the log, gets `event: reset` and the log from seq 0, never a silent gap.
// Status changes (`event: status`) and `event: approvals` carry no id. A
// comment line is written every `keepAliveMs`. The stream ends (`event: end`)
// when the agent is disposed (or, with `follow: false`, right after the log).
// A client disconnect only unsubscribes — it never cancels.
//
// A session that is only in storage is read with `inspect()` (its stored
// records, without in-memory repair events) and tailed by the storage's own
// `follow()` when it has one (PostgreSQL: LISTEN/NOTIFY, so a stream served
// here carries what other instances write), else by polling `stat()`:
// reading takes no writer lease and resumes no agent. When an agent for it
// goes live in this harness, the stream carries on from the live session.
//
// Each stream buffers at most `maxBuffered` items; a reader that falls that
// far behind is dropped (the response ends with `event: dropped`, data
// `{"reason":"slow-reader"}`, instead of `event: end`) and resumes with its
// `Last-Event-ID`, so a stalled client costs the agent nothing.

import type { Context } from "hono";
import type { Agent } from "../agent/agent.ts";
import type { HarnessCtx } from "../harness.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionStorage } from "../persistence/session_storage.ts";
import type { Session, SessionHeader } from "../session/session.ts";
import { incarnationOf } from "../session/_incarnation.ts";
import { storedPrefix } from "../persistence/_stored_prefix.ts";
import type { SessionEvent } from "../session/session_events.ts";
import { SseBody } from "./_sse_body.ts";
import { type FeedReader, liveFeed, type Segment } from "./_live_feed.ts";
import { continuesRun, deltaRunFrame, FrameWriter, isStreamedDelta, otherFrame, sessionFrame } from "./_sse_frames.ts";
import { clientMessage } from "./_problem.ts";

/** The stored-session tail's wake-up (an agent for the session went live here). */
type Item = { readonly kind: "wake" };

/** A bounded push queue read by one consumer; `close()` wakes a pending read at once. */
class ItemQueue {
  readonly #items: Item[] = [];
  readonly #max: number;
  readonly #onOverflow: () => void;
  #wake: (() => void) | undefined;
  #closed = false;
  /** Why the queue closed early, if it did. */
  reason: "slow-reader" | undefined;

  constructor(max: number, onOverflow: () => void) {
    this.#max = max;
    this.#onOverflow = onOverflow;
  }

  push(item: Item): void {
    if (this.#closed) return;
    if (this.#items.length >= this.#max) return this.overflow();
    this.#items.push(item);
    this.#wake?.();
  }

  /** The reader fell too far behind: close, and end its response. */
  overflow(): void {
    if (this.#closed) return;
    this.reason = "slow-reader";
    this.close();
    this.#onOverflow();
  }

  close(): void {
    this.#closed = true;
    this.#items.length = 0;
    this.#wake?.();
    this.#onClose?.();
  }

  #onClose: (() => void) | undefined;
  #whenClosed: Promise<void> | undefined;

  /** Settles once the queue is closed. */
  whenClosed(): Promise<void> {
    return this.#whenClosed ??= this.#closed
      ? Promise.resolve()
      : new Promise<void>((resolve) => (this.#onClose = resolve));
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Items waiting to be read. */
  get size(): number {
    return this.#items.length;
  }

  /** The next item, or `undefined` once closed (pending items are dropped on close). */
  async next(timeoutMs?: number): Promise<Item | undefined> {
    while (!this.#closed) {
      const item = this.#items.shift();
      if (item !== undefined) return item;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        if (timeoutMs !== undefined) timer = setTimeout(resolve, timeoutMs);
      });
      clearTimeout(timer);
      this.#wake = undefined;
      if (timeoutMs !== undefined && this.#items.length === 0 && !this.#closed) return { kind: "wake" };
    }
    return undefined;
  }
}

export { incarnationOf };

/** A parsed `Last-Event-ID`: a seq, with the incarnation it came from (absent in the bare legacy form). */
export interface LastEventId {
  readonly incarnation?: string;
  readonly seq: number;
}

/** Parse `<incarnation>:<seq>` or a bare `<seq>`; `undefined` when malformed. */
export function parseLastEventId(text: string): LastEventId | undefined {
  const m = /^(?:([0-9a-z]{1,16}):)?(\d{1,15})$/.exec(text.trim());
  if (m === null) return undefined;
  return { ...(m[1] !== undefined ? { incarnation: m[1] } : {}), seq: Number(m[2]) };
}

/** Why a stream starts over from seq 0. */
export type ResetReason = "incarnation" | "ahead";

/** Options of {@linkcode streamSessionEvents} and {@linkcode streamStoredEvents}. */
export interface EventStreamOptions {
  /** The first seq to send. */
  readonly from: number;
  /** Start with `event: reset` (then the log from `from`, which is 0). */
  readonly reset?: ResetReason;
  /** Send each streamed delta as `event: delta` (else as `event: session`, like every other event). */
  readonly deltas: boolean;
  /** Keep the stream open for live events; `false` ends it after the log (`event: end`). */
  readonly follow: boolean;
  /** Milliseconds between keep-alive comments. */
  readonly keepAliveMs: number;
  /** The most items buffered for a reader before it is dropped. */
  readonly maxBuffered: number;
  /** Send only events on storage: set when the harness has storage. */
  readonly storage?: SessionStorage;
  /** Milliseconds between checks of a stored session for growth, while tailing it. */
  readonly pollMs: number;
  /** Subscribe to this session's pending approvals; returns the unsubscriber. */
  readonly watchApprovals?: (agent: Agent, listener: (pending: readonly unknown[]) => void) => () => void;
  /** This session's pending approvals now: a reader that joins a live session is told of them at once. */
  readonly pendingApprovals?: (agent: Agent) => readonly unknown[];
}

// Frames stay strings until a write encodes its whole chunk at once: an
// encode per frame costs more than the frame (most on Deno). Live frames are
// made once per feed (`_live_feed.ts`), not per reader; they are not cached
// on the events, which would keep a copy of the log in memory. The frames
// themselves are written by `_sse_frames.ts`.
const encoder = new TextEncoder();

/** The most chunks one delta frame of a backlog carries. */
const MAX_RUN = 1024;

/** The last frame of a reader dropped for falling behind (it carries no id: the resume point stays). */
const DROPPED = 'event: dropped\ndata: {"reason":"slow-reader"}\n\n';

/** One open stream: where it is in the log, and how to write to it (exported for tests). */
export class Writer {
  next: number;
  readonly queue: ItemQueue;
  readonly #stream: SseBody;
  readonly #incarnation: string;
  readonly #deltas: boolean;

  constructor(stream: SseBody, incarnation: string, options: EventStreamOptions) {
    const { from, maxBuffered } = options;
    this.#stream = stream;
    this.#incarnation = incarnation;
    this.#deltas = options.deltas;
    this.next = from;
    // A stalled reader blocks the pending write; aborting the response releases it.
    this.queue = new ItemQueue(maxBuffered, () => {
      // The reason goes after what is already queued; the response then ends without `event: end`.
      void stream.write(DROPPED);
      stream.abort();
    });
  }

  get gone(): boolean {
    return this.#stream.aborted || this.queue.closed;
  }

  // Frames wait here and go out as one write when the reader's queue is drained
  // (or past 64 KB): one write per burst instead of one per event and reader.
  readonly #pending: string[] = [];
  #pendingLength = 0;

  #add(frame: string): void {
    this.#pending.push(frame);
    this.#pendingLength += frame.length;
  }

  /** Write what is pending, as one chunk. */
  async flush(): Promise<void> {
    if (this.#pending.length === 0) return;
    const out = this.#pending.length === 1 ? this.#pending[0] : this.#pending.join("");
    this.#pending.length = 0;
    this.#pendingLength = 0;
    if (this.gone) return;
    await this.#stream.write(encoder.encode(out));
  }

  /**
   * Write a segment of a live feed: its shared bytes when this stream is at
   * its first seq, else the events it lacks from the log and the segment's
   * frames it has not sent.
   */
  async segment(segment: Segment, reader: FeedReader, session: Session): Promise<void> {
    if (segment.startSeq === this.next && reader.skip === 0) {
      await this.flush();
      if (this.gone) return;
      this.next = segment.endSeq;
      await this.#stream.write(segment.bytes);
      return;
    }
    if (segment.startSeq > this.next) await this.events(session.slice(this.next, segment.startSeq));
    await this.flush();
    // The frames it has not sent, as runs of the segment's bytes: not those of events it wrote from the log,
    // nor the others that entered before it joined (a delta sent ahead of storage then has a seq at or past
    // the end of the log it wrote: it was committed after it joined).
    const { bytes, ends, seqs } = segment;
    const runs: number[] = [];
    for (let i = 0; i < ends.length; i++) {
      const seq = seqs[i];
      if (seq < 0 ? i < reader.skip : seq < this.next) continue;
      const start = i === 0 ? 0 : ends[i - 1];
      if (runs.length > 0 && runs[runs.length - 1] === start) runs[runs.length - 1] = ends[i];
      else runs.push(start, ends[i]);
      if (seq >= 0) this.next = seq + 1;
    }
    // Streamed chunks whose delta went out ahead of storage have no frame of their own here.
    if (segment.endSeq > this.next) this.next = segment.endSeq;
    reader.skip = 0;
    if (runs.length === 0 || this.gone) return;
    if (runs.length === 2) return await this.#stream.write(bytes.subarray(runs[0], runs[1]));
    let length = 0;
    for (let r = 0; r < runs.length; r += 2) length += runs[r + 1] - runs[r];
    const out = new Uint8Array(length);
    for (let r = 0, at = 0; r < runs.length; r += 2) {
      out.set(bytes.subarray(runs[r], runs[r + 1]), at);
      at += runs[r + 1] - runs[r];
    }
    await this.#stream.write(out);
  }

  /** Write the frames of `events` from `next` on; a run of streamed chunks of one block goes as one delta frame. */
  async events(events: readonly SessionEvent[]): Promise<void> {
    const run: SessionEvent[] = [];
    const endRun = () => {
      if (run.length === 0) return;
      // Every chunk of a run is a streamed delta, so deltaRunFrame writes a frame.
      this.#add(deltaRunFrame(run, this.#incarnation)!);
      run.length = 0;
    };
    for (const event of events) {
      if (this.gone) return;
      if (event.seq !== this.next) continue;
      this.next = event.seq + 1;
      if (this.#deltas && isStreamedDelta(event)) {
        if (run.length > 0 && !continuesRun(run[run.length - 1], event)) endRun();
        run.push(event);
        if (run.length < MAX_RUN) continue;
        endRun();
      } else {
        endRun();
        this.#add(sessionFrame(event, this.#incarnation));
      }
      if (this.#pendingLength >= 65536) await this.flush();
    }
    endRun();
  }

  async send(event: string, data: unknown): Promise<void> {
    this.#add(otherFrame(event, data));
    if (this.#pendingLength >= 65536) await this.flush();
  }
}

function open(
  c: Context,
  id: string,
  incarnation: string,
  options: EventStreamOptions,
  body: (w: Writer) => Promise<void>,
): Response {
  const stream = new SseBody();
  const w = new Writer(stream, incarnation, options);
  // Only the response body's cancellation means the client left: Deno aborts
  // `request.signal` as soon as a response is returned, streaming or not.
  stream.onAbort(() => w.queue.close());
  const keepAlive = setInterval(() => void stream.write(": keep-alive\n\n"), options.keepAliveMs);
  void (async () => {
    try {
      await body(w);
      await w.flush();
    } catch (error) {
      // A write to a closed connection: the client is gone; nothing to report. Anything else (the log could not be
      // read, say) ends the stream as the reader expects, with `end`, and says why.
      if (!w.gone) {
        const code = HarnessError.isInstance(error) ? error.code : "INTERNAL";
        const message = clientMessage(code, error instanceof Error ? error.message : String(error));
        await w.send("end", { id, seq: w.next, error: { code, message } }).then(() => w.flush()).catch(() => {});
      }
    } finally {
      clearInterval(keepAlive);
      w.queue.close();
      stream.close();
    }
  })();
  c.header("Content-Type", "text/event-stream");
  c.header("Cache-Control", "no-cache");
  c.header("Connection", "keep-alive");
  return c.newResponse(stream.readable);
}

async function ready(
  w: Writer,
  id: string,
  incarnation: string,
  seq: number,
  status: string,
  options: EventStreamOptions,
) {
  await w.send("ready", { id, seq, status, incarnation });
  if (options.reset !== undefined) await w.send("reset", { id, incarnation, seq: 0, reason: options.reset });
}

/**
 * Follow a live agent from `w.next` until it is disposed or the reader leaves:
 * the log up to now, then the agent's shared live feed, segment by segment.
 */
async function followLive(w: Writer, ctx: HarnessCtx, agent: Agent, options: EventStreamOptions): Promise<void> {
  const durable = options.storage !== undefined;
  const session = agent.session;
  const backlog = async () => {
    let limit = session.seq;
    if (durable) {
      // Everything committed so far is durable once this barrier passes.
      try {
        await agent.flushed();
      } catch {
        // What this session itself stored, not what storage holds now: after another writer took the session over,
        // storage's count is that writer's log, and this session's events past its own stored prefix are not there.
        limit = Math.min(limit, storedPrefix(session) ?? 0);
      }
    }
    await w.events(session.slice(w.next, limit));
  };
  if (!options.follow) {
    await backlog();
    await w.send("end", { id: agent.id, seq: w.next });
    return;
  }
  const feed = liveFeed(ctx, agent, options, new FrameWriter(incarnationOf(session.header)));
  // Joined before the backlog is read, so nothing falls between the two.
  const reader = feed.join(options.maxBuffered, () => w.queue.overflow());
  try {
    // The feed carries changes of the pending approvals only: a reader that joins (or rejoins) while some are
    // pending gets them now, read as it joins so that no change falls between the list and the feed.
    const pending = options.pendingApprovals?.(agent) ?? [];
    if (pending.length > 0) await w.send("approvals", { pending });
    await backlog();
    await w.flush();
    const stop = w.queue.whenClosed();
    while (!w.gone) {
      const segment = await feed.segment(reader, stop);
      if (segment === undefined || w.gone) break;
      await w.segment(segment, reader, session);
      reader.pos++;
      if (segment.end) break;
    }
  } finally {
    feed.leave(reader);
  }
}

/** Serve a live agent's log, then its live events, as SSE. */
export function streamSessionEvents(
  c: Context,
  ctx: HarnessCtx,
  agent: Agent,
  options: EventStreamOptions,
): Response {
  const incarnation = incarnationOf(agent.session.header);
  return open(c, agent.id, incarnation, options, async (w) => {
    await ready(w, agent.id, incarnation, agent.session.seq, agent.status, options);
    await followLive(w, ctx, agent, options);
  });
}

/** What a stream over a stored (not live) session needs. */
export interface StoredSource {
  readonly id: string;
  readonly header: SessionHeader;
  /** The stored records (no in-memory repair events). */
  readonly events: readonly SessionEvent[];
  readonly storage: SessionStorage;
  readonly ctx: HarnessCtx;
  /** The live agent of the id, once there is one. */
  live(): Agent | undefined;
}

function storedRecords(loaded: { events: readonly SessionEvent[]; repair: { syntheticEvents: readonly unknown[] } }) {
  return loaded.events.slice(0, loaded.events.length - loaded.repair.syntheticEvents.length);
}

/** The stored records of a session, as `inspect()` reads them without its in-memory repair. */
export async function readStored(storage: SessionStorage, id: string): Promise<
  { header: SessionHeader; events: readonly SessionEvent[] }
> {
  const loaded = await storage.inspect(id);
  return { header: loaded.header, events: storedRecords(loaded) };
}

/**
 * Serve a stored session: its records, then (with `follow`) whatever is
 * appended to storage, polled without any lease; when an agent for it goes
 * live here, the stream follows the live session.
 */
export function streamStoredEvents(c: Context, source: StoredSource, options: EventStreamOptions): Response {
  const incarnation = incarnationOf(source.header);
  return open(c, source.id, incarnation, options, async (w) => {
    const { id, storage, ctx } = source;
    await ready(w, id, incarnation, source.events.length, "stored", options);
    await w.events(source.events.slice(w.next));
    if (!options.follow) {
      await w.send("end", { id, seq: w.next });
      return;
    }
    if (storage.follow !== undefined) {
      // The storage can be followed (shared by other instances, e.g. PostgreSQL): its own tail
      // carries what any writer appends, here or elsewhere, without polling the whole log.
      const abort = new AbortController();
      const watch = setInterval(() => w.gone && abort.abort(), 500);
      try {
        await w.flush();
        // The life whose events were sent: a log deleted and created again since (before the tail's first read, too)
        // ends the stream, as the polling tail does, instead of carrying the new life under this one's ids.
        for await (const event of storage.follow(id, { fromSeq: w.next, signal: abort.signal, incarnation })) {
          if (w.gone) break;
          await w.events([event]);
          await w.flush();
        }
      } finally {
        clearInterval(watch);
        abort.abort();
      }
      await w.send("end", { id, seq: w.next });
      await w.flush();
      return;
    }
    const offCreated = ctx.on("agent/created", (agent) => {
      if (agent.id === id) w.queue.push({ kind: "wake" });
    });
    try {
      while (!w.gone) {
        let live: Agent | undefined;
        try {
          live = source.live();
        } catch (error) {
          // The harness was disposed (its agents are gone): the stream ends with it.
          if (!HarnessError.isInstance(error, "SERVICE_MISSING")) throw error;
          await w.send("end", { id, seq: w.next });
          return;
        }
        if (live !== undefined) {
          // Deleted and created again here: the new life is another log.
          if (incarnationOf(live.session.header) === incarnation) return await followLive(w, ctx, live, options);
          await w.send("end", { id, seq: w.next });
          return;
        }
        const stat = await storage.stat(id);
        if (stat === undefined || incarnationOf(stat.header) !== incarnation) {
          // Deleted (or deleted and created again): this life of the log is over.
          await w.send("end", { id, seq: w.next });
          return;
        }
        if (stat.nextSeq > w.next) await w.events((await readStored(storage, id)).events.slice(w.next));
        await w.flush();
        const item = await w.queue.next(options.pollMs);
        if (item === undefined) return;
      }
    } finally {
      offCreated();
    }
  });
}
