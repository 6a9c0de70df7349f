// Internal: the live tail of one agent, encoded once and shared by every event
// stream that follows it.
//
// A stream used to get its own queue item, wake-up and write per event, so 40
// readers cost 40 times the per-event work (the fan-out, not the agent, was
// the cost, most of all through Deno's and Bun's web streams). A feed listens
// to the session once, appends each SSE frame once to an open segment, and
// seals the segment (its frames joined and encoded once) 5 ms after its first
// frame or at 256 K characters. Each
// reader then writes whole segments, the same bytes for every reader that is
// caught up, with one wake-up per segment. A reader that is not at a segment's
// first seq (it joined mid-way, or wrote a backlog past it) writes its own
// copy of that segment without the frames it already sent, after any events
// it lacks from the log. Readers more than their `maxBuffered` frames behind
// are dropped; segments no reader still needs are released.

import type { Agent, AgentStatus } from "../agent/agent.ts";
import type { HarnessCtx } from "../harness.ts";
import type { SessionStorage } from "../persistence/session_storage.ts";
import type { SessionEvent } from "../session/session_events.ts";

/** Frame encoders shared with `_event_stream.ts` (each caches per event). */
export interface FrameCodec {
  /** The `event: session` frame of an event, with its `<incarnation>:<seq>` id. */
  session(event: SessionEvent): string;
  /** The `event: delta` frame of a streamed chunk, if it is one. */
  delta(event: SessionEvent): string | undefined;
  /** Any other frame (`status`, `approvals`, `end`). */
  other(event: string, data: unknown): string;
}

/** What the feed is made for: readers with the same options share one. */
export interface FeedOptions {
  /** Send live streaming deltas. */
  readonly deltas: boolean;
  /** Send only events on storage: set when the harness has storage. */
  readonly storage?: SessionStorage;
  /** Subscribe to this session's pending approvals; returns the unsubscriber. */
  readonly watchApprovals?: (agent: Agent, listener: (pending: readonly unknown[]) => void) => () => void;
}

/** One sealed run of frames, written as one chunk. */
export interface Segment {
  /** The frames, concatenated and encoded once. */
  readonly bytes: Uint8Array;
  /** The frames one by one, with the seq of each session frame (`-1` for the others). */
  readonly frames: readonly string[];
  readonly seqs: readonly number[];
  /** The seq of the first session frame it would hold (the feed's next seq when it opened). */
  readonly startSeq: number;
  /** The next seq after it. */
  readonly endSeq: number;
  /** Frames in the feed before this segment. */
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

/** A segment seals at this many UTF-16 code units (about as many bytes for SSE text). */
const SEAL_LENGTH = 262_144;
/**
 * A segment seals this long after its first frame. Each write of a response
 * chunk has a fixed cost in the server (the largest on Deno), paid once per
 * reader: a few milliseconds gather a burst of deltas into one chunk, and do
 * not show in a stream a person reads.
 */
const SEAL_MS = 5;
const encoder = new TextEncoder();

/** The live tail of one agent for one kind of reader. */
export class LiveFeed {
  readonly agent: Agent;
  readonly options: FeedOptions;
  readonly #codec: FrameCodec;
  readonly #segments: Segment[] = [];
  /** The index of `#segments[0]`. */
  #base = 0;
  #frames: string[] = [];
  #seqs: number[] = [];
  #length = 0;
  #startSeq: number;
  /** The seq of the next session frame to enter the feed. */
  #nextSeq: number;
  /** Frames that entered the feed, sealed or not. */
  #count = 0;
  #sealTimer: ReturnType<typeof setTimeout> | undefined;
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
    const durable = options.storage !== undefined;
    if (!durable || options.deltas) {
      this.#off.push(session.observe((event) => {
        // Without storage a committed event is acknowledged: it enters at once.
        if (!durable) this.#events(event.seq + 1);
        if (options.deltas) {
          const frame = codec.delta(event);
          if (frame !== undefined) this.#add(frame, -1);
        }
      }));
    }
    if (durable) {
      this.#off.push(ctx.on("session/durable", (s, nextSeq) => {
        if (s === session) this.#events(nextSeq);
      }));
    }
    this.#off.push(ctx.on("agent/status", (a, status: AgentStatus) => {
      if (a === agent) this.#add(codec.other("status", { status }), -1);
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
      this.#add(codec.other("approvals", { pending }), -1);
    });
    if (unwatch !== undefined) this.#off.push(unwatch);
  }

  /** Whether the feed has sent `event: end` (or been closed); no reader may join it. */
  get ended(): boolean {
    return this.#ending || this.#ended;
  }

  /** Start reading at the segment being gathered now. */
  join(maxBuffered: number, drop: () => void): FeedReader {
    const reader: FeedReader = {
      pos: this.#base + this.#segments.length,
      skip: this.#frames.length,
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

  /** Session frames up to `nextSeq` (exclusive) enter the feed. */
  #events(nextSeq: number): void {
    if (nextSeq <= this.#nextSeq) return;
    for (const event of this.agent.session.slice(this.#nextSeq, nextSeq)) {
      this.#add(this.#codec.session(event), event.seq);
    }
    this.#nextSeq = nextSeq;
  }

  #add(frame: string, seq: number, seal = true): void {
    if (this.#ended) return;
    this.#frames.push(frame);
    this.#seqs.push(seq);
    this.#length += frame.length;
    this.#count++;
    if (!seal) return;
    if (this.#length >= SEAL_LENGTH) this.#seal(false);
    else this.#sealTimer ??= setTimeout(() => this.#seal(false), SEAL_MS);
  }

  async #end(): Promise<void> {
    if (this.ended) return;
    this.#ending = true;
    const { storage } = this.options;
    if (storage !== undefined) {
      try {
        this.#events((await storage.stat(this.agent.id))?.nextSeq ?? 0);
      } catch {
        // The stream still ends; a reader resumes from what it holds.
      }
    }
    if (this.#ended) return;
    this.#add(this.#codec.other("end", { id: this.agent.id, seq: this.#nextSeq }), -1, false);
    this.#seal(true);
    this.close();
  }

  #seal(end: boolean): void {
    clearTimeout(this.#sealTimer);
    this.#sealTimer = undefined;
    if (this.#frames.length === 0) return;
    const frames = this.#frames;
    const bytes = encoder.encode(frames.length === 1 ? frames[0] : frames.join(""));
    this.#segments.push({
      bytes,
      frames,
      seqs: this.#seqs,
      startSeq: this.#startSeq,
      endSeq: this.#nextSeq,
      before: this.#count - frames.length,
      end,
    });
    this.#frames = [];
    this.#seqs = [];
    this.#length = 0;
    this.#startSeq = this.#nextSeq;
    // A reader this far behind is dropped: its stream ends and it resumes from its Last-Event-ID.
    for (const reader of this.#readers) {
      const at = this.#segments[reader.pos - this.#base];
      if (at !== undefined && this.#count - at.before > reader.maxBuffered) {
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
