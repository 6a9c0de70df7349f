import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { createHarness, type CreateHarnessOptions, type Harness } from "../harness.ts";
import { defineTool } from "../tools/mod.ts";
import { type GenerateOptions, LlmFailure, type StreamChunk } from "../llm/mod.ts";
import type { SessionEvent } from "../session/mod.ts";
import { checkInvariants } from "../invariants/mod.ts";
import { type Script, scriptedAdapter, textResponse, toolCallResponse } from "../../testing/scripted_adapter.ts";
import { HarnessError } from "../kernel/mod.ts";
import { memoryStorage } from "../persistence/memory_storage.ts";
import type { Agent, AgentUpdate, RunResult } from "./agent.ts";
import { TurnFailedError } from "./turn_failed_error.ts";
import { fixtureFromLogs } from "../../replay/mod.ts";
import { Inbox } from "./inbox.ts";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { childCommand } from "../kernel/_test_child_command.ts";
import { addTool, counterClock, counterIds, summarize } from "./_test_support.ts";
import { within } from "../kernel/_test_within.ts";

const add = addTool({ concurrent: true });

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

async function setup(script: Script, options: Partial<CreateHarnessOptions> = {}) {
  const model = scriptedAdapter(script);
  const harness: Harness = await createHarness({
    adapters: [model],
    model: { provider: "scripted", model: "scripted-model" },
    tools: [add],
    system: "You are a careful assistant.",
    now: counterClock(),
    newId: counterIds(),
    sleep: () => Promise.resolve(),
    ...options,
  });
  const agent: Agent = await harness.createAgent({ id: "s1" });
  return { model, harness, agent };
}

function assertValidLog(events: readonly SessionEvent[]) {
  assert.deepEqual(checkInvariants(events), []);
}

/** Resolve once the agent's log has an event matching `predicate`. */
function waitForEvent(agent: Agent, predicate: (e: SessionEvent) => boolean): Promise<SessionEvent> {
  const found = agent.session.events.find(predicate);
  if (found) return Promise.resolve(found);
  return new Promise((resolve) => {
    const off = agent.ctx.on("session/event", (_s, e) => {
      if (predicate(e)) {
        off();
        resolve(e);
      }
    });
  });
}

