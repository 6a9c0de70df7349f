import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { checkInvariants } from "./check_invariants.ts";
import type { SessionEvent } from "../session/session_events.ts";
import type { StreamChunk } from "../llm/stream_chunk.ts";
import { LlmFailure } from "../llm/mod.ts";
import { createHarness } from "../harness.ts";
import { compactionPlugin, type CompactionServices } from "../compaction/mod.ts";
import { pluginCtx } from "../plugin_ctx.ts";
import { addTool, counterClock, counterIds } from "../agent/_test_support.ts";
import { scriptedAdapter, type ScriptEntry, textResponse, toolCallResponse } from "../../testing/scripted_adapter.ts";

type Raw = { type: string; data: unknown; surfaceOp?: unknown; sourceEventSeqs?: number[] };
const at = { turn: 1, step: 1 };
const model = { kind: "model", provider: "p", model: "m" };
const chunk = (c: unknown, where = at): Raw => ({ type: "assistant/chunk", data: { ...where, chunk: c } });

// A step whose model streamed reasoning, text and a tool call (deltas, then block-end), usage and a finish.
const STREAM: unknown[] = [
  { type: "block-start", index: 0, blockType: "reasoning" },
  { type: "reasoning-delta", index: 0, text: "Th" },
  { type: "reasoning-delta", index: 0, text: "ink" },
  { type: "block-end", index: 0, block: { type: "reasoning", text: "Think" } },
  { type: "block-start", index: 1, blockType: "text" },
  { type: "text-delta", index: 1, text: "Hel" },
  { type: "text-delta", index: 1, text: "lo" },
  { type: "block-end", index: 1, block: { type: "text", text: "Hello" } },
  { type: "block-start", index: 2, blockType: "tool-call" },
  { type: "tool-call-delta", index: 2, id: "c1", name: "add", argumentsDelta: '{"a":' },
  { type: "tool-call-delta", index: 2, id: "c1", argumentsDelta: "1}" },
  { type: "block-end", index: 2, block: { type: "tool-call", id: "c1", name: "add", arguments: '{"a":1}' } },
  { type: "usage", usage: { inputTokens: 7, outputTokens: 3 } },
  { type: "finish", reason: { kind: "tool-calls" }, replayState: { response: "r1" } },
];
const CONTENT = [
  { type: "reasoning", text: "Think" },
  { type: "text", text: "Hello" },
  { type: "tool-call", id: "c1", name: "add", arguments: '{"a":1}' },
];

interface StepOptions {
  chunks?: unknown[];
  content?: unknown[];
  usage?: unknown;
  replayState?: unknown;
  interrupted?: boolean;
  /** The seqs the message names: `undefined` names the step's chunks, `null` names none (no field). */
  sources?: number[] | null;
}

/** turn/start, step/start (seqs 0, 1), the chunks from seq 2, the assistant message, then the step's tool pair. */
function stepLog(options: StepOptions = {}): SessionEvent[] {
  const chunks = options.chunks ?? STREAM;
  const content = options.content ?? CONTENT;
  const raws: Raw[] = [{ type: "turn/start", data: { turn: 1 } }, { type: "step/start", data: at }];
  for (const c of chunks) raws.push(chunk(c));
  const sources = options.sources === undefined ? chunks.map((_, i) => i + 2) : options.sources;
  const source = options.replayState === undefined ? model : { ...model, replayState: options.replayState };
  raws.push({
    type: "assistant/message",
    data: {
      ...at,
      message: { id: "a1", role: "assistant", content, source },
      ...(options.usage !== undefined ? { usage: options.usage } : {}),
      ...(options.interrupted ? { interrupted: true } : {}),
    },
    surfaceOp: "append",
    ...(sources !== null ? { sourceEventSeqs: sources } : {}),
  });
  const message = raws.length - 1;
  if (content.some((b) => (b as { type: string }).type === "tool-call")) {
    raws.push({ type: "tool/call", data: { ...at, callId: "c1", name: "add", arguments: '{"a":1}' } });
    raws.push({
      type: "tool/result",
      data: {
        ...at,
        message: {
          id: "r1",
          role: "user",
          content: [{ type: "tool-result", toolCallId: "c1", content: [] }],
          source: { kind: "tool", callId: "c1" },
        },
      },
      surfaceOp: "append",
      sourceEventSeqs: [message + 1],
    });
  }
  raws.push({ type: "step/end", data: at }, { type: "turn/end", data: { turn: 1, reason: { kind: "completed" } } });
  return raws.map((e, seq) => ({ seq, time: 0, ...e }) as unknown as SessionEvent);
}

