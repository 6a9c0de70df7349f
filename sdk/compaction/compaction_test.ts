import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHarness } from "../harness.ts";
import { checkInvariants } from "../invariants/mod.ts";
import { type GenerateOptions, LlmFailure } from "../llm/mod.ts";
import { renderTranscript } from "../session/transcript.ts";
import { scriptedAdapter, type ScriptEntry, textResponse } from "../../testing/scripted_adapter.ts";
import { counterClock, counterIds } from "../agent/_test_support.ts";
import { compactionPlugin, compactionRange, type CompactionServices } from "./mod.ts";
import { pluginCtx } from "../plugin_ctx.ts";
import { memoryStorage } from "../persistence/memory_storage.ts";
import { HarnessError } from "../kernel/harness_error.ts";

const textOf = (m: { content: readonly { type: string; text?: string }[] }) =>
  m.content.map((b) => (b.type === "text" ? b.text : "")).join("");

async function setup(answer: (request: GenerateOptions, index: number) => ScriptEntry, contextWindow?: number) {
  const model = scriptedAdapter(
    (request, index) => request.purpose === "compaction" ? textResponse("SUMMARY of turns") : answer(request, index),
    { models: [{ id: "scripted-model", ...(contextWindow !== undefined ? { contextWindow } : {}) }] },
  );
  const harness = await createHarness({
    adapters: [model],
    model: { provider: "scripted", model: "scripted-model" },
    now: counterClock(),
    newId: counterIds(),
    sleep: () => Promise.resolve(),
    plugins: [[compactionPlugin, { newId: counterIds("sum") }]],
  });
  const agent = await harness.createAgent({ id: "c1" });
  return { harness, agent, model };
}

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
