import { describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import fc from "fast-check";
import { appendChunk, Session } from "../session/session.ts";
import type { SessionEvent } from "../session/session_events.ts";
import type { StreamChunk } from "../llm/stream_chunk.ts";
import { FrameBuffer } from "./_frame_buffer.ts";
import {
  continuesRun,
  deltaFrame,
  deltaOf,
  deltaRunFrame,
  fastChunkJson,
  FrameWriter,
  isStreamedDelta,
  otherFrame,
  sessionFrame,
} from "./_sse_frames.ts";

// Each property runs this many cases: 1,000 by default, more with DSH_PROPERTY_RUNS.
const RUNS = Math.max(1000, Number(process.env.DSH_PROPERTY_RUNS ?? 0) || 0);

/** The frames as they were made before the hand encoder: `JSON.stringify` of the event and of its delta object. */
function referenceSession(event: SessionEvent, incarnation: string): string {
  return `event: session\ndata: ${JSON.stringify(event)}\nid: ${incarnation}:${event.seq}\n\n`;
}
/** The frame of a run of chunks: `JSON.stringify` of the first one's delta with the joined text and `last`. */
function referenceRun(run: readonly SessionEvent[], incarnation?: string): string {
  if (run.length === 1) return referenceDelta(run[0], incarnation)!;
  const deltas = run.map((e) => deltaOf(e)!);
  const last = run[run.length - 1].seq;
  const data = { ...deltas[0], text: deltas.map((d) => d.text).join(""), last };
  const id = incarnation === undefined ? "" : `\nid: ${incarnation}:${last}`;
  return `event: delta\ndata: ${JSON.stringify(data)}${id}\n\n`;
}

function referenceDelta(event: SessionEvent, incarnation?: string): string | undefined {
  const delta = deltaOf(event);
  if (delta === undefined) return undefined;
  const id = incarnation === undefined ? "" : `\nid: ${incarnation}:${event.seq}`;
  return `event: delta\ndata: ${JSON.stringify(delta)}${id}\n\n`;
}

// Any UTF-16 code unit, lone surrogates and control characters included.
const anyText = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) });
const text = fc.oneof(
  fc.string(),
  anyText,
  fc.constantFrom("", '"', "\\", "\n\r\t\b\f", "\u2028\u2029", "\ud800", "é😀"),
);
const count = fc.oneof(fc.nat(), fc.constantFrom(0, 1, 2 ** 53 - 1));
// Numbers JSON writes in other ways (exponents, -0, NaN and infinities as null), and values of other types.
const oddNumber = fc.oneof(
  fc.double(),
  fc.constantFrom(-0, 1e21, 1.5e-7, Number.NaN, Infinity, -Infinity, -1),
);
const oddValue = fc.oneof(oddNumber, fc.string(), fc.constant(null), fc.constant(undefined), fc.constant(true));

const deltaChunk = fc.oneof(
  fc.record({ type: fc.constant("text-delta"), index: count, text }),
  fc.record({ type: fc.constant("reasoning-delta"), index: count, text }),
  fc.record({ type: fc.constant("tool-call-delta"), index: count, id: text, argumentsDelta: text }),
  fc.record({ type: fc.constant("tool-call-delta"), index: count, id: text, name: text, argumentsDelta: text }),
);
const otherChunk = fc.oneof(
  fc.record({ type: fc.constant("block-start"), index: count, blockType: fc.constantFrom("text", "tool-call") }),
  fc.record({ type: fc.constant("block-end"), index: count, block: fc.record({ type: fc.constant("text"), text }) }),
  fc.record({ type: fc.constant("usage"), usage: fc.record({ inputTokens: count, outputTokens: count }) }),
  fc.record({ type: fc.constant("finish"), reason: fc.record({ kind: fc.constant("stop") }) }),
);

/** Change an object the way a hand encoder could get wrong: a value, a key, the key order, a `toJSON`. */
function bend(value: Record<string, unknown>, how: number, odd: unknown): Record<string, unknown> {
  const keys = Object.keys(value);
  const key = keys[how % keys.length];
  switch (Math.floor(how / 8) % 6) {
    case 0:
      return { ...value, [key]: odd };
    case 1: {
      const { [key]: _dropped, ...rest } = value;
      return rest;
    }
    case 2:
      return { ...value, extra: odd };
    case 3:
      return Object.fromEntries(Object.entries(value).reverse());
    case 4: {
      // Not one of its keys, but JSON.stringify calls it.
      const copy = { ...value };
      Object.defineProperty(copy, "toJSON", { value: () => ({ replaced: how }), enumerable: false });
      return copy;
    }
    default: {
      const copy = { ...value };
      Object.defineProperty(copy, key, { value: value[key], enumerable: false });
      return copy;
    }
  }
}