const MESSAGE_SEQ = 2 + STREAM.length;
const mismatch = (seq = MESSAGE_SEQ) => [`${seq} ASSISTANT_MESSAGE_CHUNKS_MISMATCH`];
const codes = (events: readonly SessionEvent[]) => checkInvariants(events).map((v) => `${v.seq} ${v.code}`);
const replaced = (chunks: unknown[], i: number, c: unknown) => chunks.map((x, j) => (j === i ? c : x));

describe("checkInvariants(): an assistant message against its chunks (ASSISTANT_MESSAGE_CHUNKS_MISMATCH)", () => {
  it("accepts a message that is what its chunks assemble, with their usage and replay state", () => {
    const usage = { inputTokens: 7, outputTokens: 3 };
    assert.deepEqual(codes(stepLog({ usage, replayState: { response: "r1" } })), []);
  });

  it("reports a message whose content differs from its chunks: a block changed, missing or extra", () => {
    const changed = CONTENT.map((b) => (b.type === "text" ? { ...b, text: "Hello!" } : b));
    assert.deepEqual(codes(stepLog({ content: changed })), mismatch());
    assert.deepEqual(codes(stepLog({ content: CONTENT.slice(1) })), mismatch());
    assert.deepEqual(codes(stepLog({ content: [...CONTENT, { type: "text", text: "more" }] })), mismatch());
    const reordered = [CONTENT[1], CONTENT[0], CONTENT[2]];
    assert.deepEqual(codes(stepLog({ content: reordered })), mismatch());
  });

  it("holds a closed block to its block-end, as the loop's fold does, not to its deltas", () => {
    const end = replaced(STREAM, 3, { type: "block-end", index: 0, block: { type: "reasoning", text: "Thought" } });
    assert.deepEqual(codes(stepLog({ chunks: end })), mismatch());
    // An adapter that trims the text or re-serialises the arguments it streamed: the message holds the block-end's
    // block, as the loop writes it.
    const trimmed = replaced(STREAM, 6, { type: "text-delta", index: 1, text: "lo " });
    assert.deepEqual(codes(stepLog({ chunks: trimmed })), []);
    const spaced = replaced(STREAM, 10, { type: "tool-call-delta", index: 2, id: "c1", argumentsDelta: " 1 }" });
    assert.deepEqual(codes(stepLog({ chunks: spaced })), []);
    // A delta of a block no block-end closes is the block: changed, it is another block.
    const open = STREAM.filter((c) => (c as { type: string; index?: number }).type !== "block-end");
    const finish = { type: "finish", reason: { kind: "aborted", failure: { code: "ABORTED", message: "Cancelled" } } };
    const cut = replaced(open, open.length - 1, finish);
    const partial = CONTENT.slice(0, 2);
    const seq = 2 + cut.length;
    assert.deepEqual(codes(stepLog({ chunks: cut, content: partial, interrupted: true })), []);
    const delta = replaced(cut, 5, { type: "text-delta", index: 1, text: "LO" });
    assert.deepEqual(codes(stepLog({ chunks: delta, content: partial, interrupted: true })), mismatch(seq));
  });

  it("reports another usage or replay state than the chunks', and lets a message without them pass", () => {
    assert.deepEqual(codes(stepLog({ usage: { inputTokens: 1, outputTokens: 1 } })), mismatch());
    assert.deepEqual(codes(stepLog({ replayState: { response: "other" } })), mismatch());
    // Carried by the message only where the chunks carry one: nothing to compare.
    const bare = STREAM.filter((c) => (c as { type: string }).type !== "usage");
    const noState = replaced(bare, bare.length - 1, { type: "finish", reason: { kind: "tool-calls" } });
    assert.deepEqual(codes(stepLog({ chunks: noState, usage: { inputTokens: 1, outputTokens: 1 } })), []);
  });

  it("reports a source that is not a chunk of the message's step", () => {
    assert.deepEqual(codes(stepLog({ sources: [0, ...STREAM.map((_, i) => i + 2)] })), mismatch());
    const elsewhere = stepLog();
    const moved = elsewhere.map((e) => (e.seq === 4 ? { ...e, data: { ...e.data, step: 2 } } : e)) as SessionEvent[];
    assert.ok(codes(moved).includes(mismatch()[0]));
  });

  it("reports a message that is not interrupted over a stream that failed (a retried attempt's chunks)", () => {
    const failed = [
      { type: "block-start", index: 0, blockType: "text" },
      { type: "text-delta", index: 0, text: "Hel" },
      { type: "finish", reason: { kind: "error", failure: { code: "RATE_LIMIT", message: "Slow down" } } },
    ];
    const content = [{ type: "text", text: "Hel" }];
    assert.deepEqual(codes(stepLog({ chunks: failed, content })), [
      `${2 + failed.length} ASSISTANT_MESSAGE_CHUNKS_MISMATCH`,
    ]);
  });

  it("holds an interrupted message to the partial text and reasoning blocks of its stream", () => {
    // Cancelled inside the text block: the closed reasoning block, the open text block; the tool call never came.
    const cut = [...STREAM.slice(0, 6), {
      type: "finish",
      reason: { kind: "aborted", failure: { code: "ABORTED", message: "Cancelled" } },
    }];
    const partial = [{ type: "reasoning", text: "Think" }, { type: "text", text: "Hel" }];
    const seq = 2 + cut.length;
    assert.deepEqual(codes(stepLog({ chunks: cut, content: partial, interrupted: true })), []);
    assert.deepEqual(codes(stepLog({ chunks: cut, content: CONTENT.slice(0, 2), interrupted: true })), mismatch(seq));
    // Cancelled after the whole stream: still no tool call in an interrupted message.
    assert.deepEqual(codes(stepLog({ content: CONTENT.slice(0, 2), interrupted: true })), []);
    assert.deepEqual(codes(stepLog({ content: CONTENT, interrupted: true })), mismatch());
  });

  it("checks nothing for a message that names no chunk: an empty sourceEventSeqs, or no field", () => {
    // The loop always names at least its attempt's finish; a message derived from no event (appended by hand or by a
    // plugin, as Session.append allows on assistant/message only) has no stream to be held to.
    assert.deepEqual(codes(stepLog({ chunks: [], content: [] })), []);
    assert.deepEqual(codes(stepLog({ chunks: [], content: [{ type: "text", text: "Hi" }] })), []);
    assert.deepEqual(codes(stepLog({ chunks: [], content: [{ type: "text", text: "Hi" }], sources: null })), []);
  });

  it("drops the tool calls of a max-tokens stream, as the loop does", () => {
    const cut = replaced(STREAM, STREAM.length - 1, { type: "finish", reason: { kind: "max-tokens" } });
    assert.deepEqual(codes(stepLog({ chunks: cut, content: CONTENT.slice(0, 2) })), []);
    assert.ok(codes(stepLog({ chunks: cut })).includes(mismatch()[0]));
  });

  it("does not check a replacing message, nor any message with messageChunks: false", () => {
    const log = stepLog({ content: CONTENT.slice(1) });
    assert.deepEqual(checkInvariants(log, { messageChunks: false }), []);
    const events = stepLog();
    const summary = {
      type: "assistant/message",
      seq: events.length,
      time: 0,
      data: {
        ...at,
        message: { id: "s1", role: "assistant", content: [{ type: "text", text: "Summary" }], source: model },
      },
      surfaceOp: { op: "replace", start: MESSAGE_SEQ, end: MESSAGE_SEQ + 2 },
      sourceEventSeqs: [MESSAGE_SEQ, MESSAGE_SEQ + 2],
    } as unknown as SessionEvent;
    assert.deepEqual(codes([...events, summary]), []);
  });
});

