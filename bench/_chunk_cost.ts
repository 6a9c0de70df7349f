/**
 * The loop's cost per streamed chunk and per step, apart: the same harness
 * (invariants on, one `agent.subscribe()` consumer counting deltas) runs
 * one-step turns whose scripted model streams `0` and then `N` text deltas.
 * Each case: a fresh harness, 30 warm-up turns, then the median of 60 timed
 * turns; the best median of 8 rounds is kept (the machine is shared). The
 * per-chunk cost is (turn with N deltas − turn with 0) / N; the empty turn is
 * the fixed cost of a step. Used by `bench/PROFILE.md` to compare builds.
 *
 * Usage: `node --import tsx bench/_chunk_cost.ts [N]`, `bun bench/_chunk_cost.ts`,
 * `deno run -A bench/_chunk_cost.ts` (or an esbuild bundle of it, as in PROFILE.md).
 *
 * @module
 */

import { createHarness, type LlmAdapter, type StreamChunk } from "../mod.ts";

const runtime = globalThis as { Deno?: { args: string[] }; process?: { argv: string[] } };
const args = runtime.Deno?.args ?? runtime.process?.argv.slice(2) ?? [];
const N = Number(args[0] ?? 250);
const ROUNDS = 8;

let deltas = 0;
async function* script(n: number): AsyncGenerator<StreamChunk> {
  yield { type: "block-start", index: 0, blockType: "text" };
  let text = "";
  for (let i = 0; i < n; i++) {
    text += "hello";
    yield { type: "text-delta", index: 0, text: "hello" };
  }
  yield { type: "block-end", index: 0, block: { type: "text", text } };
  yield { type: "usage", usage: { inputTokens: 1, outputTokens: 2 } };
  yield { type: "finish", reason: { kind: "stop" } };
}

/** The median turn time in µs of one fresh harness whose model streams `n` deltas per step. */
async function medianTurnUs(n: number): Promise<number> {
  const adapter: LlmAdapter = {
    provider: "bench",
    models: [{ id: "m", contextWindow: 1_000_000 }],
    stream: () => script(n),
  };
  const harness = await createHarness({ adapters: [adapter], model: { provider: "bench", model: "m" } });
  const agent = await harness.createAgent();
  void (async () => {
    for await (const update of agent.subscribe()) if (update.kind === "delta") deltas++;
  })();
  for (let i = 0; i < 30; i++) await agent.run(`warm-up ${i}`);
  const times: number[] = [];
  for (let i = 0; i < 60; i++) {
    const t0 = performance.now();
    await agent.run(`turn ${i}`);
    times.push((performance.now() - t0) * 1000);
  }
  await harness.dispose();
  times.sort((a, b) => a - b);
  return times[times.length >> 1];
}

let empty = Infinity;
let full = Infinity;
for (let round = 0; round < ROUNDS; round++) {
  empty = Math.min(empty, await medianTurnUs(0));
  full = Math.min(full, await medianTurnUs(N));
}
await new Promise((resolve) => setTimeout(resolve, 0)); // the consumer drains its queue
const expected = ROUNDS * 90 * N;
if (deltas !== expected) throw new Error(`The consumer saw ${deltas} deltas, want ${expected}`);
const perChunk = (full - empty) / N;
console.log(
  `step with 0 deltas ${empty.toFixed(1)} µs, with ${N} deltas ${full.toFixed(1)} µs: ${
    perChunk.toFixed(2)
  } µs per chunk`,
);
console.log(
  `BENCH_RESULT ${
    JSON.stringify({ bench: "chunk_cost", deltas: N, emptyStepUs: empty, stepUs: full, perChunkUs: perChunk })
  }`,
);
