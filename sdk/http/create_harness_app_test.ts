import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { defineTool } from "../tools/define_tool.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import { memoryStorage } from "../persistence/memory_storage.ts";
import { scriptedAdapter, type ScriptEntry, textResponse, toolCallResponse } from "../../testing/scripted_adapter.ts";
import { createHarness, type Harness } from "../harness.ts";
import type { LlmAdapter } from "../llm/llm_adapter.ts";
import { LlmFailure } from "../llm/llm_failure.ts";
import type { PreToolDecision } from "../tools/tool_events.ts";
import { createHarnessApp } from "./create_harness_app.ts";
import {
  assertFramesOfLog,
  gate,
  loggedSeqs,
  type Served,
  serveHarness,
  sessionEvents,
  type SseMessage,
} from "./_test_client.ts";

function lookupTool(hold?: () => Promise<void>) {
  return defineTool({
    name: "lookup",
    description: "Look a key up",
    parameters: z.object({ key: z.string() }),
    output: { schema: z.string(), render: (_args: { key: string }, value: string) => value },
    execute: async ({ key }: { key: string }) => {
      await hold?.();
      return `value of ${key}`;
    },
  });
}

const toolTurn: ScriptEntry[] = [
  toolCallResponse([{ id: "call-1", name: "lookup", arguments: '{"key":"a"}' }]),
  textResponse("The value is a."),
];

function agentOf(harness: Harness, id: string) {
  const agent = harness.ctx.service("agents").get(id);
  assert.ok(agent, `agent ${id} is live`);
  return agent;
}

/** The seqs of the frames that stand for events (session frames, and deltas with an id). */
const seqs = loggedSeqs;

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

const isTurnEnd = (m: SseMessage) => m.event === "session" && m.data.type === "turn/end";