const add = addTool();

/** A log the agent loop wrote: a retried attempt, tool calls, a max-tokens answer, a cancel mid-stream, a compaction. */
async function loopLog(): Promise<readonly SessionEvent[]> {
  const partial: StreamChunk[] = [
    { type: "block-start", index: 0, blockType: "reasoning" },
    { type: "reasoning-delta", index: 0, text: "Let me" },
  ];
  const maxTokens: StreamChunk[] = [
    ...toolCallResponse([{ id: "cut", name: "add", arguments: '{"a":1,' }], { text: "Adding" }).chunks.slice(0, -1),
    { type: "finish", reason: { kind: "max-tokens" } },
  ];
  const answers: ScriptEntry[] = [
    { throw: new LlmFailure("RATE_LIMIT", "Slow down", { status: 429 }), chunks: partial },
    toolCallResponse([{ id: "c1", name: "add", arguments: '{"a":1,"b":2}' }], { text: "Adding", reasoning: "Sum" }),
    textResponse("3", { reasoning: "Done" }),
    { chunks: maxTokens },
    { hang: true, chunks: [...partial, { type: "block-start", index: 1, blockType: "text" }] },
  ];
  const script = scriptedAdapter((request, i) =>
    request.purpose === "compaction" ? textResponse("Earlier: sums") : answers[i] ?? textResponse("again")
  );
  const harness = await createHarness({
    adapters: [script],
    model: { provider: "scripted", model: "scripted-model" },
    tools: [add],
    now: counterClock(),
    newId: counterIds(),
    sleep: () => Promise.resolve(),
    plugins: [[compactionPlugin, { newId: counterIds("sum") }]],
  });
  const agent = await harness.createAgent({ id: "s1" });
  await agent.run("Add 1 and 2");
  await agent.run("Add more");
  const run = agent.run("Think");
  await new Promise<void>((resolve) => {
    const off = agent.ctx.on("session/event", (_s, e) => {
      if (e.type === "assistant/chunk" && e.data.chunk.type === "block-start" && e.data.chunk.index === 1) {
        off();
        resolve();
      }
    });
  });
  agent.cancel("user");
  await run;
  await pluginCtx<object, CompactionServices>(harness.ctx as never).service("compaction").compact(agent);
  await agent.run("Once more");
  const events = agent.session.events;
  await harness.dispose();
  return events;
}