const bent = fc.record({ how: fc.nat(), odd: oddValue, level: fc.constantFrom("event", "data", "chunk") });

function eventOf(seq: number, time: number, turn: number, step: number, chunk: unknown): SessionEvent {
  return { type: "assistant/chunk", seq, time, data: { turn, step, chunk } } as SessionEvent;
}

const event = fc.record({
  seq: count,
  time: count,
  turn: fc.integer({ min: 1, max: 1000 }),
  step: fc.integer({ min: 1, max: 1000 }),
  chunk: fc.oneof(deltaChunk, otherChunk),
  frozen: fc.boolean(),
}).map(({ seq, time, turn, step, chunk, frozen }) => {
  const e = eventOf(seq, time, turn, step, chunk);
  return frozen ? Object.freeze(e) : e;
});

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The frames of `events` as the byte writers write them into one small buffer
 * (it grows): for each event its delta frame when there is one (with its id
 * when `withId`, else without), or else its session frame, or both in either
 * order (`order`: 0 session only, 1 delta only, 2 session then delta, 3 delta
 * then session), taken after every `takeEvery` events, against the reference
 * frames.
 */
function assertBytes(events: readonly SessionEvent[], takeEvery: number, withId = false, order = 2): void {
  const out = new FrameBuffer(16);
  const w = new FrameWriter("inc0");
  const incarnation = withId ? "inc0" : undefined;
  // The frames written since the last take, and the run of chunks the last one carries, if it is a delta frame
  // that a next chunk may extend (of frozen events).
  let frames: string[] = [];
  let run: SessionEvent[] | undefined;
  const check = () => {
    const bytes = out.take();
    const expected = frames.join("");
    assert.equal(decoder.decode(bytes), expected);
    assert.deepEqual(bytes, encoder.encode(expected));
    frames = [];
    run = undefined;
  };
  const session = (e: SessionEvent) => {
    w.session(out, e);
    frames.push(referenceSession(e, "inc0"));
    run = undefined;
  };
  const delta = (e: SessionEvent) => {
    const written = w.delta(out, e, withId);
    if (e.type !== "assistant/chunk") {
      assert.equal(written, false);
      return;
    }
    if (run !== undefined && continuesRun(run[run.length - 1], e)) {
      assert.equal(written, "extended");
      run.push(e);
      frames[frames.length - 1] = referenceRun(run, incarnation);
      return;
    }
    const reference = referenceDelta(e, incarnation);
    assert.equal(written, reference === undefined ? false : "new");
    run = reference !== undefined && Object.isFrozen(e) ? [e] : undefined;
    if (reference !== undefined) frames.push(reference);
  };
  events.forEach((e, i) => {
    if (order === 0) session(e);
    else if (order === 1) delta(e);
    else if (order === 2) (session(e), delta(e));
    else (delta(e), session(e));
    if ((i + 1) % takeEvery === 0) check();
  });
  w.other(out, "end", { id: "s\u00e9", seq: events.length });
  frames.push(otherFrame("end", { id: "s\u00e9", seq: events.length }));
  check();
}

/**
 * The bytes of `events` (streamed chunks) written as a live feed drains them,
 * `takeEvery` at a time: each chunk that starts a frame by `delta()`, and the
 * chunks after it that continue it in one `extend()`. They must be the bytes
 * that `delta()` chunk by chunk gives (which `assertBytes` checks against the
 * references).
 */
