import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  compactionPlugin,
  type CompactionServices,
  createHarness,
  type GenerateOptions,
  HarnessError,
  isRetryableFailure,
  type LlmAdapter,
  LlmFailure,
  LlmRuntime,
  type Message,
  pluginCtx,
  type SessionEvent,
  type StreamChunk,
  TurnFailedError,
} from "../mod.ts";
import { scriptedAdapter, type ScriptEntry, textResponse, toolCallResponse } from "../testing/mod.ts";
import { fixtureFromLogs } from "./fixture.ts";
import { assertGoldenTranscript } from "./golden.ts";
import { normalizeLog } from "./normalize_log.ts";
import { openFixture } from "./open_fixture.ts";
import { replayAdapter } from "./replay_adapter.ts";
import { log, shoutTool } from "./_test_support.ts";

const INPUTS = ["Shout hi", "Again?", "Third", "Fourth"];

/** The recorded model: a tool call, then plain answers; a summary call answers `summary`. */
function model(summary?: (request: GenerateOptions) => ScriptEntry) {
  let k = 0;
  let s = 0;
  return scriptedAdapter(
    (request) =>
      request.purpose === "compaction"
        ? summary?.(request) ?? textResponse(`SUMMARY ${++s}`)
        : k++ === 0
        ? toolCallResponse([{ id: "call-1", name: "shout", arguments: '{"text":"hi"}' }])
        : textResponse(`answer ${k}`),
    { models: [{ id: "scripted-model", contextWindow: 1000 }] },
  );
}

interface RunOptions {
  /** Compact by hand before this input. */
  readonly manualBefore?: number;
  /** Compact at the threshold once the history has more messages than this. */
  readonly thresholdAbove?: number;
  readonly idPrefix?: string;
}

/** Run the inputs with the compaction plugin; resolves to the log and what each step gave. */
async function run(adapters: readonly LlmAdapter[], options: RunOptions = {}) {
  let n = 0;
  let clock = 1_000_000;
  const prefix = options.idPrefix ?? "id";
  const above = options.thresholdAbove ?? Infinity;
  const harness = await createHarness({
    adapters,
    tools: [shoutTool()],
    system: "Be loud.",
    newId: () => `${prefix}-${++n}`,
    now: () => clock++,
    sleep: () => Promise.resolve(),
    plugins: [[compactionPlugin, {
      newId: () => `${prefix}-sum-${++n}`,
      estimate: (messages: readonly Message[]) => (messages.length > above ? 1e9 : 1),
    }]],
  });
  try {
    const agent = await harness.createAgent({ provider: "scripted", model: "scripted-model", id: "s1" });
    const steps: string[] = [];
    for (const [i, input] of INPUTS.entries()) {
      if (i === options.manualBefore) {
        const outcome = await pluginCtx<object, CompactionServices>(harness.ctx).service("compaction").compact(agent);
        steps.push(`compact ${outcome.kind}${outcome.kind === "failed" ? `: ${outcome.error.split("\n")[0]}` : ""}`);
      }
      const result = await agent.run(input).catch((error) =>
        error instanceof TurnFailedError ? error.result : Promise.reject(error)
      );
      steps.push(`${result.reason.kind} ${result.text}`);
    }
    return { session: agent.session, events: agent.session.events.slice(), steps };
  } finally {
    await harness.dispose();
  }
}

const compactions = (events: readonly SessionEvent[]) =>
  events.filter((e) => e.type.startsWith("compaction/")).map((e) =>
    e.type === "compaction/start"
      ? `start ${e.data.reason}`
      : e.type === "compaction/end"
      ? `end ${e.data.outcome}${e.data.error !== undefined ? `: ${e.data.error}` : ""}`
      : e.type === "compaction/summary"
      ? `summary ${e.data.summary}`
      : e.type
  );

async function withDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "dsh-replay-compaction-"));
  try {
    await body(dir);
  } finally {
    await rm(dir, { recursive: true });
  }
}

