import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { counterClock } from "../agent/_test_support.ts";
import { fileStorage } from "../persistence/file_storage.ts";
import { memoryStorage } from "../persistence/memory_storage.ts";
import type { SessionStorage } from "../persistence/session_storage.ts";
import { scriptedAdapter, textResponse } from "../../testing/scripted_adapter.ts";
import { createHarness, type Harness } from "../harness.ts";
import { appendChunk, Session } from "../session/session.ts";
import { Writer } from "./_event_stream.ts";
import { liveFeed, type Segment } from "./_live_feed.ts";
import { SseBody } from "./_sse_body.ts";
import { deltaFrame, FrameWriter, isStreamedDelta, sessionFrame } from "./_sse_frames.ts";
import {
  assertFramesOfLog,
  deltaPayloadOf,
  loggedSeqs,
  pacedAdapter,
  parseFrames,
  type Served,
  serveHarness,
  type SseClient,
  type SseMessage,
  withServer,
} from "./_test_client.ts";

/** The next message, or `undefined` when none comes within `ms` (the read stays pending for the next call). */
function nextWithin(stream: SseClient, pending: { read?: Promise<SseMessage | undefined> }, ms: number) {
  pending.read ??= stream.next();
  const read = pending.read;
  return Promise.race([
    read.then((m) => {
      pending.read = undefined;
      return m;
    }),
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms)),
  ]);
}