function assertBatchedBytes(events: readonly SessionEvent[], takeEvery: number, withId: boolean): void {
  const one = new FrameBuffer(16), batched = new FrameBuffer(16);
  const w1 = new FrameWriter("inc0"), w2 = new FrameWriter("inc0");
  for (let start = 0; start < events.length; start += takeEvery) {
    const batch = events.slice(start, start + takeEvery);
    for (const e of batch) w1.delta(one, e, withId);
    for (let i = 0; i < batch.length; i++) {
      w2.delta(batched, batch[i], withId);
      let to = i + 1;
      while (to < batch.length && continuesRun(batch[to - 1], batch[to])) to++;
      if (to > i + 1) {
        assert.ok(w2.extend(batched, batch, i + 1, to, withId), "a run continues the frame just written");
        i = to - 1;
      }
    }
    assert.equal(decoder.decode(batched.take()), decoder.decode(one.take()));
  }
  // A frame taken out of the buffer, or written with the other id rule, is not extended.
  if (events.length > 1 && continuesRun(events[0], events[1])) {
    w2.delta(batched, events[0], withId);
    batched.take();
    assert.equal(w2.extend(batched, events, 1, 2, withId), false);
    w2.delta(batched, events[0], withId);
    assert.equal(w2.extend(batched, events, 1, 2, !withId), false);
  }
}

/** A chunk event bent at the event, its data or its chunk, frozen. */
function bentEvent(
  seq: number,
  time: number,
  data: unknown,
  { how, odd, level }: { how: Parameters<typeof bend>[1]; odd: Parameters<typeof bend>[2]; level: string },
): SessionEvent {
  const { turn, step, chunk } = data as { turn: number; step: number; chunk: Record<string, unknown> };
  const e = level === "event"
    ? bend({ type: "assistant/chunk", seq, time, data }, how, odd)
    : level === "data"
    ? { type: "assistant/chunk", seq, time, data: bend({ turn, step, chunk }, how, odd) }
    : eventOf(seq, time, turn, step, bend(chunk, how, odd));
  return Object.freeze(e) as unknown as SessionEvent;
}

