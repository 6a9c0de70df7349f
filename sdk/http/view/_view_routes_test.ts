import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHarness } from "../../harness.ts";
import { memoryStorage } from "../../persistence/memory_storage.ts";
import { withFaults } from "../../persistence/_test_storage_faults.ts";
import { Session } from "../../session/session.ts";
import { incarnationOf } from "../../session/_incarnation.ts";
import type { SessionEvent } from "../../session/session_events.ts";
import { createHarnessApp } from "../create_harness_app.ts";
import { VIEW_CLIENT_SCRIPT } from "./_view_client_script.ts";
import { LlmFailure } from "../../llm/llm_failure.ts";
import type { TokenUsage } from "../../llm/stream_chunk.ts";
import { foldProjection } from "../../projections/projection_unit.ts";
import { usageTotals } from "../../projections/usage_totals.ts";
import { scriptedAdapter, textResponse } from "../../../testing/scripted_adapter.ts";
import { parseViewArgs } from "../../../view/mod.ts";
import { makeViewSessions, resumedSessions } from "./_test_view_sessions.ts";

// deno-lint-ignore no-explicit-any
type Core = any;
/** The pure part of the client script, evaluated without a DOM. */
const core: Core = new Function("return " + VIEW_CLIENT_SCRIPT.trim())();

async function stored() {
  const storage = memoryStorage();
  const made = await makeViewSessions(storage, 0);
  const main = made.main.session.events;
  const fork = made.fork.session.events;
  const forkHeader = made.fork.session.header;
  await made.harness.dispose();
  const harness = await createHarness({ storage });
  const app = createHarnessApp(harness, { token: "t0ken", log: false });
  const auth = { authorization: "Bearer t0ken" };
  return { harness, app, auth, main, fork, forkHeader, requests: made.requests };
}