const seqOf = (m: SseMessage) => Number(m.id!.split(":")[1]);
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe("event stream with storage", () => {
  it("carries only events that are on storage", async () => {
    const storage = memoryStorage();
    const served = await serveHarness({
      adapters: [scriptedAdapter(textResponse("One"))],
      storage,
      batchWindowMs: 60_000, // only barriers write
    });
    await withServer(served, async ({ harness, call, events }) => {
      await call("POST", "/sessions", { id: "s1" });
      const agent = harness.ctx.service("agents").get("s1")!;
      const stream = await events("s1", {}, "?deltas=false");
      const pending: { read?: Promise<SseMessage | undefined> } = {};
      agent.followup("Hello");
      await agent.whenIdle();
      assert.equal(agent.session.events.at(-1)?.type, "turn/end");
      const stored = () => storage.stat("s1").then((s) => s!.nextSeq);
      assert.ok((await stored()) < agent.session.seq, "the turn's end waits in the batch");
      const seen: number[] = [];
      for (
        let m = await nextWithin(stream, pending, 100);
        m !== undefined;
        m = await nextWithin(stream, pending, 100)
      ) {
        if (m.event !== "session") continue;
        assert.ok(seqOf(m) < (await stored()), `event ${seqOf(m)} was sent before it was stored`);
        seen.push(seqOf(m));
      }
      assert.ok(!seen.includes(agent.session.seq - 1), "turn/end is not sent before it is durable");
      await agent.flushed();
      const rest = await stream.until((m) => m.event === "session" && m.data.type === "turn/end");
      assert.equal(seqOf(rest.at(-1)!), agent.session.seq - 1);
      await stream.close();
    });
  });

  it("sends each delta once, ahead of storage and without an id; a resumed stream sends it again with its id", async () => {
    const storage = memoryStorage();
    const served = await serveHarness({
      adapters: [scriptedAdapter({
        chunks: [
          { type: "block-start", index: 0, blockType: "text" },
          ...["One", " two", " three"].map((text) => ({ type: "text-delta" as const, index: 0, text })),
          { type: "block-end", index: 0, block: { type: "text", text: "One two three" } },
          { type: "finish", reason: { kind: "stop" } },
        ],
      })],
      storage,
      batchWindowMs: 60_000, // only barriers write
    });
    await withServer(served, async ({ harness, call, events }) => {
      await call("POST", "/sessions", { id: "s1" });
      const agent = harness.ctx.service("agents").get("s1")!;
      const stream = await events("s1");
      const pending: { read?: Promise<SseMessage | undefined> } = {};
      agent.followup("Hello");
      await agent.whenIdle();
      const stored = await storage.stat("s1").then((s) => s!.nextSeq);
      const early: SseMessage[] = [];
      for (
        let m = await nextWithin(stream, pending, 100);
        m !== undefined;
        m = await nextWithin(stream, pending, 100)
      ) {
        early.push(m);
      }
      const deltas = early.filter((m) => m.event === "delta");
      const log = agent.session.events;
      const streamed = log.filter((e) => e.type === "assistant/chunk" && e.data.chunk.type === "text-delta");
      assert.equal(streamed.length, 3);
      // A run of one block's chunks goes as one frame (`seq` to `last`).
      const covered = deltas.flatMap((m) => range(m.data.seq, (m.data.last ?? m.data.seq) + 1));
      assert.deepEqual(covered, streamed.map((e) => e.seq), "every delta, before storage");
      for (const m of deltas) assert.deepEqual(m.data, deltaPayloadOf(log, m.data.seq, m.data.last));
      assert.ok(deltas.every((m) => m.id === undefined && m.data.seq >= stored), "ahead of storage, without an id");
      assert.ok(early.every((m) => m.event !== "session" || seqOf(m) < stored), "session frames wait for storage");
      await agent.flushed();
      // The read left pending by the last wait gets the first message after it.
      const next = await pending.read!;
      const rest = [next!, ...await stream.until((m) => m.event === "session" && m.data.type === "turn/end")];
      await stream.close();
      const sessionFrames = [...early, ...rest].filter((m) => m.event === "session");
      // The log's other events, each once; no session frame of a streamed delta, no delta sent twice.
      assert.deepEqual(
        sessionFrames.map(seqOf),
        log.filter((e) => !streamed.includes(e)).map((e) => e.seq),
      );
      assert.equal(rest.filter((m) => m.event === "delta").length, 0);

      // Resumed from before the deltas: they come again, from the log, with their ids.
      const blockStart = streamed[0].seq - 1;
      const resumed = await events(
        "s1",
        { "last-event-id": `${incarnationOf(harness, "s1")}:${blockStart}` },
        "?follow=false",
      );
      const again = await resumed.until((m) => m.event === "end");
      assert.deepEqual(loggedSeqs(again), range(blockStart + 1, log.length));
      assert.deepEqual(
        again.filter((m) => m.event === "delta").map((m) => m.data),
        [deltaPayloadOf(log, streamed[0].seq, streamed[2].seq)],
        "the three chunks as one frame, with the id of the last",
      );
    });
  });

  for (
    const [clock, now, makeStorage] of [
      ["a running clock", counterClock(), memoryStorage],
      // DELETE and create again within one millisecond: the two logs share createdAt, never the incarnation.
      ["a frozen clock", () => 1_000, memoryStorage],
      ["a frozen clock on fileStorage", () => 1_000, undefined],
    ] as const
  ) {
    it(`sends event: reset to a Last-Event-ID of another incarnation or beyond the log (${clock})`, async () => {
      const dir = makeStorage === undefined ? await mkdtemp(join(tmpdir(), "dsh-incarnation-")) : undefined;
      const served = await serveHarness({
        adapters: [scriptedAdapter((_r, n) => textResponse(`Answer ${n}`))],
        storage: dir === undefined ? memoryStorage({ now }) : fileStorage(dir, { now }),
        now,
      });
      try {
        await resetScenario(served);
      } finally {
        if (dir !== undefined) await rm(dir, { recursive: true, force: true });
      }
    });
  }

  async function resetScenario(served: Served): Promise<void> {
    await withServer(served, async ({ call, events }) => {
      await call("POST", "/sessions", { id: "s1" });
      await (await call("POST", "/sessions/s1/messages", { content: "Hello", wait: true })).json();
      await (await call("POST", "/sessions/s1/messages", { content: "Again", wait: true })).json();
      const first = await events("s1", {}, "?follow=false");
      const old = (await first.until((m) => m.event === "end")).filter((m) => m.event === "session");
      const lastId = old.at(-1)!.id!;

      assert.equal((await call("DELETE", "/sessions/s1")).status, 204);
      await call("POST", "/sessions", { id: "s1" });
      await (await call("POST", "/sessions/s1/messages", { content: "New life", wait: true })).json();
      const resumed = await events("s1", { "last-event-id": lastId }, "?follow=false");
      const got = await resumed.until((m) => m.event === "end");
      assert.deepEqual(got.slice(0, 2).map((m) => m.event), ["ready", "reset"]);
      assert.equal(got[1].data.reason, "incarnation");
      const sent = got.filter((m) => m.event === "session");
      assert.equal(seqOf(sent[0]), 0, "the new log from its first event");
      assert.notEqual(sent[0].id!.split(":")[0], lastId.split(":")[0]);

      const ahead = await events("s1", { "last-event-id": `${sent[0].id!.split(":")[0]}:999` }, "?follow=false");
      const aheadGot = await ahead.until((m) => m.event === "end");
      assert.equal(aheadGot[1].event, "reset");
      assert.equal(aheadGot[1].data.reason, "ahead");
      assert.equal(seqOf(aheadGot[2]), 0);
    });
  }

  for (const withStorage of [true, false]) {
    it(`readers that join while a turn streams get each event once, in one form or the other (${withStorage ? "storage" : "no storage"})`, async () => {
      // The model streams a delta only when the test grants a permit; a reader joins after each batch.
      const script = scriptedAdapter({
        chunks: [
          { type: "block-start", index: 0, blockType: "text" },
          ...Array.from({ length: 60 }, (_, i) => ({ type: "text-delta" as const, index: 0, text: `w${i} ` })),
          { type: "block-end", index: 0, block: { type: "text", text: "" } },
          { type: "finish", reason: { kind: "stop" } },
        ],
      });
      const { adapter: paced, grant } = pacedAdapter(script);
      const storage = memoryStorage();
      const served = await serveHarness({
        adapters: [paced],
        storage: withStorage ? storage : undefined,
        batchWindowMs: 3,
      });
      await withServer(served, async ({ harness, call, events }) => {
        await call("POST", "/sessions", { id: "s1" });
        const agent = harness.ctx.service("agents").get("s1")!;
        const readers: { from: number; messages: Promise<SseMessage[]> }[] = [];
        const join = async (lastId?: string) => {
          const stream = await events("s1", lastId === undefined ? {} : { "last-event-id": lastId });
          const from = lastId === undefined ? 0 : Number(lastId.split(":")[1]) + 1;
          readers.push({ from, messages: stream.until((m) => m.event === "session" && m.data.type === "turn/end") });
        };
        await join();
        agent.followup("Go");
        for (let batch = 0; batch < 12; batch++) {
          grant(5);
          // Let some deltas through, some of them to storage, then join from the start and mid-log.
          await new Promise((resolve) => setTimeout(resolve, batch % 3));
          await join();
          const stored = withStorage
            ? (await storage.stat("s1"))?.nextSeq ?? 0
            : harness.ctx.service("agents").get("s1")!.session.seq;
          if (stored > 2) await join(`${incarnationOf(harness, "s1")}:${stored - 2}`);
        }
        await agent.whenIdle();
        await agent.flushed();
        const log = agent.session.events;
        for (const [r, { from, messages }] of readers.entries()) {
          const got = await messages;
          const seen: number[] = [];
          for (const m of got) {
            if (m.event === "session") seen.push(seqOf(m));
            if (m.event === "delta") {
              const last = m.data.last ?? m.data.seq;
              if (m.id !== undefined) assert.equal(seqOf(m), last);
              assert.deepEqual(m.data, deltaPayloadOf(log, m.data.seq, last));
              seen.push(...range(Number(m.data.seq), Number(last) + 1));
            }
          }
          assert.deepEqual([...seen].sort((a, b) => a - b), range(from, log.length), `reader ${r} from ${from}`);
          const ids = got.filter((m) => m.id !== undefined).map(seqOf);
          assert.deepEqual(ids, [...ids].sort((a, b) => a - b), `reader ${r}: ids in order`);
        }
      });
    });
  }

  it("reads and tails a stored session without resuming it or taking its writer lease", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-tail-"));
    try {
      const storage = fileStorage(dir);
      const first = await serveHarness({ adapters: [scriptedAdapter(textResponse("One"))], storage });
      await withServer(first, async ({ call }) => {
        await call("POST", "/sessions", { id: "s1" });
        await (await call("POST", "/sessions/s1/messages", { content: "Hello", wait: true })).json();
      });
      const second = await serveHarness({ adapters: [], storage }, { tailPollMs: 10 });
      await withServer(second, async ({ harness, events }) => {
        const streams = await Promise.all(Array.from({ length: 5 }, () => events("s1", {}, "?deltas=false")));
        for (const s of streams) await s.until((m) => m.event === "session" && m.data.type === "turn/end");
        assert.equal(harness.ctx.service("agents").list().length, 0, "no agent was resumed");
        // Another process writes, under its own lease: the tails see it.
        const writer = await storage.acquireWriter("s1");
        const { nextSeq } = (await storage.stat("s1"))!;
        await storage.append("s1", [{ type: "todo/write", seq: nextSeq, time: 1, data: { todos: [] } }], {
          expectedSeq: nextSeq,
          writer,
        });
        for (const s of streams) {
          const got = await s.until((m) => m.event === "session" && m.data.type === "todo/write");
          assert.equal(seqOf(got.at(-1)!), nextSeq);
        }
        await writer.release();
        for (const s of streams) await s.close();
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a tail of a stored session follows the agent once it is resumed", async () => {
    const storage = memoryStorage();
    const first = await serveHarness({ adapters: [scriptedAdapter(textResponse("One"))], storage });
    await withServer(first, async ({ call }) => {
      await call("POST", "/sessions", { id: "s1" });
      await (await call("POST", "/sessions/s1/messages", { content: "Hello", wait: true })).json();
    });
    const second = await serveHarness({ adapters: [scriptedAdapter(textResponse("Two"))], storage });
    await withServer(second, async ({ call, events }) => {
      const stream = await events("s1", {}, "?deltas=false");
      const before = await stream.until((m) => m.event === "session" && m.data.type === "turn/end");
      const reply = await (await call("POST", "/sessions/s1/messages", { content: "Again", wait: true })).json();
      assert.equal(reply.result.turn, 2);
      const after = await stream.until((m) => m.event === "session" && m.data.type === "turn/end");
      const seqs = [...before, ...after].filter((m) => m.event === "session").map(seqOf);
      assert.deepEqual(seqs, seqs.map((_, i) => i), "no loss, no duplicate across the hand-over");
      await stream.close();
    });
  });

  it("a tail of a stored session deleted and created again here ends instead of following the new life", async () => {
    const storage = memoryStorage();
    const first = await serveHarness({ adapters: [scriptedAdapter(textResponse("One"))], storage });
    await withServer(first, async ({ call }) => {
      await call("POST", "/sessions", { id: "s1" });
      await (await call("POST", "/sessions/s1/messages", { content: "Hello", wait: true })).json();
    });
    const second = await serveHarness({ adapters: [scriptedAdapter(textResponse("Two"))], storage }, {
      tailPollMs: 60_000, // only the agent going live wakes the tail
    });
    await withServer(second, async ({ call, events }) => {
      const stream = await events("s1", {}, "?deltas=false");
      const before = await stream.until((m) => m.event === "session" && m.data.type === "turn/end");
      const old = before[0].data.incarnation;
      assert.equal((await call("DELETE", "/sessions/s1")).status, 204);
      await call("POST", "/sessions", { id: "s1" });
      let timer: ReturnType<typeof setTimeout> | undefined;
      const rest = await Promise.race([
        stream.until((m) => m.event === "end"),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error("the tail followed the new life instead of ending")), 10_000);
        }),
      ]).finally(() => clearTimeout(timer));
      for (const m of rest.filter((m) => m.event === "session")) {
        assert.equal(m.id!.split(":")[0], old, "no event of the new life under the old incarnation");
      }
      await stream.close();
    });
  });
});

