import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHarness } from "../harness.ts";
import type { SessionEvent } from "../session/session_events.ts";
import type { FrameBuffer } from "./_frame_buffer.ts";
import { type FrameCodec, liveFeed, type Segment } from "./_live_feed.ts";

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const codec: FrameCodec = {
  session: (out: FrameBuffer, event: SessionEvent) => out.text(`s${event.seq};`),
  delta: () => false,
  extend: () => false,
  cut: () => {},
  other: (out: FrameBuffer, event: string) => out.text(`${event};`),
};
const never = new Promise<void>(() => {});

async function setup() {
  const harness = await createHarness({ adapters: [], model: { provider: "scripted", model: "scripted-model" } });
  const agent = await harness.createAgent({ id: "s1" });
  const write = (n: number) => {
    for (let i = 0; i < n; i++) agent.session.append("todo/write", { todos: [] });
  };
  return { harness, agent, write };
}

describe("liveFeed()", () => {
  it("encodes a burst once: every reader gets the same segment, in seq order", async () => {
    const { harness, agent, write } = await setup();
    try {
      const feed = liveFeed(harness.ctx, agent, { deltas: false }, codec);
      assert.equal(liveFeed(harness.ctx, agent, { deltas: false }, codec), feed, "same options, same feed");
      assert.notEqual(liveFeed(harness.ctx, agent, { deltas: true }, codec), feed);
      const a = feed.join(100, () => assert.fail("not dropped"));
      const b = feed.join(100, () => assert.fail("not dropped"));
      const start = agent.session.seq;
      write(5);
      const [sa, sb] = await Promise.all([feed.segment(a, never), feed.segment(b, never)]);
      assert.equal(sa, sb, "one segment object for both readers");
      const segment = sa as Segment;
      assert.equal(decode(segment.bytes), [0, 1, 2, 3, 4].map((i) => `s${start + i};`).join(""));
      assert.deepEqual([segment.startSeq, segment.endSeq], [start, start + 5]);
      feed.leave(a);
      feed.leave(b);
      assert.notEqual(liveFeed(harness.ctx, agent, { deltas: false }, codec), feed, "the last reader out closes it");
    } finally {
      await harness.dispose();
    }
  });

  it("a reader that joins mid-burst skips the frames from before it, keeps the session frames", async () => {
    const { harness, agent, write } = await setup();
    try {
      const feed = liveFeed(harness.ctx, agent, { deltas: false }, codec);
      const early = feed.join(100, () => {});
      write(2);
      const late = feed.join(100, () => {});
      assert.equal(late.skip, 2);
      assert.equal(late.pos, early.pos, "both wait for the segment being gathered");
      feed.leave(early);
      feed.leave(late);
    } finally {
      await harness.dispose();
    }
  });

  it("drops a reader more than maxBuffered frames behind and releases what no reader needs", async () => {
    const { harness, agent, write } = await setup();
    try {
      const feed = liveFeed(harness.ctx, agent, { deltas: false }, codec);
      let dropped = 0;
      const slow = feed.join(8, () => dropped++);
      const fast = feed.join(8, () => assert.fail("the fast reader is not dropped"));
      for (let burst = 0; burst < 4; burst++) {
        write(3);
        const segment = await feed.segment(fast, never);
        assert.ok(segment !== undefined);
        fast.pos++;
      }
      // The slow reader never moved: 12 frames behind its first segment.
      assert.equal(dropped, 1);
      write(1);
      assert.ok(await feed.segment(fast, never));
      feed.leave(slow);
      feed.leave(fast);
    } finally {
      await harness.dispose();
    }
  });

  it("ends with event: end when the agent is disposed; a closed reader stops waiting", async () => {
    const { harness, agent, write } = await setup();
    const feed = liveFeed(harness.ctx, agent, { deltas: false }, codec);
    const reader = feed.join(100, () => {});
    const other = feed.join(100, () => {});
    let stop!: () => void;
    const stopped = feed.segment(other, new Promise<void>((resolve) => (stop = resolve)));
    stop();
    assert.equal(await stopped, undefined);
    write(1);
    const end = agent.session.seq;
    await harness.dispose();
    let last: Segment | undefined;
    for (let s = await feed.segment(reader, never); s !== undefined; s = await feed.segment(reader, never)) {
      last = s;
      reader.pos++;
    }
    assert.ok(last?.end);
    assert.match(decode(last!.bytes), /end;$/);
    assert.equal(last!.endSeq, end);
  });
});
