import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { memoryStorage } from "../persistence/memory_storage.ts";
import { scriptedAdapter, type ScriptEntry, textResponse, toolCallResponse } from "../../testing/scripted_adapter.ts";
import { LlmFailure } from "../llm/llm_failure.ts";
import type { PreToolDecision } from "../tools/tool_events.ts";
import { createHarnessApp } from "./create_harness_app.ts";
import { createHarness } from "../harness.ts";
import { withFaults } from "../persistence/_test_storage_faults.ts";
import { inProcessSubagents } from "../subagents/mod.ts";
import {
  agentOf,
  assertFramesOfLog,
  gate,
  loggedSeqs,
  lookupTool,
  pacedAdapter,
  type Served,
  serveHarness,
  sessionEvents,
  type SseMessage,
  withServer,
} from "./_test_client.ts";

const toolTurn: ScriptEntry[] = [
  toolCallResponse([{ id: "call-1", name: "lookup", arguments: '{"key":"a"}' }]),
  textResponse("The value is a."),
];

/** The seqs of the frames that stand for events (session frames, and deltas with an id). */
const seqs = loggedSeqs;

/** A JSON POST to `app`. */
function postJson(
  app: { request: (path: string, init: RequestInit) => Response | Promise<Response> },
  path: string,
  body: unknown,
) {
  return app.request(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

const isTurnEnd = (m: SseMessage) => m.event === "session" && m.data.type === "turn/end";

describe("createHarnessApp()", () => {
  it("refuses to start without a token unless auth is explicitly disabled", async () => {
    const served = await serveHarness({});
    await withServer(served, async ({ harness }) => {
      assert.throws(() => createHarnessApp(harness), { code: "INVALID_ARGS" });
      assert.throws(() => createHarnessApp(harness, { token: "" }), { code: "INVALID_ARGS" });
      const open = createHarnessApp(harness, { auth: false, log: false });
      assert.equal((await open.request("/sessions")).status, 200);
    });
  });

  it("creates a session, sends a message and streams a full turn with a tool call", async () => {
    const served = await serveHarness({ adapters: [scriptedAdapter(toolTurn)], tools: [lookupTool()] });
    await withServer(served, async ({ harness, call, events }) => {
      const created = await call("POST", "/sessions", { id: "s1", tools: ["lookup"], system: "Be brief." });
      assert.equal(created.status, 201);
      assert.equal(created.headers.get("location"), "/sessions/s1");
      const summary = await created.json();
      assert.deepEqual(
        [summary.id, summary.live, summary.status, summary.turns, summary.seq],
        ["s1", true, "idle", 0, 0],
      );

      const stream = await events("s1");
      assert.equal(stream.response.headers.get("content-type"), "text/event-stream");
      const sent = await call("POST", "/sessions/s1/messages", { content: "What is a?" });
      assert.equal(sent.status, 202);
      assert.equal((await sent.json()).mode, "followup");
      const messages = await stream.until(isTurnEnd);
      await stream.close();

      const log = agentOf(harness, "s1").session.events;
      // Every event once, in order: streamed deltas as `event: delta` (a run of one block's chunks as one frame,
      // with the id of its last: without storage it is acknowledged at once), every other event as
      // `event: session`.
      assert.deepEqual(seqs(messages), range(log.length));
      const counts = assertFramesOfLog(messages, log);
      assert.equal(
        counts.chunks,
        log.filter((e) => e.type === "assistant/chunk" && e.data.chunk.type.endsWith("-delta")).length,
      );
      assert.ok(counts.delta > 0);
      const types = sessionEvents(messages).map((m) => m.data.type);
      assert.ok(types.includes("tool/call") && types.includes("tool/result"));
      assert.deepEqual(messages.at(-1)!.data.data.reason, { kind: "completed" });
      const deltas = messages.filter((m) => m.event === "delta");
      assert.equal(
        deltas.filter((d) => d.data.blockType === "text").map((d) => d.data.text).join(""),
        "The value is a.",
      );
      assert.ok(deltas.some((d) => d.data.blockType === "tool-call" && d.data.name === "lookup"));
      assert.deepEqual(messages.filter((m) => m.event === "status").map((m) => m.data.status), ["running"]);
      const header = log.find((e) => e.type === "request/header");
      assert.ok(header?.type === "request/header");
      assert.match(header.data.header.system ?? "", /Be brief\./);
      assert.deepEqual(header.data.header.tools?.map((t) => t.name), ["lookup"]);

      const after = await (await call("GET", "/sessions/s1")).json();
      assert.deepEqual([after.turns, after.seq, after.status], [1, log.length, "idle"]);
      assert.ok(after.usage.inputTokens > 0 && after.usage.outputTokens > 0);
    });
  });

  it("resumes a stream with Last-Event-ID after a mid-turn disconnect, without loss or duplication", async () => {
    const toolHeld = gate();
    const modelHeld = gate();
    const model = scriptedAdapter(async (_request, index) => {
      if (index === 0) return toolTurn[0];
      await modelHeld.promise;
      return toolTurn[1];
    });
    const served = await serveHarness({ adapters: [model], tools: [lookupTool(() => toolHeld.promise)] });
    await withServer(served, async ({ harness, call, events }) => {
      await call("POST", "/sessions", { id: "s1" });
      const first = await events("s1", {}, "?deltas=false");
      await call("POST", "/sessions/s1/messages", { content: "What is a?" });
      const before = await first.until((m) => m.event === "session" && m.data.type === "tool/call");
      await first.close(); // the client goes away mid-turn
      const agent = agentOf(harness, "s1");
      const lastSeen = seqs(before).at(-1)!;

      toolHeld.open(); // the turn goes on without a client: step 2 starts and waits for the model
      while (!agent.session.events.some((e) => e.type === "step/start" && e.data.step === 2)) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      assert.equal(agent.status, "running");
      assert.ok(agent.session.seq > lastSeen + 1, "events were committed while no client listened");

      const second = await events("s1", { "last-event-id": String(lastSeen) });
      const ready = await second.next();
      assert.equal(ready?.event, "ready");
      modelHeld.open();
      const after = await second.until(isTurnEnd);
      await second.close();

      // The first stream asked for the whole log, the second sends deltas: each event once, in either form.
      const received = [...seqs(before), ...seqs(after)];
      assert.deepEqual(received, range(agent.session.seq));
      assert.equal(assertFramesOfLog(before, agent.session.events).delta, 0);
      assert.ok(assertFramesOfLog(after, agent.session.events).delta > 0, "the second turn's text came as deltas");
      assert.deepEqual(after.at(-1)!.data.data.reason, { kind: "completed" }, "a disconnect does not cancel");
    });
  });

  it("loses and repeats nothing when a client reconnects every few events during a long turn", async () => {
    const words = Array.from({ length: 150 }, (_, i) => `w${i} `);
    const longAnswer: ScriptEntry = {
      chunks: [
        { type: "block-start", index: 0, blockType: "text" },
        ...words.map((text) => ({ type: "text-delta" as const, index: 0, text })),
        { type: "block-end", index: 0, block: { type: "text", text: words.join("") } },
        { type: "usage", usage: { inputTokens: 5, outputTokens: 150 } },
        { type: "finish", reason: { kind: "stop" } },
      ],
    };
    const script = scriptedAdapter([
      toolCallResponse([{ id: "call-1", name: "lookup", arguments: '{"key":"a"}' }]),
      toolCallResponse([{ id: "call-2", name: "lookup", arguments: '{"key":"b"}' }]),
      longAnswer,
    ]);
    // The model streams a text delta only when the test grants a permit, so the
    // turn is still running whenever the client reconnects (until all 150 are granted).
    const { adapter: paced, grant } = pacedAdapter(script);
    const served = await serveHarness({ adapters: [paced], tools: [lookupTool()] });
    await withServer(served, async ({ harness, call, events }) => {
      await call("POST", "/sessions", { id: "s1" });
      const received: SseMessage[] = [];
      const statusAtReconnect: string[] = [];
      let ended = false;
      for (let round = 0; !ended; round++) {
        const last = received.at(-1)?.id;
        const stream = await events("s1", last === undefined ? {} : { "last-event-id": last }, "?deltas=false");
        const ready = await stream.next();
        if (round === 0) await call("POST", "/sessions/s1/messages", { content: "Go" });
        else statusAtReconnect.push(ready?.data.status);
        grant(5); // more events become available than the 3 read per round: reads never starve
        for (let taken = 0; taken < 3;) {
          const message = await stream.next();
          assert.ok(message !== undefined, "the stream stays open while the agent lives");
          if (message.event !== "session") continue;
          received.push(message);
          taken++;
          if (isTurnEnd(message)) {
            ended = true;
            break;
          }
        }
        await stream.close();
      }
      const log = agentOf(harness, "s1").session.events;
      assert.deepEqual(seqs(received), range(log.length));
      assert.deepEqual(received.map((m) => m.data), JSON.parse(JSON.stringify(log)));
      assert.ok(statusAtReconnect.slice(0, 25).every((status) => status === "running"), "reconnects happened mid-turn");
    });
  });

  it("replays from ?from=, sends keep-alive comments while idle, and ends after the log with ?follow=false", async () => {
    const served = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] }, { keepAliveMs: 10 });
    await withServer(served, async ({ harness, call, events }) => {
      await call("POST", "/sessions", { id: "s1" });
      await (await call("POST", "/sessions/s1/messages", { content: "Hello", wait: true })).json();
      const length = agentOf(harness, "s1").session.seq;
      const stream = await events("s1", {}, "?from=3");
      const messages = await stream.until((m) => m.event === "session" && m.data.seq === length - 1);
      assert.deepEqual(seqs(messages), range(length).slice(3));
      const pending = stream.next().catch(() => undefined); // keeps the body flowing; an idle session sends no event
      while (stream.comments.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      assert.equal(stream.comments[0].trim(), "keep-alive");
      await stream.close();
      await pending;

      const caughtUp = await events("s1", { "last-event-id": String(length - 3) }, "?follow=false");
      const rest: SseMessage[] = [];
      for (let m = await caughtUp.next(); m !== undefined; m = await caughtUp.next()) rest.push(m);
      assert.deepEqual(rest.map((m) => m.event), ["ready", "session", "session", "end"]);
      assert.deepEqual(seqs(rest), [length - 2, length - 1]);
    });
  });

  it("routes steer to the running turn's next step and inject to the next step without waking", async () => {
    const toolHeld = gate();
    const model = scriptedAdapter([toolTurn[0], textResponse("Steered."), textResponse("Done.")]);
    const served = await serveHarness({ adapters: [model], tools: [lookupTool(() => toolHeld.promise)] });
    await withServer(served, async ({ harness, call, events }) => {
      await call("POST", "/sessions", { id: "s1" });
      const stream = await events("s1", {}, "?deltas=false");
      await call("POST", "/sessions/s1/messages", { content: "Start" });
      await stream.until((m) => m.event === "session" && m.data.type === "tool/call");
      const steered = await call("POST", "/sessions/s1/messages", { mode: "steer", content: "Also this" });
      assert.equal(steered.status, 202);
      assert.equal((await steered.json()).mode, "steer");
      toolHeld.open();
      await stream.until(isTurnEnd);
      await stream.close();
      const texts = (i: number) =>
        model.requests[i].messages.flatMap((m) => m.content.flatMap((b) => (b.type === "text" ? [b.text] : [])));
      assert.ok(texts(1).includes("Also this"), "the steer reached the second step of the same turn");
      const agent = agentOf(harness, "s1");

      const injected = await call("POST", "/sessions/s1/messages", { mode: "inject", content: "A note", wait: true });
      assert.equal(injected.status, 200);
      assert.deepEqual([agent.status, model.calls], ["idle", 2], "inject does not wake the agent");
      assert.equal((await (await call("GET", "/sessions/s1")).json()).turns, 1);
      const reply = await (await call("POST", "/sessions/s1/messages", { content: "Go on", wait: true })).json();
      assert.deepEqual([reply.result.text, reply.result.turn], ["Done.", 2]);
      assert.ok(texts(2).includes("A note") && texts(2).includes("Go on"));
    });
  });

  it("cancels a running turn only on POST /cancel", async () => {
    const served = await serveHarness({ adapters: [scriptedAdapter({ hang: true })] });
    await withServer(served, async ({ harness, call, events }) => {
      await call("POST", "/sessions", { id: "s1" });
      const stream = await events("s1", {}, "?deltas=false");
      await call("POST", "/sessions/s1/messages", { content: "Think forever" });
      await stream.until((m) => m.event === "session" && m.data.type === "request/header");
      assert.equal(agentOf(harness, "s1").status, "running");
      const cancelled = await call("POST", "/sessions/s1/cancel");
      // The answer comes once the turn is over.
      assert.equal(cancelled.status, 200);
      assert.deepEqual(await cancelled.json(), { id: "s1", cancelled: true, settled: true, status: "idle" });
      const messages = await stream.until(isTurnEnd);
      assert.deepEqual(messages.at(-1)!.data.data.reason, { kind: "aborted", reason: "user" });
      await stream.close();
      const summary = await (await call("GET", "/sessions/s1")).json();
      assert.equal(summary.status, "idle");
    });
  });

  it("forks a session into a new live agent that continues on its own", async () => {
    const model = scriptedAdapter([textResponse("First"), textResponse("Child answer")]);
    const served = await serveHarness({ adapters: [model] });
    await withServer(served, async ({ harness, call }) => {
      await call("POST", "/sessions", { id: "s1", system: "Parent prompt" });
      await (await call("POST", "/sessions/s1/messages", { content: "One", wait: true })).json();
      const parentLog = agentOf(harness, "s1").session.events;
      const inside = parentLog.findIndex((e) => e.type === "step/start");

      const open = await call("POST", "/sessions/s1/fork", { boundary: inside });
      assert.equal(open.status, 409);
      assert.equal((await open.json()).code, "OPEN_TURN");
      const beyond = await call("POST", "/sessions/s1/fork", { boundary: 10_000 });
      assert.equal(beyond.status, 422);
      assert.equal((await beyond.json()).code, "INVALID_BOUNDARY");

      const forked = await call("POST", "/sessions/s1/fork", { id: "s2" });
      assert.equal(forked.status, 201);
      const child = await forked.json();
      assert.deepEqual([child.id, child.parentSession, child.turns, child.live], ["s2", "s1", 1, true]);
      const reply = await (await call("POST", "/sessions/s2/messages", { content: "Two", wait: true })).json();
      assert.equal(reply.result.text, "Child answer");
      assert.equal(reply.result.turn, 2);
      assert.equal(agentOf(harness, "s1").session.seq, parentLog.length, "the parent is unchanged");
      const childLog = agentOf(harness, "s2").session.events;
      assert.deepEqual(childLog.slice(0, parentLog.length), parentLog);
      const childHeader = childLog.findLast((e) => e.type === "request/header");
      assert.ok(childHeader?.type === "request/header");
      assert.match(childHeader.data.header.system ?? "", /Parent prompt/);

      // Inside a compaction (the parent's log gains one here, after the checks of an unchanged parent).
      const session = agentOf(harness, "s1").session;
      const compacting = session.append("compaction/start", { reason: "manual" }).seq;
      session.append("compaction/end", { outcome: "failed", error: "no summary" });
      const compaction = await call("POST", "/sessions/s1/fork", { boundary: compacting });
      assert.equal(compaction.status, 409);
      assert.equal((await compaction.json()).code, "OPEN_COMPACTION");
      const taken = await call("POST", "/sessions/s1/fork", { id: "s2" });
      assert.equal(taken.status, 409);
      assert.equal((await taken.json()).code, "SESSION_ALREADY_EXISTS");
    });
  });

  it("reports a fork's own usage, live and stored, the seed it copied left out (as its projections do)", async () => {
    const storage = memoryStorage();
    const answer = (inputTokens: number) => textResponse("ok", { usage: { inputTokens, outputTokens: 1 } });
    const options = { model: { provider: "scripted", model: "scripted-model" }, storage };
    const harness = await createHarness({ ...options, adapters: [scriptedAdapter([answer(100), answer(7)])] });
    const app = createHarnessApp(harness, { auth: false, log: false });
    const get = async (path: string) => await (await app.request(path)).json();
    const post = (path: string, body: unknown) => postJson(app, path, body);
    assert.equal((await post("/sessions", { id: "s1" })).status, 201);
    assert.equal((await post("/sessions/s1/messages", { content: "One", wait: true })).status, 200);
    assert.equal((await post("/sessions/s1/fork", { id: "s2" })).status, 201);
    assert.equal((await post("/sessions/s2/messages", { content: "Two", wait: true })).status, 200);
    for (const id of ["s1", "s2"]) {
      await harness.ctx.service("sessions").flush(harness.ctx.service("sessions").get(id)!);
    }
    const own = { inputTokens: 7, outputTokens: 1 };
    const live = await get("/sessions/s2");
    assert.deepEqual([live.live, live.usage], [true, own]);
    assert.deepEqual((await get("/sessions/s2/projections")).projections.usageTotals, own);
    assert.deepEqual((await get("/sessions/s1")).usage, { inputTokens: 100, outputTokens: 1 });
    await harness.dispose();

    const reader = await createHarness(options);
    const stored = createHarnessApp(reader, { auth: false, log: false });
    const summary = await (await stored.request("/sessions/s2")).json();
    assert.deepEqual([summary.live, summary.usage, summary.seq], [false, own, live.seq]);
    const projections = await (await stored.request("/sessions/s2/projections")).json();
    assert.deepEqual(projections.projections.usageTotals, own);
    await reader.dispose();
  });

  it("names a fork made without an id from the harness's id source, as harness.forkAgent() does", async () => {
    let n = 0;
    const harness = await createHarness({ adapters: [scriptedAdapter(textResponse("ok"))], newId: () => `n-${++n}` });
    const app = createHarnessApp(harness, { auth: false, log: false });
    const post = (path: string, body: unknown) => postJson(app, path, body);
    assert.equal((await post("/sessions", { id: "s1" })).status, 201);
    const forked = await post("/sessions/s1/fork", {});
    assert.equal(forked.status, 201);
    assert.match((await forked.json()).id, /^n-\d+$/);
    await harness.dispose();
  });

  it("answers a tool ask over HTTP (approval round trip)", async () => {
    const model = scriptedAdapter([
      toolCallResponse([{ id: "call-1", name: "lookup", arguments: '{"key":"a"}' }]),
      textResponse("Approved."),
      toolCallResponse([{ id: "call-2", name: "lookup", arguments: '{"key":"b"}' }]),
      textResponse("Rejected."),
      textResponse("Quiet."),
    ]);
    const served = await serveHarness({ adapters: [model], tools: [lookupTool()] }, {}, (harness) => {
      harness.ctx.on(
        "tools/pre-execute",
        (): PreToolDecision => ({ kind: "ask", reason: "lookups need approval" }),
      );
    });
    await withServer(served, async ({ harness, call, events }) => {
      // Another session's stream hears nothing of s1's questions.
      await call("POST", "/sessions", { id: "s0" });
      const quiet = await events("s0", {}, "?deltas=false");
      await call("POST", "/sessions", { id: "s1" });
      const stream = await events("s1", {}, "?deltas=false");
      await call("POST", "/sessions/s1/messages", { content: "Look a up" });
      const asked = await stream.until((m) => m.event === "approvals" && m.data.pending.length === 1);
      assert.deepEqual(asked.at(-1)!.data.pending, [
        { sessionId: "s1", callId: "call-1", toolName: "lookup", args: { key: "a" }, reason: "lookups need approval" },
      ]);
      const listed = await (await call("GET", "/sessions/s1/approvals")).json();
      assert.deepEqual(listed.approvals.map((a: { callId: string }) => a.callId), ["call-1"]);
      // A reader that joins (or reconnects) while the question is pending is told of it right after ready.
      const late = await events("s1", {}, "?deltas=false");
      assert.deepEqual([(await late.next())?.event, await late.next()], ["ready", {
        event: "approvals",
        id: undefined,
        data: { pending: asked.at(-1)!.data.pending },
      }]);
      await late.close();
      const unknown = await call("POST", "/sessions/s1/approvals/call-9", { decision: "allow" });
      assert.equal(unknown.status, 404);
      assert.equal((await unknown.json()).code, "APPROVAL_NOT_FOUND");
      const answered = await call("POST", "/sessions/s1/approvals/call-1", { decision: "allow" });
      assert.deepEqual(await answered.json(), { callId: "call-1", outcome: "allowed-once" });
      await stream.until(isTurnEnd);

      await call("POST", "/sessions/s1/messages", { content: "Look b up" });
      await stream.until((m) => m.event === "approvals" && m.data.pending.length === 1);
      const rejected = await call("POST", "/sessions/s1/approvals/call-2", { decision: "reject" });
      assert.equal((await rejected.json()).outcome, "rejected");
      await stream.until(isTurnEnd);
      await stream.close();
      await call("POST", "/sessions/s0/messages", { content: "Anything?" });
      const heard = await quiet.until(isTurnEnd);
      assert.deepEqual(heard.filter((m) => m.event === "approvals"), []);
      await quiet.close();

      const results = agentOf(harness, "s1").session.events.filter((e) => e.type === "tool/result");
      assert.deepEqual(results.map((e) => e.type === "tool/result" ? e.data.error?.code ?? null : "?"), [
        null,
        "DENIED",
      ]);
    });
  });

  it("takes a session's system text literally: braces a client sends are not a template", async () => {
    const model = scriptedAdapter(textResponse("ok"));
    const served = await serveHarness({ adapters: [model] });
    await withServer(served, async ({ call }) => {
      const system = 'Answer as JSON like {{"answer": "..."}}, or \\{{ cwd }}.';
      assert.equal((await call("POST", "/sessions", { id: "s1", system })).status, 201);
      const reply = await (await call("POST", "/sessions/s1/messages", { content: "Hi", wait: true })).json();
      assert.equal(reply.result.reason.kind, "completed");
      assert.ok(model.requests[0].system?.includes(system), model.requests[0].system);
    });
  });

  it("lists a subagent's pending approval on its parent too, naming the child; it is answered at the child's route", async () => {
    // The parent delegates to a helper (system prompt "CHILD"), whose lookup asks.
    const model = scriptedAdapter((request) => {
      const child = JSON.stringify(request.system ?? "").includes("CHILD");
      const last = request.messages.at(-1)!;
      const fresh = last.role === "user" && last.content.some((b) => b.type === "text");
      if (!child) {
        return fresh
          ? toolCallResponse([{
            id: "t1",
            name: "task",
            arguments: JSON.stringify({ agent: "helper", description: "look", prompt: "look a up" }),
          }])
          : textResponse("parent done");
      }
      return fresh
        ? toolCallResponse([{ id: "call-1", name: "lookup", arguments: '{"key":"a"}' }])
        : textResponse("child done");
    });
    const served = await serveHarness(
      {
        adapters: [model],
        tools: [lookupTool()],
        plugins: [inProcessSubagents({ agents: [{ name: "helper", description: "helps", system: "CHILD" }] })],
      },
      {},
      (harness) => {
        harness.ctx.on(
          "tools/pre-execute",
          (exec, next): PreToolDecision | Promise<PreToolDecision> =>
            exec.name === "lookup" ? { kind: "ask", reason: "lookups need approval" } : next(),
        );
      },
    );
    await withServer(served, async ({ harness, call, events }) => {
      await call("POST", "/sessions", { id: "p" });
      await call("POST", "/sessions/p/messages", { content: "Delegate" });
      // Until the child asks (its own route lists it).
      while (harness.sessions.get("p.t1") === undefined) await new Promise((resolve) => setTimeout(resolve, 1));
      while ((await (await call("GET", "/sessions/p.t1/approvals")).json()).approvals.length === 0);
      const entry = {
        sessionId: "p.t1",
        callId: "call-1",
        toolName: "lookup",
        args: { key: "a" },
        reason: "lookups need approval",
      };
      assert.equal(agentOf(harness, "p.t1").session.header.parentSession, "p");
      assert.deepEqual(await (await call("GET", "/sessions/p/approvals")).json(), { approvals: [entry] });
      assert.deepEqual((await (await call("GET", "/sessions/p")).json()).pendingApprovals, [entry]);
      assert.deepEqual(await (await call("GET", "/sessions/p.t1/approvals")).json(), { approvals: [entry] });
      const parentStream = await events("p", {}, "?deltas=false");
      assert.equal((await parentStream.next())?.event, "ready");
      assert.deepEqual((await parentStream.next())?.data, { pending: [entry] });
      const atParent = await call("POST", "/sessions/p/approvals/call-1", { decision: "allow" });
      assert.equal(atParent.status, 404);
      assert.equal((await atParent.json()).code, "APPROVAL_NOT_FOUND");
      const atChild = await call("POST", "/sessions/p.t1/approvals/call-1", { decision: "allow" });
      assert.deepEqual(await atChild.json(), { callId: "call-1", outcome: "allowed-once" });
      await parentStream.until((m) => m.event === "approvals" && m.data.pending.length === 0);
      await parentStream.until(isTurnEnd);
      await parentStream.close();
    });
  });

  it("lists, transcribes and deletes sessions", async () => {
    const served = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hello there"))] });
    await withServer(served, async ({ harness, call, events }) => {
      await call("POST", "/sessions", { id: "s1" });
      await call("POST", "/sessions", { id: "s2" });
      await (await call("POST", "/sessions/s1/messages", { content: "Hi", wait: true })).json();
      const list = await (await call("GET", "/sessions")).json();
      assert.deepEqual(list.sessions.map((s: { id: string }) => s.id), ["s1", "s2"]);

      const markdown = await call("GET", "/sessions/s1/transcript");
      assert.match(markdown.headers.get("content-type") ?? "", /^text\/markdown/);
      assert.match(await markdown.text(), /Hello there/);
      const json = await (await call("GET", "/sessions/s1/transcript?format=json")).json();
      assert.deepEqual(json.messages.map((m: { role: string }) => m.role), ["user", "assistant"]);
      const badFormat = await call("GET", "/sessions/s1/transcript?format=pdf");
      assert.equal(badFormat.status, 400);
      const projections = await (await call("GET", "/sessions/s1/projections")).json();
      assert.deepEqual(Object.keys(projections.projections), ["turnBoundary", "todos", "usageTotals", "childSessions"]);
      assert.equal(projections.projections.turnBoundary.turns, 1);
      assert.equal(projections.seq, agentOf(harness, "s1").session.seq);

      const watching = await events("s2");
      assert.equal((await watching.next())?.event, "ready");
      const deleted = await call("DELETE", "/sessions/s2");
      assert.equal(deleted.status, 204);
      assert.deepEqual(await watching.until((m) => m.event === "end"), [{
        event: "end",
        id: undefined,
        data: { id: "s2", seq: 0 },
      }]);
      assert.equal(await watching.next(), undefined, "the stream of a deleted session ends");
      assert.equal(harness.ctx.service("agents").get("s2"), undefined);
      assert.equal((await call("DELETE", "/sessions/s2")).status, 404);
      assert.equal((await call("GET", "/sessions/s2")).status, 404);
    });
  });

  it("tags every response and log record with a request id", async () => {
    const served = await serveHarness({});
    await withServer(served, async ({ call, logs }) => {
      const given = await call("GET", "/sessions", undefined, { "x-request-id": "req-42" });
      assert.equal(given.headers.get("x-request-id"), "req-42");
      const generated = await call("GET", "/sessions/nope", undefined, { "x-request-id": "bad id with spaces" });
      const id = generated.headers.get("x-request-id");
      assert.ok(id && id !== "bad id with spaces");
      assert.equal((await generated.json()).requestId, id);
      assert.deepEqual(
        logs.map((r) => [r.requestId, r.method, r.path, r.status, r.code]),
        [["req-42", "GET", "/sessions", 200, undefined], [id, "GET", "/sessions/nope", 404, "SESSION_NOT_FOUND"]],
      );
    });
  });
});

