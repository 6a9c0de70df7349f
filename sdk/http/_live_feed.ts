// Internal: the live tail of one agent, encoded once and shared by every event
// stream that follows it. Longer than the house limit on purpose: what enters
// a segment, when it seals and who may still read it are one bookkeeping.
//
// A stream used to get its own queue item, wake-up and write per event, so 40
// readers cost 40 times the per-event work (the fan-out, not the agent, was
// the cost, most of all through Deno's and Bun's web streams). A feed listens
// to the session once, writes each SSE frame once, as UTF-8, into the bytes
// of an open segment (`_frame_buffer.ts`: no string per frame, no join or
// encoding pass), and seals the segment 5 ms after its first event or at
// 256 KB. Without storage the frames of the committed events are written when
// the segment seals (or before any other frame or a reader's join), not inside
// each commit, and so are, with storage, the deltas sent ahead of storage; a
// run of one block's streamed chunks becomes one delta frame, its texts
// encoded in one pass.
// Each reader then writes whole segments, the same bytes for every reader that
// is caught up, with one wake-up per segment. A reader that is not at a
// segment's first seq (it joined mid-way, or wrote a backlog past it) writes
// its own copy of that segment without the frames it already sent, after any
// events it lacks from the log. A reader more than its `maxBuffered` items
// (events, however framed) behind in the segments sealed before the newest is
// dropped; segments no reader still needs are released.

import type { Agent, AgentStatus } from "../agent/agent.ts";
import type { HarnessCtx } from "../harness.ts";
import type { SessionStorage } from "../persistence/session_storage.ts";
import { storedPrefix } from "../persistence/_stored_prefix.ts";
import type { SessionEvent } from "../session/session_events.ts";
import { FrameBuffer } from "./_frame_buffer.ts";
import { continuesRun, isStreamedDelta } from "./_sse_frames.ts";

/** Frame writers shared with `_event_stream.ts`: each writes one whole frame into `out`. */
export interface FrameCodec {
  /** The `event: session` frame of an event, with its `<incarnation>:<seq>` id. */
  session(out: FrameBuffer, event: SessionEvent): void;
  /**
   * The `event: delta` frame of a streamed chunk, with its id when `withId`:
   * a new frame, or the last frame in `out` extended to carry it too (a run
   * of chunks of one block); `false` (nothing written) when it is not one.
   */
  delta(out: FrameBuffer, event: SessionEvent, withId: boolean): "new" | "extended" | false;
  /**
   * The delta frame that `delta()` wrote last, still the last in `out`, made
   * to carry the chunks `events[from]` to `events[to - 1]` too (each one
   * `continuesRun` the one before, the first that frame's last chunk);
   * `false` (nothing written) when it cannot.
   */
  extend(out: FrameBuffer, events: readonly SessionEvent[], from: number, to: number, withId: boolean): boolean;
  /** The next delta starts a frame of its own. */
  cut(): void;
  /** Any other frame (`status`, `approvals`, `end`). */
  other(out: FrameBuffer, event: string, data: unknown): void;
}

/** What the feed is made for: readers with the same options share one. */
export interface FeedOptions {
  /** Send each streamed chunk as `event: delta` (else as `event: session`, like every other event). */
  readonly deltas: boolean;
  /** Send only events on storage: set when the harness has storage. */
  readonly storage?: SessionStorage;
  /** Subscribe to this session's pending approvals; returns the unsubscriber. */
  readonly watchApprovals?: (agent: Agent, listener: (pending: readonly unknown[]) => void) => () => void;
}

/** One sealed run of frames, written as one chunk. */
export interface Segment {
  /** The frames, one after another, as UTF-8. */
  readonly bytes: Uint8Array;
  /**
   * Where each frame ends in `bytes`, and the seq of each frame a reader may
   * resume after (session frames, and delta frames with an id); `-1` for the
   * others (a delta sent ahead of storage among them).
   */
  readonly ends: readonly number[];
  readonly seqs: readonly number[];
  /** The seq of the first session frame it would hold (the feed's next seq when it opened). */
  readonly startSeq: number;
  /** The next seq after it. */
  readonly endSeq: number;
  /** Items in the feed before this segment: frames, and each chunk past the first that a delta frame carries. */
  readonly before: number;
  /** It ends the stream (`event: end`). */
  readonly end: boolean;
}