describe("event stream readers that stop reading", () => {
  it("40 stalled readers are dropped by their bounded buffers; turns complete; a dropped reader resumes", async () => {
    const served = await serveHarness({
      adapters: [scriptedAdapter((_r, n) => ({
        chunks: [
          { type: "block-start", index: 0, blockType: "text" },
          ...Array.from({ length: 40 }, (_, i) => ({ type: "text-delta" as const, index: 0, text: `${n}.${i} ` })),
          { type: "block-end", index: 0, block: { type: "text", text: "" } },
          { type: "finish", reason: { kind: "stop" } },
        ],
      }))],
      storage: memoryStorage(),
    }, { maxBufferedEvents: 32 });
    await withServer(served, async ({ harness, call }) => {
      const app = (await import("./create_harness_app.ts")).createHarnessApp(harness, {
        auth: false,
        log: false,
        approvals: false,
        maxBufferedEvents: 32,
      });
      await call("POST", "/sessions", { id: "s1" });
      // In-process requests whose bodies nobody reads: no socket buffers, the writes block at once.
      const stalled = await Promise.all(Array.from({ length: 40 }, () => app.request("/sessions/s1/events")));
      for (let turn = 0; turn < 60; turn++) {
        const reply = await (await call("POST", "/sessions/s1/messages", { content: `go ${turn}`, wait: true })).json();
        assert.equal(reply.result.reason.kind, "completed");
      }
      const length = harness.ctx.service("agents").get("s1")!.session.seq;
      for (const response of stalled) {
        // The server dropped it: the body ends, short of the log and without `event: end`.
        const text = await response.text();
        assert.doesNotMatch(text, /event: end/);
        assert.match(text, /event: dropped\ndata: \{"reason":"slow-reader"\}\n\n$/, "the reason is its last frame");
        // What it holds with ids is a prefix of the log, but for the deltas sent ahead of storage, without one.
        const held = loggedSeqs(parseFrames(text));
        const end = (held.at(-1) ?? -1) + 1;
        assert.ok(end < length, "the reader was dropped before the log's end");
        const log = harness.ctx.service("agents").get("s1")!.session.events;
        const prefix = range(0, end).filter((s) => held.includes(s) || isStreamedDelta(log[s]));
        assert.deepEqual(prefix, range(0, end));
      }
      // Resuming with the last id it holds loses nothing.
      const resumed = await app.request("/sessions/s1/events?follow=false", { headers: { "last-event-id": "0" } });
      assert.deepEqual(loggedSeqs(parseFrames(await resumed.text())), range(1, length));
    });
  });
});

