import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHarness, type CreateHarnessOptions } from "../harness.ts";
import { checkInvariants } from "../invariants/mod.ts";
import { DEFAULT_RETRY_POLICY, type GenerateOptions, LlmFailure } from "../llm/mod.ts";
import { renderTranscript } from "../session/transcript.ts";
import { scriptedAdapter, type ScriptEntry, textResponse, toolCallResponse } from "../../testing/scripted_adapter.ts";
import { counterClock, counterIds } from "../agent/_test_support.ts";
import {
  type CompactionOptions,
  compactionPlugin,
  compactionRange,
  type CompactionServices,
  compactSession,
} from "./mod.ts";
import type { LlmRuntime } from "../llm/llm_runtime.ts";
import { pluginCtx } from "../plugin_ctx.ts";
import { memoryStorage } from "../persistence/memory_storage.ts";
import { withFaults } from "../persistence/_test_storage_faults.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import { foldProjection, usageTotals } from "../projections/mod.ts";

const CONFIG = { provider: "scripted", model: "scripted-model" } as const;

const textOf = (m: { content: readonly { type: string; text?: string }[] }) =>
  m.content.map((b) => (b.type === "text" ? b.text : "")).join("");

async function setup(
  answer: (request: GenerateOptions, index: number) => ScriptEntry,
  contextWindow?: number,
  more: {
    summary?: (request: GenerateOptions, index: number) => ScriptEntry | Promise<ScriptEntry>;
    plugin?: CompactionOptions;
    harness?: Partial<CreateHarnessOptions>;
  } = {},
) {
  const summary = more.summary ?? (() => textResponse("SUMMARY of turns"));
  const model = scriptedAdapter(
    (request, index) => request.purpose === "compaction" ? summary(request, index) : answer(request, index),
    { models: [{ id: "scripted-model", ...(contextWindow !== undefined ? { contextWindow } : {}) }] },
  );
  const harness = await createHarness({
    adapters: [model],
    model: { provider: "scripted", model: "scripted-model" },
    now: counterClock(),
    newId: counterIds(),
    sleep: () => Promise.resolve(),
    plugins: [[compactionPlugin, { newId: counterIds("sum"), ...more.plugin }]],
    ...more.harness,
  });
  const agent = await harness.createAgent({ id: "c1" });
  return { harness, agent, model };
}

const compactionOf = (harness: { ctx: unknown }) =>
  pluginCtx<object, CompactionServices>(harness.ctx as never).service("compaction");