describe("fixtureFromLogs() compactions", () => {
  it("keeps the session's own compactions: not its seed's, not one without a summary call, a cut one's summary", () => {
    const fixture = fixtureFromLogs(log(
      { type: "compaction/start", data: { reason: "manual" } },
      { type: "compaction/summary", data: { summary: "seeded", start: 0, end: 0 } },
      { type: "compaction/end", data: { outcome: "completed" } },
      { type: "session/end-seed", data: {} },
      { type: "compaction/start", data: { reason: "threshold" } },
      { type: "compaction/end", data: { outcome: "skipped" } },
      { type: "compaction/start", data: { reason: "overflow" } },
      { type: "compaction/end", data: { outcome: "failed", error: "AUTH: no key" } },
      { type: "compaction/start", data: { reason: "manual" } },
      { type: "compaction/summary", data: { summary: "cut", start: 0, end: 0 } },
    ) as SessionEvent[]);
    assert.deepEqual(fixture.sessions[0].compactions, [
      { seq: 6, reason: "overflow", error: "AUTH: no key" },
      { seq: 8, reason: "manual", summary: "cut" },
    ]);
  });
});

describe("replay of a session that compacted", () => {
  it("a recorded manual compaction replays strictly with no override (openFixture), golden transcript included", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "fx");
      const golden = join(dir, "golden.md");
      const recorder = await openFixture({ path, live: () => model(), mode: "record" });
      assert.equal(recorder.mode, "record");
      const recorded = await run(recorder.adapters, { manualBefore: 2, idPrefix: "rec" });
      await recorder.finish(recorded.session);
      assert.deepEqual(compactions(recorded.events), ["start manual", "summary SUMMARY 1", "end completed"]);
      assert.equal(await assertGoldenTranscript(recorded.events, golden, { update: true }), "updated");

      const fixture = await openFixture({ path, live: () => assert.fail("replay calls no model"), mode: "replay" });
      assert.equal(fixture.mode, "replay");
      const replayed = await run(fixture.adapters, { manualBefore: 2, idPrefix: "again" });
      await fixture.finish(replayed.session);
      assert.deepEqual(replayed.steps, recorded.steps);
      assert.deepEqual(normalizeLog(replayed.events), normalizeLog(recorded.events));
      assert.equal(await assertGoldenTranscript(replayed.events, golden, { update: false }), "matched");
      // The summary call was served from the recorded compaction, outside the script of model calls.
      assert.equal(fixture.replay!.requests.filter((r) => r.purpose === "compaction").length, 1);
      assert.equal(fixture.replay!.requestCount, 6);
    });
  });

  it("a recorded threshold compaction replays strictly with no override (fixtureFromLogs)", async () => {
    const recorded = await run([model()], { thresholdAbove: 6 });
    assert.deepEqual(compactions(recorded.events), ["start threshold", "summary SUMMARY 1", "end completed"]);
    const fixture = fixtureFromLogs(recorded.events);
    assert.deepEqual(fixture.sessions[0].compactions, [{
      seq: recorded.events.find((e) => e.type === "compaction/start")!.seq,
      reason: "threshold",
      summary: "SUMMARY 1",
      attempts: 1,
      usage: { inputTokens: 1, outputTokens: 1 },
    }]);
    assert.equal(fixture.sessions[0].calls.length, 5, "the summary call is not among the recorded calls");
    const replay = replayAdapter({ fixture, strict: true });
    const replayed = await run(replay.adapters, { thresholdAbove: 6, idPrefix: "again" });
    replay.assertConsumed();
    assert.deepEqual(replayed.steps, recorded.steps);
    assert.deepEqual(normalizeLog(replayed.events), normalizeLog(recorded.events));
  });

  it("strict replay fails REPLAY_DIVERGED when the live session compacts and the recording did not", async () => {
    const recorded = await run([model()]);
    assert.deepEqual(compactions(recorded.events), []);
    const replay = replayAdapter({ fixture: recorded.events, strict: true });
    const replayed = await run(replay.adapters, { manualBefore: 2 });
    assert.match(
      replayed.steps[2],
      /^compact failed: REPLAY_DIVERGED: .*session s1 compacted .*recorded 0 compactions/,
    );
    assert.equal(replay.failures[0]?.code, "REPLAY_DIVERGED");
    assert.throws(() => replay.assertConsumed(), (e) => HarnessError.isInstance(e, "REPLAY_DIVERGED"));

    // Not strict, the summary call takes the next recorded call's answer, as any call would, and the last turn
    // finds the script played out.
    const loose = replayAdapter({ fixture: recorded.events });
    const again = await run(loose.adapters, { manualBefore: 2 });
    assert.equal(again.steps[2], "compact completed");
    assert.deepEqual(compactions(again.events).slice(1, 2), ["summary answer 4"]);
    assert.deepEqual(loose.failures.map((f) => f.code), ["REPLAY_EXHAUSTED"]);
  });

  it("assertConsumed() names recorded compactions the live run did not make", async () => {
    const recorded = await run([model()], { manualBefore: 2 });
    const replay = replayAdapter({ fixture: recorded.events });
    await run(replay.adapters);
    assert.throws(
      () => replay.assertConsumed(),
      (e) =>
        HarnessError.isInstance(e, "REPLAY_NOT_CONSUMED") &&
        /fixture session session-1 \(live s1\) ran 0 of its 1 recorded compactions/.test(e.message),
    );
  });

  it("a recorded failed compaction fails alike in strict replay: an error retried, a cut-off, a tool call, no text", async () => {
    const answers: Record<string, () => ScriptEntry> = {
      "SERVER: down": () => ({ throw: new LlmFailure("SERVER", "down", { status: 503 }) }),
      "AUTH: no key": () => ({ throw: new LlmFailure("AUTH", "no key", { status: 401 }) }),
      "the summary call ended with max-tokens, not stop": () => ({
        chunks: [{ type: "text-delta", index: 0, text: "cut" }, { type: "finish", reason: { kind: "max-tokens" } }],
      }),
      "the model called a tool instead of summarizing": () => ({
        chunks: [...toolCallResponse([{ id: "c", name: "shout", arguments: "{}" }]).chunks.slice(0, -1), {
          type: "finish",
          reason: { kind: "stop" },
        }],
      }),
      "the model returned no summary": () => textResponse("  "),
    };
    for (const [error, answer] of Object.entries(answers)) {
      const live = model(answer);
      const recorded = await run([live], { manualBefore: 2 });
      assert.deepEqual(compactions(recorded.events), ["start manual", `end failed: ${error}`], error);
      const summaryCalls = live.requests.filter((r) => r.purpose === "compaction").length;
      assert.equal(summaryCalls > 1, error.startsWith("SERVER"), "only the server error was retried");
      const replay = replayAdapter({ fixture: recorded.events, strict: true });
      const replayed = await run(replay.adapters, { manualBefore: 2, idPrefix: "again" });
      replay.assertConsumed();
      assert.deepEqual(normalizeLog(replayed.events), normalizeLog(recorded.events), error);
      assert.equal(replay.requests.filter((r) => r.purpose === "compaction").length, summaryCalls, error);
    }
  });

  it("a recorded compaction that was cancelled replays as a summary call that ends when aborted", async () => {
    const fixture = fixtureFromLogs(log(
      { type: "compaction/start", data: { reason: "manual" } },
      { type: "compaction/end", data: { outcome: "failed", error: "ABORTED: Model call was aborted: user" } },
    ) as SessionEvent[]);
    const replay = replayAdapter({ fixture, strict: true, providers: ["replay"], models: [{ id: "m" }] });
    const llm = new LlmRuntime();
    llm.registerAdapter(replay.adapters);
    const controller = new AbortController();
    const chunks: StreamChunk[] = [];
    const request = { provider: "replay", model: "m", messages: [], sessionId: "s", purpose: "compaction" } as const;
    setTimeout(() => controller.abort(), 5);
    for await (const c of llm.stream({ ...request, signal: controller.signal })) chunks.push(c);
    const last = chunks.at(-1);
    assert.equal(last?.type === "finish" ? last.reason.kind : last?.type, "aborted");
    replay.assertConsumed();
  });
});