async function withServer(served: Served, body: (s: Served) => Promise<void>): Promise<void> {
  try {
    await body(served);
  } finally {
    await served.close();
  }
}

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
      // Every event once, in order: each streamed delta as `event: delta` (with its id: without storage it is
      // acknowledged at once), every other event as `event: session`.
      assert.deepEqual(seqs(messages), range(log.length));
      const counts = assertFramesOfLog(messages, log);
      assert.equal(
        counts.delta,
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
    let permits = 0;
    let wake: (() => void) | undefined;
    const grant = (n: number) => {
      permits += n;
      wake?.();
    };
    const paced: LlmAdapter = {
      provider: script.provider,
      models: script.models,
      async *stream(options) {
        for await (const chunk of script.stream(options)) {
          if (chunk.type === "text-delta") {
            while (permits === 0) await new Promise<void>((resolve) => (wake = resolve));
            permits--;
          }
          yield chunk;
        }
      },
    };
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
      assert.equal(cancelled.status, 202);
      assert.equal((await cancelled.json()).cancelled, true);
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

      const taken = await call("POST", "/sessions/s1/fork", { id: "s2" });
      assert.equal(taken.status, 409);
      assert.equal((await taken.json()).code, "SESSION_ALREADY_EXISTS");
    });
  });

  it("answers a tool ask over HTTP (approval round trip)", async () => {
    const model = scriptedAdapter([
      toolCallResponse([{ id: "call-1", name: "lookup", arguments: '{"key":"a"}' }]),
      textResponse("Approved."),
      toolCallResponse([{ id: "call-2", name: "lookup", arguments: '{"key":"b"}' }]),
      textResponse("Rejected."),
    ]);
    const served = await serveHarness({ adapters: [model], tools: [lookupTool()] }, {}, (harness) => {
      harness.ctx.on(
        "tools/pre-execute",
        (): PreToolDecision => ({ kind: "ask", reason: "lookups need approval" }),
      );
    });
    await withServer(served, async ({ harness, call, events }) => {
      await call("POST", "/sessions", { id: "s1" });
      const stream = await events("s1", {}, "?deltas=false");
      await call("POST", "/sessions/s1/messages", { content: "Look a up" });
      const asked = await stream.until((m) => m.event === "approvals" && m.data.pending.length === 1);
      assert.deepEqual(asked.at(-1)!.data.pending, [
        { callId: "call-1", toolName: "lookup", args: { key: "a" }, reason: "lookups need approval" },
      ]);
      const listed = await (await call("GET", "/sessions/s1/approvals")).json();
      assert.deepEqual(listed.approvals.map((a: { callId: string }) => a.callId), ["call-1"]);
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

      const results = agentOf(harness, "s1").session.events.filter((e) => e.type === "tool/result");
      assert.deepEqual(results.map((e) => e.type === "tool/result" ? e.data.error?.code ?? null : "?"), [
        null,
        "DENIED",
      ]);
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

describe("createHarnessApp() with bad input", () => {
  async function badInputServer() {
    const storage = memoryStorage();
    const served = await serveHarness(
      { adapters: [scriptedAdapter(textResponse("Hi"))], tools: [lookupTool()], storage },
      { maxBodyBytes: 1024 },
    );
    await served.call("POST", "/sessions", { id: "s1" });
    await (await served.call("POST", "/sessions/s1/messages", { content: "Hello", wait: true })).json();
    return { served, storage };
  }

  async function expectProblem(response: Response, status: number, code: string): Promise<Record<string, unknown>> {
    assert.equal(response.headers.get("content-type"), "application/problem+json");
    const body = await response.json();
    assert.deepEqual([response.status, body.code, body.status], [status, code, status], JSON.stringify(body));
    assert.equal(body.type, `urn:dsh-harness:problem:${code}`);
    assert.equal(typeof body.title, "string");
    assert.equal(typeof body.detail, "string");
    assert.equal(body.requestId, response.headers.get("x-request-id"));
    return body;
  }

  it("answers each bad request with a problem+json and leaves the session log unchanged", async () => {
    const { served, storage } = await badInputServer();
    await withServer(served, async ({ harness, call, url, token }) => {
      const session = agentOf(harness, "s1").session;
      const seqBefore = session.seq;
      const storedBefore = (await storage.list()).map((h) => h.id);
      const raw = (path: string, init: RequestInit) => fetch(url + path, init);
      const json = { authorization: `Bearer ${token}`, "content-type": "application/json" };

      // malformed JSON, wrong types, unknown fields, wrong media type
      await expectProblem(
        await raw("/sessions/s1/messages", { method: "POST", headers: json, body: "{not json" }),
        400,
        "INVALID_JSON",
      );
      const wrongType = await expectProblem(
        await call("POST", "/sessions/s1/messages", { content: 42 }),
        422,
        "INVALID_BODY",
      );
      assert.deepEqual((wrongType.errors as { path: string }[]).map((e) => e.path), ["content"]);
      await expectProblem(
        await call("POST", "/sessions/s1/messages", { content: "x", mode: "shout" }),
        422,
        "INVALID_BODY",
      );
      await expectProblem(await call("POST", "/sessions/s1/messages", { content: "x", extra: 1 }), 422, "INVALID_BODY");
      await expectProblem(
        await call("POST", "/sessions/s1/messages", { content: [{ type: "tool-call" }] }),
        422,
        "INVALID_BODY",
      );
      await expectProblem(await call("POST", "/sessions", { tools: "lookup" }), 422, "INVALID_BODY");
      await expectProblem(await call("POST", "/sessions", { tools: ["nope"] }), 422, "UNKNOWN_TOOL");
      await expectProblem(await call("POST", "/sessions/s1/fork", { boundary: -1 }), 422, "INVALID_BODY");
      await expectProblem(await call("POST", "/sessions/s1/approvals/c1", { decision: "maybe" }), 422, "INVALID_BODY");
      await expectProblem(
        await raw("/sessions/s1/messages", {
          method: "POST",
          headers: { ...json, "content-type": "text/plain" },
          body: "hi",
        }),
        415,
        "UNSUPPORTED_MEDIA_TYPE",
      );

      // oversized body
      const big = JSON.stringify({ content: "x".repeat(2048) });
      await expectProblem(await call("POST", "/sessions/s1/messages", big), 413, "BODY_TOO_LARGE");
      const chunks = [`{"content":"${"x".repeat(600)}`, "x".repeat(600), '"}'];
      const streamed = new ReadableStream<Uint8Array>({
        pull(controller) {
          const next = chunks.shift();
          if (next === undefined) controller.close();
          else controller.enqueue(new TextEncoder().encode(next));
        },
      });
      const chunked = await raw("/sessions/s1/messages", {
        method: "POST",
        headers: json,
        body: streamed,
        duplex: "half",
      } as RequestInit);
      await expectProblem(chunked, 413, "BODY_TOO_LARGE");

      // unknown session, unknown route
      await expectProblem(await call("POST", "/sessions/nope/messages", { content: "x" }), 404, "SESSION_NOT_FOUND");
      await expectProblem(await call("GET", "/sessions/nope/events"), 404, "SESSION_NOT_FOUND");
      await expectProblem(await call("GET", "/sessions/nope"), 404, "SESSION_NOT_FOUND");
      await expectProblem(await call("GET", "/nowhere"), 404, "NOT_FOUND");
      await expectProblem(await call("POST", "/sessions", { id: "s1" }), 409, "SESSION_ALREADY_EXISTS");
      await expectProblem(
        await call("GET", "/sessions/s1/events", undefined, { "last-event-id": "x" }),
        400,
        "INVALID_LAST_EVENT_ID",
      );
      await expectProblem(await call("GET", `/sessions/s1/events?from=${seqBefore + 1}`), 400, "INVALID_LAST_EVENT_ID");
      await expectProblem(await call("GET", "/sessions/s1/events?from=-1"), 400, "INVALID_QUERY");
      await expectProblem(await call("POST", "/sessions", { reasoningEffort: "extreme" }), 422, "INVALID_BODY");

      // missing, malformed and wrong tokens
      const missing = await raw("/sessions/s1", {});
      assert.equal(missing.headers.get("www-authenticate"), 'Bearer realm="dsh-harness"');
      await expectProblem(missing, 401, "AUTH_REQUIRED");
      await expectProblem(
        await raw("/sessions/s1", { headers: { authorization: `Basic ${token}` } }),
        401,
        "AUTH_REQUIRED",
      );
      const wrong = await raw("/sessions/s1/messages", {
        method: "POST",
        headers: { ...json, authorization: `Bearer ${token}x` },
        body: JSON.stringify({ content: "x" }),
      });
      assert.match(wrong.headers.get("www-authenticate") ?? "", /error="invalid_token"/);
      await expectProblem(wrong, 401, "INVALID_TOKEN");
      await expectProblem(
        await raw("/sessions/s1/cancel", { method: "POST", headers: { authorization: "Bearer " } }),
        401,
        "AUTH_REQUIRED",
      );

      // path-like session ids never reach the harness or storage
      for (const id of ["..%2F..%2Fetc", "..%2fs1", "a.b", "x%5Cy", "s1%00", "%2e%2e%2fs1", "-s1", "s".repeat(129)]) {
        await expectProblem(
          await call("POST", `/sessions/${id}/messages`, { content: "x" }),
          400,
          "INVALID_SESSION_ID",
        );
        await expectProblem(await call("GET", `/sessions/${id}`), 400, "INVALID_SESSION_ID");
        await expectProblem(await call("DELETE", `/sessions/${id}`), 400, "INVALID_SESSION_ID");
      }
      const pathId = await expectProblem(await call("POST", "/sessions", { id: "../s1" }), 422, "INVALID_BODY");
      assert.deepEqual((pathId.errors as { path: string }[]).map((e) => e.path), ["id"]);

      assert.equal(session.seq, seqBefore, "the session log is unchanged");
      assert.equal(agentOf(harness, "s1").session, session);
      assert.deepEqual((await storage.list()).map((h) => h.id), storedBefore, "storage is unchanged");
      assert.deepEqual(harness.ctx.service("agents").list().map((a) => a.id), ["s1"]);
    });
  });
});

async function served2Events(call: Served["call"]): Promise<string[]> {
  const text = await (await call("GET", "/sessions/s1/events?follow=false")).text();
  return [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
}

describe("createHarnessApp() over storage", () => {
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

describe("createHarnessApp() bearer auth (Hono's bearer-auth)", () => {
  async function statusesFor(token: string, headers: readonly (string | undefined)[]) {
    const harness = await createHarness({ adapters: [scriptedAdapter(textResponse("ok"))] });
    try {
      const app = createHarnessApp(harness, { token, log: false });
      const out: [number, string, string | null][] = [];
      for (const authorization of headers) {
        const response = await app.request(
          "/sessions",
          authorization === undefined ? {} : { headers: { authorization } },
        );
        const body = response.status === 200 ? { code: "OK" } : await response.json();
        assert.equal(
          response.headers.get("content-type"),
          response.status === 200 ? "application/json" : "application/problem+json",
        );
        out.push([response.status, body.code, response.headers.get("www-authenticate")]);
      }
      return out;
    } finally {
      await harness.dispose();
    }
  }

  it("accepts the token; a missing or malformed header is AUTH_REQUIRED, a wrong token INVALID_TOKEN (problem+json)", async () => {
    const required = [401, "AUTH_REQUIRED", 'Bearer realm="dsh-harness"'];
    const invalid = [401, "INVALID_TOKEN", 'Bearer realm="dsh-harness", error="invalid_token"'];
    assert.deepEqual(await statusesFor("s3cr3t-T0k.en~+/=", ["Bearer s3cr3t-T0k.en~+/="]), [[200, "OK", null]]);
    const malformed = [undefined, "", "s3cret", "Basic s3cret", "Bearer", "Bearer ", "Bearer a b", "Bearer s3cret!"];
    assert.deepEqual(await statusesFor("s3cret", malformed), malformed.map(() => required));
    const wrong = ["Bearer s3cre", "Bearer S3CRET", "Bearer x", "Bearer s3crets"];
    assert.deepEqual(await statusesFor("s3cret", wrong), wrong.map(() => invalid));
  });

  it("refuses a token that no Authorization header could carry", async () => {
    const harness = await createHarness({});
    for (const token of ["has space", "tab\t", "ünïcode", "a=b"]) {
      assert.throws(() => createHarnessApp(harness, { token }), { code: "INVALID_ARGS" }, token);
    }
    await harness.dispose();
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

describe("createHarnessApp() edges", () => {
  it("maps storage errors to statuses with their codes", async () => {
    const storage = memoryStorage();
    const broken = {
      ...storage,
      kind: "broken",
      list: () => storage.list(),
      stat: (id: string) => storage.stat(id),
      inspect: () =>
        Promise.reject(new HarnessError("SESSION_CORRUPT", "Session log x is corrupt at line 3: the line is not JSON")),
    };
    await storage.create({ id: "s1", createdAt: 1 });
    const served = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))], storage: broken });
    await withServer(served, async ({ call }) => {
      const res = await call("GET", "/sessions/s1");
      assert.equal(res.status, 500);
      assert.equal((await res.json()).code, "SESSION_CORRUPT");
    });
  });

  it("refuses an unknown provider or model at once, leaving nothing stored", async () => {
    const storage = memoryStorage();
    const served = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))], storage });
    await withServer(served, async ({ harness, call }) => {
      const provider = await call("POST", "/sessions", { id: "p", provider: "nowhere" });
      assert.equal(provider.status, 422);
      assert.equal((await provider.json()).code, "UNKNOWN_PROVIDER");
      const model = await call("POST", "/sessions", { id: "m", model: "no-such-model" });
      assert.equal(model.status, 422);
      assert.equal((await model.json()).code, "UNKNOWN_MODEL");
      assert.deepEqual(await storage.list(), []);
      assert.deepEqual(harness.ctx.service("agents").list(), []);
      assert.equal((await call("POST", "/sessions", { id: "ok" })).status, 201);
    });
  });

  it("answers a known path with a wrong method 405 with Allow; every answer says nosniff", async () => {
    const served = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] });
    await withServer(served, async ({ call }) => {
      await call("POST", "/sessions", { id: "s1" });
      const cases: [string, string, string][] = [
        ["PUT", "/sessions", "GET, POST"],
        ["POST", "/sessions/s1", "GET, DELETE"],
        ["GET", "/sessions/s1/messages", "POST"],
        ["DELETE", "/sessions/s1/events", "GET"],
        ["POST", "/sessions/s1/projections", "GET"],
        ["GET", "/sessions/s1/approvals/c1", "POST"],
        ["POST", "/sessions/s1/log", "GET"],
        ["DELETE", "/sessions/s1/surface", "GET"],
        ["PUT", "/sessions/s1/view", "GET"],
        ["POST", "/view", "GET"],
        ["POST", "/view/compare", "GET"],
        ["DELETE", "/view/client.js", "GET"],
      ];
      for (const [method, path, allow] of cases) {
        const res = await call(method, path);
        assert.equal(res.status, 405, `${method} ${path}`);
        assert.equal(res.headers.get("allow"), allow);
        assert.equal((await res.json()).code, "METHOD_NOT_ALLOWED");
      }
      const ok = await call("GET", "/sessions");
      assert.equal(ok.headers.get("x-content-type-options"), "nosniff");
      await ok.body?.cancel();
      const missing = await call("GET", "/nowhere");
      assert.equal(missing.status, 404);
      assert.equal(missing.headers.get("x-content-type-options"), "nosniff");
      await missing.body?.cancel();
    });
  });

  it("answers the timeline's paths 404, not 405, when the app has no timeline (view: false)", async () => {
    const served = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] }, { view: false });
    await withServer(served, async ({ call }) => {
      await call("POST", "/sessions", { id: "s1" });
      for (const [method, path] of [["GET", "/sessions/s1/log"], ["POST", "/sessions/s1/log"], ["POST", "/view"]]) {
        const res = await call(method, path);
        assert.equal(res.status, 404, `${method} ${path}`);
        assert.equal((await res.json()).code, "NOT_FOUND");
      }
      const wrong = await call("PUT", "/sessions/s1/events");
      assert.equal(wrong.status, 405);
      await wrong.body?.cancel();
    });
  });

  it("answers cross-origin requests only when cors is given", async () => {
    const preflight = {
      origin: "https://app.example",
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type",
    };
    const off = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] });
    await withServer(off, async ({ url }) => {
      const res = await fetch(`${url}/sessions`, { method: "OPTIONS", headers: preflight });
      assert.equal(res.headers.get("access-control-allow-origin"), null);
      await res.body?.cancel();
    });
    const on = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] }, {
      cors: { origin: "https://app.example" },
    });
    await withServer(on, async ({ url, call }) => {
      const res = await fetch(`${url}/sessions`, { method: "OPTIONS", headers: preflight });
      assert.equal(res.status, 204);
      assert.equal(res.headers.get("access-control-allow-origin"), "https://app.example");
      assert.match(res.headers.get("access-control-allow-headers") ?? "", /authorization/i);
      await res.body?.cancel();
      const listed = await call("GET", "/sessions", undefined, { origin: "https://app.example" });
      assert.equal(listed.headers.get("access-control-allow-origin"), "https://app.example");
      await listed.body?.cancel();
    });
  });

  it("accepts image blocks only with https:, http: or data: URLs", async () => {
    const served = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] });
    await withServer(served, async ({ call }) => {
      await call("POST", "/sessions", { id: "s1" });
      const image = (url: string) => ({
        mode: "inject",
        content: [{ type: "image", mediaType: "image/png", url }],
      });
      for (const url of ["file:///etc/passwd", "javascript:alert(1)", "ftp://host/x.png"]) {
        const res = await call("POST", "/sessions/s1/messages", image(url));
        assert.equal(res.status, 422, url);
        assert.equal((await res.json()).code, "INVALID_BODY");
      }
      for (const url of ["https://example.com/x.png", "data:image/png;base64,AAAA"]) {
        assert.equal((await call("POST", "/sessions/s1/messages", image(url))).status, 202, url);
      }
    });
  });
});