async function served2Events(call: Served["call"]): Promise<string[]> {
  const text = await (await call("GET", "/sessions/s1/events?follow=false")).text();
  return [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
}

/** A storage holding session "s1" with a followup acknowledged and stored whose turn never ran (its process died). */
async function storedWithQueuedFollowup() {
  const storage = memoryStorage();
  const first = await serveHarness({ adapters: [scriptedAdapter([])], storage });
  await withServer(first, async ({ harness, call }) => {
    await call("POST", "/sessions", { id: "s1" });
    const agent = agentOf(harness, "s1");
    agent.send("Hello", "next-turn", false);
    await agent.flushed();
  });
  return storage;
}

describe("createHarnessApp() over storage", () => {
  it("reports a live session's transcript, summary and projections as far as they are on storage", async () => {
    // A storage whose appends of a batch with the answer wait until the test lets them through.
    const inner = memoryStorage();
    const held = gate();
    let holding = false;
    const storage = withFaults(inner, {
      append: (append) => async (id, events, options) => {
        if (events.some((e) => e.type === "assistant/message")) {
          holding = true;
          await held.promise;
        }
        return await append(id, events, options);
      },
    });
    const served = await serveHarness({ adapters: [scriptedAdapter([textResponse("The answer")])], storage });
    await withServer(served, async ({ call }) => {
      await call("POST", "/sessions", { id: "s" });
      const answered = call("POST", "/sessions/s/messages", { content: "Question", wait: true });
      try {
        while (!holding) await new Promise((resolve) => setTimeout(resolve, 5));
        // The answer, its usage and the turn's end are in the live log, not on storage: not reported.
        const transcript = await (await call("GET", "/sessions/s/transcript")).text();
        assert.match(transcript, /Question/);
        assert.doesNotMatch(transcript, /The answer/);
        const json = await (await call("GET", "/sessions/s/transcript?format=json")).json();
        assert.equal(json.messages.length, 1);
        const stored = (await inner.inspect("s")).events.length;
        const summary = await (await call("GET", "/sessions/s")).json();
        assert.equal(summary.usage.outputTokens, 0);
        assert.ok(summary.seq <= stored, `summary seq ${summary.seq} is past the ${stored} stored events`);
        const projected = await (await call("GET", "/sessions/s/projections")).json();
        assert.notEqual(projected.projections.turnBoundary.open, undefined, "the turn is open as far as it is stored");
        assert.ok(projected.seq <= stored);
      } finally {
        held.open();
      }
      assert.equal((await answered).status, 200);
      assert.match(await (await call("GET", "/sessions/s/transcript")).text(), /The answer/);
      const after = await (await call("GET", "/sessions/s")).json();
      assert.deepEqual([after.usage.outputTokens > 0, after.seq], [true, (await inner.inspect("s")).events.length]);
      const closed = await (await call("GET", "/sessions/s/projections")).json();
      assert.equal(closed.projections.turnBoundary.open, undefined);
    });
  });

  it("reports a session being resumed with the log it loaded, while the writer's start is under way", async () => {
    const inner = memoryStorage();
    const seed = await createHarness({ adapters: [scriptedAdapter([textResponse("First answer")])], storage: inner });
    await (await seed.createAgent({ id: "s" })).run("First question");
    await seed.dispose();
    // The persistence plugin's stat (its start, after the resume took the lease and loaded the log) waits.
    const held = gate();
    let stats = 0;
    let slow = false;
    const storage = withFaults(inner, {
      stat: (stat) => async (id) => {
        if (slow && ++stats === 2) await held.promise;
        return await stat(id);
      },
    });
    const served = await serveHarness({ adapters: [scriptedAdapter([textResponse("x")])], storage });
    await withServer(served, async ({ harness, call }) => {
      slow = true;
      const resuming = harness.resumeAgent("s");
      try {
        while (harness.ctx.service("agents").get("s") === undefined) {
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        const summary = await (await call("GET", "/sessions/s")).json();
        assert.deepEqual([summary.live, summary.turns], [true, 1]);
        assert.equal(summary.seq, (await inner.inspect("s")).events.length);
        assert.match(await (await call("GET", "/sessions/s/transcript")).text(), /First answer/);
      } finally {
        held.open();
      }
      await resuming;
    });
  });

  it("lists a stored session and resumes it on the next message", async () => {
    const storage = memoryStorage();
    const first = await serveHarness({ adapters: [scriptedAdapter(textResponse("One"))], storage });
    await withServer(first, async ({ call }) => {
      await call("POST", "/sessions", { id: "s1" });
      await (await call("POST", "/sessions/s1/messages", { content: "Hello", wait: true })).json();
    });

    const second = await serveHarness({ adapters: [scriptedAdapter(textResponse("Two"))], storage });
    await withServer(second, async ({ harness, call }) => {
      const list = await (await call("GET", "/sessions")).json();
      assert.deepEqual(list.sessions.map((s: { id: string; status: string }) => [s.id, s.status]), [["s1", "stored"]]);
      const stored = await (await call("GET", "/sessions/s1")).json();
      assert.deepEqual([stored.live, stored.status, stored.turns], [false, "stored", 1]);
      const transcript = await (await call("GET", "/sessions/s1/transcript")).text();
      assert.match(transcript, /One/);
      const projected = await (await call("GET", "/sessions/s1/projections")).json();
      assert.deepEqual([projected.projections.turnBoundary.turns, projected.projections.todos], [1, []]);
      const caughtUp = await served2Events(call);
      assert.deepEqual(caughtUp.slice(0, 2), ["ready", "session"]);
      assert.equal(caughtUp.at(-1), "end");
      assert.deepEqual(await (await call("GET", "/sessions/s1/approvals")).json(), { approvals: [] });
      assert.equal(harness.ctx.service("agents").get("s1"), undefined, "reading does not resume");

      const reply = await (await call("POST", "/sessions/s1/messages", { content: "Again", wait: true })).json();
      assert.deepEqual([reply.result.text, reply.result.turn], ["Two", 2]);
      const live = await (await call("GET", "/sessions/s1")).json();
      assert.deepEqual([live.live, live.turns], [true, 2]);

      assert.equal((await call("DELETE", "/sessions/s1")).status, 204);
      assert.deepEqual(await storage.list(), []);
    });
  });

  it("runs a stored session's queued followup on POST /wake, which a resume alone leaves waiting", async () => {
    const storage = await storedWithQueuedFollowup();

    const model = scriptedAdapter([textResponse("One"), textResponse("Two")]);
    const second = await serveHarness({ adapters: [model], storage });
    await withServer(second, async ({ harness, call }) => {
      // A route that resumes the session (here a cancel that keeps the inbox) starts no turn.
      const cancelled = await call("POST", "/sessions/s1/cancel", { keepInbox: true });
      assert.deepEqual((await cancelled.json()).status, "idle");
      assert.equal(model.requests.length, 0);
      assert.equal((await call("GET", "/sessions/s1/wake")).status, 405);
      assert.equal((await call("POST", "/sessions/s1/wake", { wait: "yes" })).status, 422);
      assert.equal((await call("POST", "/sessions/nope/wake", {})).status, 404);
      const woken = await call("POST", "/sessions/s1/wake", { wait: true });
      assert.equal(woken.status, 200);
      assert.deepEqual(await woken.json(), { id: "s1", status: "idle", queued: 0 });
      assert.equal(model.requests.length, 1);
      assert.deepEqual(model.requests[0].messages.map((m) => m.role), ["user"]);
      const transcript = await (await call("GET", "/sessions/s1/transcript")).text();
      assert.match(transcript, /Hello[\s\S]*One/);
      // Nothing queued: a wake starts nothing, and answers at once.
      const idle = await call("POST", "/sessions/s1/wake");
      assert.equal(idle.status, 202);
      assert.deepEqual(await idle.json(), { id: "s1", status: "idle", queued: 0 });
      assert.equal(model.requests.length, 1);
      assert.equal(agentOf(harness, "s1").session.events.filter((e) => e.type === "turn/end").length, 1);
    });
  });

  it("POST /wake with wait: true waits through a maintenance task the resume started, then for the turn", async () => {
    const storage = await storedWithQueuedFollowup();
    const model = scriptedAdapter(textResponse("One"));
    const second = await serveHarness({ adapters: [model], storage }, {}, (harness) => {
      // As a SessionStart hook does: a maintenance task at resume, during which the agent is idle.
      harness.ctx.on("agent/session-start", (agent) => {
        agent.runMaintenance(() => new Promise((resolve) => setTimeout(resolve, 5)));
      });
    });
    await withServer(second, async ({ call }) => {
      const woken = await call("POST", "/sessions/s1/wake", { wait: true });
      assert.deepEqual(await woken.json(), { id: "s1", status: "idle", queued: 0 });
      assert.equal(model.requests.length, 1);
    });
  });

  it("a steer with wait: true waits through a maintenance task, then for the turn it wakes", async () => {
    const model = scriptedAdapter(textResponse("Steered."));
    const served = await serveHarness({ adapters: [model] }, {}, (harness) => {
      // As a SessionStart hook does: a maintenance task at start, during which the agent is idle.
      harness.ctx.on("agent/session-start", (agent) => {
        agent.runMaintenance(() => new Promise((resolve) => setTimeout(resolve, 5)));
      });
    });
    await withServer(served, async ({ call }) => {
      await call("POST", "/sessions", { id: "s1" });
      const steered = await call("POST", "/sessions/s1/messages", { mode: "steer", content: "Now", wait: true });
      assert.equal((await steered.json()).status, "idle");
      assert.equal(model.requests.length, 1);
      // A cancel that discards queued input says it cancelled something.
      await call("POST", "/sessions/s1/messages", { mode: "inject", content: "later" });
      assert.equal((await (await call("POST", "/sessions/s1/cancel", {})).json()).cancelled, true);
      assert.equal((await (await call("POST", "/sessions/s1/cancel", {})).json()).cancelled, false);
    });
  });

  it("answers a message only once its inbox splice is stored, and wait: true once turn/end is", async () => {
    const storage = memoryStorage();
    const served = await serveHarness({
      adapters: [scriptedAdapter([textResponse("One")])],
      storage,
      batchWindowMs: 60_000,
    });
    await withServer(served, async ({ harness, call }) => {
      await call("POST", "/sessions", { id: "s1" });
      const injected = await call("POST", "/sessions/s1/messages", { mode: "inject", content: "Note" });
      assert.equal(injected.status, 202);
      const stored = await storage.inspect("s1");
      assert.equal(stored.events.at(-1)?.type, "agent/inbox/spliced");
      const reply = await call("POST", "/sessions/s1/messages", { content: "Hello", wait: true });
      assert.equal((await reply.json()).result.reason.kind, "completed");
      const after = await storage.inspect("s1");
      assert.equal(after.events.at(-1)?.type, "turn/end");
      assert.equal(after.events.length, agentOf(harness, "s1").session.seq);
    });
  });
});

describe("createHarnessApp() wait: true", () => {
  it("answers 200 with the turn's result when the turn ends in error, and the session takes the next message", async () => {
    const model = scriptedAdapter([
      { throw: new LlmFailure("AUTH", "Bad key", { status: 401 }) },
      textResponse("Back"),
    ]);
    const served = await serveHarness({ adapters: [model] });
    await withServer(served, async ({ call }) => {
      await call("POST", "/sessions", { id: "s1" });
      const failed = await call("POST", "/sessions/s1/messages", { content: "Hello", wait: true });
      assert.equal(failed.status, 200);
      const { result } = await failed.json();
      assert.deepEqual([result.turn, result.text, result.reason], [1, "", {
        kind: "error",
        error: { code: "AUTH", message: "Bad key", status: 401 },
      }]);
      const again = await call("POST", "/sessions/s1/messages", { content: "Again", wait: true });
      assert.deepEqual([again.status, (await again.json()).result.text], [200, "Back"]);
    });
  });
});