/** A reader's place in a feed. */
export interface FeedReader {
  /** The index of the next segment it writes. */
  pos: number;
  /** Frames of its first segment that entered before it joined: it skips those that are not session frames. */
  skip: number;
  readonly maxBuffered: number;
  /** Called once when the reader falls more than `maxBuffered` frames behind. */
  readonly drop: () => void;
}

/** A segment seals at this many bytes. */
const SEAL_LENGTH = 262_144;
/**
 * A segment seals this long after its first frame. Each write of a response
 * chunk has a fixed cost in the server (the largest on Deno), paid once per
 * reader: a few milliseconds gather a burst of deltas into one chunk, and do
 * not show in a stream a person reads.
 */
const SEAL_MS = 5;

/** The live tail of one agent for one kind of reader. */
export class LiveFeed {
  readonly agent: Agent;
  readonly options: FeedOptions;
  readonly #codec: FrameCodec;
  readonly #segments: Segment[] = [];
  /** The index of `#segments[0]`. */
  #base = 0;
  /** The open segment: its bytes, where each frame ends, and the seq of each. */
  readonly #out = new FrameBuffer();
  #ends: number[] = [];
  #seqs: number[] = [];
  #startSeq: number;
  /** The seq of the next session frame to enter the feed. */
  #nextSeq: number;
  /**
   * Items that entered the feed, sealed or not: frames, and each chunk a
   * delta frame carries past its first (a reader's bound counts what it lags
   * behind in events, however they are framed).
   */
  #count = 0;
  /** Items in the open segment. */
  #openItems = 0;
  #sealTimer: ReturnType<typeof setTimeout> | undefined;
  /** Without storage: the events below this seq are committed, and the ones from `#nextSeq` not yet written. */
  #pendingTo = 0;
  /** With storage and deltas: the events from `#previewFrom` below `#previewTo` are committed, their deltas not written. */
  #previewFrom: number;
  #previewTo: number;
  /** Writing the pending events: the segment seals after them. */
  #draining = false;
  #ending = false;
  #ended = false;
  #closed = false;
  #changed!: Promise<void>;
  #signal!: () => void;
  readonly #readers = new Set<FeedReader>();
  readonly #off: (() => void)[] = [];
  readonly #onIdle: () => void;