describe("event stream writes", () => {
  it("readers from the start, mid-log and the end get whole frames in few writes, every id in order", async () => {
    const served = await serveHarness({
      adapters: [scriptedAdapter((_r, n) => ({
        chunks: [
          { type: "block-start", index: 0, blockType: "text" },
          ...Array.from({ length: 50 }, (_, i) => ({ type: "text-delta" as const, index: 0, text: `${n}.${i} ` })),
          { type: "block-end", index: 0, block: { type: "text", text: "" } },
          { type: "finish", reason: { kind: "stop" } },
        ],
      }))],
    });
    await withServer(served, async ({ harness, call }) => {
      const app = (await import("./create_harness_app.ts")).createHarnessApp(harness, { auth: false, log: false });
      await call("POST", "/sessions", { id: "s1" });
      await (await call("POST", "/sessions/s1/messages", { content: "first", wait: true })).json();
      // One reader from the start, one resuming mid-log, one from the end of the first turn.
      const starts = ["", "0", `${harness.ctx.service("agents").get("s1")!.session.seq - 1}`];
      const readers = await Promise.all(starts.map((id) =>
        app.request("/sessions/s1/events", {
          headers: id === "" ? {} : { "last-event-id": `${incarnationOf(harness, "s1")}:${id}` },
        })
      ));
      // Readers that keep up: each chunk they read is one write of the server.
      const reads = readers.map(async (response) => {
        const chunks: string[] = [];
        const reader = response.body!.getReader();
        for (let r = await reader.read(); !r.done; r = await reader.read()) {
          chunks.push(new TextDecoder().decode(r.value));
        }
        return chunks;
      });
      await (await call("POST", "/sessions/s1/messages", { content: "second", wait: true })).json();
      const log = harness.ctx.service("agents").get("s1")!.session.events;
      const length = log.length;
      await harness.dispose();
      for (const [i, chunks] of (await Promise.all(reads)).entries()) {
        const text = chunks.join("");
        assert.match(text, /event: end\n/);
        for (const chunk of chunks) assert.ok(chunk.endsWith("\n\n"), "a write holds whole frames");
        const first = starts[i] === "" ? 0 : Number(starts[i]) + 1;
        const messages = parseFrames(text);
        assert.deepEqual(loggedSeqs(messages), range(first, length), `reader ${i}`);
        // The streamed deltas from its start on came as `event: delta` (a run of a block's chunks as one frame,
        // with the id of the last), every other event as `event: session`.
        const counts = assertFramesOfLog(messages, log);
        const streamed = log.slice(first).filter((e) =>
          e.type === "assistant/chunk" && e.data.chunk.type === "text-delta"
        );
        assert.equal(counts.chunks, streamed.length, `reader ${i} got the deltas`);
        assert.equal(counts.session, length - first - counts.chunks, `reader ${i}`);
        assert.ok(counts.delta < streamed.length / 10, `reader ${i}: ${counts.delta} delta frames`);
        // About 110 events, 100 of them deltas: one write per event would be 110 writes.
        assert.ok(chunks.length < 20, `reader ${i}: ${chunks.length} writes`);
      }
    });
  });
});