describe("compaction", () => {
  it("manual compaction shows the summary in place of the range; the transcript still shows everything", async () => {
    const { harness, agent, model } = await setup((_r, i) => textResponse(`answer ${i}`));
    await agent.run("first question");
    await agent.run("second question");
    await agent.run("third question");
    const compaction = pluginCtx<object, CompactionServices>(harness.ctx).service("compaction");
    const outcome = await compaction.compact(agent);
    assert.equal(outcome.kind, "completed");
    const derived = agent.session.deriveMessages().map(textOf);
    assert.deepEqual(derived, [
      "Summary of the earlier conversation:\n\nSUMMARY of turns",
      "third question",
      "answer 2",
    ]);
    const summaryCall = model.requests.find((r) => r.purpose === "compaction")!;
    assert.deepEqual(summaryCall.messages.slice(0, 4).map(textOf), [
      "first question",
      "answer 0",
      "second question",
      "answer 1",
    ]);
    const types = agent.session.events.map((e) => e.type);
    assert.deepEqual(types.slice(-4), ["compaction/start", "compaction/summary", "user/message", "compaction/end"]);
    const transcript = renderTranscript(agent.session.events);
    assert.match(transcript, /first question/);
    assert.match(transcript, /answer 1/);
    assert.deepEqual(checkInvariants(agent.session.events), []);

    const next = await agent.run("fourth question");
    const last = model.requests.at(-1)!;
    assert.equal(last.purpose, undefined, "an ordinary turn carries no purpose");
    assert.ok(model.requests.some((r) => r.purpose === "compaction"));
    assert.deepEqual(last.messages.map(textOf)[0], "Summary of the earlier conversation:\n\nSUMMARY of turns");
    assert.equal(next.text, "answer 4", "the call index counts the summary call too");
    await harness.dispose();
  });

  it("a prompt context whose snapshot a compaction replaced is logged again before the next request", async () => {
    const { harness, agent, model } = await setup((_r, i) => textResponse(`answer ${i}`));
    harness.ctx.service("systemPrompt").context({ name: "todo", order: 0, text: "TODO: ship v2" });
    await agent.run("first question");
    await agent.run("second question");
    const compaction = pluginCtx<object, CompactionServices>(harness.ctx).service("compaction");
    assert.equal((await compaction.compact(agent)).kind, "completed");
    await agent.run("third question");
    const last = model.requests.at(-1)!;
    assert.ok(last.messages.some((m) => m.role === "system" && textOf(m) === "TODO: ship v2"));
    const snapshots = agent.session.events.filter((e) => e.type === "system/message");
    assert.equal(snapshots.length, 2, "logged once, and again after the compaction");
    // Unchanged and still on the surface: not logged again.
    await agent.run("fourth question");
    assert.equal(agent.session.events.filter((e) => e.type === "system/message").length, 2);
    assert.deepEqual(checkInvariants(agent.session.events), []);
    await harness.dispose();
  });

  it("without a newId of its own, summary messages take their ids from the harness's id source", async () => {
    const { harness, agent } = await setup((_r, i) => textResponse(`answer ${i}`), undefined, {
      plugin: { newId: undefined },
      harness: { newId: counterIds("h") },
    });
    for (const q of ["first", "second", "third"]) await agent.run(q);
    assert.equal((await compactionOf(harness).compact(agent)).kind, "completed");
    const summary = agent.session.events.find((e) =>
      e.type === "user/message" && e.data.source.kind === "plugin" && e.data.source.plugin === "compaction"
    );
    assert.ok(summary?.type === "user/message");
    assert.match(summary.data.id, /^h-\d+$/);
    await harness.dispose();
  });

  it("a manual compaction stops with the agent's disposal and writes nothing after it; later ones are refused", async () => {
    const storage = memoryStorage();
    const model = scriptedAdapter(
      (request) => request.purpose === "compaction" ? { hang: true } : textResponse("answer"),
    );
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
      plugins: [[compactionPlugin, {}]],
    });
    const agent = await harness.createAgent({ id: "c1" });
    for (const q of ["first", "second", "third"]) await agent.run(q);
    const compaction = pluginCtx<object, CompactionServices>(harness.ctx).service("compaction");
    const compacting = compaction.compact(agent);
    while (!model.requests.some((r) => r.purpose === "compaction")) await new Promise((r) => setTimeout(r, 5));
    await harness.dispose();
    const outcome = await compacting;
    assert.equal(outcome.kind, "failed");
    const stored = await storage.inspect("c1");
    assert.deepEqual(stored.events, agent.session.events);
    assert.deepEqual(stored.events.slice(-2).map((e) => e.type), ["compaction/start", "compaction/end"]);
    assert.deepEqual(checkInvariants(stored.events), []);
    await assert.rejects(agent.runMaintenance(() => 1), (e) => HarnessError.isInstance(e, "AGENT_DISPOSED"));
  });

  it("compacts before a step when the estimate crosses the threshold of the context window", async () => {
    const long = "x".repeat(2000);
    const { harness, agent } = await setup((_r, i) => textResponse(`${long} ${i}`), 300);
    await agent.run("one");
    await agent.run("two");
    const starts = agent.session.events.filter((e) => e.type === "compaction/start");
    assert.ok(starts.length >= 1);
    assert.deepEqual(starts[0].data, { reason: "threshold" });
    assert.deepEqual(checkInvariants(agent.session.events), []);
    await harness.dispose();
  });

  it("a summary call that hangs stops with the turn: cancel() ends the turn, dispose() returns", async () => {
    const long = "x".repeat(2000);
    const model = scriptedAdapter(
      (request, i): ScriptEntry => request.purpose === "compaction" ? { hang: true } : textResponse(`${long} ${i}`),
      { models: [{ id: "scripted-model", contextWindow: 300 }] },
    );
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      plugins: [[compactionPlugin, {}]],
    });
    const agent = await harness.createAgent({ id: "h1" });
    await agent.run("one");
    const started = new Promise<void>((resolve) => {
      const off = agent.session.observe((event) => {
        if (event.type !== "compaction/start") return;
        off();
        queueMicrotask(resolve);
      });
    });
    const second = agent.run("two");
    await started;
    agent.cancel("user");
    assert.equal((await second).reason.kind, "aborted");
    const end = agent.session.events.find((e) => e.type === "compaction/end");
    assert.equal(end?.type === "compaction/end" && end.data.outcome, "failed");
    assert.equal(end?.type === "compaction/end" && end.data.failure?.cancelled, true, "the summary call was cancelled");
    assert.deepEqual(checkInvariants(agent.session.events), []);
    await harness.dispose();
  });

  it("recovers from CONTEXT_WINDOW_EXCEEDED: compacts, then retries the step with a rebuilt request", async () => {
    let overflowed = false;
    const { harness, agent, model } = await setup((request, i) => {
      if (request.messages.length > 3 && !overflowed) {
        overflowed = true;
        return { throw: new LlmFailure("CONTEXT_WINDOW_EXCEEDED", "Too long", { status: 400 }) };
      }
      return textResponse(`answer ${i}`);
    });
    await agent.run("one");
    await agent.run("two");
    const result = await agent.run("three");
    assert.deepEqual(result.reason, { kind: "completed" });
    const retried = model.requests.at(-1)!;
    assert.deepEqual(retried.messages.map(textOf), [
      "Summary of the earlier conversation:\n\nSUMMARY of turns",
      "three",
    ]);
    assert.ok(agent.session.events.some((e) => e.type === "compaction/start" && e.data.reason === "overflow"));
    assert.deepEqual(checkInvariants(agent.session.events), []);
    await harness.dispose();
  });
});

