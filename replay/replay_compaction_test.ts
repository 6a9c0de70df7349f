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
      { type: "compaction/end", data: { outcome: "failed", error: "ABORTED: Model call aborted" } },
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