function incarnationOf(harness: Served["harness"], id: string): string {
  return harness.ctx.service("agents").get(id)!.session.header.incarnation!;
}

describe("event stream writer", () => {
  /** A log: turn/start, step/start, block-start (2), five text deltas (3–7), block-end (8). */
  function log() {
    const session = Session.create("s", undefined, { now: () => 1 });
    session.append("turn/start", { turn: 1 });
    session.append("step/start", { turn: 1, step: 1 });
    appendChunk(session, 1, 1, { type: "block-start", index: 0, blockType: "text" });
    for (let i = 3; i <= 7; i++) appendChunk(session, 1, 1, { type: "text-delta", index: 0, text: `d${i}` });
    appendChunk(session, 1, 1, { type: "block-end", index: 0, block: { type: "text", text: "d3d4d5d6d7" } });
    return session;
  }

  /** A segment of these frames, each with the seq a reader may resume after (`-1`: none). */
  function segment(frames: [string, number][], startSeq: number, endSeq: number): Segment {
    const text = frames.map(([frame]) => frame);
    const ends: number[] = [];
    let at = 0;
    for (const frame of text) ends.push(at += new TextEncoder().encode(frame).length);
    const bytes = new TextEncoder().encode(text.join(""));
    return { bytes, ends, seqs: frames.map(([, seq]) => seq), startSeq, endSeq, before: 0, end: false };
  }

  it("skips the deltas a joining reader wrote from the log, and moves past those sent ahead of storage", async () => {
    const session = log();
    const events = session.events;
    const body = new SseBody();
    const options = { from: 4, deltas: true, follow: true, keepAliveMs: 1_000, maxBuffered: 100, pollMs: 10 };
    const w = new Writer(body, "inc", options);
    // The reader wrote the log up to delta 3 (seq 4 next) and joined the open segment after its first frame.
    const reader = { pos: 0, skip: 1, maxBuffered: 100, drop: () => {} };
    // Deltas 3–7 went out ahead of storage (no id); then block-start (2) reached storage, and 3–7 after it.
    const first = segment(
      [...[3, 4, 5, 6, 7].map((s): [string, number] => [deltaFrame(events[s])!, -1]), [
        sessionFrame(events[2], "inc"),
        2,
      ]],
      2,
      8,
    );
    const read = new Response(body.readable).text();
    await w.segment(first, reader, session);
    assert.equal(w.next, 8, "the deltas sent ahead of storage count as sent");
    await w.segment(segment([[sessionFrame(events[8], "inc"), 8]], 8, 9), reader, session);
    body.close();
    const text = await read;
    const deltaSeqs = [...text.matchAll(/"seq":(\d+),"turn"/g)].map((m) => Number(m[1]));
    assert.deepEqual(deltaSeqs, [4, 5, 6, 7], "each delta once, none it had before it joined");
    assert.deepEqual([...text.matchAll(/^id: inc:(\d+)$/gm)].map((m) => Number(m[1])), [8]);
  });
});