describe("compactionRange()", () => {
  it("reads the log from its end, without a copy of the whole log: the nodes before the kept turns", async () => {
    const harness = await createHarness({
      adapters: [scriptedAdapter([textResponse("a"), textResponse("b"), textResponse("c")])],
      model: { provider: "scripted", model: "scripted-model" },
    });
    const agent = await harness.createAgent();
    for (const text of ["one", "two", "three"]) await agent.run(text);
    const session = agent.session;
    const turnStarts = session.events.filter((e) => e.type === "turn/start").map((e) => e.seq);
    // The whole-log copy is what made every compaction O(log): refuse it here.
    Object.defineProperty(session, "events", {
      get: () => assert.fail("compactionRange() copied the whole log"),
    });
    for (const keep of [0, 1, 2, 3, 4]) {
      const cutoff = keep === 0 ? session.seq : turnStarts.at(-keep) ?? 0;
      assert.deepEqual(
        compactionRange(session, keep),
        session.surface.nodes.filter((seq) => seq < cutoff),
        `keepTurns ${keep}`,
      );
    }
    assert.equal(compactionRange(session).length, 4);
    await harness.dispose();
  });
});

describe("compaction: findings of the adversarial review", () => {
  it("a turn cancelled before its first step starts no threshold compaction", async () => {
    const model = scriptedAdapter(() => textResponse("answer"), {
      models: [{ id: "scripted-model", contextWindow: 1000 }],
    });
    let big = false;
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      plugins: [[compactionPlugin, { estimate: () => (big ? 1e9 : 1) }]],
    });
    const agent = await harness.createAgent({ id: "s1" });
    await agent.run("one");
    big = true;
    const calls = model.calls, mark = agent.session.seq;
    const off = agent.session.observe((e) => {
      if (e.type === "turn/start") queueMicrotask(() => agent.cancel("user"));
    });
    const result = await agent.run("two");
    off();
    assert.equal(result.reason.kind, "aborted");
    assert.equal(model.calls, calls);
    assert.deepEqual(
      agent.session.events.slice(mark).map((e) => e.type).filter((t) => t.startsWith("compaction/")),
      [],
    );
    await harness.dispose();
  });

  it("keepTurns 2 over the threshold every turn: a summary written in a kept turn is compacted with the older turns", async () => {
    // Summary k is written during turn k+2 (seq after its turn/start) but sits at the front: picked by seq, the
    // turn-after-next's range skipped it, the replace was refused (REPLACE_SOURCES_INCOMPLETE) and the turn failed
    // with its compaction left open.
    const { harness, agent, model } = await setup((_r, i) => textResponse(`answer ${i}`), 1000, {
      summary: (_r, i) => textResponse(`SUMMARY ${i}`),
      plugin: { keepTurns: 2, estimate: () => 10_000 },
    });
    for (let turn = 1; turn <= 6; turn++) {
      assert.deepEqual((await agent.run(`q${turn}`)).reason, { kind: "completed" }, `turn ${turn}`);
    }
    const events = agent.session.events;
    assert.deepEqual(checkInvariants(events), []);
    const ends = events.filter((e) => e.type === "compaction/end").map((e) => e.data);
    assert.equal(ends.length, 4, "turns 3 to 6 compact");
    assert.ok(ends.every((d) => d.outcome === "completed"), JSON.stringify(ends));
    const derived = agent.session.deriveMessages().map(textOf);
    assert.equal(derived.length, 5);
    assert.match(derived[0], /^Summary of the earlier conversation:\n\nSUMMARY \d+$/);
    assert.deepEqual(derived.slice(1).map((t) => t.split(" ")[0]), ["q5", "answer", "q6", "answer"]);
    const summaryCalls = model.requests.filter((r) => r.purpose === "compaction");
    assert.match(textOf(summaryCalls.at(-1)!.messages[0]), /^Summary of the earlier conversation/, "rolled forward");
    // Only the summary is older than the two kept turns: nothing to gain, and no compaction left open.
    assert.equal((await compactionOf(harness).compact(agent)).kind, "skipped");
    assert.deepEqual(checkInvariants(agent.session.events), []);
    await harness.dispose();
  });

  it("anything thrown once compaction/start is written is a failed outcome with compaction/end", async () => {
    const { harness, agent } = await setup((_r, i) => textResponse(`answer ${i}`), undefined, {
      plugin: {
        newId: () => {
          throw new Error("no ids left");
        },
      },
    });
    for (const q of ["one", "two", "three"]) await agent.run(q);
    const before = agent.session.deriveMessages();
    const outcome = await compactionOf(harness).compact(agent);
    assert.deepEqual(outcome, { kind: "failed", error: "Error: no ids left" });
    const events = agent.session.events;
    assert.deepEqual(events.slice(-3).map((e) => e.type), ["compaction/start", "compaction/summary", "compaction/end"]);
    // The summary call was made: a replay answers it.
    assert.deepEqual(events.at(-1)!.data, {
      outcome: "failed",
      error: "Error: no ids left",
      attempts: 1,
      usage: { inputTokens: 1, outputTokens: 1 },
    });
    assert.deepEqual(agent.session.deriveMessages(), before, "the history is unchanged");
    assert.deepEqual(checkInvariants(events), []);
    assert.deepEqual((await agent.run("four")).reason, { kind: "completed" });
    await harness.dispose();
  });

  for (
    const [name, entry] of [
      ["a max-tokens finish", {
        chunks: [...textResponse("The user asked about one and decided to").chunks.slice(0, -1), {
          type: "finish",
          reason: { kind: "max-tokens" },
        }],
      }],
      ["a tool call", toolCallResponse([{ id: "x1", name: "read", arguments: "{}" }], { text: "Let me look first." })],
      ["a tool call with a stop finish", {
        chunks: [
          ...toolCallResponse([{ id: "x1", name: "read", arguments: "{}" }], { text: "Let me look." }).chunks.slice(
            0,
            -1,
          ),
          { type: "finish", reason: { kind: "stop" } },
        ],
      }],
    ] as [string, ScriptEntry][]
  ) {
    it(`a summary call that ends with ${name} is a failed compaction; the history is unchanged`, async () => {
      const { harness, agent } = await setup((_r, i) => textResponse(`answer ${i}`), undefined, {
        summary: () => entry,
      });
      for (const q of ["one", "two", "three"]) await agent.run(q);
      const before = agent.session.deriveMessages();
      const outcome = await compactionOf(harness).compact(agent);
      assert.equal(outcome.kind, "failed");
      assert.deepEqual(agent.session.deriveMessages(), before);
      assert.deepEqual(agent.session.events.slice(-2).map((e) => e.type), ["compaction/start", "compaction/end"]);
      assert.deepEqual(checkInvariants(agent.session.events), []);
      await harness.dispose();
    });
  }

  it("a retryable failure of the summary call is retried with the retry policy, on the plugin's sleep", async () => {
    let overflowed = false;
    let limited = 0;
    const slept: number[] = [];
    const { harness, agent, model } = await setup(
      (request, i) => {
        if (request.messages.length > 3 && !overflowed) {
          overflowed = true;
          return { throw: new LlmFailure("CONTEXT_WINDOW_EXCEEDED", "Too long", { status: 400 }) };
        }
        return textResponse(`answer ${i}`);
      },
      undefined,
      {
        summary: () =>
          limited++ < 2
            ? { throw: new LlmFailure("RATE_LIMIT", "Slow down", { status: 429, providerRetryAfterMs: 7000 }) }
            : textResponse("SUMMARY of turns"),
        plugin: {
          retryPolicy: { ...DEFAULT_RETRY_POLICY, maxRetries: 2 },
          sleep: (ms) => {
            slept.push(ms);
            return Promise.resolve();
          },
        },
      },
    );
    await agent.run("one");
    await agent.run("two");
    assert.deepEqual((await agent.run("three")).reason, { kind: "completed" });
    assert.equal(model.requests.filter((r) => r.purpose === "compaction").length, 3);
    assert.deepEqual(slept, [7000, 7000], "the provider's Retry-After, as the agent loop honours it");
    assert.deepEqual(agent.session.events.findLast((e) => e.type === "compaction/end")!.data, {
      outcome: "completed",
      attempts: 3,
      usage: { inputTokens: 1, outputTokens: 1 }, // the two refused attempts reported none
    });
    assert.deepEqual(checkInvariants(agent.session.events), []);
    await harness.dispose();
  });

  it("each attempt of the summary call gets its own messages: an adapter's change to one reaches no later one", async () => {
    const seen: string[][] = [];
    const { harness, agent } = await setup((_r, i) => textResponse(`answer ${i}`), undefined, {
      summary: (request) => {
        seen.push(request.messages.map(textOf));
        if (seen.length > 1) return textResponse("SUMMARY of turns");
        // The array is the adapter's own (GenerateOptions.messages): it edits it, then fails retryably.
        (request.messages as GenerateOptions["messages"][number][]).splice(0, 2);
        return { throw: new LlmFailure("RATE_LIMIT", "Slow down", { status: 429 }) };
      },
    });
    await agent.run("one");
    await agent.run("two");
    await agent.run("three");
    const outcome = await pluginCtx<object, CompactionServices>(harness.ctx).service("compaction").compact(agent);
    assert.equal(outcome.kind, "completed");
    assert.equal(seen.length, 2);
    assert.deepEqual(seen[1], seen[0]);
    await harness.dispose();
  });

  it("a sleep that rejects on abort before a retry is a cancel before the retry, as one that resolves", async () => {
    const controller = new AbortController();
    const { harness, agent, model } = await setup((_r, i) => textResponse(`answer ${i}`), undefined, {
      summary: () => ({ throw: new LlmFailure("SERVER", "down", { status: 503 }) }),
    });
    for (const q of ["one", "two", "three"]) await agent.run(q);
    const outcome = await compactSession(agent.session, {
      llm: (harness.ctx as unknown as { llm: LlmRuntime }).llm,
      reason: "manual",
      newId: () => "sum",
      signal: controller.signal,
      retryPolicy: { ...DEFAULT_RETRY_POLICY, maxRetries: 3 },
      // node:timers/promises style: the sleep rejects when its signal aborts (here, the user cancels during it).
      sleep: (_ms, signal) => {
        controller.abort();
        return Promise.reject(signal.reason);
      },
    });
    assert.deepEqual(outcome, { kind: "failed", error: "SERVER: down (aborted before a retry)" });
    assert.equal(model.requests.filter((r) => r.purpose === "compaction").length, 1);
    assert.deepEqual(agent.session.events.findLast((e) => e.type === "compaction/end")!.data, {
      outcome: "failed",
      error: "SERVER: down (aborted before a retry)",
      attempts: 1,
      failure: { code: "SERVER", message: "down" },
    });
    await harness.dispose();
  });

  it("a throw inside a compaction records its summary calls: none before the first, a cancel during one", async () => {
    const { harness, agent } = await setup((_r, i) => textResponse(`answer ${i}`));
    for (const q of ["one", "two", "three"]) await agent.run(q);
    const end = () => agent.session.events.findLast((e) => e.type === "compaction/end")!.data;
    const noPolicy = {
      get retryPolicy(): never {
        throw new Error("no policy");
      },
    } as unknown as LlmRuntime;
    await compactSession(agent.session, { llm: noPolicy, config: CONFIG, reason: "manual", newId: () => "sum" });
    assert.deepEqual(end(), { outcome: "failed", error: "Error: no policy", attempts: 0 });
    // A stream that throws once its signal aborted it: the call was cancelled, as one that ended aborted.
    const controller = new AbortController();
    const throwing = {
      retryPolicy: DEFAULT_RETRY_POLICY,
      stream: () => {
        controller.abort();
        throw new Error("AbortError");
      },
    } as unknown as LlmRuntime;
    const options = { llm: throwing, config: CONFIG, reason: "manual", newId: () => "sum" } as const;
    await compactSession(agent.session, { ...options, signal: controller.signal });
    assert.deepEqual(end(), {
      outcome: "failed",
      error: "Error: AbortError",
      attempts: 1,
      failure: { code: "ABORTED", message: "Error: AbortError", cancelled: true },
    });
    // Not aborted: a throw, not a cancel.
    await compactSession(agent.session, {
      ...options,
      llm: {
        ...throwing,
        stream: () => {
          throw new Error("boom");
        },
      } as unknown as LlmRuntime,
    });
    assert.deepEqual(end(), { outcome: "failed", error: "Error: boom", attempts: 1 });
    assert.deepEqual(checkInvariants(agent.session.events), []);
    await harness.dispose();
  });

  it("a summary call that fails past the policy's retries is a failed compaction", async () => {
    const { harness, agent, model } = await setup((_r, i) => textResponse(`answer ${i}`), undefined, {
      summary: () => ({ throw: new LlmFailure("SERVER", "Bad gateway", { status: 502 }) }),
      plugin: { retryPolicy: { ...DEFAULT_RETRY_POLICY, maxRetries: 1 }, sleep: () => Promise.resolve() },
    });
    for (const q of ["one", "two", "three"]) await agent.run(q);
    assert.deepEqual(await compactionOf(harness).compact(agent), { kind: "failed", error: "SERVER: Bad gateway" });
    assert.equal(model.requests.filter((r) => r.purpose === "compaction").length, 2);
    // The failure and the count of calls as data too, for a replay to answer alike without parsing the text.
    assert.deepEqual(agent.session.events.findLast((e) => e.type === "compaction/end")!.data, {
      outcome: "failed",
      error: "SERVER: Bad gateway",
      attempts: 2,
      failure: { code: "SERVER", message: "Bad gateway" },
    });
    await harness.dispose();
  });

  it("the summary call retries as the harness's retryPolicy and sleep say, unless the plugin's options say otherwise", async () => {
    const slept: number[] = [];
    const failing = () => ({ throw: new LlmFailure("SERVER", "Bad gateway", { status: 502 }) });
    const compactions = async (harness: Partial<CreateHarnessOptions>, plugin?: CompactionOptions) => {
      const before = slept.length;
      const { harness: h, agent, model } = await setup((_r, i) => textResponse(`answer ${i}`), undefined, {
        summary: failing,
        harness,
        plugin,
      });
      for (const q of ["one", "two"]) await agent.run(q);
      assert.deepEqual(await compactionOf(h).compact(agent), { kind: "failed", error: "SERVER: Bad gateway" });
      await h.dispose();
      return { calls: model.requests.filter((r) => r.purpose === "compaction").length, slept: slept.slice(before) };
    };
    const sleep = (ms: number) => {
      slept.push(ms);
      return Promise.resolve();
    };
    const policy = (maxRetries: number) => ({ ...DEFAULT_RETRY_POLICY, maxRetries, jitter: 0 });
    assert.deepEqual(await compactions({ retryPolicy: policy(0), sleep }), { calls: 1, slept: [] }, "no retries");
    assert.deepEqual(await compactions({ retryPolicy: policy(2), sleep }), { calls: 3, slept: [500, 1000] });
    assert.deepEqual(
      await compactions({ retryPolicy: policy(0), sleep }, { retryPolicy: policy(1) }),
      { calls: 2, slept: [500] },
      "the plugin's policy wins; the harness's sleep still sleeps",
    );
  });

  it("the threshold counts the input tokens the provider reported, when the estimate is lower", async () => {
    // A tokenizer that counts far more than JSON length / 4 (CJK text): the provider says 900 of the window's 1000
    // once the request has five messages or more; the estimator always says 1.
    const { harness, agent } = await setup(
      (request, i) =>
        textResponse(`answer ${i}`, {
          usage: { inputTokens: request.messages.length >= 5 ? 900 : 100, outputTokens: 5 },
        }),
      1000,
      { plugin: { estimate: () => 1 } },
    );
    const thresholdCompactions = () =>
      agent.session.events.filter((e) => e.type === "compaction/start" && e.data.reason === "threshold").length;
    for (const q of ["one", "two", "three"]) await agent.run(q);
    assert.equal(thresholdCompactions(), 0, "100 reported so far");
    // The last call reported 900, but a compaction since then shrank the history: that usage is stale.
    assert.equal((await compactionOf(harness).compact(agent)).kind, "completed");
    await agent.run("four");
    assert.equal(thresholdCompactions(), 0, "a usage from before a compaction does not count");
    await agent.run("five"); // six messages: 900 reported
    assert.equal(thresholdCompactions(), 0);
    await agent.run("six");
    assert.equal(thresholdCompactions(), 1, "900 reported > 80 % of 1000");
    assert.deepEqual(checkInvariants(agent.session.events), []);
    await harness.dispose();
  });

  it("a live session is not forked while its manual compaction runs (OPEN_COMPACTION), and is once it ended", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { harness, agent } = await setup((_r, i) => textResponse(`answer ${i}`), undefined, {
      summary: async () => {
        await gate;
        return textResponse("SUMMARY of turns");
      },
    });
    for (const q of ["one", "two", "three"]) await agent.run(q);
    const started = new Promise<void>((resolve) => {
      const off = agent.session.observe((event) => {
        if (event.type !== "compaction/start") return;
        off();
        resolve();
      });
    });
    const compacting = compactionOf(harness).compact(agent);
    await started;
    await assert.rejects(
      harness.forkAgent(agent.session, { id: "mid" }),
      (e) => HarnessError.isInstance(e, "OPEN_COMPACTION"),
    );
    await assert.rejects(
      harness.fork(agent.session, undefined, "mid"),
      (e) => HarnessError.isInstance(e, "OPEN_COMPACTION"),
    );
    release();
    assert.equal((await compacting).kind, "completed");
    const child = await harness.forkAgent(agent.session, { id: "after" });
    for (const q of ["four", "five"]) await child.run(q);
    assert.equal((await compactionOf(harness).compact(child)).kind, "completed");
    assert.deepEqual(checkInvariants(child.session.events), []);
    await harness.dispose();
  });
});

