/**
 * Memory: heap per idle agent after N agents (default 1,000) have each run a
 * 10-turn history of the standard scripted conversation in one harness, all
 * still alive; next to the heap of the bare baseline's plain message arrays
 * for the same conversations.
 *
 * Usage: `deno run -A --v8-flags=--expose-gc bench/memory.ts [--agents 1000] [--turns 10]`,
 * `bun bench/memory.ts …`, `node --expose-gc --import tsx bench/memory.ts …`.
 * Without a way to force GC the figures are not printed (the run fails).
 *
 * @module
 */

import { type Agent, createHarness } from "../mod.ts";
import {
  addTool,
  BareLoop,
  BENCH_MODEL,
  BENCH_PROVIDER,
  benchAdapter,
  checkCounts,
  sessionCounts,
  userText,
} from "./_conversation.ts";
import { forceGc, heapUsed, median, numberOption, printResult, round, runtimeVersion } from "./_stats.ts";

const agentCount = numberOption("agents", "BENCH_AGENTS", 1000);
const turns = numberOption("turns", "BENCH_AGENT_TURNS", 10);

if (!forceGc()) {
  throw new Error("Cannot force GC: run node with --expose-gc, deno with --v8-flags=--expose-gc, or bun");
}

function settledHeap(): number {
  forceGc();
  return heapUsed();
}

// Bare baseline: the same histories as plain message arrays.
const bareBefore = settledHeap();
const bares: BareLoop[] = [];
for (let i = 0; i < agentCount; i++) {
  const loop = new BareLoop();
  for (let turn = 1; turn <= turns; turn++) await loop.turn(turn);
  bares.push(loop);
}
const bareBytes = settledHeap() - bareBefore;
for (const loop of bares) checkCounts("bare", turns, loop.counts());
bares.length = 0;

let ids = 0;
const harness = await createHarness({
  adapters: [benchAdapter()],
  model: { provider: BENCH_PROVIDER, model: BENCH_MODEL },
  tools: [addTool()],
  invariants: false,
  newId: () => `id${++ids}`,
});
// One agent first, so that lazily built state of the harness is not counted per agent.
const first = await harness.createAgent();
for (let turn = 1; turn <= turns; turn++) await first.run(userText(turn));
const before = settledHeap();
const agents: Agent[] = [];
/** Wall time of each agent's turns, ms: does a turn cost more when many agents are live? */
const agentMs: number[] = [];
const started = performance.now();
for (let i = 0; i < agentCount; i++) {
  const agent = await harness.createAgent();
  const t0 = performance.now();
  for (let turn = 1; turn <= turns; turn++) await agent.run(userText(turn));
  agentMs.push(performance.now() - t0);
  // `run()` resolves with the turn's outcome a little before the status returns to idle.
  await agent.whenIdle();
  agents.push(agent);
}
const elapsedMs = performance.now() - started;
const heldBytes = settledHeap() - before;
let events = 0;
for (const agent of agents) {
  if (agent.status !== "idle") throw new Error(`Agent ${agent.id} is ${agent.status}, expected idle`);
  events += agent.session.events.length;
  // Deltas are not observed here (no subscriber); the other counts must match.
  const counts = sessionCounts(agent.session, 0);
  checkCounts("harness", turns, { ...counts, deltas: counts.deltas + 90 * turns });
}
await harness.dispose();

const edge = Math.min(10, agentCount);
const firstAgentsStepUs = (median(agentMs.slice(0, edge)) * 1000) / (turns * 2);
const lastAgentsStepUs = (median(agentMs.slice(-edge)) * 1000) / (turns * 2);
const perAgent = heldBytes / agentCount;
const perBare = bareBytes / agentCount;
console.log(
  `memory — ${runtimeVersion()}: ${agentCount} idle agents with ${turns}-turn histories (${
    round(events / agentCount, 0)
  } log events each), built in ${round(elapsedMs / 1000, 1)} s; a step cost ${
    round(firstAgentsStepUs, 0)
  } µs with the first ${edge} agents live and ${round(lastAgentsStepUs, 0)} µs with the last ${edge} (medians)`,
);
console.table({
  harness: { "KB per agent": round(perAgent / 1024, 1), "bytes per log event": round(heldBytes / events, 0) },
  bare: { "KB per agent": round(perBare / 1024, 1), "bytes per log event": "" },
  "harness / bare": { "KB per agent": `${round(perAgent / perBare, 1)}×`, "bytes per log event": "" },
});
printResult({
  bench: "memory",
  runtime: runtimeVersion(),
  agents: agentCount,
  turns,
  eventsPerAgent: events / agentCount,
  bytesPerAgent: perAgent,
  bytesPerEvent: heldBytes / events,
  bareBytesPerConversation: perBare,
  buildMs: elapsedMs,
  firstAgentsStepUs,
  lastAgentsStepUs,
});