/** A new agent without storage and the live feed of its deltas (the caller disposes the harness). */
async function feedOfNewAgent() {
  const harness = await createHarness({ adapters: [], model: { provider: "scripted", model: "scripted-model" } });
  const agent = await harness.createAgent({ id: "s" });
  const session = agent.session;
  const feed = liveFeed(harness.ctx, agent, { deltas: true }, new FrameWriter(session.header.incarnation!));
  return { harness, session, feed };
}

describe("event stream delta runs", () => {
  it("a reader that joins during a run gets the chunks after it in a frame of their own", async () => {
    const { harness, session, feed } = await feedOfNewAgent();
    try {
      const inc = session.header.incarnation!;
      const options = { from: 0, deltas: true, follow: true, keepAliveMs: 60_000, maxBuffered: 100, pollMs: 10 };
      const early = feed.join(100, () => {});
      session.append("turn/start", { turn: 1 });
      session.append("step/start", { turn: 1, step: 1 });
      appendChunk(session, 1, 1, { type: "block-start", index: 0, blockType: "text" });
      appendChunk(session, 1, 1, { type: "text-delta", index: 0, text: "a" });
      appendChunk(session, 1, 1, { type: "text-delta", index: 0, text: "b" });
      // Joins while the open segment ends with the run of "a" and "b": it writes the log up to here itself.
      const late = feed.join(100, () => {});
      const lateFrom = session.seq;
      appendChunk(session, 1, 1, { type: "text-delta", index: 0, text: "c" });
      appendChunk(session, 1, 1, { type: "text-delta", index: 0, text: "d" });
      const stop = new Promise<void>(() => {});
      const segment = (await feed.segment(late, stop))!;
      assert.equal(segment, await feed.segment(early, stop), "one segment, read by both");
      const text = async (reader: typeof late, from: number) => {
        const body = new SseBody();
        const read = new Response(body.readable).text();
        const w = new Writer(body, inc, options);
        await w.events(session.slice(0, from));
        await w.segment(segment, reader, session);
        body.close();
        return parseFrames(await read);
      };
      const log = session.events;
      for (const [reader, from] of [[early, 0], [late, lateFrom]] as const) {
        const frames = await text(reader, from);
        assert.deepEqual(loggedSeqs(frames), range(0, log.length), `the reader from ${from}`);
        assertFramesOfLog(frames, log);
      }
      // The early reader got "cd" in a frame of its own, after the frame of "ab".
      const early2 = (await text(early, 0)).filter((m) => m.event === "delta").map((m) => m.data.text);
      assert.deepEqual(early2, ["ab", "cd"]);
      feed.leave(early);
      feed.leave(late);
    } finally {
      await harness.dispose();
    }
  });
});

