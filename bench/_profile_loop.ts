/**
 * Profile the loop: runs the standard scripted conversation through
 * `createHarness()` (invariants off, the app subscribed as in
 * `loop_overhead.ts`) and writes a V8 CPU profile of the measured session
 * only (a 30-turn warm-up session is not profiled). Node only (`node:inspector`).
 *
 * Usage: `node --import tsx bench/_profile_loop.ts [--turns 300] [--out loop.cpuprofile]`, then
 * `node --import tsx bench/_profile_top.ts loop.cpuprofile` for the top frames. Profiling a bundle
 * (`esbuild bench/_profile_loop.ts --bundle --platform=node --format=esm --main-fields=module,main
 * --outfile=/tmp/p.mjs`) gives exact line numbers and lets `_profile_top.ts` group frames by module.
 *
 * @module
 */

import { writeFile } from "node:fs/promises";
import { Session as Inspector } from "node:inspector/promises";
import process from "node:process";
import { createHarness } from "../mod.ts";
import { addTool, BENCH_MODEL, BENCH_PROVIDER, benchAdapter, STEPS_PER_TURN, userText } from "./_conversation.ts";
import { numberOption } from "./_stats.ts";

const turns = numberOption("turns", "BENCH_TURNS", 300);
const outIndex = process.argv.indexOf("--out");
const out = outIndex > 0 ? process.argv[outIndex + 1] : "loop.cpuprofile";

async function session(count: number, inspector?: Inspector): Promise<number> {
  const harness = await createHarness({
    adapters: [benchAdapter()],
    model: { provider: BENCH_PROVIDER, model: BENCH_MODEL },
    tools: [addTool()],
    invariants: false,
  });
  const agent = await harness.createAgent();
  const updates = (async () => {
    for await (const _ of agent.subscribe()) { /* the app reads every update */ }
  })();
  if (inspector) await inspector.post("Profiler.start");
  const cpu0 = process.cpuUsage();
  for (let turn = 1; turn <= count; turn++) await agent.run(userText(turn));
  const cpu = process.cpuUsage(cpu0);
  if (inspector) {
    const { profile } = await inspector.post("Profiler.stop");
    await writeFile(out, JSON.stringify(profile));
  }
  await harness.dispose();
  await updates;
  return (cpu.user + cpu.system) / (count * STEPS_PER_TURN);
}

await session(30);
const inspector = new Inspector();
inspector.connect();
await inspector.post("Profiler.enable");
await inspector.post("Profiler.setSamplingInterval", { interval: 100 });
const perStep = await session(turns, inspector);
inspector.disconnect();
console.log(`T = ${turns}: ${perStep.toFixed(0)} µs CPU per step (profiler on); profile written to ${out}`);