describe("agent loop event sequences", () => {
  it("a plain answer: one turn, one step", async () => {
    const { harness, agent, model } = await setup([textResponse("Hello there")]);
    const result = await agent.run("Hi");
    assert.equal(result.text, "Hello there");
    assert.deepEqual(result.reason, { kind: "completed" });
    assert.equal(result.turn, 1);
    assert.deepEqual(summarize(agent.session.events), [
      "inbox next-turn inserted +1",
      "turn/start 1",
      "inbox next-turn claimed -1",
      "step/start 1.1",
      "user/message Hi",
      "request/header initial",
      "request/context",
      "assistant/chunk×5",
      "assistant/message text:Hello there",
      "step/end 1.1",
      "turn/end 1 completed",
    ]);
    const request = model.requests[0];
    assert.equal(request.system, "You are a careful assistant.");
    assert.deepEqual(request.tools?.map((t) => t.name), ["add"]);
    assert.deepEqual(request.messages, agent.session.deriveMessages().slice(0, 1));
    assert.ok(Object.isFrozen(request) && request.messages.every((m) => Object.isFrozen(m)));
    // The array is the request's own copy: changing it does not reach the log.
    (request.messages as unknown[]).length = 0;
    assert.equal(agent.session.deriveMessages().length > 0, true);
    // Flat options (seed 000 §4.4.4): route fields at the top, the turn's signal inside, no purpose on a turn.
    assert.equal(request.provider, "scripted");
    assert.equal(request.model, "scripted-model");
    assert.equal(request.sessionId, agent.id);
    assert.ok(request.signal instanceof AbortSignal && !request.signal.aborted);
    assert.equal(request.purpose, undefined);
    assert.equal("config" in request, false);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("a two-step tool turn feeds the tool result into the second request", async () => {
    const { harness, agent, model } = await setup([
      toolCallResponse([{ id: "call_1", name: "add", arguments: '{"a":2,"b":3}' }], { reasoning: "Need to add" }),
      textResponse("The sum is 5"),
    ]);
    const result = await agent.run("What is 2+3?");
    assert.equal(result.text, "The sum is 5");
    assert.deepEqual(summarize(agent.session.events).filter((s) => !s.startsWith("assistant/chunk")), [
      "inbox next-turn inserted +1",
      "turn/start 1",
      "inbox next-turn claimed -1",
      "step/start 1.1",
      "user/message What is 2+3?",
      "request/header initial",
      "request/context",
      "assistant/message reasoning:Need to add,call:add",
      "tool/call add call_1",
      "tool/result call_1",
      "step/end 1.1",
      "step/start 1.2",
      "assistant/message text:The sum is 5",
      "step/end 1.2",
      "turn/end 1 completed",
    ]);
    const second = model.requests[1];
    assert.equal(second.messages.length, 3);
    const toolResult = second.messages[2];
    assert.equal(toolResult.role, "user");
    assert.deepEqual(toolResult.content, [
      { type: "tool-result", toolCallId: "call_1", content: [{ type: "text", text: "5" }] },
    ]);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("one tool call runs without the scheduler and is logged as the same call among several is", async () => {
    const calls = [{ id: "c1", name: "add", arguments: '{"a":2,"b":3}' }, { id: "c2", name: "add", arguments: "{}" }];
    const seen: unknown[] = [];
    for (const n of [1, 2]) {
      const { harness, agent, model } = await setup([toolCallResponse(calls.slice(0, n)), textResponse("done")]);
      await agent.run("go");
      const events = agent.session.events;
      const call = events.find((e) => e.type === "tool/call" && e.data.callId === "c1")!;
      const result = events.find((e) =>
        e.type === "tool/result" && e.data.message.content[0].type === "tool-result" &&
        e.data.message.content[0].toolCallId === "c1"
      )! as SessionEvent<"tool/result">;
      const fed = model.requests[1].messages.find((m) => m.id === result.data.message.id);
      seen.push({
        call: call.data,
        result: { ...result.data, message: { ...result.data.message, id: "-" } },
        fromCall: result.sourceEventSeqs?.[0] === call.seq,
        fedBack: fed === result.data.message,
        order: summarize(events).filter((line) => line.endsWith(" c1") || line === "tool/result c1"),
      });
      assertValidLog(events);
      await harness.dispose();
    }
    assert.deepEqual(seen[0], seen[1]);
    assert.deepEqual(seen[0], {
      ...seen[0] as object,
      fromCall: true,
      fedBack: true,
      order: ["tool/call add c1", "tool/result c1"],
    });
  });

  it("a tool that concludes the turn ends it after its step, alone or among several calls", async () => {
    const finish = defineTool({
      name: "finish",
      description: "End the turn",
      parameters: z.object({}),
      output: { schema: z.string(), render: (_a, v) => v },
      execute: (_args, exec) => {
        exec.concludeTurn();
        return "finished";
      },
    });
    const calls = [{ id: "c1", name: "finish", arguments: "{}" }, {
      id: "c2",
      name: "add",
      arguments: '{"a":1,"b":2}',
    }];
    for (const n of [1, 2]) {
      const { harness, agent, model } = await setup([toolCallResponse(calls.slice(0, n)), textResponse("never")], {
        tools: [add, finish],
      });
      const result = await agent.run("go");
      assert.deepEqual(result.reason, { kind: "completed" });
      assert.equal(model.requests.length, 1, `${n} call(s): no request after the concluding step`);
      const s = summarize(agent.session.events);
      assert.equal(s.filter((line) => line.startsWith("tool/result")).length, n);
      assert.deepEqual(s.slice(-2), ["step/end 1.1", "turn/end 1 completed"]);
      assertValidLog(agent.session.events);
      await harness.dispose();
    }
  });

  it("parallel calls overlap, an exclusive call waits for them and blocks the next; results keep model order", async () => {
    const log: string[] = [];
    const gates = new Map<string, { promise: Promise<void>; resolve: () => void }>();
    let running = 0;
    let maxRunning = 0;
    const slow = defineTool({
      name: "slow",
      description: "Waits for its gate",
      parameters: z.object({ key: z.string(), exclusive: z.boolean() }),
      output: { schema: z.string(), render: (_a, v) => v },
      isConcurrencySafe: (args) => !args.exclusive,
      async execute({ key }) {
        running++;
        maxRunning = Math.max(maxRunning, running);
        log.push(`start ${key}`);
        const gate = deferred();
        gates.set(key, gate);
        await gate.promise;
        running--;
        log.push(`end ${key}`);
        return key;
      },
    });
    const calls = [
      { id: "p1", name: "slow", arguments: '{"key":"p1","exclusive":false}' },
      { id: "p2", name: "slow", arguments: '{"key":"p2","exclusive":false}' },
      { id: "x1", name: "slow", arguments: '{"key":"x1","exclusive":true}' },
      { id: "p3", name: "slow", arguments: '{"key":"p3","exclusive":false}' },
    ];
    const { harness, agent } = await setup([toolCallResponse(calls), textResponse("done")], { tools: [slow] });
    const run = agent.run("go");
    const waitStarted = async (key: string) => {
      while (!gates.has(key)) await new Promise((r) => setTimeout(r, 1));
    };
    await waitStarted("p1");
    await waitStarted("p2");
    assert.deepEqual(log, ["start p1", "start p2"]);
    gates.get("p2")!.resolve(); // the later call finishes first
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(gates.has("x1"), false, "the exclusive call waits for the parallel group");
    gates.get("p1")!.resolve();
    await waitStarted("x1");
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(gates.has("p3"), false, "the exclusive call blocks the next one");
    gates.get("x1")!.resolve();
    await waitStarted("p3");
    gates.get("p3")!.resolve();
    await run;
    assert.equal(maxRunning, 2);
    const order = agent.session.events.filter((e) => e.type === "tool/result").map((e) =>
      e.type === "tool/result" && e.data.message.source.kind === "tool" ? e.data.message.source.callId : ""
    );
    assert.deepEqual(order, ["p1", "p2", "x1", "p3"]);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("a retryable failure is retried inside the same step", async () => {
    const { harness, agent, model } = await setup([
      { throw: new LlmFailure("RATE_LIMIT", "Slow down", { status: 429 }) },
      textResponse("Recovered"),
    ]);
    const result = await agent.run("Hi");
    assert.equal(result.text, "Recovered");
    assert.equal(model.requests.length, 2);
    assert.deepEqual(model.requests[0], model.requests[1]);
    assert.deepEqual(summarize(agent.session.events).slice(3), [
      "step/start 1.1",
      "user/message Hi",
      "request/header initial",
      "request/context",
      "assistant/chunk×1",
      "llm/retry 1 RATE_LIMIT",
      "assistant/chunk×5",
      "assistant/message text:Recovered",
      "step/end 1.1",
      "turn/end 1 completed",
    ]);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("each attempt of a retried request gets its own messages: an adapter's change to one reaches no later one", async () => {
    const seen: string[][] = [];
    const { harness } = await setup([]);
    harness.ctx.service("llm").registerAdapter({
      provider: "mutating",
      models: [{ id: "m" }],
      async *stream(options) {
        seen.push(
          options.messages.map((m) => `${m.role}:${m.content.map((b) => b.type === "text" ? b.text : b.type)}`),
        );
        if (seen.length === 1) {
          // The array is the adapter's own (GenerateOptions.messages): it edits it, then fails retryably.
          const messages = options.messages as GenerateOptions["messages"][number][];
          messages.splice(0, 1, { ...messages[0], content: [{ type: "text", text: "EDITED" }] });
          messages.push(messages[0]);
          yield { type: "finish", reason: { kind: "error", failure: { code: "SERVER", message: "boom" } } };
          return;
        }
        yield* textResponse("ok").chunks;
      },
    });
    const agent = await harness.createAgent({ id: "m1", provider: "mutating", model: "m" });
    const result = await agent.run("Hi");
    assert.equal(result.text, "ok");
    assert.deepEqual(seen, [["user:Hi"], ["user:Hi"]]);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("a non-retryable failure ends the turn with error: run() rejects with TURN_FAILED carrying the result", async () => {
    const { harness, agent } = await setup([
      { throw: new LlmFailure("AUTH", "Bad key", { status: 401 }) },
      textResponse("Back"),
    ]);
    const error = await agent.run("Hi").then(() => assert.fail("run() resolved"), (e: unknown) => e);
    assert.ok(error instanceof TurnFailedError && HarnessError.isInstance(error, "TURN_FAILED"));
    assert.equal(error.message, "Turn 1 failed: Bad key (AUTH)");
    assert.equal(error.failure.code, "AUTH");
    assert.equal(error.result.reason.error.status, 401);
    assert.equal(error.result.turn, 1);
    assert.ok(HarnessError.isInstance(error.cause, "AUTH"));
    assert.deepEqual(summarize(agent.session.events).slice(-4), [
      "request/context",
      "assistant/chunk×1",
      "step/end 1.1",
      "turn/end 1 error:AUTH",
    ]);
    // The failed turn is closed like any other: the agent takes the next input.
    assert.equal((await agent.run("Again")).text, "Back");
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("a tool call the stream never named fails the request (MALFORMED_RESPONSE), so the next turn's request stays valid", async () => {
    const nameless: StreamChunk[] = [
      { type: "block-start", index: 0, blockType: "tool-call" },
      { type: "tool-call-delta", index: 0, id: "call-1", argumentsDelta: '{"a":1,"b":2}' },
      { type: "finish", reason: { kind: "tool-calls" } },
    ];
    const { harness, agent, model } = await setup([{ chunks: nameless }, textResponse("Back")]);
    const error = await agent.run("Hi").then(() => assert.fail("run() resolved"), (e: unknown) => e);
    assert.ok(error instanceof TurnFailedError);
    assert.equal(error.failure.code, "MALFORMED_RESPONSE");
    assert.match(error.failure.message, /"call-1".*without a tool name/);
    // The chunks are logged; no assistant message carries the call, so nothing is left unanswered.
    assert.deepEqual(summarize(agent.session.events).slice(-4), [
      "request/context",
      "assistant/chunk×3",
      "step/end 1.1",
      "turn/end 1 error:MALFORMED_RESPONSE",
    ]);
    assert.equal((await agent.run("Again")).text, "Back");
    assert.deepEqual(model.requests[1].messages.map((m) => m.role), ["user", "user"]);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("a chunk the log cannot hold (NaN usage, no type) ends the call with an error finish in its place; the next turn works", async () => {
    const bad: Record<string, StreamChunk> = {
      "NaN usage": { type: "usage", usage: { inputTokens: parseInt("n/a"), outputTokens: 7 } },
      "no type": {} as StreamChunk,
    };
    for (const [label, chunk] of Object.entries(bad)) {
      const answer = textResponse("Paid for").chunks.filter((c) => c.type !== "usage");
      const { harness, agent } = await setup([
        { chunks: [...answer.slice(0, -1), chunk, ...answer.slice(-1)] },
        textResponse("Back"),
      ]);
      const error = await agent.run("Hi").then(() => assert.fail("run() resolved"), (e: unknown) => e);
      assert.ok(error instanceof TurnFailedError, label);
      assert.equal(error.failure.code, "MALFORMED_RESPONSE", label);
      assert.match(error.failure.message, /cannot hold/, label);
      // The refused chunk's place holds the call's error finish: the call is closed in the log.
      const finish = agent.session.events.findLast((e) => e.type === "assistant/chunk")!;
      assert.deepEqual(finish.type === "assistant/chunk" && finish.data.chunk.type, "finish", label);
      assert.deepEqual(summarize(agent.session.events).slice(-3), [
        "assistant/chunk×4",
        "step/end 1.1",
        "turn/end 1 error:MALFORMED_RESPONSE",
      ], label);
      assert.deepEqual(error.result.usage, { inputTokens: 0, outputTokens: 0 }, label);
      fixtureFromLogs([...agent.session.events]);
      assert.equal((await agent.run("Again")).text, "Back", label);
      assertValidLog(agent.session.events);
      fixtureFromLogs([...agent.session.events]);
      await harness.dispose();
    }
  });

  it("a tool call without an id, or with another call's id, fails the request before anything runs (MALFORMED_RESPONSE)", async () => {
    const call = (index: number, id: string): StreamChunk[] => [
      { type: "block-start", index, blockType: "tool-call" },
      { type: "tool-call-delta", index, id, name: "add", argumentsDelta: '{"a":1,"b":2}' },
      { type: "block-end", index, block: { type: "tool-call", id, name: "add", arguments: '{"a":1,"b":2}' } },
    ];
    const finish: StreamChunk = { type: "finish", reason: { kind: "tool-calls" } };
    for (
      const [chunks, what] of [
        [[...call(0, "c0"), ...call(1, ""), ...call(2, "c2"), finish], /"" \(block 1\) without a call id/],
        [[...call(0, "same"), ...call(1, "same"), finish], /"same" \(block 1\) with the id of an earlier call/],
      ] as const
    ) {
      const { harness, agent, model } = await setup([{ chunks: [...chunks] }, textResponse("Back")]);
      const error = await agent.run("Hi").then(() => assert.fail("run() resolved"), (e: unknown) => e);
      assert.ok(error instanceof TurnFailedError);
      assert.equal(error.failure.code, "MALFORMED_RESPONSE");
      assert.match(error.failure.message, what);
      const types = agent.session.events.map((e) => e.type);
      assert.ok(!types.includes("tool/call") && !types.includes("assistant/message"), types.join());
      assert.equal((await agent.run("Again")).text, "Back");
      assert.deepEqual(model.requests[1].messages.map((m) => m.role), ["user", "user"]);
      assertValidLog(agent.session.events);
      await harness.dispose();
    }
  });

  it("a clock that goes bad at any point of a turn fails run() without hanging the loop; the session recovers", async () => {
    // How many times a turn reads the clock.
    let reads = 0;
    const counted = await setup([textResponse("x")], { now: () => 1000 + reads++ });
    reads = 0;
    await counted.agent.run("Hi");
    const perTurn = reads;
    await counted.harness.dispose();
    assert.ok(perTurn > 5);

    for (let good = 0; good < perTurn; good++) {
      // Good until armed; then `good` more good reads, and bad from there until disarmed.
      let armed = false;
      let calls = 0;
      const now = () => {
        if (!armed) return 1000;
        calls++;
        return calls > good ? -1 : 1000 + calls;
      };
      const { harness, agent } = await setup([textResponse("x"), textResponse("y"), textResponse("z")], { now });
      armed = true;
      let timerFired = false;
      const timer = new Promise<void>((resolve) => setTimeout(() => resolve(void (timerFired = true)), 0));
      const outcome = await agent.run("Hi").then(() => "resolved", (e: unknown) => (e as { code?: string }).code);
      await timer;
      assert.ok(timerFired, `clock bad after ${good} reads: the loop starved the timers`);
      assert.ok(outcome === "INVALID_ARGS" || outcome === "TURN_FAILED", `after ${good} reads: ${outcome}`);
      armed = false;
      await agent.run("Again");
      assert.equal(agent.status, "idle");
      assertValidLog(agent.session.events);
      await harness.dispose();
    }
  });

  it("garbage from a pre-step or request-error listener, or a failed finish without failure data, fails the turn with a code", async () => {
    const stop: StreamChunk = { type: "finish", reason: { kind: "stop" } };
    const failedWith = (failure: unknown) => ({
      chunks: [{ type: "finish", reason: { kind: "error", ...(failure === undefined ? {} : { failure }) } } as never],
    });
    const { harness, agent } = await setup([
      failedWith(undefined),
      failedWith({ code: 5, message: null }),
      { throw: new LlmFailure("SERVER", "Down", { status: 503 }) },
      { chunks: [stop] },
    ]);
    const failure = async () => {
      const error = await agent.run("Hi").then(() => assert.fail("run() resolved"), (e: unknown) => e);
      assert.ok(error instanceof TurnFailedError, String(error));
      return error.failure;
    };
    for (let i = 0; i < 2; i++) assert.equal((await failure()).code, "MALFORMED_RESPONSE");
    const offRetry = agent.ctx.on("agent/request-error", () => Promise.resolve(null as never));
    assert.match((await failure()).message, /agent\/request-error gave null/);
    offRetry();
    for (const garbage of [null, { kind: "zzz" }, { kind: "enter" }]) {
      const off = agent.ctx.on("agent/pre-step", () => Promise.resolve(garbage as never));
      const failed = await failure();
      assert.equal(failed.code, "INVALID_ARGS");
      assert.match(failed.message, /agent\/pre-step gave/);
      off();
    }
    assert.equal((await agent.run("Hi")).reason.kind, "completed");
    for (const cause of [{ weird: [1, 2] }, 1n, ""]) {
      assert.throws(() => agent.cancel(cause as never), { code: "INVALID_ARGS" });
    }
    await assert.rejects(agent.runMaintenance(5 as never), { code: "INVALID_ARGS" });
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("retries stop after the policy's maximum", async () => {
    const failure = new LlmFailure("SERVER", "Down", { status: 503 });
    const { harness, agent, model } = await setup({ throw: failure }, {
      retryPolicy: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 2, jitter: 0, retryAfterCapMs: 10 },
    });
    await assert.rejects(agent.run("Hi"), (e: unknown) => e instanceof TurnFailedError && e.failure.code === "SERVER");
    assert.equal(model.requests.length, 3);
    assert.equal(agent.session.events.filter((e) => e.type === "llm/retry").length, 2);
    await harness.dispose();
  });

  it("a call that cannot be prepared ends the turn with its failure: an LlmFailure's own data, else the error's code", async () => {
    const { harness, agent, model } = await setup([textResponse("never"), textResponse("never")]);
    const provider = ["elsewhere", ""];
    agent.ctx.on("agent/request", async (_a, _d, next) => ({ ...(await next()), provider: provider.shift()! }));
    const codes: unknown[] = [];
    for (const text of ["Hi", "Again"]) {
      const error = await agent.run(text).then(() => assert.fail("run() resolved"), (e: unknown) => e);
      assert.ok(error instanceof TurnFailedError);
      codes.push(error.failure.code, error.result.reason.kind);
    }
    // NO_ADAPTER is an LlmFailure (its toData()); INVALID_ARGS a HarnessError (its code and message).
    assert.deepEqual(codes, ["NO_ADAPTER", "error", "INVALID_ARGS", "error"]);
    assert.equal(model.requests.length, 0);
    // The input entered before the step failed: the conversation keeps it.
    assert.deepEqual(summarize(agent.session.events).slice(-4), [
      "step/start 2.1",
      "user/message Again",
      "step/end 2.1",
      "turn/end 2 error:INVALID_ARGS",
    ]);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("max-tokens ends the turn and drops tool calls", async () => {
    const chunks: StreamChunk[] = [
      { type: "block-start", index: 0, blockType: "text" },
      { type: "text-delta", index: 0, text: "Partial" },
      { type: "block-end", index: 0, block: { type: "text", text: "Partial" } },
      { type: "block-start", index: 1, blockType: "tool-call" },
      { type: "tool-call-delta", index: 1, id: "c1", name: "add", argumentsDelta: '{"a":1' },
      { type: "finish", reason: { kind: "max-tokens" } },
    ];
    const { harness, agent } = await setup([{ chunks }]);
    const result = await agent.run("Write a lot");
    assert.deepEqual(result.reason, { kind: "max-tokens" });
    assert.equal(agent.session.events.some((e) => e.type === "tool/call"), false);
    assert.deepEqual(summarize(agent.session.events).slice(-3), [
      "assistant/message text:Partial",
      "step/end 1.1",
      "turn/end 1 max-tokens",
    ]);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("a pre-step rejection ends the turn blocked with no step", async () => {
    const { harness, agent, model } = await setup([textResponse("never")]);
    agent.ctx.on("agent/pre-step", () => Promise.resolve({ kind: "reject", reason: "policy" }));
    const result = await agent.run("Hi");
    assert.deepEqual(result.reason, { kind: "blocked" });
    assert.equal(model.requests.length, 0);
    assert.deepEqual(summarize(agent.session.events), [
      "inbox next-turn inserted +1",
      "turn/start 1",
      "inbox next-turn claimed -1",
      "turn/end 1 blocked",
    ]);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("a pre-step that enters nothing on the first step closes the turn completed with no step", async () => {
    const { harness, agent } = await setup([textResponse("never")]);
    agent.ctx.on("agent/pre-step", () => Promise.resolve({ kind: "enter", messages: [] }));
    const result = await agent.run("Hi");
    assert.deepEqual(result.reason, { kind: "completed" });
    assert.equal(agent.session.events.some((e) => e.type === "step/start"), false);
    await harness.dispose();
  });

  it("steer during a stream enters at the next step boundary of the same turn", async () => {
    const streamStarted = deferred();
    const release = deferred();
    const script: Script = async (_request, index) => {
      if (index === 0) {
        streamStarted.resolve();
        await release.promise;
        return toolCallResponse([{ id: "c1", name: "add", arguments: '{"a":1,"b":1}' }]);
      }
      return textResponse(index === 1 ? "Steered answer" : "extra");
    };
    const { harness, agent, model } = await setup(script);
    const run = agent.run("Start");
    await streamStarted.promise;
    agent.steer("Actually, be brief");
    release.resolve();
    const result = await run;
    assert.equal(result.text, "Steered answer");
    assert.equal(model.requests.length, 2);
    const last = model.requests[1].messages;
    assert.deepEqual(last.at(-1)?.content, [{ type: "text", text: "Actually, be brief" }]);
    const s = summarize(agent.session.events);
    assert.ok(s.includes("step/start 1.2"));
    assert.equal(s.filter((x) => x.startsWith("turn/start")).length, 1);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("inject queues context without waking; the next followup carries it", async () => {
    const { harness, agent, model } = await setup([textResponse("ok")]);
    agent.inject("Context: the user is in Paris");
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(agent.status, "idle");
    assert.equal(model.requests.length, 0);
    assert.equal(agent.session.events.some((e) => e.type === "turn/start"), false);
    await agent.run("Where am I?");
    const texts = model.requests[0].messages.map((m) =>
      m.content.map((b) => (b.type === "text" ? b.text : "")).join("")
    );
    assert.deepEqual(texts, ["Context: the user is in Paris", "Where am I?"]);
    await harness.dispose();
  });

  it("a system message as input is context: it enters the step as system/message; a non-text one is refused", async () => {
    const { harness, agent, model } = await setup([textResponse("ok")]);
    const source = { kind: "plugin", plugin: "test", form: "notice" } as const;
    agent.inject({ id: "ctx1", role: "system", content: [{ type: "text", text: "The user is in Paris" }], source });
    for (const content of [[], [{ type: "text", text: "" }], [{ type: "image", url: "https://x/y.png" }]]) {
      assert.throws(
        () => agent.inject({ id: "bad", role: "system", content: content as never, source }),
        { code: "INVALID_ARGS" },
      );
    }
    await agent.run("Where am I?");
    assert.deepEqual(model.requests[0].messages.map((m) => m.role), ["system", "user"]);
    const entered = agent.session.events.filter((e) => e.type === "system/message" || e.type === "user/message");
    assert.deepEqual(entered.map((e) => [e.type, e.data.id]), [["system/message", "ctx1"], [
      "user/message",
      entered[1].data.id,
    ]]);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("user input holds no tool call or result, and well-formed text and images; else INVALID_ARGS, nothing logged", async () => {
    const { harness, agent } = await setup([textResponse("ok")]);
    const seq = agent.session.seq;
    const bad: unknown[] = [
      null,
      undefined,
      [{ type: "image", data: 5 }],
      [{ type: "image", mediaType: "image/png" }],
      [{ type: "image", mediaType: "image/png", data: "AAAA", url: "https://x/y.png" }],
      [{ type: "text" }],
      [null],
      [{ type: "tool-call", id: "c1", name: "add", arguments: "{}" }],
      [{ type: "tool-result", toolCallId: "nowhere", content: [] }],
      { id: "m1", role: "user", content: [{ type: "text", text: "no source" }] },
      [{ text: "no type" }],
    ];
    for (const input of bad) {
      assert.throws(() => agent.followup(input as never), { code: "INVALID_ARGS" }, JSON.stringify(input));
      await assert.rejects(agent.run(input as never), { code: "INVALID_ARGS" }, JSON.stringify(input));
    }
    assert.equal(agent.session.seq, seq, "nothing was logged");
    const image = { type: "image", mediaType: "image/png", url: "https://x/y.png" } as const;
    // A plugin's own block type (ContentBlockMap is open to declaration merging) is the adapter's to take or refuse.
    const document = { type: "document", name: "a.pdf" } as never;
    assert.equal((await agent.run([{ type: "text", text: "Look" }, image, document])).text, "ok");
    await harness.dispose();
  });

  it("a followup queued while running gets a turn of its own", async () => {
    const started = deferred();
    const release = deferred();
    const script: Script = async (_r, index) => {
      if (index === 0) {
        started.resolve();
        await release.promise;
      }
      return textResponse(`answer ${index + 1}`);
    };
    const { harness, agent } = await setup(script);
    const first = agent.run("one");
    await started.promise;
    const second = agent.run("two");
    release.resolve();
    const [r1, r2] = await Promise.all([first, second]);
    assert.equal(r1.turn, 1);
    assert.equal(r1.text, "answer 1");
    assert.equal(r2.turn, 2);
    assert.equal(r2.text, "answer 2");
    assert.deepEqual(
      summarize(agent.session.events).filter((s) => s.startsWith("turn/") || s.startsWith("user/")),
      [
        "turn/start 1",
        "user/message one",
        "turn/end 1 completed",
        "turn/start 2",
        "user/message two",
        "turn/end 2 completed",
      ],
    );
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("a tools service that rejects still answers the call (TOOL_EXECUTE_FAILED); the next request is valid", async () => {
    const { harness, agent, model } = await setup([
      toolCallResponse([{ id: "c1", name: "add", arguments: '{"a":1,"b":2}' }]),
      textResponse("after"),
    ]);
    // The pipeline never rejects; a replaced or wrapped service might, with anything (here a value String() throws on).
    harness.ctx.service("tools").execute = () => Promise.reject(Object.create(null));
    const result = await agent.run("Add");
    assert.deepEqual(result.reason, { kind: "completed" });
    const answered = agent.session.events.find((e) => e.type === "tool/result");
    assert.ok(answered && answered.type === "tool/result");
    assert.deepEqual(answered.data.error, { name: "Error", code: "TOOL_EXECUTE_FAILED" });
    assert.deepEqual(answered.data.message.content, [{
      type: "tool-result",
      toolCallId: "c1",
      content: [{ type: "text", text: "Tool call add failed: a value that cannot be shown as text was thrown" }],
      isError: true,
    }]);
    assert.deepEqual(model.requests[1].messages.map((m) => m.content.map((b) => b.type).join()), [
      "text",
      "tool-call",
      "tool-result",
    ]);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("resume header: a change of system prompt between turns records reason change", async () => {
    const { harness, agent } = await setup([textResponse("a"), textResponse("b"), textResponse("c")]);
    await agent.run("one");
    await agent.run("two");
    harness.ctx.service("systemPrompt").section({ name: "extra", text: "Be terse.", order: 10 });
    await agent.run("three");
    const reasons = agent.session.events.filter((e) => e.type === "request/header").map((e) =>
      e.type === "request/header" ? e.data.reason : ""
    );
    assert.deepEqual(reasons, ["initial", "change"]);
    assert.equal(agent.session.events.filter((e) => e.type === "request/context").length, 1);
    await harness.dispose();
  });
});

describe("agent/turn-stopping", () => {
  it("runs every listener each round: a listener whose arrow returns steer()'s entry does not end the round", async () => {
    const { harness, agent } = await setup([textResponse("first"), textResponse("second")]);
    let rounds = 0, later = 0;
    // As JavaScript would write it: the arrow returns steer()'s entry (TypeScript wants void).
    const steerOnce = (a: Agent) => rounds++ === 0 ? a.steer("go on") : undefined;
    agent.ctx.on("agent/turn-stopping", steerOnce as unknown as (a: Agent) => void);
    agent.ctx.on("agent/turn-stopping", () => void later++);
    const result = await agent.run("Hi");
    assert.equal(result.text, "second");
    assert.deepEqual([rounds, later], [2, 2]);
    await harness.dispose();
  });
});

describe("agent loop cancellation", () => {
  it("a listener that ignores the turn's signal does not hold cancel() or dispose()", async () => {
    const hooks = [
      "agent/pre-step",
      "agent/request",
      "agent/request-error",
      "agent/turn-stopping",
      "tools/pre-execute",
      "tools/execute",
      "tools/post-execute",
    ];
    for (const hook of hooks) {
      const failing = hook === "agent/request-error";
      const { harness, agent } = await setup([
        failing ? { throw: new LlmFailure("SERVER", "Down") } : toolCallResponse([
          { id: "c1", name: "add", arguments: '{"a":1,"b":2}' },
        ]),
        textResponse("3"),
      ]);
      let entered!: () => void;
      const reached = new Promise<void>((resolve) => entered = resolve);
      // A hook waiting on something that never comes (a UI nobody answers), deaf to the signal.
      (agent.ctx.on as (name: string, fn: () => unknown) => void)(hook, () => {
        entered();
        return new Promise(() => {});
      });
      const running = agent.run("Add 1 and 2").then((r) => r.reason.kind, (e) => `rejected ${e?.code}`);
      await reached;
      agent.cancel("user");
      assert.equal(await within(running), "aborted", hook);
      assertValidLog(agent.session.events);
      assert.equal(await within(harness.dispose().then(() => "disposed")), "disposed", hook);
    }
  });

  it("a storage that stalls at a durability checkpoint does not hold cancel(); what the turn logged is stored after", async () => {
    // The three checkpoints: before the step's input enters, before the model call, before a tool runs.
    const stallAt: [string, (e: SessionEvent) => boolean][] = [
      ["pre-step", (e) => e.type === "turn/start"],
      ["request", (e) => e.type === "request/header"],
      ["tool", (e) => e.type === "tool/call"],
    ];
    for (const [where, when] of stallAt) {
      const base = memoryStorage();
      let stalled = false;
      const gate = deferred();
      const reached = deferred();
      const storage = new Proxy(base, {
        get(target, key) {
          const value = Reflect.get(target, key);
          if (key !== "append") return typeof value === "function" ? value.bind(target) : value;
          return async (...args: unknown[]) => {
            if (stalled) {
              reached.resolve();
              await gate.promise;
            }
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      const { harness, agent } = await setup([
        toolCallResponse([{ id: "c1", name: "add", arguments: '{"a":1,"b":2}' }]),
        textResponse("3"),
      ], { storage, batchWindowMs: 0 });
      agent.ctx.on("session/event", (_s, e) => {
        if (when(e)) stalled = true;
      });
      try {
        const running = agent.run("Add 1 and 2").then((r) => r.reason.kind, (e) => `rejected ${e?.code}`);
        await reached.promise;
        agent.cancel("user");
        // The turn ends at once; run() settles once its end is durable (as documented), so after storage comes back.
        assert.equal(await within(agent.whenIdle().then(() => "idle")), "idle", where);
        const end = agent.session.events.at(-1);
        assert.equal(end?.type === "turn/end" && end.data.reason.kind, "aborted", where);
        // A tool whose call was not yet durable did not start.
        if (where === "tool") {
          assert.ok(summarize(agent.session.events).includes("tool/result c1 error:ABORTED_BEFORE_DISPATCH"));
        }
        assertValidLog(agent.session.events);
        // Storage comes back: everything the cancelled turn logged is stored, its end included.
        stalled = false;
        gate.resolve();
        assert.equal(await running, "aborted", where);
        await agent.flushed();
        const stored = await base.inspect("s1");
        assert.deepEqual(stored.events.map((e) => e.type), agent.session.events.map((e) => e.type), where);
        assert.equal(stored.events.at(-1)?.type, "turn/end", where);
      } finally {
        // A failed assertion must not leave the harness waiting on the gate.
        stalled = false;
        gate.resolve();
        await harness.dispose().catch(() => {});
      }
    }
  });

  it("before the request: nothing of the step is committed but its bracket", async () => {
    const { harness, agent, model } = await setup([textResponse("never")]);
    agent.ctx.on("agent/request", async (_a, _d, next) => {
      agent.cancel("user");
      return await next();
    });
    const result = await agent.run("Hi").catch((e) => e);
    assert.equal(model.requests.length, 0);
    const s = summarize(agent.session.events);
    assert.deepEqual(s.slice(1), [
      "turn/start 1",
      "inbox next-turn claimed -1",
      "step/start 1.1",
      "step/end 1.1",
      "turn/end 1 aborted:user",
    ]);
    assert.deepEqual(result.reason, { kind: "aborted", reason: "user" });
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("mid-stream: the delivered prefix becomes an interrupted assistant message", async () => {
    const partial: StreamChunk[] = [
      { type: "block-start", index: 0, blockType: "reasoning" },
      { type: "reasoning-delta", index: 0, text: "Thinking" },
      { type: "block-start", index: 1, blockType: "text" },
      { type: "text-delta", index: 1, text: "Half an ans" },
    ];
    const { harness, agent } = await setup([{ hang: true, chunks: partial }]);
    const run = agent.run("Hi");
    await waitForEvent(agent, (e) => e.type === "assistant/chunk" && e.data.chunk.type === "text-delta");
    agent.cancel("user");
    const result = await run;
    assert.deepEqual(result.reason, { kind: "aborted", reason: "user" });
    const message = agent.session.events.find((e) => e.type === "assistant/message");
    assert.ok(message && message.type === "assistant/message");
    assert.equal(message.data.interrupted, true);
    assert.deepEqual(message.data.message.content, [
      { type: "reasoning", text: "Thinking" },
      { type: "text", text: "Half an ans" },
    ]);
    assert.deepEqual(summarize(agent.session.events).slice(-3), [
      "assistant/message reasoning:Thinking,text:Half an ans (interrupted)",
      "step/end 1.1",
      "turn/end 1 aborted:user",
    ]);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("during tools: started tools drain, unstarted calls get ABORTED_BEFORE_DISPATCH", async () => {
    const started = deferred();
    let sawAbort = false;
    const blocker = defineTool({
      name: "blocker",
      description: "Blocks until aborted",
      parameters: z.object({}),
      output: { schema: z.string(), render: (_a, v) => v },
      async execute(_args, exec) {
        started.resolve();
        await new Promise<void>((resolve) => exec.signal.addEventListener("abort", () => resolve(), { once: true }));
        sawAbort = true;
        return "stopped";
      },
    });
    const { harness, agent } = await setup([
      toolCallResponse([
        { id: "b1", name: "blocker", arguments: "{}" },
        { id: "a1", name: "add", arguments: '{"a":1,"b":2}' },
      ]),
    ], { tools: [add, blocker] });
    const run = agent.run("go");
    await started.promise;
    agent.cancel("user");
    const result = await run;
    assert.equal(sawAbort, true);
    assert.deepEqual(result.reason, { kind: "aborted", reason: "user" });
    assert.deepEqual(summarize(agent.session.events).slice(-6), [
      "tool/call blocker b1",
      "tool/call add a1",
      "tool/result b1 error:ABORTED",
      "tool/result a1 error:ABORTED_BEFORE_DISPATCH",
      "step/end 1.1",
      "turn/end 1 aborted:user",
    ]);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("in turn-stopping: the turn ends aborted and later input waits for the next turn", async () => {
    const { harness, agent, model } = await setup([textResponse("first"), textResponse("second")]);
    let once = true;
    agent.ctx.on("agent/turn-stopping", () => {
      if (once) {
        once = false;
        agent.cancel("hook");
      }
    });
    const result = await agent.run("Hi");
    assert.deepEqual(result.reason, { kind: "aborted", reason: "hook" });
    const later = await agent.run("again");
    assert.equal(later.turn, 2);
    assert.equal(later.text, "second");
    assert.equal(model.requests.length, 2);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("cancel discards queued input unless keepInbox", async () => {
    const started = deferred();
    const release = deferred();
    const { harness, agent } = await setup(async (_r, index) => {
      if (index === 0) {
        started.resolve();
        await release.promise;
      }
      return textResponse("x");
    });
    const first = agent.run("one");
    await started.promise;
    const queued = agent.run("two").catch((e) => e);
    agent.cancel("user");
    release.resolve();
    await first;
    const error = await queued;
    assert.equal(error.code, "INPUT_DISCARDED");
    assert.equal(agent.inbox.size, 0);
    await harness.dispose();
  });

  // The turn's signal is made when something reads it; cancel must reach it wherever it is read.
  it("the turn's one signal: the same for both requests and the tool, aborted by cancel with its reason", async () => {
    const seen: { request: AbortSignal[]; tool: AbortSignal[] } = { request: [], tool: [] };
    const probe = defineTool({
      name: "probe",
      description: "Records its signal",
      parameters: z.object({}),
      output: { schema: z.string(), render: (_args, text) => text },
      execute: (_args, exec) => {
        seen.tool.push(exec.signal);
        return "ok";
      },
    });
    const { harness, agent } = await setup((request, index) => {
      seen.request.push(request.signal!);
      return index === 0 ? toolCallResponse([{ id: "c1", name: "probe", arguments: "{}" }]) : { hang: true };
    }, { tools: [probe] });
    const run = agent.run("Hi");
    await waitForEvent(agent, (e) => e.type === "step/start" && e.data.step === 2);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const [first, second] = seen.request;
    assert.ok(first instanceof AbortSignal && !first.aborted);
    assert.equal(second, first);
    assert.equal(seen.tool[0], first);
    agent.cancel("user");
    assert.ok(first.aborted);
    assert.ok(HarnessError.isInstance(first.reason, "ABORTED"));
    assert.equal((first.reason as Error).message, "Turn cancelled: user");
    assert.deepEqual((await run).reason, { kind: "aborted", reason: "user" });
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("an adapter that never reads the signal is still stopped by cancel (the guard watches the turn)", async () => {
    const started = deferred();
    const { harness } = await setup([]);
    harness.ctx.service("llm").registerAdapter({
      provider: "silent",
      models: [{ id: "m" }],
      async *stream() {
        yield { type: "block-start", index: 0, blockType: "text" };
        yield { type: "text-delta", index: 0, text: "Never ends" };
        started.resolve();
        await new Promise(() => {});
      },
    });
    const silent = await harness.createAgent({ id: "s2", provider: "silent", model: "m" });
    const run = silent.run("Hi");
    await started.promise;
    await new Promise((resolve) => setTimeout(resolve, 5));
    silent.cancel("user");
    const result = await run;
    assert.deepEqual(result.reason, { kind: "aborted", reason: "user" });
    assert.deepEqual(summarize(silent.session.events).slice(-3), [
      "assistant/message text:Never ends (interrupted)",
      "step/end 1.1",
      "turn/end 1 aborted:user",
    ]);
    assertValidLog(silent.session.events);
    await harness.dispose();
  });

  it("an adapter whose cleanup never settles after its finish holds neither the turn nor dispose()", async () => {
    const answer: StreamChunk[] = [
      { type: "block-start", index: 0, blockType: "text" },
      { type: "text-delta", index: 0, text: "ok" },
      { type: "block-end", index: 0, block: { type: "text", text: "ok" } },
      { type: "finish", reason: { kind: "stop" } },
    ];
    const producers: Record<string, () => AsyncIterable<StreamChunk>> = {
      // A generator whose finally awaits for ever.
      finallyHangs: async function* () {
        try {
          yield* answer;
        } finally {
          await new Promise(() => {});
        }
      },
      // An iterator whose return() never settles.
      returnHangs: () => {
        let i = 0;
        return {
          [Symbol.asyncIterator]: () => ({
            next: () =>
              Promise.resolve(i < answer.length ? { value: answer[i++], done: false } : new Promise(() => {})),
            return: () => new Promise(() => {}),
          }),
        } as AsyncIterable<StreamChunk>;
      },
    };
    for (const [name, stream] of Object.entries(producers)) {
      const harness = await createHarness({ adapters: [{ provider: "p", models: [{ id: "m" }], stream }] });
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve("hung"), 2000)));
      try {
        const agent = await harness.createAgent({ id: "s" });
        const result = await Promise.race([agent.run("Hi"), late]);
        assert.notEqual(result, "hung", name);
        assert.deepEqual(typeof result === "string" ? result : [result.reason, result.text], [
          { kind: "completed" },
          "ok",
        ], name);
        assertValidLog(agent.session.events);
        assert.equal(await Promise.race([harness.dispose().then(() => "disposed"), late]), "disposed", name);
      } finally {
        clearTimeout(timer);
        await Promise.race([harness.dispose(), new Promise((resolve) => setTimeout(resolve, 100))]);
      }
    }
  });

  it("during a dynamic prompt section: the turn ends and no request is sent", async () => {
    const entered = deferred();
    const release = deferred();
    const { harness, agent, model } = await setup([textResponse("never")]);
    harness.ctx.service("systemPrompt").section({
      name: "slow",
      order: 10,
      text: async () => {
        entered.resolve();
        await release.promise;
        return "Slow part.";
      },
    });
    const run = agent.run("Hi");
    await entered.promise;
    agent.cancel("user");
    release.resolve();
    // The cancel is what ended it, as at any other phase (the assembly's own ABORTED is not the turn's error).
    assert.deepEqual((await run).reason, { kind: "aborted", reason: "user" });
    assert.equal(model.requests.length, 0);
    assert.equal(agent.session.events.at(-1)?.type, "turn/end");
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("during the retry delay: the sleep's signal aborts and no second request is sent", async () => {
    const sleeping = deferred();
    let slept: AbortSignal | undefined;
    const { harness, agent, model } = await setup([
      { throw: new LlmFailure("RATE_LIMIT", "Slow down", { status: 429 }) },
      textResponse("never"),
    ], {
      sleep: (_ms, signal) => {
        slept = signal;
        sleeping.resolve();
        return new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
      },
    });
    const run = agent.run("Hi");
    await sleeping.promise;
    assert.ok(slept instanceof AbortSignal && !slept.aborted);
    agent.cancel("user");
    assert.ok(slept.aborted);
    assert.deepEqual((await run).reason, { kind: "aborted", reason: "user" });
    assert.equal(model.requests.length, 1);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });
});

describe("parallel tool calls in the first step of a process", () => {
  it("run at once although the raw schema's validator is still loading when they are classified", async () => {
    const script = fileURLToPath(new URL("./_test_first_step_child.ts", import.meta.url));
    const [command, args] = childCommand(script);
    const out = await new Promise<string>((resolve, reject) => {
      execFile(command, args, { timeout: 60_000 }, (error, stdout) => error ? reject(error) : resolve(stdout));
    });
    assert.deepEqual(JSON.parse(out.trim().split("\n").at(-1)!), { most: 2 });
  });
});

describe("pre-step decisions that cancel", () => {
  it("a listener that cancels keeping the inbox and rejects parks the other steering, not what it discards", async () => {
    const { harness, agent } = await setup([textResponse("later")]);
    let first = true;
    agent.ctx.on("agent/pre-step", (a, proposal, next) => {
      if (!first) return next();
      first = false;
      const blocked = proposal.messages.find((m) => m.content[0]?.type === "text" && m.content[0].text === "BLOCK");
      a.cancel("hook", { keepInbox: true });
      return Promise.resolve({ kind: "reject" as const, discard: blocked === undefined ? [] : [blocked.id] });
    });
    agent.inject("KEEP ME");
    agent.steer("BLOCK");
    await agent.whenIdle();
    const ends = agent.session.events.filter((e) => e.type === "turn/end").map((e) => e.data.reason);
    assert.deepEqual(ends, [{ kind: "aborted", reason: "hook" }]);
    assert.deepEqual(
      agent.inbox.pending("next-step").map((e) => e.message.content),
      [[{ type: "text", text: "KEEP ME" }]],
    );
    assert.equal((await agent.run("go")).text, "later");
    const entered = agent.session.deriveMessages().map((m) => m.content.map((b) => b.type === "text" ? b.text : ""));
    assert.deepEqual(entered.slice(0, 2), [["KEEP ME"], ["go"]]);
    await harness.dispose();
  });
});

describe("a step that fails before its request", () => {
  it("logs the step's input before it fails (a prompt that cannot be assembled), so the input is not lost", async () => {
    const { harness, agent, model } = await setup([textResponse("ok")]);
    let broken = true;
    harness.ctx.service("systemPrompt").section({ name: "b", order: 9, text: () => broken ? "Hi {{nobody}}" : "Hi" });
    await assert.rejects(
      agent.run("first"),
      (e) => e instanceof TurnFailedError && e.failure.code === "PROMPT_VARIABLE_MISSING",
    );
    assert.equal(model.requests.length, 0);
    assert.deepEqual(agent.session.deriveMessages().map((m) => m.role), ["user"]);
    assert.deepEqual(checkInvariants(agent.session.events), []);
    broken = false;
    await agent.run("second");
    assert.deepEqual(
      model.requests[0].messages.map((m) => m.content.map((b) => b.type === "text" ? b.text : b.type).join("")),
      ["first", "second"],
    );
    await harness.dispose();
  });

  it("logs the step's input before it fails when the route cannot be prepared", async () => {
    const { harness, agent } = await setup([textResponse("ok")]);
    agent.ctx.on("agent/request", (_a, _info, next) => next().then((config) => ({ ...config, model: "nope" })));
    await assert.rejects(agent.run("lost?"), (e) => e instanceof TurnFailedError);
    assert.deepEqual(agent.session.deriveMessages().map((m) => m.role), ["user"]);
    assert.deepEqual(checkInvariants(agent.session.events), []);
    await harness.dispose();
  });
});

describe("usage", () => {
  it("counts one usage chunk per model call, the first, as the assistant message does", async () => {
    const chunks: StreamChunk[] = [
      { type: "block-start", index: 0, blockType: "text" },
      { type: "text-delta", index: 0, text: "hi" },
      { type: "block-end", index: 0, block: { type: "text", text: "hi" } },
      { type: "usage", usage: { inputTokens: 100, outputTokens: 1 } },
      { type: "usage", usage: { inputTokens: 100, outputTokens: 10, cacheReadTokens: 40 } },
      { type: "finish", reason: { kind: "stop" } },
    ];
    const { harness, agent } = await setup({ chunks });
    const result = await agent.run("q");
    const message = agent.session.events.find((e) => e.type === "assistant/message");
    assert.deepEqual(message?.type === "assistant/message" && message.data.usage, {
      inputTokens: 100,
      outputTokens: 1,
    });
    assert.deepEqual([result.usage.inputTokens, result.usage.outputTokens, result.usage.cacheReadTokens ?? 0], [
      100,
      1,
      0,
    ]);
    const { usageTotals } = await import("../projections/mod.ts");
    assert.deepEqual(harness.ctx.service("sessionProjections").stateOf(agent.session, usageTotals).total, {
      inputTokens: 100,
      outputTokens: 1,
    });
    await harness.dispose();
  });
});

describe("maxSteps", () => {
  it("ends a turn that would go past maxSteps blocked, its tool results logged; the next input continues", async () => {
    const call = (n: number) => toolCallResponse([{ id: `c${n}`, name: "add", arguments: '{"a":1,"b":2}' }]);
    const { harness, agent, model } = await setup([call(1), call(2), call(3), textResponse("done")], { maxSteps: 2 });
    const result = await agent.run("Add for ever");
    assert.equal(result.reason.kind, "blocked");
    assert.equal(model.requests.length, 2);
    const types = agent.session.events.map((e) => e.type);
    assert.equal(types.filter((t) => t === "step/start").length, 2);
    assert.equal(types.filter((t) => t === "tool/result").length, 2);
    assertValidLog(agent.session.events);
    // The conversation goes on: the next turn's request ends with the new input after both results.
    await agent.run("Stop now");
    assert.deepEqual(model.requests[2].messages.map((m) => m.role), [
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
      "user",
    ]);
    await harness.dispose();
    await assert.rejects(createHarness({ maxSteps: 0 }), (e) => HarnessError.isInstance(e, "INVALID_ARGS"));
  });

  for (const how of ["inject", "steer"] as const) {
    it(`a model that answered at the bound completes its turn; input ${how}ed meanwhile waits for the next`, async () => {
      let release!: () => void;
      const answered = new Promise<void>((resolve) => release = resolve);
      const model = scriptedAdapter(async () => {
        await answered;
        return textResponse("The answer is 42.");
      });
      const harness = await createHarness({ adapters: [model], maxSteps: 1 });
      const agent = await harness.createAgent();
      const run = agent.run("What is the answer?");
      while (model.calls === 0) await new Promise((resolve) => setTimeout(resolve, 1));
      agent[how]("A note for later");
      release();
      const result = await run;
      assert.deepEqual([result.reason.kind, result.text], ["completed", "The answer is 42."]);
      await agent.whenIdle();
      if (how === "inject") {
        assert.equal(model.calls, 1);
        assert.equal(agent.inbox.count("next-step"), 1, "injected context waits for a wake");
      } else {
        assert.equal(model.calls, 2, "steering wakes: it runs in the next turn");
        assert.equal(agent.inbox.size, 0);
      }
      assertValidLog(agent.session.events);
      await harness.dispose();
    });
  }
});

describe("acknowledged input across a crash", () => {
  // What a crashed process leaves: its storage as it was at that moment, in a storage of its own.
  async function crashedCopy(storage: ReturnType<typeof memoryStorage>, id: string) {
    const { header, events } = await storage.inspect(id);
    const copy = memoryStorage();
    await copy.create(header, { events });
    return copy;
  }
  const texts = (agent: Agent) =>
    agent.session.deriveMessages().filter((m) => m.role === "user").map((m) =>
      m.content.map((b) => b.type === "text" ? b.text : "").join("")
    );
  const resumeFrom = async (storage: ReturnType<typeof memoryStorage>, answer: string) => {
    const model = scriptedAdapter(textResponse(answer));
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
      newId: counterIds("r"),
    });
    return { model, harness, agent: await harness.resumeAgent("s1", { wake: true }) };
  };

  // A process that died during turn "one"'s model call with followup "two" queued, resumed without wake.
  const resumedWithQueuedFollowup = async (script: Script) => {
    const storage = memoryStorage();
    const { harness, agent } = await setup([{ hang: true }], { storage });
    agent.followup("one");
    await waitForEvent(agent, (e) => e.type === "request/header");
    agent.followup("two");
    await agent.flushed();
    const crashed = await crashedCopy(storage, "s1");
    await harness.dispose().catch(() => {});
    const model = scriptedAdapter(script);
    const resumed = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      storage: crashed,
      newId: counterIds("r"),
    });
    const again = await resumed.resumeAgent("s1");
    return { model, resumed, again };
  };

  it("a followup whose claim was stored but not its message is put back and runs when the session resumes", async () => {
    const storage = memoryStorage();
    const { harness, agent } = await setup([textResponse("never")], { storage });
    let snapshot: Promise<ReturnType<typeof memoryStorage>> | undefined;
    // The step's pre-step listener is where the process dies: the claim is durable (a checkpoint precedes it).
    agent.ctx.on("agent/pre-step", async (_a, _p, next) => {
      snapshot ??= agent.flushed().then(() => crashedCopy(storage, "s1"));
      await snapshot;
      return next();
    });
    agent.followup("acknowledged input");
    await agent.flushed();
    const crashed = await snapshot!;
    await harness.dispose().catch(() => {});

    const resumed = await resumeFrom(crashed, "Answered");
    await resumed.agent.whenIdle();
    await resumed.agent.flushed();
    assert.deepEqual(texts(resumed.agent), ["acknowledged input"]);
    assert.equal(resumed.model.requests.length, 1);
    assertValidLog(resumed.agent.session.events);
    const ends = resumed.agent.session.events.filter((e) => e.type === "turn/end").map((e) => e.data.reason.kind);
    assert.deepEqual(ends, ["interrupted", "completed"]);
    await resumed.harness.dispose();
  });

  it("a followup queued behind a running turn runs when the session resumes; whenIdle() settles", async () => {
    const storage = memoryStorage();
    // Turn 1's model call never answers: the process dies during it.
    const { harness, agent } = await setup([{ hang: true }], { storage });
    agent.followup("one");
    await waitForEvent(agent, (e) => e.type === "assistant/chunk" || e.type === "request/header");
    agent.followup("two");
    await agent.flushed();
    const crashed = await crashedCopy(storage, "s1");
    await harness.dispose().catch(() => {});

    const resumed = await resumeFrom(crashed, "Second");
    await resumed.agent.whenIdle();
    await resumed.agent.flushed();
    assert.deepEqual(texts(resumed.agent), ["one", "two"]);
    assert.equal(resumed.agent.inbox.size, 0);
    await resumed.harness.dispose();
  });

  it("resumeAgent with wake runs steering queued behind a running turn, as wake() does", async () => {
    const storage = memoryStorage();
    const { harness, agent } = await setup([{ hang: true }], { storage });
    agent.followup("one");
    await waitForEvent(agent, (e) => e.type === "request/header");
    agent.steer("steer this way");
    await agent.flushed();
    const crashed = await crashedCopy(storage, "s1");
    await harness.dispose().catch(() => {});

    const resumed = await resumeFrom(crashed, "Steered");
    await resumed.agent.whenIdle();
    assert.equal(resumed.model.requests.length, 1);
    assert.deepEqual(texts(resumed.agent), ["one", "steer this way"]);
    assert.equal(resumed.agent.inbox.size, 0);
    assertValidLog(resumed.agent.session.events);
    await resumed.harness.dispose();
  });

  it("without wake, a resumed agent keeps its queued followup for the next input, which runs after it", async () => {
    const { model, resumed, again } = await resumedWithQueuedFollowup([textResponse("Second"), textResponse("Third")]);
    await again.whenIdle();
    assert.equal(model.requests.length, 0, "nothing ran without wake");
    assert.equal(again.inbox.count("next-turn"), 1);
    assert.equal((await again.run("three")).text, "Third");
    assert.deepEqual(texts(again), ["one", "two", "three"]);
    await resumed.dispose();
  });

  it("wake() runs a resumed agent's queued followup; it starts nothing when nothing waits, and throws once disposed", async () => {
    const { model, resumed, again } = await resumedWithQueuedFollowup([textResponse("Second")]);
    assert.equal(again.status, "idle");
    again.wake();
    assert.equal(again.status, "running");
    await again.whenIdle();
    assert.equal(model.requests.length, 1);
    assert.deepEqual(texts(again), ["one", "two"]);
    const turns = () => again.session.events.filter((e) => e.type === "turn/start").length;
    const before = turns();
    again.wake();
    assert.equal(again.status, "idle");
    assert.equal(turns(), before);
    // …and leaves no wake behind: context injected later still waits for input (here past a maintenance task).
    again.inject("background note");
    await again.runMaintenance(() => {});
    await again.whenIdle();
    assert.equal(turns(), before);
    assert.equal(again.inbox.count("next-step"), 1);
    await resumed.dispose();
    assert.throws(() => again.wake(), (e) => HarnessError.isInstance(e, "AGENT_DISPOSED"));
  });

  it("a claim put back before the crash cut its turn short is not restored a second time", async () => {
    const storage = memoryStorage();
    const { harness, agent } = await setup([textResponse("never")], { storage });
    agent.ctx.on("agent/pre-step", async (_a, _p, next) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return next();
    });
    agent.followup("A");
    await waitForEvent(agent, (e) => e.type === "agent/inbox/spliced" && e.data.outcome === "claimed");
    // Disposal puts the claim back; a crash then loses the turn's end (the put-back splice was stored, turn/end not).
    await harness.dispose();
    const { header, events } = await storage.inspect("s1");
    assert.equal(events.at(-1)?.type, "turn/end");
    const cut = memoryStorage();
    await cut.create(header, { events: events.slice(0, -1) });
    const resumed = await resumeFrom(cut, "Answered");
    await resumed.agent.whenIdle();
    assert.deepEqual(texts(resumed.agent), ["A"]);
    assert.equal(resumed.model.requests.length, 1);
    await resumed.harness.dispose();
  });

  it("a rejected step parks its steering in the inbox until the next wake (the followup is spent)", async () => {
    const { harness, agent, model } = await setup([textResponse("after")]);
    let reject = true;
    agent.ctx.on("agent/pre-step", (_a, _p, next) => {
      if (!reject) return next();
      reject = false;
      return Promise.resolve({ kind: "reject" as const });
    });
    agent.inject("context");
    const blocked = await agent.run("first");
    assert.equal(blocked.reason.kind, "blocked");
    assert.deepEqual(agent.inbox.pending("next-step").map((e) => e.message.content), [[{
      type: "text",
      text: "context",
    }]]);
    assert.equal((await agent.run("second")).text, "after");
    assert.deepEqual(texts(agent), ["context", "second"]);
    assert.equal(model.requests.length, 1);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });
});

describe("whenIdle() and maintenance", () => {
  it("settles when the input queued during a maintenance task was cancelled before it ended", async () => {
    const { harness, agent, model } = await setup([textResponse("never")]);
    let finish!: () => void;
    const maintenance = agent.runMaintenance(() => new Promise<void>((resolve) => finish = resolve));
    agent.followup("queued");
    let settled = false;
    const idle = agent.whenIdle().then(() => void (settled = true));
    agent.cancel("user");
    finish();
    await maintenance;
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(settled, true);
    await idle;
    assert.equal(model.requests.length, 0);
    await harness.dispose();
  });
});

describe("calls made from the first, synchronous stretch of a turn", () => {
  it('cancel(keepInbox) heard with the "running" status cancels the turn about to open, its input spent', async () => {
    const model = scriptedAdapter({ hang: true });
    const harness = await createHarness({ adapters: [model] });
    const agent = await harness.createAgent();
    let cancelled = false;
    agent.listen((update) => {
      if (update.kind !== "status" || update.status !== "running" || cancelled) return;
      cancelled = true;
      agent.cancel("user", { keepInbox: true });
    });
    const result = (await within(agent.run("Hello"), 2000)) as RunResult;
    assert.deepEqual(result.reason, { kind: "aborted", reason: "user" });
    assert.equal(model.calls, 0);
    assert.equal(agent.inbox.size, 0, "the turn's followup is spent, as by a cancel right after its claim");
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("a cancel(keepInbox) between two turns of one pump finds no turn: the next turn runs its input", async () => {
    const model = scriptedAdapter(() => textResponse("ok"));
    const harness = await createHarness({ adapters: [model] });
    const agent = await harness.createAgent();
    let cancelled = false;
    agent.listen((update) => {
      if (cancelled || update.kind !== "event" || update.event.type !== "turn/end") return;
      cancelled = true;
      queueMicrotask(() => agent.cancel("user", { keepInbox: true }));
    });
    const [one, two] = await Promise.all([agent.run("one"), agent.run("two")]);
    assert.deepEqual([one.reason.kind, two.reason.kind], ["completed", "completed"]);
    assert.equal(model.calls, 2);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("wake() from a listen() listener, inside an append, wakes once the append is done", async () => {
    const model = scriptedAdapter(textResponse("hi"));
    const harness = await createHarness({ adapters: [model] });
    const agent = await harness.createAgent();
    const errors: unknown[] = [];
    agent.ctx.on("agent/error", (_agent, error) => void errors.push(error));
    agent.inject("Some context");
    agent.listen((update) => {
      if (update.kind === "event" && update.event.type === "agent/inbox/spliced") agent.wake();
    });
    const result = (await within(agent.run("Hello"), 2000)) as RunResult;
    assert.equal(result.reason.kind, "completed");
    assert.deepEqual(errors, []);
    assert.equal(agent.inbox.size, 0);
    assert.equal(model.calls, 1);
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("dispose() from the claim of the input waits for the turn to close: stored as live, the input kept", async () => {
    const storage = memoryStorage();
    const { harness, agent } = await setup([textResponse("Hi")], { storage });
    let disposing: Promise<void> | undefined;
    agent.ctx.on("agent/inbox/claimed", () => void (disposing ??= harness.dispose()));
    // The input never entered the conversation: it goes back to the inbox for a resumed agent.
    await assert.rejects(agent.run("Hello"), (e) => HarnessError.isInstance(e, "AGENT_DISPOSED"));
    await disposing;
    assert.deepEqual(
      Inbox.fromLog(agent.session.events, () => {}).pending("next-turn").map((e) => e.message.content),
      [[{ type: "text", text: "Hello" }]],
    );
    const stored = await storage.inspect(agent.id);
    assert.deepEqual(stored.repair.syntheticEvents, []);
    assert.deepEqual(stored.events, agent.session.events);
    assertValidLog(stored.events);
    // Disposed with its harness: the last write was dispose()'s.
    await agent.flushed();
  });

  it("whenIdle() and runMaintenance() called there wait for the turn", async () => {
    const { harness, agent } = await setup([textResponse("Hi")]);
    const seen: string[] = [];
    agent.ctx.on("agent/inbox/claimed", () => {
      agent.whenIdle().then(() => seen.push(`idle:${agent.status}`));
      agent.runMaintenance(() => {
        const open = agent.session.events.filter((e) => e.type === "turn/start").length >
          agent.session.events.filter((e) => e.type === "turn/end").length;
        seen.push(`maintenance:${open ? "turn open" : "between turns"}`);
      });
    });
    await agent.run("Hello");
    await agent.whenIdle();
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(seen.sort(), ["idle:idle", "maintenance:between turns"]);
    await harness.dispose();
  });
});

describe("Agent handle", () => {
  it("subscribe() yields committed events, deltas and status, and ends on dispose", async () => {
    const { harness, agent } = await setup([textResponse("Hey")]);
    const seen: string[] = [];
    const done = (async () => {
      for await (const update of agent.subscribe()) {
        seen.push(
          update.kind === "event"
            ? update.event.type
            : update.kind === "delta"
            ? `delta:${update.text}`
            : `status:${update.status}`,
        );
      }
    })();
    await agent.run("Hi");
    await harness.dispose();
    await done;
    assert.ok(seen.includes("status:running"));
    assert.ok(seen.includes("status:idle"));
    assert.ok(seen.includes("turn/end"));
    assert.equal(seen.filter((s) => s.startsWith("delta:")).join("").replaceAll("delta:", ""), "Hey");
  });

  it("a retried request's deltas carry their attempt: keyed by it, the streamed text is the answer's, not twice", async () => {
    const failure = new LlmFailure("SERVER", "Dropped mid-stream", { status: 503 });
    const { harness, agent } = await setup([
      { throw: failure, chunks: textResponse("The answer is 4").chunks.filter((c) => c.type !== "finish") },
      textResponse("The answer is 42."),
    ]);
    const blocks = new Map<string, string>();
    const attempts: number[] = [];
    agent.listen((update) => {
      if (update.kind !== "delta") return;
      attempts.push(update.attempt);
      const key = `${update.turn}.${update.step}.${update.attempt}.${update.index}`;
      blocks.set(key, (blocks.get(key) ?? "") + update.text);
    });
    const result = await agent.run("What is 6 times 7?");
    assert.equal(result.text, "The answer is 42.");
    assert.ok(attempts.includes(1) && attempts.at(-1) === 2, attempts.join());
    assert.equal(blocks.get("1.1.2.0"), "The answer is 42.");
    assert.equal(blocks.get("1.1.1.0"), "The answer is 4");
    assertValidLog(agent.session.events);
    await harness.dispose();
  });

  it("subscribe() deltas name their chunk: seq, block index, and a tool call's id and name", async () => {
    const { harness, agent } = await setup([
      toolCallResponse([
        { id: "call_1", name: "add", arguments: '{"a":2,"b":3}' },
        { id: "call_2", name: "add", arguments: '{"a":1,"b":1}' },
      ], { reasoning: "Need to add" }),
      textResponse("The sums are 5 and 2", { reasoning: "Both done" }),
    ]);
    const deltas: Extract<AgentUpdate, { kind: "delta" }>[] = [];
    const done = (async () => {
      for await (const update of agent.subscribe()) if (update.kind === "delta") deltas.push(update);
    })();
    await agent.run("What are 2+3 and 1+1?");
    await harness.dispose();
    await done;
    const streamed = agent.session.events.filter((e) =>
      e.type === "assistant/chunk" && e.data.chunk.type.endsWith("-delta")
    );
    assert.deepEqual(deltas.map((d) => d.seq), streamed.map((e) => e.seq));
    for (const d of deltas) {
      const event = agent.session.at(d.seq)!;
      assert.ok(event.type === "assistant/chunk");
      const { turn, step, chunk } = event.data;
      assert.ok(chunk.type === "text-delta" || chunk.type === "reasoning-delta" || chunk.type === "tool-call-delta");
      const { kind: _kind, ...rest } = d;
      assert.deepEqual(
        rest,
        chunk.type === "tool-call-delta"
          ? {
            seq: d.seq,
            turn,
            step,
            attempt: 1,
            index: chunk.index,
            blockType: "tool-call",
            text: chunk.argumentsDelta,
            id: chunk.id,
            ...(chunk.name === undefined ? {} : { name: chunk.name }),
          }
          : {
            seq: d.seq,
            turn,
            step,
            attempt: 1,
            index: chunk.index,
            blockType: chunk.type === "text-delta" ? "text" : "reasoning",
            text: chunk.text,
          },
      );
    }
    // Two calls in one step: their deltas tell them apart by index and id.
    const calls = deltas.filter((d) => d.blockType === "tool-call");
    assert.deepEqual([...new Set(calls.map((d) => `${d.index}:${d.id}`))].length, 2);
    assert.ok(calls.some((d) => d.name === "add"));
    assert.deepEqual([...new Set(deltas.filter((d) => d.step === 2).map((d) => d.blockType))], ["reasoning", "text"]);
  });

  it("whenIdle() resolves after queued turns; runMaintenance() runs from idle and holds new turns", async () => {
    const { harness, agent, model } = await setup(textResponse("ok"));
    agent.followup("one");
    agent.followup("two");
    await agent.whenIdle();
    assert.equal(model.requests.length, 2);
    const order: string[] = [];
    const maintenance = agent.runMaintenance(async () => {
      order.push("maintenance:start");
      agent.followup("three");
      await new Promise((r) => setTimeout(r, 5));
      assert.equal(agent.status, "idle");
      order.push("maintenance:end");
      return 42;
    });
    assert.equal(await maintenance, 42);
    await agent.whenIdle();
    assert.equal(model.requests.length, 3);
    assert.deepEqual(order, ["maintenance:start", "maintenance:end"]);
    await harness.dispose();
  });

  it("cancel() aborts a running maintenance task's signal (ABORTED), and the agent goes on", async () => {
    const { harness, agent, model } = await setup(textResponse("ok"));
    let seen: unknown;
    const maintenance = agent.runMaintenance((signal) =>
      new Promise<void>((_resolve, reject) => {
        signal.addEventListener("abort", () => {
          seen = signal.reason;
          reject(signal.reason);
        }, { once: true });
      })
    );
    await new Promise((r) => setTimeout(r, 1));
    agent.cancel("user");
    await assert.rejects(maintenance, (e) => HarnessError.isInstance(e, "ABORTED") && /user/.test(e.message));
    assert.ok(HarnessError.isInstance(seen, "ABORTED"));
    // A later cancel() with no maintenance running aborts nothing of the next task.
    agent.cancel("user");
    assert.equal(await agent.runMaintenance((signal) => signal.aborted), false);
    assert.equal((await agent.run("after")).text, "ok");
    assert.equal(model.requests.length, 1);
    await harness.dispose();
  });

  it("whenIdle() resolves for an idle agent that was steered before and then given injected context", async () => {
    const { harness, agent } = await setup(textResponse("ok"));
    await agent.run("one");
    agent.steer("steered");
    await agent.whenIdle();
    agent.inject("context for later");
    await agent.whenIdle();
    assert.equal(agent.status, "idle");
    assert.equal(agent.inbox.pending("next-step").length, 1);
    await harness.dispose();
  });

  it("a subscription can be closed while it waits for the next update", async () => {
    const { harness, agent } = await setup(textResponse("ok"));
    const iterator = agent.subscribe()[Symbol.asyncIterator]();
    const pending = iterator.next();
    await iterator.return!();
    assert.deepEqual(await pending, { value: undefined, done: true });
    await agent.run("hi"); // nothing is queued for the closed subscription
    assert.deepEqual(await iterator.next(), { value: undefined, done: true });
    await harness.dispose();
  });

  it("a subscriber that falls behind is dropped with SUBSCRIBER_OVERFLOW; the agent goes on", async () => {
    const { harness, agent } = await setup([textResponse("one"), textResponse("two")]);
    const stalled = agent.subscribe({ maxBuffered: 5 })[Symbol.asyncIterator]();
    const reading = agent.subscribe()[Symbol.asyncIterator]();
    await agent.run("first");
    await agent.run("second");
    await assert.rejects(stalled.next(), { code: "SUBSCRIBER_OVERFLOW" });
    assert.deepEqual(await stalled.next(), { value: undefined, done: true });
    // A consumer within its bound gets everything.
    const first = await reading.next();
    assert.equal(first.value?.kind === "event" && first.value.event.type, "agent/inbox/spliced");
    await reading.return!();
    assert.throws(() => agent.subscribe({ maxBuffered: 0 }), { code: "INVALID_ARGS" });
    await harness.dispose();
  });

  it("status changes are announced on agent/status", async () => {
    const { harness, agent } = await setup([textResponse("ok")]);
    const statuses: string[] = [];
    harness.ctx.on("agent/status", (_a, status) => void statuses.push(status));
    await agent.run("Hi");
    await agent.whenIdle();
    assert.deepEqual(statuses, ["running", "idle"]);
    await harness.dispose();
  });

  it("the inbox is rebuilt from the log and entry ids are unique", async () => {
    const { harness, agent } = await setup([textResponse("ok")]);
    agent.inject("pending context");
    const { Inbox } = await import("./inbox.ts");
    const rebuilt = Inbox.fromLog(agent.session.events, () => {});
    assert.deepEqual(rebuilt.pending("next-step").map((e) => e.id), agent.inbox.pending("next-step").map((e) => e.id));
    const entry = agent.inbox.pending("next-step")[0];
    assert.throws(
      () => rebuilt.push("next-step", entry),
      (e: Error & { code?: string }) => e.code === "DUPLICATE_INBOX_ID",
    );
    await harness.dispose();
  });
});