/**
 * A feed of deltas with `storage` for a new agent, one reader, and a block of `texts` committed after it joined
 * (`turn/start`, `block-start`, the deltas, `block-end`); `from` is the seq of `turn/start`.
 */
async function storageFeedWithBlock(harness: Harness, storage: (session: Session) => SessionStorage, texts: string[]) {
  const agent = await harness.createAgent({ id: "s" });
  const session = agent.session;
  const feed = liveFeed(
    harness.ctx,
    agent,
    { deltas: true, storage: storage(session) },
    new FrameWriter(session.header.incarnation!),
  );
  const reader = feed.join(100, () => {});
  const from = session.seq;
  session.append("turn/start", { turn: 1 });
  appendChunk(session, 1, 1, { type: "block-start", index: 0, blockType: "text" });
  for (const text of texts) appendChunk(session, 1, 1, { type: "text-delta", index: 0, text });
  appendChunk(session, 1, 1, { type: "block-end", index: 0, block: { type: "text", text: texts.join("") } });
  return { session, feed, reader, from };
}

/** A frame as `delta <seq>-<last> <id or "no id">`, the event's seq, or its event name. */
const frameName = (m: SseMessage) =>
  m.event === "delta"
    ? `delta ${m.data.seq}-${m.data.last} ${m.id ?? "no id"}`
    : m.event === "session"
    ? seqOf(m)
    : m.event;