describe("createHarnessApp() mounted under a sub-path", () => {
  it("builds Location from the mount path and answers unknown routes with problem+json", async () => {
    const served = await serveHarness({ adapters: [scriptedAdapter([textResponse("Hi.")])] });
    await withServer(served, async ({ harness }) => {
      const { Hono } = await import("hono");
      const parent = new Hono();
      parent.get("/", (c) => c.text("home"));
      parent.route("/api/v1", createHarnessApp(harness, { auth: false, log: false }));
      const json = { "content-type": "application/json" };
      const created = await parent.request("/api/v1/sessions", { method: "POST", headers: json, body: '{"id":"m1"}' });
      assert.equal(created.status, 201);
      assert.equal(created.headers.get("location"), "/api/v1/sessions/m1");
      assert.equal((await parent.request("/api/v1/sessions/m1")).status, 200);

      const unknown = await parent.request("/api/v1/nothing-here");
      assert.equal(unknown.status, 404);
      assert.match(unknown.headers.get("content-type") ?? "", /^application\/problem\+json/);
      assert.equal((await unknown.json()).code, "NOT_FOUND");
      const wrongMethod = await parent.request("/api/v1/sessions/m1", { method: "PUT" });
      assert.equal(wrongMethod.status, 405);
      assert.equal((await wrongMethod.json()).code, "METHOD_NOT_ALLOWED");
      assert.equal(await (await parent.request("/")).text(), "home", "the parent's own routes are untouched");
      // The timeline's pages link to the app under its mount path.
      for (const page of ["/api/v1/view", "/api/v1/view/compare", "/api/v1/sessions/m1/view"]) {
        const html = await (await parent.request(page)).text();
        assert.match(html, /data-base="\/api\/v1"/, page);
        assert.match(html, /src="\/api\/v1\/view\/client\.js"/, page);
      }
    });
  });
});