describe("timeline routes", () => {
  it("serves the pages and the script without the token, with no session data in them", async () => {
    const { harness, app } = await stored();
    try {
      for (const path of ["/view", "/sessions/main/view", "/view/compare?a=main&b=main-fork"]) {
        const response = await app.request(path);
        assert.equal(response.status, 200, path);
        assert.match(response.headers.get("content-type") ?? "", /text\/html/);
        const text = await response.text();
        assert.match(text, /<script src="\/view\/client.js" defer>/);
        assert.doesNotMatch(text, /Paris/);
      }
      const script = await app.request("/view/client.js");
      assert.match(script.headers.get("content-type") ?? "", /javascript/);
      assert.equal(await script.text(), VIEW_CLIENT_SCRIPT);
      assert.equal((await app.request("/sessions/bad./view")).status, 400);
    } finally {
      await harness.dispose();
    }
  });

  it("keeps the log and the derived history behind the token", async () => {
    const { harness, app, auth, main } = await stored();
    try {
      assert.equal((await app.request("/sessions/main/log")).status, 401);
      assert.equal((await app.request("/sessions/main/surface?at=3")).status, 401);
      const log = await (await app.request("/sessions/main/log", { headers: auth })).json();
      assert.deepEqual([log.id, log.live, log.status, log.seq], ["main", false, "stored", main.length]);
      assert.deepEqual(log.events, JSON.parse(JSON.stringify(main)));
      assert.equal(log.header.id, "main");
      assert.equal(log.incarnation, incarnationOf(log.header), "the life of the log, as the stream's ids name it");
      const tail = await (await app.request("/sessions/main/log?from=10", { headers: auth })).json();
      assert.deepEqual(tail.events.map((e: SessionEvent) => e.seq), main.slice(10).map((e) => e.seq));
      assert.equal((await app.request("/sessions/main/surface?at=x", { headers: auth })).status, 400);
      assert.equal((await app.request("/sessions/nope/log", { headers: auth })).status, 404);
    } finally {
      await harness.dispose();
    }
  });

  it("GET /sessions/:id/surface is deriveMessages() of the log before the request, with compaction marked", async () => {
    const { harness, app, auth, main, requests } = await stored();
    try {
      const model = core.buildModel(main);
      const steps = model.turns.flatMap((t: Core) => t.steps);
      const sent = requests.main;
      assert.equal(steps.length, sent.length);
      for (const [i, step] of steps.entries()) {
        const at = core.requestSeqOf(model, step);
        const view = await (await app.request(`/sessions/main/surface?at=${at}`, { headers: auth })).json();
        const derived = Session.create("probe", main.slice(0, at)).deriveMessages();
        assert.deepEqual(view.messages.map((m: Core) => m.message), JSON.parse(JSON.stringify(derived)), `step ${i}`);
        assert.deepEqual(
          view.messages.map((m: Core) => m.message.id),
          sent[i].messages.map((m) => m.id),
          `request ${i}`,
        );
      }
      const last = await (await app.request("/sessions/main/surface", { headers: auth })).json();
      assert.equal(last.at, main.length);
      assert.equal(last.replacements.length, 1);
      const [r] = last.replacements;
      const summary = last.messages.find((m: Core) => m.seq === r.seq);
      assert.deepEqual(summary.replaces, { start: r.start, end: r.end });
      const shadowed = last.log.filter((row: Core) => row.shadowedBy === r.seq).map((row: Core) => row.seq);
      assert.deepEqual(shadowed, r.shadowedSeqs);
      assert.ok(shadowed.length >= 6);
    } finally {
      await harness.dispose();
    }
  });

  it("GET /sessions/:id/surface describes a system/message in the full log as the derived history has it", async () => {
    const storage = memoryStorage();
    const text = (t: string) => [{ type: "text", text: t }];
    const events = [
      { type: "turn/start", data: { turn: 1 } },
      { type: "step/start", data: { turn: 1, step: 1 } },
      {
        type: "user/message",
        data: { id: "u1", role: "user", content: text("hello"), source: { kind: "user" } },
        surfaceOp: "append",
      },
      {
        type: "system/message",
        data: {
          id: "sm1",
          role: "system",
          content: text("HOOK CONTEXT: repo is dirty"),
          source: { kind: "plugin", plugin: "hooks:UserPromptSubmit" },
        },
        surfaceOp: "append",
      },
      { type: "step/end", data: { turn: 1, step: 1 } },
      { type: "turn/end", data: { turn: 1, reason: { kind: "completed" } } },
    ].map((e, seq) => ({ ...e, seq, time: 10 + seq }) as unknown as SessionEvent);
    await storage.create({ id: "s", createdAt: 5 });
    await storage.append("s", events, { expectedSeq: 0 });
    const harness = await createHarness({ storage });
    try {
      const app = createHarnessApp(harness, { auth: false, log: false });
      const view = await (await app.request("/sessions/s/surface")).json();
      const derived = Session.create("probe", events).deriveMessages();
      assert.deepEqual(view.messages.map((m: Core) => m.message.role), ["user", "system"]);
      assert.deepEqual(
        view.log.map((row: Core) => [row.seq, row.type, row.role, row.text, row.visible]),
        [
          [2, "user/message", "user", "hello", true],
          [3, "system/message", "system", "HOOK CONTEXT: repo is dirty", true],
        ],
      );
      assert.deepEqual(view.log.map((row: Core) => row.role), derived.map((m) => m.role));
    } finally {
      await harness.dispose();
    }
  });

  it("serves a live session's log only as far as it is on storage, as its event stream does", async () => {
    const memory = memoryStorage();
    let stall = false;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // A disk that stops answering: the second turn is committed in memory and never reaches storage until released.
    const storage = withFaults(memory, {
      append: (append) => (id, events, options) =>
        stall ? released.then(() => append(id, events, options)) : append(id, events, options),
    });
    const harness = await createHarness({
      adapters: [scriptedAdapter([textResponse("stored answer"), textResponse("unstored answer")])],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
    });
    const app = createHarnessApp(harness, { token: "t0ken", log: false });
    const auth = { authorization: "Bearer t0ken" };
    try {
      const agent = await harness.createAgent({ id: "s" });
      await agent.run("stored question");
      stall = true;
      const second = agent.run("unstored question");
      second.catch(() => {}); // awaited below; disposed before it ran when an assertion fails first
      // The second turn starts in memory; its first batch never reaches storage.
      const turns = () => agent.session.events.filter((e) => e.type === "turn/start").length;
      while (turns() < 2) await new Promise((resolve) => setTimeout(resolve, 0));
      const onStorage = (await memory.inspect("s")).events.length;
      assert.ok(agent.session.seq > onStorage, `${agent.session.seq} in memory, ${onStorage} on storage`);
      const log = await (await app.request("/sessions/s/log", { headers: auth })).json();
      assert.equal(log.live, true);
      assert.equal(log.seq, onStorage);
      assert.deepEqual(
        log.events.map((e: SessionEvent) => `${e.seq} ${e.type}`),
        agent.session.events.slice(0, onStorage).map((e) => `${e.seq} ${e.type}`),
      );
      const surface = await (await app.request("/sessions/s/surface", { headers: auth })).json();
      assert.equal(surface.at, onStorage, "the derived history is of the stored log too");
      release();
      await second;
      const all = await (await app.request("/sessions/s/log", { headers: auth })).json();
      assert.equal(all.seq, agent.session.seq);
    } finally {
      release();
      await harness.dispose();
    }
  });

  it("view: false serves none of it", async () => {
    const harness = await createHarness();
    try {
      const app = createHarnessApp(harness, { auth: false, log: false, view: false });
      assert.equal((await app.request("/view")).status, 404);
      assert.equal((await app.request("/sessions/x/log")).status, 404);
    } finally {
      await harness.dispose();
    }
  });
});

