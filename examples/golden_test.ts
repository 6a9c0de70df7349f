// Golden regression tests of the demo agent, as a user of the SDK writes
// them: each recorded scenario is replayed offline through a fresh harness
// (strict mode: the prompt, the tool schema and the history must match the
// recording), must reproduce the recorded log, and must render the committed
// golden transcript. After an intended change, re-record with
// `examples/record_fixtures.ts` and/or rewrite the transcripts with
// `DSH_GOLDEN=update`, then review the diffs.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { HarnessError } from "../mod.ts";
import { assertGoldenTranscript, loadFixture, normalizeLog, replayAdapter } from "../replay/mod.ts";
import { fixtureDir, goldenFile, runScenario, SCENARIOS, WEATHER_TABLE } from "./weather_agent.ts";

const RAINY = { ...WEATHER_TABLE, "san francisco": { conditions: "Heavy rain", temperatureC: 9, windKph: 40 } };

for (const scenario of SCENARIOS) {
  describe(`scenario "${scenario.name}"`, () => {
    it("replays offline through a fresh harness, event for event except times and ids", async () => {
      const fixture = await loadFixture(fixtureDir(scenario.name));
      const replay = replayAdapter({ fixture, strict: true });
      const { session, results } = await runScenario(scenario, replay.adapters);
      replay.assertConsumed();
      const recorded = fixture.sessions[0].events;
      assert.deepEqual(normalizeLog(session.events), normalizeLog(recorded));
      const recordedReasons = recorded.flatMap((e) => (e.type === "turn/end" ? [e.data.reason.kind] : []));
      assert.deepEqual(results.map((r) => r.reason.kind), recordedReasons);
    });

    it("renders the committed golden transcript", async () => {
      const replay = replayAdapter({ fixture: await loadFixture(fixtureDir(scenario.name)), strict: true });
      const { session } = await runScenario(scenario, replay.adapters);
      await assertGoldenTranscript(session.events, goldenFile(scenario.name), { title: `Scenario ${scenario.name}` });
    });
  });
}

describe("golden regressions", () => {
  const [weather, holiday] = SCENARIOS;

  it("a recorded retry is two model calls in one step", async () => {
    const fixture = await loadFixture(fixtureDir(holiday.name));
    const calls = fixture.sessions[0].calls.filter((c) => c.turn === 3);
    const finishes = calls.map((c) => {
      const last = c.chunks.at(-1);
      return last?.type === "finish" && last.reason.kind === "error"
        ? `${c.step}: error ${last.reason.failure.code}`
        : `${c.step}: ${last?.type === "finish" ? last.reason.kind : "none"}`;
    });
    assert.deepEqual(finishes, ["1: error SERVER", "1: max-tokens"]);
  });

  it("a changed tool output fails the golden test with a readable diff", async () => {
    const replay = replayAdapter({ fixture: await loadFixture(fixtureDir(weather.name)) });
    const { session } = await runScenario(weather, replay.adapters, { table: RAINY });
    // `update: false`: this run is wrong on purpose and must never rewrite the golden file.
    const golden = assertGoldenTranscript(session.events, goldenFile(weather.name), {
      title: `Scenario ${weather.name}`,
      update: false,
    });
    await assert.rejects(golden, (error: unknown) => {
      assert.ok(HarnessError.isInstance(error, "GOLDEN_MISMATCH"));
      assert.match(error.message, /\n-San Francisco: Morning fog, clearing to sun by noon, 17 °C, wind 19 km\/h\n/);
      assert.match(error.message, /\n\+San Francisco: Heavy rain, 9 °C, wind 40 km\/h\n/);
      return true;
    });
  });

  it("in strict mode a changed tool output stops the replay at the next request", async () => {
    const replay = replayAdapter({ fixture: await loadFixture(fixtureDir(weather.name)), strict: true });
    const { results } = await runScenario(weather, replay.adapters, { table: RAINY });
    assert.equal(results[0].reason.kind === "error" && results[0].reason.error.code, "REPLAY_DIVERGED");
    assert.throws(
      () => replay.assertConsumed(),
      /at call 2 of fixture session weather \(turn 1, step 2\): message 2 differs: user \(tool: tool-result\)/,
    );
  });
});

describe("quickstart", () => {
  it("runs offline from the fixture, streaming the answers and printing outcomes and usage", async () => {
    const file = fileURLToPath(new URL("./quickstart.ts", import.meta.url));
    const runtime = globalThis as { Deno?: unknown; Bun?: unknown };
    const args = runtime.Deno !== undefined
      ? ["run", "-A", file]
      : runtime.Bun !== undefined
      ? [file]
      : ["--import", "tsx", file];
    const env = { ...process.env, NO_COLOR: "1", DEEPSEEK_API_KEY: "" };
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        args,
        { env },
        (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out)),
      )
    );
    assert.match(stdout, /^Replaying examples\/fixtures\/weather\/ offline/);
    assert.match(stdout, /\n→ weather\(\{"location": "San Francisco"\}\)\n← San Francisco: Morning fog/);
    assert.match(stdout, /\nSan Francisco has morning fog that clears to sun by noon/);
    assert.match(stdout, /\nturn 1: completed · 47 input \(\+704 cached\), 141 output \(60 reasoning\) tokens\n/);
    assert.match(stdout, /\nturn 2: completed · 18 input, 219 output \(205 reasoning\) tokens\n/);
    assert.match(stdout, /2 turns replayed from the fixture; no network was used\.\n$/);
  });
});