describe("compaction: a manual compaction is reported once it is on storage", () => {
  /** A harness over memory storage whose appends take a while (held until released), or fail while `full` is set. */
  async function stored() {
    const storage = memoryStorage();
    const state = { full: false, slow: false };
    const faulty = withFaults(storage, {
      append: (append) => async (id, events, options) => {
        if (state.slow) await new Promise((resolve) => setTimeout(resolve, 20));
        if (state.full) throw new HarnessError("SESSION_WRITE_FAILED", "disk full");
        return await append(id, events, options);
      },
    });
    const { harness, agent } = await setup((_r, i) => textResponse(`answer ${i}`), undefined, {
      harness: { storage: faulty },
    });
    for (const q of ["one", "two", "three"]) await agent.run(q);
    return { storage, state, harness, agent };
  }

  it("compact() resolves once its compaction/end is on storage", async () => {
    const { storage, state, harness, agent } = await stored();
    state.slow = true;
    assert.equal((await compactionOf(harness).compact(agent)).kind, "completed");
    // Resolved: a crash now keeps the compaction (it was reported before its events were written, 200 ms later).
    const types = (await storage.inspect("c1")).events.map((e) => e.type);
    assert.deepEqual(types.slice(-2), ["user/message", "compaction/end"]);
    await harness.dispose();
  });

  it("compact() rejects with SESSION_FLUSH_FAILED when its events cannot be written", async () => {
    const { storage, state, harness, agent } = await stored();
    state.full = true;
    await assert.rejects(compactionOf(harness).compact(agent), (error: unknown) => {
      assert.ok(HarnessError.isInstance(error, "SESSION_FLUSH_FAILED"), String(error));
      assert.ok(HarnessError.isInstance((error as Error).cause, "SESSION_WRITE_FAILED"));
      return true;
    });
    assert.ok(!(await storage.inspect("c1")).events.some((e) => e.type === "compaction/start"));
    // The batch is kept and written once storage takes it again.
    state.full = false;
    await agent.flushed();
    assert.equal((await storage.inspect("c1")).events.at(-1)?.type, "compaction/end");
    await harness.dispose();
  });
});