describe("event stream deltas ahead of storage", () => {
  const never = new Promise<void>(() => {});

  it("writes a block's deltas before the block's end, however soon it is stored", async () => {
    const storage = memoryStorage();
    const harness = await createHarness({
      adapters: [],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
      batchWindowMs: 60_000, // only the announcement below makes anything durable
    });
    try {
      const { session, feed, reader, from } = await storageFeedWithBlock(harness, () => storage, ["a", "b", "c"]);
      // The block reaches storage before the feed's segment seals.
      harness.ctx.emit("session/durable", session, session.seq);
      const frames = parseFrames(new TextDecoder().decode((await feed.segment(reader, never))!.bytes));
      assert.deepEqual(
        frames.map(frameName),
        [`delta ${from + 2}-${from + 4} no id`, from, from + 1, from + 5],
        "the deltas (ahead of storage: one frame, without an id) come before the block's end",
      );
      assert.deepEqual(frames[0].data, deltaPayloadOf(session.events, from + 2, from + 4));
      feed.leave(reader);
    } finally {
      await harness.dispose();
    }
  });

  it("writes them before the block's end when the session is released before the segment seals", async () => {
    const harness = await createHarness({ adapters: [], model: { provider: "scripted", model: "scripted-model" } });
    try {
      // What the feed asks of storage at the end: how far the log is stored (all of it).
      const stored = (session: Session) =>
        ({ stat: () => Promise.resolve({ nextSeq: session.seq }) }) as unknown as SessionStorage;
      const { session, feed, reader, from } = await storageFeedWithBlock(harness, stored, ["a", "b"]);
      harness.ctx.emit("session/disposed", session);
      const frames: SseMessage[] = [];
      for (let segment = await feed.segment(reader, never); segment !== undefined; reader.pos++) {
        frames.push(...parseFrames(new TextDecoder().decode(segment.bytes)));
        if (segment.end) break;
        segment = await feed.segment(reader, never);
      }
      assert.deepEqual(frames.map(frameName), [`delta ${from + 2}-${from + 3} no id`, from, from + 1, from + 4, "end"]);
      feed.leave(reader);
    } finally {
      await harness.dispose();
    }
  });
});

describe("event stream bound", () => {
  it("counts every chunk a delta frame carries against a reader's bound", async () => {
    const { harness, session, feed } = await feedOfNewAgent();
    try {
      let dropped = 0;
      const stalled = feed.join(10, () => dropped++);
      const reading = feed.join(1000, () => dropped += 100);
      session.append("turn/start", { turn: 1 });
      session.append("step/start", { turn: 1, step: 1 });
      appendChunk(session, 1, 1, { type: "block-start", index: 0, blockType: "text" });
      for (let i = 0; i < 30; i++) appendChunk(session, 1, 1, { type: "text-delta", index: 0, text: `w${i} ` });
      const never = new Promise<void>(() => {});
      const segment = (await feed.segment(reading, never))!;
      assert.equal(segment.ends.length, 4, "three session frames and one delta frame of 30 chunks");
      assert.equal(dropped, 0, "a reader waiting for the segment just sealed lags nothing yet, however large it is");
      reading.pos++; // the reading one wrote it; the stalled one did not
      appendChunk(session, 1, 1, { type: "block-end", index: 0, block: { type: "text", text: "" } });
      await feed.segment(reading, never);
      assert.equal(dropped, 1, "the reader that wrote nothing is 33 items behind, past its 10: dropped");
      feed.leave(reading);
      feed.leave(stalled);
    } finally {
      await harness.dispose();
    }
  });
});