describe("FrameWriter", () => {
  it("write the UTF-8 bytes of the reference frames, one segment after another", () => {
    fc.assert(
      fc.property(
        fc.array(event, { maxLength: 8 }),
        fc.integer({ min: 1, max: 4 }),
        fc.boolean(),
        fc.integer({ min: 0, max: 3 }),
        assertBytes,
      ),
      { numRuns: RUNS },
    );
  });

  it("write the reference frames of events of other shapes", () => {
    fc.assert(
      fc.property(event, bent, ({ seq, time, data }, { how, odd, level }) => {
        const frozen = bentEvent(seq, time, data, { how, odd, level });
        try {
          referenceDelta(frozen);
        } catch {
          assert.throws(() => new FrameWriter("i").delta(new FrameBuffer(), frozen, false));
          return;
        }
        assertBytes([frozen], 1);
        assertBytes([frozen], 1, true);
      }),
      { numRuns: RUNS },
    );
  });

  it("write a run of one block's chunks as one delta frame, the id naming its last chunk", () => {
    // Consecutive seqs, mostly one block: what a model stream commits. A step to another block, a tool
    // call that names itself again, or a text ending inside a surrogate pair starts a frame of its own.
    const piece = fc.oneof(
      { weight: 4, arbitrary: text },
      { weight: 1, arbitrary: fc.constantFrom("\ud83d", "\ude00", "a\ud83d", "\ude00b", "😀") },
    );
    const step = fc.record({
      text: piece,
      block: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(2) }),
      kind: fc.oneof(
        { weight: 6, arbitrary: fc.constant("same") },
        { weight: 1, arbitrary: fc.constantFrom("text-delta", "reasoning-delta", "tool-call-delta") },
      ),
      named: fc.oneof({ weight: 6, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    });
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 40 }),
        fc.boolean(),
        fc.nat(1000),
        (steps, takeEvery, withId, seq0) => {
          let kind = "text-delta";
          const events = steps.map((st, i) => {
            if (st.kind !== "same") kind = st.kind;
            const chunk = kind === "tool-call-delta"
              ? {
                type: kind,
                index: st.block,
                id: `call${st.block}`,
                ...(st.named ? { name: "n" } : {}),
                argumentsDelta: st.text,
              }
              : { type: kind, index: st.block, text: st.text };
            return Object.freeze(eventOf(seq0 + i, 1_700_000_000_000 + i, 2, 3, chunk));
          });
          assertBytes(events, takeEvery, withId, 1);
          assertBatchedBytes(events, takeEvery, withId);
          // The frame's text is the run's text; its JSON is exactly JSON.stringify's.
          const frame = deltaRunFrame(events.slice(0, 1), withId ? "i" : undefined)!;
          assert.equal(frame, referenceRun(events.slice(0, 1), withId ? "i" : undefined));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("continue a run only with the next chunk of the same block, kind and call", () => {
    const e = (seq: number, chunk: Record<string, unknown>, turn = 1, step = 1) =>
      Object.freeze(eventOf(seq, 1, turn, step, chunk));
    const text = (seq: number, t: string, index = 0) => e(seq, { type: "text-delta", index, text: t });
    assert.ok(continuesRun(text(1, "a"), text(2, "b")));
    assert.ok(!continuesRun(text(1, "a"), text(3, "b")), "not the next seq");
    assert.ok(!continuesRun(text(1, "a"), text(2, "b", 1)), "another block");
    assert.ok(!continuesRun(text(1, "a"), e(2, { type: "reasoning-delta", index: 0, text: "b" })), "another kind");
    assert.ok(!continuesRun(text(1, "a"), e(2, { type: "text-delta", index: 0, text: "b" }, 1, 2)), "another step");
    assert.ok(!continuesRun(text(1, "a"), e(2, { type: "text-delta", index: 0, text: "b" }, 2, 1)), "another turn");
    assert.ok(!continuesRun(text(1, "a\ud83d"), text(2, "\ude00")), "a surrogate pair across chunks");
    assert.ok(continuesRun(text(1, "a\ude00"), text(2, "\ud83d")), "a low surrogate at the end is no pair's half");
    assert.ok(!continuesRun(text(1, "a"), e(2, { type: "block-end", index: 0, block: { type: "text", text: "" } })));
    const call = (seq: number, extra: Record<string, unknown>) =>
      e(seq, { type: "tool-call-delta", index: 0, id: "c", ...extra, argumentsDelta: "{" });
    assert.ok(continuesRun(call(1, { name: "n" }), call(2, {})));
    assert.ok(!continuesRun(call(1, {}), call(2, { name: "n" })), "a delta that names the call starts a frame");
    assert.ok(!continuesRun(call(1, {}), e(2, { type: "tool-call-delta", index: 0, id: "d", argumentsDelta: "}" })));
    assert.ok(!continuesRun(text(1, "a"), e(2, { type: "text-delta", index: 0, text: 7 })), "not a text");
  });

  it("write a delta's id only when asked, for every kind of delta", () => {
    const w = new FrameWriter("i");
    const out = new FrameBuffer(8);
    const chunks = [
      { type: "text-delta", index: 0, text: "a\n😀" },
      { type: "reasoning-delta", index: 1, text: "hm" },
      { type: "tool-call-delta", index: 2, id: "c", name: "n", argumentsDelta: "{" },
      { type: "tool-call-delta", index: 2, id: "c", argumentsDelta: "}" },
    ];
    for (const [n, chunk] of chunks.entries()) {
      const e = Object.freeze(eventOf(10 + n, 1, 1, 1, chunk));
      w.delta(out, e, true);
      w.delta(out, e, false);
      const [withId, without] = decoder.decode(out.take()).split("\n\n");
      assert.equal(withId + "\n\n", referenceDelta(e, "i"));
      assert.equal(without + "\n\n", referenceDelta(e));
      assert.ok(withId.endsWith(`\nid: i:${10 + n}`), withId);
    }
  });
});

describe("sessionFrame() and deltaFrame()", () => {
  it("write exactly what JSON.stringify writes, for every chunk kind", () => {
    fc.assert(
      fc.property(event, fc.boolean(), fc.boolean(), (e, deltaFirst, withId) => {
        const incarnation = withId ? "inc0" : undefined;
        const delta = deltaFirst ? deltaFrame(e, incarnation) : undefined;
        assert.equal(sessionFrame(e, "inc0"), referenceSession(e, "inc0"));
        assert.equal(deltaFirst ? delta : deltaFrame(e, incarnation), referenceDelta(e, incarnation));
      }),
      { numRuns: RUNS },
    );
  });

  it("write exactly what JSON.stringify writes for events of other shapes (odd values, keys, order, toJSON)", () => {
    fc.assert(
      fc.property(event, bent, ({ seq, time, data }, { how, odd, level }) => {
        const frozen = bentEvent(seq, time, data, { how, odd, level });
        let reference: string | undefined;
        try {
          reference = referenceDelta(frozen);
        } catch {
          // deltaOf() cannot read it (no data, no chunk): then neither can deltaFrame().
          assert.throws(() => deltaFrame(frozen));
          return;
        }
        assert.equal(sessionFrame(frozen, "i"), referenceSession(frozen, "i"));
        assert.equal(deltaFrame(frozen), reference);
        assert.equal(deltaFrame(frozen, "i"), referenceDelta(frozen, "i"));
      }),
      { numRuns: RUNS },
    );
  });

  it("never take the frames of one event for another's", () => {
    fc.assert(
      fc.property(fc.array(event, { minLength: 2, maxLength: 6 }), (events) => {
        for (const e of events) assert.equal(deltaFrame(e), referenceDelta(e));
        for (const e of [...events].reverse()) assert.equal(sessionFrame(e, "x"), referenceSession(e, "x"));
      }),
      { numRuns: Math.ceil(RUNS / 4) },
    );
  });

  it("read an event that is not frozen again (it may have changed since)", () => {
    const chunk = { type: "text-delta", index: 0, text: "before" };
    const e = eventOf(1, 1, 1, 1, chunk);
    assert.equal(deltaFrame(e), referenceDelta(e));
    chunk.text = "after";
    assert.equal(sessionFrame(e, "x"), referenceSession(e, "x"));
    assert.equal(deltaFrame(e), referenceDelta(e));
  });

  it("take the hand-written path for the delta chunks a session commits", () => {
    const session = Session.create("s", undefined, { now: () => 1_700_000_000_000 });
    session.append("turn/start", { turn: 1 });
    session.append("step/start", { turn: 1, step: 1 });
    const chunks: StreamChunk[] = [
      { type: "text-delta", index: 0, text: 'a "quoted"\nline é 😀' },
      { type: "reasoning-delta", index: 1, text: "think" },
      { type: "tool-call-delta", index: 2, id: "c1", name: "read", argumentsDelta: '{"p' },
      { type: "tool-call-delta", index: 2, id: "c1", argumentsDelta: 'ath":1}' },
    ];
    for (const chunk of chunks) {
      for (
        const e of [appendChunk(session, 1, 1, chunk), session.append("assistant/chunk", { turn: 1, step: 1, chunk })]
      ) {
        assert.equal(fastChunkJson(e), JSON.stringify(e));
        assert.ok(isStreamedDelta(e));
        assert.equal(sessionFrame(e, "inc"), referenceSession(e, "inc"));
        assert.equal(deltaFrame(e), referenceDelta(e));
      }
    }
    const start = session.append("assistant/chunk", {
      turn: 1,
      step: 1,
      chunk: { type: "block-start", index: 3, blockType: "text" },
    });
    assert.equal(fastChunkJson(start), undefined);
    assert.equal(deltaFrame(start), undefined);
    assert.ok(!isStreamedDelta(start) && !isStreamedDelta(session.events[0]));
    assert.equal(deltaFrame(session.events[0]), undefined);
  });

  it("the delta frame of each kind", () => {
    const e = (chunk: unknown) => eventOf(7, 1, 2, 3, chunk);
    assert.equal(
      deltaFrame(e({ type: "text-delta", index: 0, text: "hi" })),
      'event: delta\ndata: {"seq":7,"turn":2,"step":3,"index":0,"blockType":"text","text":"hi"}\n\n',
    );
    assert.equal(
      deltaFrame(e({ type: "reasoning-delta", index: 1, text: "hm" })),
      'event: delta\ndata: {"seq":7,"turn":2,"step":3,"index":1,"blockType":"reasoning","text":"hm"}\n\n',
    );
    assert.equal(
      deltaFrame(e({ type: "tool-call-delta", index: 2, id: "c", name: "n", argumentsDelta: "{" })),
      'event: delta\ndata: {"seq":7,"turn":2,"step":3,"index":2,"blockType":"tool-call","id":"c","name":"n","text":"{"}\n\n',
    );
    assert.equal(
      deltaFrame(e({ type: "tool-call-delta", index: 2, id: "c", argumentsDelta: "}" })),
      'event: delta\ndata: {"seq":7,"turn":2,"step":3,"index":2,"blockType":"tool-call","id":"c","text":"}"}\n\n',
    );
    assert.equal(otherFrame("status", { status: "idle" }), 'event: status\ndata: {"status":"idle"}\n\n');
  });
});