describe("replay of a compaction's failures and retries (recorded as data)", () => {
  it("fixtureFromLogs() copies the failure and the count of summary calls from compaction/end", () => {
    const failure = { code: "ABORTED", message: "Model call was aborted", cancelled: true };
    const fixture = fixtureFromLogs(log(
      { type: "compaction/start", data: { reason: "manual" } },
      { type: "compaction/end", data: { outcome: "failed", error: "ABORTED: x", attempts: 2, failure } },
    ) as SessionEvent[]);
    assert.deepEqual(fixture.sessions[0].compactions, [
      { seq: 0, reason: "manual", error: "ABORTED: x", failure, attempts: 2 },
    ]);
  });

  it("a summary call retried on a provider whose runtime copies the messages replays as many calls, alike", async () => {
    // A fork onto provider b: the seed's assistant messages carry provider a's replay state, so the runtime copies
    // them on every call to b, and a retry's messages are not the first call's objects.
    const withState = (t: string): ScriptEntry => ({
      chunks: [{ type: "text-delta", index: 0, text: t }, {
        type: "finish",
        reason: { kind: "stop" },
        replayState: { signature: `sig-${t}` },
      }],
    });
    const scenario = async (adapters: readonly LlmAdapter[], prefix: string) => {
      let n = 0;
      let clock = 1_000_000;
      const harness = await createHarness({
        adapters,
        system: "Be loud.",
        newId: () => `${prefix}-${++n}`,
        now: () => clock++,
        sleep: () => Promise.resolve(),
        plugins: [[compactionPlugin, { newId: () => `${prefix}-sum-${++n}`, estimate: () => 1 }]],
      });
      try {
        const parent = await harness.createAgent({ provider: "a", model: "ma", id: "p" });
        for (const input of ["one", "two", "three"]) await parent.run(input);
        const child = await harness.forkAgent(parent.session, { provider: "b", model: "mb", id: "p-fork" });
        await child.run("four");
        const outcome = await pluginCtx<object, CompactionServices>(harness.ctx).service("compaction").compact(child);
        await child.run("five");
        return { parent: parent.session.events.slice(), child: child.session.events.slice(), outcome };
      } finally {
        await harness.dispose();
      }
    };
    for (const failN of [1, 100]) {
      let s = 0;
      let k = 0;
      const answer = (request: GenerateOptions): ScriptEntry =>
        request.purpose === "compaction"
          ? ++s <= failN ? { throw: new LlmFailure("SERVER", "down", { status: 503 }) } : textResponse(`SUMMARY ${s}`)
          : withState(`answer ${++k}`);
      const a = scriptedAdapter(answer, { provider: "a", models: [{ id: "ma", contextWindow: 1000 }] });
      const b = scriptedAdapter(answer, { provider: "b", models: [{ id: "mb", contextWindow: 1000 }] });
      const recorded = await scenario([a, b], "rec");
      assert.equal(recorded.outcome.kind, failN === 1 ? "completed" : "failed");
      const summaryCalls = s;
      assert.ok(summaryCalls > 1, "the summary call was retried");
      const fixture = fixtureFromLogs([
        { id: "p", createdAt: 1, events: recorded.parent },
        { id: "p-fork", createdAt: 2, events: recorded.child },
      ]);
      const replay = replayAdapter({ fixture, strict: true });
      const replayed = await scenario(replay.adapters, "again");
      replay.assertConsumed();
      assert.deepEqual(replayed.outcome, recorded.outcome, `${failN}`);
      assert.deepEqual(normalizeLog(replayed.child), normalizeLog(recorded.child), `${failN}`);
      assert.equal(replay.requests.filter((r) => r.purpose === "compaction").length, summaryCalls, `${failN}`);
    }
  });

  it("a failed manual compaction and the next one (same messages) replay as two compactions", async () => {
    const scenario = async (adapters: readonly LlmAdapter[], prefix: string) => {
      let n = 0;
      const harness = await createHarness({
        adapters,
        system: "Be loud.",
        newId: () => `${prefix}-${++n}`,
        now: () => 1_000_000 + n,
        sleep: () => Promise.resolve(),
        plugins: [[compactionPlugin, { newId: () => `${prefix}-sum-${++n}`, estimate: () => 1 }]],
      });
      try {
        const agent = await harness.createAgent({ provider: "scripted", model: "scripted-model", id: "s1" });
        for (const input of ["one", "two", "three"]) await agent.run(input);
        const compaction = pluginCtx<object, CompactionServices>(harness.ctx).service("compaction");
        const first = await compaction.compact(agent);
        failing = false;
        const outcomes = [first, await compaction.compact(agent)];
        return { events: agent.session.events.slice(), outcomes };
      } finally {
        await harness.dispose();
      }
    };
    let failing = true;
    const live = model(() =>
      failing ? { throw: new LlmFailure("SERVER", "down", { status: 503 }) } : textResponse("SUMMARY")
    );
    // The first compaction fails past its retries, the second (with the same messages) succeeds at once.
    const recorded = await scenario([live], "rec");
    assert.deepEqual(recorded.outcomes.map((o) => o.kind), ["failed", "completed"]);
    failing = true;
    const replay = replayAdapter({ fixture: recorded.events, strict: true });
    const replayed = await scenario(replay.adapters, "again");
    replay.assertConsumed();
    assert.deepEqual(replayed.outcomes, recorded.outcomes);
    assert.equal(
      replay.requests.filter((r) => r.purpose === "compaction").length,
      live.requests.filter((r) => r.purpose === "compaction").length,
    );
    assert.deepEqual(normalizeLog(replayed.events), normalizeLog(recorded.events));
  });

  /** Three turns, a manual compaction, optionally a turn, another compaction, a last turn; the summary calls answer. */
  const twoCompactions = async (
    adapters: readonly LlmAdapter[],
    prefix: string,
    options: { turnBetween: boolean; maxRetries?: number },
  ) => {
    let n = 0;
    const harness = await createHarness({
      adapters,
      system: "Be loud.",
      newId: () => `${prefix}-${++n}`,
      now: () => 1_000_000 + n,
      sleep: () => Promise.resolve(),
      ...(options.maxRetries !== undefined
        ? {
          retryPolicy: { maxRetries: options.maxRetries, baseDelayMs: 0, maxDelayMs: 0, jitter: 0, retryAfterCapMs: 0 },
        }
        : {}),
      plugins: [[compactionPlugin, { newId: () => `${prefix}-sum-${++n}`, estimate: () => 1 }]],
    });
    try {
      const agent = await harness.createAgent({ provider: "scripted", model: "scripted-model", id: "s1" });
      for (const input of ["one", "two", "three"]) await agent.run(input);
      const compaction = pluginCtx<object, CompactionServices>(harness.ctx).service("compaction");
      const outcomes = [await compaction.compact(agent)];
      if (options.turnBetween) await agent.run("four");
      outcomes.push(await compaction.compact(agent));
      await agent.run("five");
      return { events: agent.session.events.slice(), outcomes };
    } finally {
      await harness.dispose();
    }
  };
  const summaryCalls = (requests: readonly GenerateOptions[]) => requests.filter((r) => r.purpose === "compaction");
  /** The log as written before compaction/end counted the summary calls and kept the failure as data. */
  const withoutCounts = (events: readonly SessionEvent[]) =>
    events.map((e) => {
      if (e.type !== "compaction/end") return e;
      const { attempts: _attempts, failure: _failure, ...data } = e.data;
      return { ...e, data } as SessionEvent;
    });

  it("an older log: a compaction failed by a failure not retried, then one over the same messages, replay as two", async () => {
    // Both compactions send the same messages (the instruction's id is fixed): the second is not a retry of the
    // first, whose AUTH failure was not retried.
    let s = 0;
    const live = model(() => ++s === 1 ? { throw: new LlmFailure("AUTH", "bad key") } : textResponse("SUMMARY"));
    const recorded = await twoCompactions([live], "rec", { turnBetween: false });
    assert.deepEqual(recorded.outcomes.map((o) => o.kind), ["failed", "completed"]);
    const old = withoutCounts(recorded.events);
    const replay = replayAdapter({ fixture: old, strict: true });
    const replayed = await twoCompactions(replay.adapters, "again", { turnBetween: false });
    replay.assertConsumed();
    assert.deepEqual(replayed.outcomes, recorded.outcomes);
    assert.equal(summaryCalls(replay.requests).length, 2);
    assert.deepEqual(normalizeLog(withoutCounts(replayed.events)), normalizeLog(old));
  });

  it("a compaction whose retried call failed otherwise than its last replays its retries as retried", async () => {
    // RATE_LIMIT (retried), then AUTH (not retried): the compaction failed after 2 calls; the next one completed.
    let s = 0;
    const live = model(() =>
      ++s === 1
        ? { throw: new LlmFailure("RATE_LIMIT", "slow down") }
        : s === 2
        ? { throw: new LlmFailure("AUTH", "key revoked") }
        : textResponse("SUMMARY")
    );
    const recorded = await twoCompactions([live], "rec", { turnBetween: true });
    assert.deepEqual(recorded.outcomes.map((o) => o.kind), ["failed", "completed"]);
    const replay = replayAdapter({ fixture: recorded.events, strict: true });
    const replayed = await twoCompactions(replay.adapters, "again", { turnBetween: true });
    replay.assertConsumed();
    assert.deepEqual(replayed.outcomes, recorded.outcomes);
    assert.equal(summaryCalls(replay.requests).length, 3);
    assert.deepEqual(normalizeLog(replayed.events), normalizeLog(recorded.events));
  });

  it("a live compaction that retries less than the recorded one ends there: the next one starts fresh", async () => {
    // Recorded: SERVER twice, then a summary (3 calls); a completed compaction next. Live, no retries: the first
    // compaction fails after one call, the calls it did not make are reported, and the next takes its own answer.
    let s = 0;
    const live = model(() =>
      ++s <= 2 ? { throw: new LlmFailure("SERVER", "down", { status: 503 }) } : textResponse(`SUMMARY ${s}`)
    );
    const recorded = await twoCompactions([live], "rec", { turnBetween: true });
    assert.deepEqual(recorded.outcomes.map((o) => o.kind), ["completed", "completed"]);
    // Not strict: the replayed history lacks the first summary.
    const replay = replayAdapter({ fixture: recorded.events });
    const replayed = await twoCompactions(replay.adapters, "again", { turnBetween: true, maxRetries: 0 });
    assert.equal(replayed.outcomes[0].kind, "failed");
    // The second compaction's own answer (its range differs: the first compaction replaced nothing).
    assert.deepEqual([replayed.outcomes[1].kind, (replayed.outcomes[1] as { summary?: string }).summary], [
      "completed",
      "SUMMARY 4",
    ]);
    assert.equal(summaryCalls(replay.requests).length, 2);
    assert.throws(() => replay.assertConsumed(), (error: unknown) => {
      assert.ok(HarnessError.isInstance(error) && error.code === "REPLAY_NOT_CONSUMED", String(error));
      assert.match(error.message, /made 1 of the 3 summary calls of its compaction 1/);
      return true;
    });
  });

  it("an adapter's ABORTED failure, a code with dashes, a message ending like the retry note replay alike", async () => {
    const answers: Record<string, () => ScriptEntry> = {
      "ABORTED: upstream aborted": () => ({ throw: new LlmFailure("ABORTED", "upstream aborted") }),
      "openai-overloaded: busy": () => ({ throw: new LlmFailure("openai-overloaded", "busy") }),
      "AUTH: bad key (aborted before a retry)": () => ({
        throw: new LlmFailure("AUTH", "bad key (aborted before a retry)"),
      }),
    };
    for (const [error, answer] of Object.entries(answers)) {
      const recorded = await run([model(answer)], { manualBefore: 2 });
      assert.deepEqual(compactions(recorded.events), ["start manual", `end failed: ${error}`], error);
      const replay = replayAdapter({ fixture: recorded.events, strict: true });
      const replayed = await Promise.race([
        run(replay.adapters, { manualBefore: 2, idPrefix: "again" }),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${error}: the replay hung`)), 2000)),
      ]);
      replay.assertConsumed();
      assert.deepEqual(normalizeLog(replayed.events), normalizeLog(recorded.events), error);
    }
  });

  it("a log recorded before compaction/end kept the failure as data: its error text is parsed", async () => {
    const cases: [string, { code: string; message: string } | "hang"][] = [
      ["ABORTED: upstream aborted", { code: "ABORTED", message: "upstream aborted" }],
      ["ABORTED: Model call was aborted", "hang"],
      ["openai-overloaded: busy", { code: "openai-overloaded", message: "busy" }],
      ["AUTH: bad key (aborted before a retry)", { code: "AUTH", message: "bad key (aborted before a retry)" }],
      ["SERVER: down (aborted before a retry)", { code: "SERVER", message: "down" }],
      ["no code here: at all", { code: "UNKNOWN", message: "no code here: at all" }],
    ];
    for (const [error, expected] of cases) {
      const fixture = fixtureFromLogs(log(
        { type: "compaction/start", data: { reason: "manual" } },
        { type: "compaction/end", data: { outcome: "failed", error } },
      ) as SessionEvent[]);
      const replay = replayAdapter({ fixture, strict: true, providers: ["replay"], models: [{ id: "m" }] });
      const llm = new LlmRuntime();
      llm.registerAdapter(replay.adapters);
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 20);
      const message: Message = {
        id: "m1",
        role: "user",
        content: [{ type: "text", text: "hi" }],
        source: { kind: "user" },
      };
      const request = { provider: "replay", model: "m", sessionId: "s", purpose: "compaction" } as const;
      const finishes: StreamChunk[] = [];
      // A failure whose code is retried: two calls with the same message ids (copies), the second a retry of the
      // failed first, answered alike. Any other failure was not retried: its compaction made one call.
      const calls = expected !== "hang" && isRetryableFailure(expected) ? 2 : 1;
      for (let i = 0; i < calls; i++) {
        for await (const c of llm.stream({ ...request, messages: [{ ...message }], signal: controller.signal })) {
          if (c.type === "finish") finishes.push(c);
        }
      }
      clearTimeout(timer);
      const reasons = finishes.map((c) => c.type === "finish" ? c.reason : undefined);
      if (expected === "hang") assert.equal(reasons[0]?.kind, "aborted", error);
      else {
        for (const reason of reasons) {
          assert.deepEqual(
            reason?.kind === "error" && { code: reason.failure.code, message: reason.failure.message },
            expected,
            error,
          );
        }
      }
      replay.assertConsumed();
    }
  });
});