  constructor(ctx: HarnessCtx, agent: Agent, options: FeedOptions, codec: FrameCodec, onIdle: () => void) {
    this.agent = agent;
    this.options = options;
    this.#codec = codec;
    this.#onIdle = onIdle;
    this.#renew();
    const session = agent.session;
    this.#startSeq = this.#nextSeq = session.seq;
    this.#previewFrom = this.#previewTo = session.seq;
    const durable = options.storage !== undefined;
    if (!durable) {
      // Without storage a committed event is acknowledged: it enters at once.
      // Its frames are written when the segment seals (or before any other frame, or a reader's join): one
      // tight loop per segment instead of a frame writer call inside each commit of the agent's stream.
      this.#off.push(session.observe((event) => {
        this.#pendingTo = event.seq + 1;
        this.#sealTimer ??= setTimeout(() => this.#seal(false), SEAL_MS);
      }));
    } else if (options.deltas) {
      // With storage a streamed chunk goes out ahead of storage, without an id, in the segment it is committed in
      // (its frame written, like the committed events' without storage, when the segment seals or before any other
      // frame); its session frame is not sent (a reader that resumes gets it from the log).
      this.#off.push(session.observe((event) => {
        this.#previewTo = event.seq + 1;
        this.#sealTimer ??= setTimeout(() => this.#seal(false), SEAL_MS);
      }));
    }
    if (durable) {
      this.#off.push(ctx.on("session/durable", (s, nextSeq) => {
        if (s === session) this.#durable(nextSeq);
      }));
    }
    this.#off.push(ctx.on("agent/status", (a, status: AgentStatus) => {
      if (a === agent) this.#other("status", { status });
    }));
    // With storage the stream ends once the released session's last batch is written.
    this.#off.push(
      durable
        ? ctx.on("session/disposed", (s) => {
          if (s === session) void this.#end();
        })
        : ctx.on("agent/disposed", (a) => {
          if (a === agent) void this.#end();
        }),
    );
    const unwatch = options.watchApprovals?.(agent, (pending) => {
      this.#other("approvals", { pending });
    });
    if (unwatch !== undefined) this.#off.push(unwatch);
  }

  /** Whether the feed has sent `event: end` (or been closed); no reader may join it. */
  get ended(): boolean {
    return this.#ending || this.#ended;
  }

  /** Start reading at the segment being gathered now. */
  join(maxBuffered: number, drop: () => void): FeedReader {
    // The reader writes the log up to now itself, and skips the frames in the open segment: they are all written
    // first.
    this.#drain();
    // The reader skips the frames already in the open segment: none of them may grow to carry later chunks.
    this.#codec.cut();
    const reader: FeedReader = {
      pos: this.#base + this.#segments.length,
      skip: this.#ends.length,
      maxBuffered,
      drop,
    };
    this.#readers.add(reader);
    return reader;
  }

  /** The reader is done; the last one out closes the feed. */
  leave(reader: FeedReader): void {
    if (!this.#readers.delete(reader)) return;
    if (this.#readers.size === 0) this.close();
    else this.#trim();
  }

  /**
   * The segment at `reader.pos` once sealed; `undefined` once the feed ended
   * before it, or when `stop` settles first.
   */
  async segment(reader: FeedReader, stop: Promise<void>): Promise<Segment | undefined> {
    let stopped = false;
    const onStop = stop.then(() => {
      stopped = true;
    });
    while (!stopped) {
      const segment = this.#segments[reader.pos - this.#base];
      if (segment !== undefined) return segment;
      if (this.#ended) return undefined;
      await Promise.race([this.#changed, onStop]);
    }
    return undefined;
  }

  /** Stop listening and release every reader (they see the end of the feed). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#ended = true;
    clearTimeout(this.#sealTimer);
    for (const off of this.#off.splice(0)) off();
    this.#onIdle();
    this.#signal();
  }

  #renew(): void {
    this.#changed = new Promise((resolve) => (this.#signal = resolve));
  }

  /** With storage: the events below `nextSeq` are on storage; the deltas committed before go first (a block's deltas precede its end). */
  #durable(nextSeq: number): void {
    this.#drain();
    this.#events(nextSeq);
  }

  /** Session frames up to `nextSeq` (exclusive) enter the feed. */
  #events(nextSeq: number): void {
    if (nextSeq <= this.#nextSeq) return;
    if (!this.#ended) {
      const session = this.agent.session;
      // One event at a time needs no slice of the log.
      if (nextSeq === this.#nextSeq + 1) this.#session(session.at(this.#nextSeq)!);
      else {
        const events = session.slice(this.#nextSeq, nextSeq);
        const runs = this.options.deltas && this.options.storage === undefined;
        for (let i = 0; i < events.length; i++) {
          if (runs && isStreamedDelta(events[i])) i = this.#run(events, i, true);
          else this.#session(events[i]);
        }
      }
    }
    this.#nextSeq = nextSeq;
  }

  #session(event: SessionEvent): void {
    const { deltas, storage } = this.options;
    if (deltas && isStreamedDelta(event)) {
      // Sent ahead of storage when there is storage, else now, with its id.
      if (storage === undefined) this.#delta(event, true);
      return;
    }
    this.#codec.session(this.#out, event);
    this.#add(event.seq);
  }

  #other(event: string, data: unknown, seal = true): void {
    if (this.#ended) return;
    this.#drain();
    this.#codec.other(this.#out, event, data);
    this.#add(-1, seal);
  }

  /**
   * The delta frame of `events[i]`, a streamed chunk, that carries the chunks after it that continue it too (their
   * texts in one write); returns the index of the last chunk it carries.
   */
  #run(events: readonly SessionEvent[], i: number, withId: boolean): number {
    this.#delta(events[i], withId);
    let to = i + 1;
    while (to < events.length && continuesRun(events[to - 1], events[to])) to++;
    if (to === i + 1 || !this.#codec.extend(this.#out, events, i + 1, to, withId)) return i;
    this.#extend(withId ? events[to - 1].seq : -1, to - i - 1);
    return to - 1;
  }

  /** A streamed chunk's delta frame, new or the last one extended; with its id, a point a reader may resume after. */
  #delta(event: SessionEvent, withId: boolean): void {
    const written = this.#codec.delta(this.#out, event, withId);
    const seq = withId ? event.seq : -1;
    if (written === "new") this.#add(seq);
    else if (written === "extended") this.#extend(seq);
  }

  /** The last frame of the open segment now also carries `chunks` more, to the chunk `seq` (`-1`: sent ahead of storage). */
  #extend(seq: number, chunks = 1): void {
    const last = this.#ends.length - 1;
    this.#ends[last] = this.#out.length;
    this.#seqs[last] = seq;
    this.#count += chunks;
    this.#openItems += chunks;
    if (!this.#draining && this.#out.length >= SEAL_LENGTH) this.#seal(false);
  }

  /** A frame was written into the open segment. */
  #add(seq: number, seal = true): void {
    this.#ends.push(this.#out.length);
    this.#seqs.push(seq);
    this.#count++;
    this.#openItems++;
    if (!seal || this.#draining) return;
    if (this.#out.length >= SEAL_LENGTH) this.#seal(false);
    else this.#sealTimer ??= setTimeout(() => this.#seal(false), SEAL_MS);
  }

  async #end(): Promise<void> {
    if (this.ended) return;
    this.#ending = true;
    const { storage } = this.options;
    if (storage !== undefined) {
      try {
        // Capped at what this session stored itself, when the persistence plugin says: after a takeover, storage
        // counts another writer's log.
        const stored = (await storage.stat(this.agent.id))?.nextSeq ?? 0;
        this.#durable(Math.min(stored, storedPrefix(this.agent.session) ?? stored));
      } catch {
        // The stream still ends; a reader resumes from what it holds.
      }
    }
    if (this.#ended) return;
    this.#other("end", { id: this.agent.id, seq: this.#nextSeq }, false);
    this.#seal(true);
    this.close();
  }

  /** Write the frames of the committed events not written yet: without storage all, with storage their deltas. */
  #drain(): void {
    if (this.#draining || this.#ended) return;
    const pending = this.#pendingTo > this.#nextSeq, previews = this.#previewTo > this.#previewFrom;
    if (!pending && !previews) return;
    this.#draining = true;
    try {
      if (pending) this.#events(this.#pendingTo);
      if (previews) {
        const events = this.agent.session.slice(this.#previewFrom, this.#previewTo);
        this.#previewFrom = this.#previewTo;
        for (let i = 0; i < events.length; i++) if (isStreamedDelta(events[i])) i = this.#run(events, i, false);
      }
    } finally {
      this.#draining = false;
    }
  }

  #seal(end: boolean): void {
    this.#drain();
    clearTimeout(this.#sealTimer);
    this.#sealTimer = undefined;
    const ends = this.#ends;
    if (ends.length === 0) return;
    this.#segments.push({
      bytes: this.#out.take(),
      ends,
      seqs: this.#seqs,
      startSeq: this.#startSeq,
      endSeq: this.#nextSeq,
      before: this.#count - this.#openItems,
      end,
    });
    this.#ends = [];
    this.#seqs = [];
    this.#openItems = 0;
    this.#startSeq = this.#nextSeq;
    // A reader this far behind is dropped: its stream ends and it resumes from its Last-Event-ID. What it
    // lags is what it has not written of the segments before this one: a reader waiting for this one has
    // been offered nothing yet, however many items it holds.
    const sealed = this.#segments[this.#segments.length - 1];
    for (const reader of this.#readers) {
      const at = this.#segments[reader.pos - this.#base];
      if (at !== undefined && sealed.before - at.before > reader.maxBuffered) {
        this.#readers.delete(reader);
        reader.drop();
      }
    }
    this.#trim();
    const signal = this.#signal;
    this.#renew();
    signal();
  }

  /** Release the segments every reader has written. */
  #trim(): void {
    let min = this.#base + this.#segments.length;
    for (const reader of this.#readers) min = Math.min(min, reader.pos);
    if (min > this.#base) {
      this.#segments.splice(0, min - this.#base);
      this.#base = min;
    }
  }
}

const feeds = new WeakMap<Agent, LiveFeed[]>();

/** The feed of `agent` for readers with these options, made on first use. */
export function liveFeed(ctx: HarnessCtx, agent: Agent, options: FeedOptions, codec: FrameCodec): LiveFeed {
  let list = feeds.get(agent);
  if (list === undefined) feeds.set(agent, list = []);
  const found = list.find((f) =>
    !f.ended && f.options.deltas === options.deltas && f.options.storage === options.storage &&
    f.options.watchApprovals === options.watchApprovals
  );
  if (found !== undefined) return found;
  const feed: LiveFeed = new LiveFeed(ctx, agent, options, codec, () => {
    const i = list.indexOf(feed);
    if (i >= 0) list.splice(i, 1);
  });
  list.push(feed);
  return feed;
}