describe("compaction: the agent's route, the summary calls' usage, the options", () => {
  it("compacts on the agent's route after a resume onto another provider, and checks that model's window", async () => {
    const storage = memoryStorage();
    const long = "x".repeat(400);
    const old = scriptedAdapter((_r, i) => textResponse(`${long} ${i}`), {
      provider: "old",
      models: [{ id: "old-model", contextWindow: 1_000_000 }],
    });
    const first = await createHarness({ adapters: [old], model: { provider: "old", model: "old-model" }, storage });
    for (const id of ["moved", "moved-too"]) {
      const agent = await first.createAgent({ id });
      for (const q of ["one", "two", "three"]) await agent.run(q);
    }
    await first.dispose();

    const summaries: string[] = [];
    const fresh = scriptedAdapter((request, i) => {
      if (request.purpose !== "compaction") return textResponse(`new ${i}`);
      summaries.push(`${request.provider}/${request.model}`);
      return textResponse("SUMMARY");
    }, { provider: "new", models: [{ id: "new-model", contextWindow: 300 }] });
    const make = () =>
      createHarness({
        adapters: [fresh],
        model: { provider: "new", model: "new-model" },
        storage,
        plugins: [compactionPlugin],
      });
    // A manual compaction before any turn on the new route: the summary call goes to the new provider.
    const manual = await make();
    const moved = await manual.resumeAgent("moved", { provider: "new", model: "new-model" });
    assert.equal((await compactionOf(manual).compact(moved)).kind, "completed");
    assert.deepEqual(summaries, ["new/new-model"]);
    await manual.dispose();
    // The threshold is the new model's 300-token window, before the first request to it.
    const threshold = await make();
    const again = await threshold.resumeAgent("moved-too", { provider: "new", model: "new-model" });
    await again.run("four");
    const types = again.session.events.slice(again.session.firstLiveSeq).map((e) => e.type);
    assert.ok(types.indexOf("compaction/start") < types.indexOf("request/header"), types.join(" "));
    assert.deepEqual(summaries, ["new/new-model", "new/new-model"]);
    assert.deepEqual(checkInvariants(again.session.events), []);
    await threshold.dispose();
  });

  it("compacts on the route the last request took when an agent/request listener routes the agent's requests", async () => {
    const routed: string[] = [];
    const model = scriptedAdapter((request) => {
      if (request.purpose === "compaction") routed.push(`${request.provider}/${request.model}`);
      return textResponse("answer / SUMMARY");
    });
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "router", model: "auto" }, // served by no adapter: the listener routes every request
      plugins: [[compactionPlugin, { keepTurns: 0 }]],
    });
    const agent = await harness.createAgent({ id: "routed" });
    agent.ctx.on("agent/request", async (_agent, _draft, next) => ({
      ...(await next()),
      provider: "scripted",
      model: "scripted-model",
    }));
    for (const q of ["one", "two"]) assert.equal((await agent.run(q)).reason.kind, "completed");
    assert.equal((await compactionOf(harness).compact(agent)).kind, "completed");
    assert.deepEqual(routed, ["scripted/scripted-model"]);
    await harness.dispose();
  });

  it("records the summary calls' usage on compaction/end; usageTotals counts it, in the turn only inside one", async () => {
    let overflowed = false;
    const { harness, agent } = await setup(
      (request, i) => {
        if (request.messages.length > 5 && !overflowed) {
          overflowed = true;
          return { throw: new LlmFailure("CONTEXT_WINDOW_EXCEEDED", "Too long", { status: 400 }) };
        }
        return textResponse(`answer ${i}`, { usage: { inputTokens: 10, outputTokens: 1 } });
      },
      undefined,
      { summary: () => textResponse("SUMMARY", { usage: { inputTokens: 5000, outputTokens: 700 } }) },
    );
    for (const q of ["one", "two"]) await agent.run(q);
    // A manual compaction between turns: the session's total, not the last turn's.
    assert.equal((await compactionOf(harness).compact(agent)).kind, "completed");
    let state = foldProjection(usageTotals, agent.session.events);
    assert.deepEqual(state.total, { inputTokens: 5020, outputTokens: 702 });
    assert.deepEqual(state.turn, { inputTokens: 10, outputTokens: 1 });
    // An overflow compaction inside a turn: that turn's usage too, in usageTotals and in the turn's own result.
    const three = await agent.run("three");
    const four = await agent.run("four");
    assert.ok(overflowed);
    const inputs = [three, four].map((r) => [r.usage.inputTokens, r.usage.outputTokens]);
    assert.deepEqual(inputs, [[10, 1], [5010, 701]]);
    const ends = agent.session.events.filter((e) => e.type === "compaction/end");
    assert.deepEqual(ends.map((e) => e.data.usage), [
      { inputTokens: 5000, outputTokens: 700 },
      { inputTokens: 5000, outputTokens: 700 },
    ]);
    state = foldProjection(usageTotals, agent.session.events);
    assert.deepEqual(state.total, { inputTokens: 10040, outputTokens: 1404 });
    assert.deepEqual(state.turn, { inputTokens: 5010, outputTokens: 701 });
    assert.deepEqual(checkInvariants(agent.session.events), []);
    await harness.dispose();
  });

  it("refuses options that would turn compaction off without a word (INVALID_ARGS naming the field)", async () => {
    const cases: [CompactionOptions, string][] = [
      [{ threshold: 80 }, "threshold"],
      [{ threshold: 0 }, "threshold"],
      [{ threshold: Number.NaN }, "threshold"],
      [{ keepTurns: 1.5 }, "keepTurns"],
      [{ keepTurns: Number.NaN }, "keepTurns"],
      [{ keepTurns: "1" as never }, "keepTurns"],
      [{ keepTurns: -1 }, "keepTurns"],
      [{ estimate: 3 as never }, "estimate"],
    ];
    for (const [options, field] of cases) {
      await assert.rejects(
        createHarness({ adapters: [scriptedAdapter(textResponse("ok"))], plugins: [[compactionPlugin, options]] }),
        (error: unknown) => {
          const cause = (error as { cause?: unknown }).cause ?? error;
          assert.ok(HarnessError.isInstance(cause, "INVALID_ARGS"), String(error));
          assert.equal(cause.details?.field, field);
          return true;
        },
        JSON.stringify(options),
      );
    }
    const ok = await createHarness({
      adapters: [scriptedAdapter(textResponse("ok"))],
      plugins: [[compactionPlugin, { threshold: 1, keepTurns: 0 }]],
    });
    await ok.dispose();
  });
});