describe("the view program's arguments", () => {
  it("parseViewArgs() takes a --port of decimal digits from 0 to 65535 only", () => {
    for (const port of ["0", "80", "8788", "65535"]) {
      assert.deepEqual(parseViewArgs(["d", "--port", port]).options, { port: Number(port) }, port);
    }
    for (const port of ["", " ", "0x50", "1e3", "8788.0", "-1", "+80", "65536", "99999", "8788 ", "١٢٣", "Infinity"]) {
      assert.throws(() => parseViewArgs(["d", "--port", port]), {
        code: "INVALID_ARGS",
        message: /--port takes a decimal integer/,
      }, port);
    }
  });
});

describe("the client's log fold (evaluated without a DOM)", () => {
  it("folds turns, steps, tools, the cancelled turn, approvals, the header change and the compaction", async () => {
    const { harness, main } = await stored();
    await harness.dispose();
    const m = core.buildModel(main);
    assert.equal(m.dupes + m.gaps, 0);
    assert.deepEqual(m.turns.map((t: Core) => core.reasonText(t.reason)), [
      "completed",
      "aborted (user)",
      "completed",
      "completed",
      "completed",
    ]);
    const [one, two, three, four] = m.turns;
    assert.deepEqual(one.steps[0].inputs.map((i: Core) => [i.kind, i.text]), [[
      "user",
      "What is the weather in Paris?",
    ]]);
    const tools = one.steps[0].tools.map((t: Core) => [t.name, t.isError, t.error?.code ?? null, t.result]);
    assert.deepEqual(tools, [
      ["lookup", false, null, "Paris: sunny, 21 °C"],
      ["forecast", true, "TOOL_FAILED", "The forecast service has no data for Paris"],
    ]);
    assert.equal(one.steps[0].headers[0].reason, "initial");
    assert.deepEqual(one.usage, { input: 440, cache: 264, output: 66, reasoning: 18 });
    assert.equal(two.steps[0].messages[0].interrupted, true);
    assert.match(two.steps[0].attempts[0].text, /Roses are red/);
    assert.equal(three.steps[0].tools[0].approval, "rejected");
    const change = four.steps[0].headers[0];
    assert.equal(change.reason, "change");
    const diff = core.headerDiff(change.prev, change.header);
    const added = diff.system.filter((l: Core) => l.op === "add").map((l: Core) => l.text);
    assert.ok(added.includes("Answer in one sentence.") && added.includes("Be cheerful."), added.join("|"));
    assert.equal(diff.system.filter((l: Core) => l.op === "del").length, 0);
    assert.deepEqual([diff.config, diff.toolsAdded, diff.toolsRemoved], [[], [], []]);
    const band = m.blocks.find((b: Core) => b.kind === "band");
    const compaction = band.items.find((i: Core) => i.kind === "compaction");
    assert.deepEqual([compaction.reason, compaction.outcome], ["manual", "completed"]);
    assert.ok(compaction.summarySeq > compaction.seq);
    assert.deepEqual(m.blocks.map((b: Core) => b.kind), ["turn", "turn", "turn", "turn", "band", "turn"]);
    const timing = core.stepTiming(m, one.steps[0]);
    assert.equal(timing.chunks, one.steps[0].attempts[0].chunks);
    assert.ok(timing.tools >= 0 && timing.total >= timing.tools);
  });

  it("tells a fork's seed end from the end-seed every resume writes", async () => {
    const storage = memoryStorage();
    await resumedSessions(storage);
    const plain = await storage.inspect("plain");
    const fork = await storage.inspect("plain-fork");
    const seeds = (events: readonly SessionEvent[]) =>
      events.filter((e) => e.type === "session/end-seed").map((e) => e.seq);
    assert.equal(seeds(plain.events).length, 2);
    // The fork's seed holds the parent's two, then come its own seed end and its resume's.
    assert.equal(seeds(fork.events).length, 4);
    const notes = (m: Core) =>
      m.blocks.flatMap((b: Core) => b.items).filter((i: Core) => i.kind === "seed" || i.kind === "resume")
        .map((i: Core) => [i.kind, i.seq]);

    const p = core.buildModel(plain.events, plain.header);
    assert.deepEqual(p.turns.map((t: Core) => t.inherited), [false, false, false]);
    assert.equal(p.seedEnd, -1);
    assert.deepEqual(notes(p), seeds(plain.events).map((seq) => ["resume", seq]));

    const f = core.buildModel(fork.events, fork.header);
    assert.equal(fork.header.parentSession, "plain");
    assert.deepEqual(f.turns.map((t: Core) => t.inherited), [true, true, true, false, false]);
    assert.equal(f.seedEnd, fork.header.seedLength);
    const [copied1, copied2, forkSeed, resumed] = seeds(fork.events);
    assert.equal(forkSeed, fork.header.seedLength);
    assert.deepEqual(notes(f), [["resume", copied1], ["resume", copied2], ["seed", forkSeed], ["resume", resumed]]);
  });

  it("ends the seed of a fork of a fork that had not run at the end-seed its seed ends with", async () => {
    // The session writes no end-seed after a seed that ends with one: the second fork's seed ends with the first's.
    const answer = (inputTokens: number) => textResponse("ok", { usage: { inputTokens, outputTokens: 1 } });
    const harness = await createHarness({
      adapters: [scriptedAdapter([answer(100), answer(7)])],
      model: { provider: "scripted", model: "scripted-model" },
    });
    const parent = await harness.createAgent({ id: "parent" });
    await parent.run("one");
    const first = await harness.forkAgent(parent.session, { id: "first" });
    const second = await harness.forkAgent(first.session, { id: "second" });
    await second.run("two");
    const { events, header } = second.session;
    await harness.dispose();
    const seeds = events.filter((e) => e.type === "session/end-seed").map((e) => e.seq);
    assert.deepEqual(seeds, [header.seedLength! - 1]);

    const m = core.buildModel(events, header);
    assert.equal(m.seedEnd, header.seedLength! - 1);
    assert.deepEqual(m.turns.map((t: Core) => t.inherited), [true, false]);
    const own = foldProjection(usageTotals, events, undefined, header);
    assert.deepEqual([own.total.inputTokens, own.inherited?.inputTokens], [7, 100]);
    assert.deepEqual([m.totals.input, m.inherited?.input], [7, 100]);
  });

  it("sums usage as the usageTotals projection does, a failed attempt's usage chunks included", async () => {
    const partial = textResponse("partial", { usage: { inputTokens: 1000, outputTokens: 100 } }).chunks
      .filter((c) => c.type !== "finish");
    const harness = await createHarness({
      adapters: [
        scriptedAdapter([
          { throw: new LlmFailure("SERVER", "boom 503"), chunks: partial },
          textResponse("final answer", { usage: { inputTokens: 10, outputTokens: 5 } }),
        ]),
      ],
      model: { provider: "scripted", model: "scripted-model" },
      retryPolicy: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 2, jitter: 0, retryAfterCapMs: 10 },
    });
    const agent = await harness.createAgent({ id: "retry" });
    await agent.run("hi");
    await harness.dispose();
    const retried = agent.session.events;
    assert.ok(retried.some((e) => e.type === "llm/retry"));
    const m = core.buildModel(retried);
    assert.deepEqual([m.totals.input, m.totals.output], [1010, 105]);
    assert.deepEqual([m.turns[0].usage.input, m.turns[0].steps[0].usage.output], [1010, 105]);

    // A step with usage chunks does not count its message's usage again; one without counts the message's.
    const ev = (type: string, data: unknown) => ({ type, data });
    const chunk = (turn: number, step: number, inputTokens: number) =>
      ev("assistant/chunk", { turn, step, chunk: { type: "usage", usage: { inputTokens, outputTokens: 1 } } });
    const message = (turn: number, step: number, inputTokens: number) =>
      ev("assistant/message", {
        turn,
        step,
        message: { id: `a${turn}.${step}`, role: "assistant", content: [] },
        usage: { inputTokens, outputTokens: 1, cacheReadTokens: 2 },
      });
    const synthetic = [
      ev("turn/start", { turn: 1 }),
      ev("step/start", { turn: 1, step: 1 }),
      chunk(1, 1, 100),
      message(1, 1, 100),
      ev("step/end", { turn: 1, step: 1 }),
      ev("step/start", { turn: 1, step: 2 }),
      message(1, 2, 20),
      ev("step/end", { turn: 1, step: 2 }),
      ev("turn/end", { turn: 1, reason: { kind: "completed" } }),
      ev("turn/start", { turn: 2 }),
      ev("step/start", { turn: 2, step: 1 }),
      message(2, 1, 3),
      ev("step/end", { turn: 2, step: 1 }),
      ev("turn/end", { turn: 2, reason: { kind: "completed" } }),
    ].map((e, seq) => ({ ...e, seq, time: seq }) as unknown as SessionEvent);
    const s = core.buildModel(synthetic);
    assert.deepEqual(s.totals, { input: 123, cache: 4, output: 3, reasoning: 0 });
    assert.deepEqual(s.turns.map((t: Core) => t.usage.input), [120, 3]);

    // A compaction's summary calls count from its compaction/end: in the turn it ran in, and the session's total.
    const compacted = [
      ev("turn/start", { turn: 1 }),
      ev("compaction/start", { reason: "threshold" }),
      ev("compaction/end", { outcome: "completed", attempts: 1, usage: { inputTokens: 50, outputTokens: 5 } }),
      ev("turn/end", { turn: 1, reason: { kind: "completed" } }),
      ev("compaction/start", { reason: "manual" }),
      ev("compaction/end", { outcome: "failed", error: "x", attempts: 1, usage: { inputTokens: 7, outputTokens: 1 } }),
    ].map((e, seq) => ({ ...e, seq, time: seq }) as unknown as SessionEvent);
    const c = core.buildModel(compacted);
    assert.deepEqual(c.totals, { input: 57, cache: 0, output: 6, reasoning: 0 });
    assert.deepEqual(c.turns.map((t: Core) => t.usage.input), [50]);

    const { main, fork, forkHeader } = await stored().then(async (made) => (await made.harness.dispose(), made));
    const shown = (u: TokenUsage) => ({
      input: u.inputTokens,
      cache: u.cacheReadTokens ?? 0,
      output: u.outputTokens,
      reasoning: u.reasoningTokens ?? 0,
    });
    for (const log of [retried, synthetic, compacted, main, fork]) {
      assert.deepEqual(core.buildModel(log).totals, shown(foldProjection(usageTotals, log).total));
    }
    // A fork read with its header: its own calls in the totals, its seed's (its parent's) apart, as usageTotals does.
    const own = foldProjection(usageTotals, fork, undefined, forkHeader);
    assert.ok(own.total.inputTokens > 0 && own.inherited!.inputTokens > 0);
    const f = core.buildModel(fork, forkHeader);
    assert.deepEqual([f.totals, f.inherited], [shown(own.total), shown(own.inherited!)]);
    assert.equal(core.buildModel(main).inherited, null);
  });

  it("counts a repeated or a missing seq instead of folding it twice", () => {
    const m = core.newModel();
    const ev = (seq: number) => ({ type: "turn/start", seq, time: 0, data: { turn: seq + 1 } });
    assert.equal(core.pushEvent(m, ev(0)), true);
    assert.equal(core.pushEvent(m, ev(0)), false);
    assert.equal(core.pushEvent(m, ev(3)), true);
    assert.deepEqual([m.dupes, m.gaps, m.turns.length], [1, 2, 2]);
  });

  it("aligns a fork with its parent by turn and step and finds the first divergence", async () => {
    const { harness, main, fork, forkHeader } = await stored();
    await harness.dispose();
    const a = core.buildModel(main);
    const b = core.buildModel(fork, forkHeader);
    assert.equal(b.turns[0].inherited, true);
    assert.ok(b.seedEnd > 0);
    const { rows, first } = core.alignSessions(a, b);
    assert.deepEqual(rows.slice(0, 4).map((r: Core) => r.differs), [[], [], [], []]);
    assert.deepEqual([rows[first].kind, rows[first].turn, rows[first].step], ["step", 2, 1]);
    assert.ok(rows[first].differs.includes("input"));
    assert.deepEqual(core.alignSessions(a, core.buildModel(main)).first, -1);
  });

  it("links a delegating tool call to its child session from subagent/spawned and from the result's meta", () => {
    const m = core.newModel();
    const call = (seq: number, id: string) => ({
      type: "tool/call",
      seq,
      time: seq,
      data: { turn: 1, step: 1, callId: id, name: "task", arguments: "{}" },
    });
    const log = [
      { type: "turn/start", seq: 0, time: 0, data: { turn: 1 } },
      { type: "step/start", seq: 1, time: 0, data: { turn: 1, step: 1 } },
      call(2, "c1"),
      {
        type: "subagent/spawned",
        seq: 3,
        time: 3,
        data: { turn: 1, step: 1, callId: "c1", session: "child-1", mode: "in-process", agent: "researcher" },
      },
      call(4, "c2"),
      {
        type: "tool/result",
        seq: 5,
        time: 5,
        data: {
          turn: 1,
          step: 1,
          message: {
            id: "r2",
            role: "user",
            content: [{ type: "tool-result", toolCallId: "c2", content: [{ type: "text", text: "done" }] }],
            source: { kind: "tool", callId: "c2" },
          },
          meta: { childSession: "child-2" },
        },
      },
    ];
    for (const e of log) core.pushEvent(m, e);
    const tools = m.turns[0].steps[0].tools;
    assert.deepEqual(tools.map((t: Core) => [t.callId, t.child]), [["c1", "child-1"], ["c2", "child-2"]]);
    assert.deepEqual(tools[0].subagent, { agent: "researcher", mode: "in-process" });
  });

  it("keys tool calls, inbox entries and header fields by model-supplied strings without touching Object.prototype", () => {
    const ids = ["constructor", "toString", "__proto__", "hasOwnProperty"];
    const before = Object.getOwnPropertyNames(Object.prototype);
    try {
      const m = core.newModel();
      const log = [
        { type: "turn/start", seq: 0, time: 0, data: { turn: 1 } },
        { type: "step/start", seq: 1, time: 0, data: { turn: 1, step: 1 } },
        {
          type: "assistant/message",
          seq: 2,
          time: 2,
          data: {
            turn: 1,
            step: 1,
            message: {
              id: "a1",
              role: "assistant",
              content: ids.map((id) => ({ type: "tool-call", id, name: `tool_${id}`, arguments: "{}" })),
            },
          },
        },
        ...ids.map((id, i) => ({
          type: "tool/result",
          seq: 3 + i,
          time: 3 + i,
          data: {
            turn: 1,
            step: 1,
            message: {
              id: `r${i}`,
              role: "user",
              content: [{ type: "tool-result", toolCallId: id, content: [{ type: "text", text: `result of ${id}` }] }],
              source: { kind: "tool", callId: id },
            },
          },
        })),
        {
          type: "agent/inbox/spliced",
          seq: 7,
          time: 7,
          data: { target: "next-step", inserted: ids.map((id) => ({ message: { id } })) },
        },
        {
          type: "user/message",
          seq: 8,
          time: 8,
          data: {
            id: "constructor",
            role: "user",
            content: [{ type: "text", text: "steer" }],
            source: { kind: "user" },
          },
        },
      ];
      for (const e of log) core.pushEvent(m, e);
      const [step] = m.turns[0].steps;
      assert.deepEqual(
        step.tools.map((t: Core) => [t.callId, t.name, t.result, t.done]),
        ids.map((id) => [id, `tool_${id}`, `result of ${id}`, true]),
      );
      assert.deepEqual(step.inputs.map((i: Core) => i.kind), ["steer"]);
      const diff = core.headerDiff(
        { config: { model: "a" }, tools: [{ name: "toString" }] },
        { config: JSON.parse('{"model":"a","constructor":1,"__proto__":2}'), tools: [{ name: "constructor" }] },
      );
      assert.deepEqual(diff.config.map((c: Core) => [c.key, c.from, c.to]), [
        ["__proto__", undefined, 2],
        ["constructor", undefined, 1],
      ]);
      assert.deepEqual([diff.toolsAdded, diff.toolsRemoved], [["constructor"], ["toString"]]);
    } finally {
      const added = Object.getOwnPropertyNames(Object.prototype).filter((k) => !before.includes(k));
      for (const k of added) delete (Object.prototype as Record<string, unknown>)[k];
      assert.deepEqual(added, [], "Object.prototype was polluted");
    }
  });

  it("forkForest() makes a root of a fork cycle, so that every session is listed once", () => {
    const sessions = [
      { id: "root", createdAt: 1 },
      { id: "kid", parentSession: "root", createdAt: 2 },
      { id: "a", parentSession: "b", createdAt: 3 },
      { id: "b", parentSession: "a", createdAt: 4 },
      { id: "below", parentSession: "b", createdAt: 5 },
      { id: "self", parentSession: "self", createdAt: 6 },
      { id: "orphan", parentSession: "gone", createdAt: 7 },
    ];
    const rows = core.forkRows(core.forkForest(sessions)).map((r: Core) => [r.session.id, r.depth]);
    assert.deepEqual(rows, [["root", 0], ["kid", 1], ["a", 0], ["b", 1], ["below", 2], ["self", 0], ["orphan", 0]]);
  });

  it("lineDiff keeps common lines and marks the changed ones", () => {
    const ops = core.lineDiff("a\nb\nc\nd", "a\nB\nc\nd\ne").map((l: Core) => l.op + l.text);
    assert.deepEqual(ops, ["samea", "delb", "addB", "samec", "samed", "adde"]);
  });
});
