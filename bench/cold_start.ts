/**
 * Cold start: what a fresh process pays before its first answer — import
 * `@dsh/harness` (the local `mod.ts`) and `./replay`, load a fixture,
 * `createHarness()`, and one replayed turn with a tool call. `scripts/bench.mjs`
 * starts one process per sample on each runtime and compares the process
 * time with an empty script (`bench/_empty.ts`) on the same runtime.
 *
 * Usage:
 * - `… bench/cold_start.ts --record <dir>` records the fixture (one turn of the
 *   standard scripted conversation) into the directory `<dir>`;
 * - `… bench/cold_start.ts <dir>` replays it and prints its phases in ms (import,
 *   fixture load, tool definition, harness + agent creation, turn), then a
 *   `BENCH_RESULT` line.
 *
 * The imports are dynamic so that their cost is measured inside the process
 * too (phases), next to the driver's spawn-to-exit wall time.
 *
 * @module
 */

const t0 = performance.now();
// No `node:process` here: on Deno, loading a `node:` module costs start-up time of its own.
const runtime = globalThis as { Deno?: { args: string[] }; process?: { argv: string[] } };
const args = runtime.Deno?.args ?? runtime.process?.argv.slice(2) ?? [];
const record = args[0] === "--record";
const dir = record ? args[1] : args[0];
if (dir === undefined) throw new Error("Usage: cold_start.ts [--record] <fixture directory>");

const { createHarness } = await import("../mod.ts");
const { loadFixture, replayAdapter, writeFixture } = await import("../replay/mod.ts");
const conversation = await import("./_conversation.ts");
const imported = performance.now();

const route = { provider: conversation.BENCH_PROVIDER, model: conversation.BENCH_MODEL };
const adapter = record ? conversation.benchAdapter() : replayAdapter({ fixture: await loadFixture(dir) });
const loaded = performance.now();
const tools = [conversation.addTool()];
const defined = performance.now();
const harness = await createHarness({ adapters: [adapter], model: route, tools });
const agent = await harness.createAgent({ id: "cold-start" });
const created = performance.now();

const result = await agent.run(conversation.userText(1));
const answered = performance.now();
if (result.text !== conversation.FINAL_TEXT || result.reason.kind !== "completed") {
  throw new Error(
    `The replayed turn ended with ${JSON.stringify(result.reason)} and text ${JSON.stringify(result.text)}`,
  );
}
const counts = conversation.sessionCounts(agent.session, conversation.DELTAS_PER_TURN);
conversation.checkCounts("cold start", 1, counts);
if (record) await writeFixture(dir, [agent.session]);
await harness.dispose();
if (!record && "assertConsumed" in adapter) adapter.assertConsumed();

const phases = {
  /** Time from process start to the first line of this module. */
  startMs: t0,
  importMs: imported - t0,
  /** `loadFixture()` + `replayAdapter()`. */
  fixtureMs: loaded - imported,
  /** `defineTool()` of the `add` tool (zod to JSON Schema). */
  toolMs: defined - loaded,
  /** `createHarness()` + `createAgent()`. */
  harnessMs: created - defined,
  turnMs: answered - created,
  totalMs: answered,
};
console.log(
  `cold start: start ${phases.startMs.toFixed(1)} ms, import ${phases.importMs.toFixed(1)} ms, fixture ${
    phases.fixtureMs.toFixed(1)
  } ms, tool ${phases.toolMs.toFixed(1)} ms, harness ${phases.harnessMs.toFixed(1)} ms, turn ${
    phases.turnMs.toFixed(1)
  } ms (${phases.totalMs.toFixed(1)} ms since process start)`,
);
console.log("BENCH_RESULT " + JSON.stringify({ bench: "cold_start", record, ...phases }));