describe("checkInvariants() on logs the agent loop wrote", () => {
  it("accepts them, and reports a change to any message or to any chunk its text comes from", async () => {
    const events = await loopLog();
    assert.deepEqual(checkInvariants(events), []);
    const messages = events.filter((e): e is SessionEvent<"assistant/message"> => e.type === "assistant/message");
    // The shapes this test is about are in the log.
    assert.ok(events.some((e) => e.type === "llm/retry"));
    assert.ok(messages.some((m) => m.data.interrupted === true));
    assert.ok(messages.some((m) => m.data.message.content.some((b) => b.type === "tool-call")));
    assert.ok(events.some((e) => e.type === "compaction/summary"));
    assert.ok(
      events.some((e) =>
        e.type === "assistant/chunk" && e.data.chunk.type === "finish" && e.data.chunk.reason.kind === "max-tokens"
      ),
    );
    const retry = events.find((e) => e.type === "llm/retry")!;
    assert.ok(
      messages[0].sourceEventSeqs!.every((seq) => seq > retry.seq),
      "the failed attempt's chunks are not named",
    );

    const violations = (log: readonly SessionEvent[]) => checkInvariants(log).map((v) => `${v.seq} ${v.code}`);
    const edit = (seq: number, data: unknown) =>
      events.map((e) => (e.seq === seq ? { ...e, data } : e)) as SessionEvent[];
    for (const message of messages) {
      const expected = [`${message.seq} ASSISTANT_MESSAGE_CHUNKS_MISMATCH`];
      const content = message.data.message.content.map((
        b,
      ) => (b.type === "text" || b.type === "reasoning" ? { ...b, text: `${b.text}?` } : b));
      assert.deepEqual(
        violations(edit(message.seq, { ...message.data, message: { ...message.data.message, content } })),
        expected,
      );
      // The chunks the message's text comes from: a block's block-end, or its deltas while no block-end closed it.
      const closed = new Set<number>();
      for (const seq of message.sourceEventSeqs!) {
        const c = (events[seq] as SessionEvent<"assistant/chunk">).data.chunk;
        if (c.type === "block-end") closed.add(c.index);
      }
      let changed = 0;
      for (const seq of message.sourceEventSeqs!) {
        const c = (events[seq] as SessionEvent<"assistant/chunk">).data.chunk;
        const chunk = c.type === "block-end" && (c.block.type === "text" || c.block.type === "reasoning")
          ? { ...c, block: { ...c.block, text: `${c.block.text}!` } }
          : (c.type === "text-delta" || c.type === "reasoning-delta") && !closed.has(c.index)
          ? { ...c, text: `${c.text}!` }
          : undefined;
        if (chunk === undefined) continue;
        changed++;
        assert.deepEqual(violations(edit(seq, { ...events[seq].data, chunk })), expected, `seq ${seq}`);
      }
      assert.ok(changed > 0, `message at seq ${message.seq}`);
    }
    // The message of the retried step naming the failed attempt's chunks too.
    const first = messages[0];
    const failed = events.filter((e) => e.type === "assistant/chunk" && e.seq < retry.seq).map((e) => e.seq);
    const named = events.map((
      e,
    ) => (e === first ? { ...e, sourceEventSeqs: [...failed, ...first.sourceEventSeqs!] } : e));
    assert.deepEqual(violations(named as SessionEvent[]), [`${first.seq} ASSISTANT_MESSAGE_CHUNKS_MISMATCH`]);
  });
});
