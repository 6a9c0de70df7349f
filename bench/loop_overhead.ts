/**
 * Loop overhead: the standard scripted conversation of BENCH.md (T turns of
 * 2 steps and 100 chunks each, history accumulating) run through
 * `createHarness()` with the scripted model, again through the replay adapter
 * on a fixture of the same conversation, and through the bare baseline.
 * Prints per-step and per-chunk cost, the ratios harness / bare, and the
 * first-20 vs last-20 turn medians.
 *
 * Usage: `deno run -A --v8-flags=--expose-gc bench/loop_overhead.ts [--turns 200] [--repeat 3] [--invariants-on]
 * [--subject bare|scripted|replay|invariants-on|listen]`, `bun bench/loop_overhead.ts …`,
 * `node --expose-gc --import tsx bench/loop_overhead.ts …`. `BENCH_TURNS` may give T instead of `--turns`.
 *
 * Each subject runs a 20-turn warm-up session that is discarded, then
 * `repeat` fresh sessions of T turns; the figures are medians over the
 * repeats. Harness runs have the invariants off; `--invariants-on` adds one
 * run with them on (the defaults), so their cost is visible, and one more
 * whose app counts the deltas with a synchronous `agent.listen()` instead of
 * a `for await` over `agent.subscribe()` (the `listen` subject).
 *
 * Without `--subject` every subject runs in this one process (interleaved),
 * so a later session runs on a heap that earlier large sessions have grown:
 * at T = 1000 the fourth session's growth on Bun read 1.4–1.6 where the same
 * session alone reads 0.7–0.9. `--subject` runs one subject alone (a
 * `replay` process first records its fixture with one untimed scripted
 * session); `scripts/bench.mjs` runs each subject in its own process and
 * puts the rows together, so each row measures what it names.
 *
 * @module
 */

import { type Agent, createHarness, type Harness, type LlmAdapter, type SessionEvent } from "../mod.ts";
import process from "node:process";
import { loadFixture, replayAdapter } from "../replay/mod.ts";
import {
  addTool,
  BareLoop,
  BENCH_MODEL,
  BENCH_PROVIDER,
  benchAdapter,
  checkCounts,
  CHUNKS_PER_TURN,
  FINAL_TEXT,
  sessionCounts,
  STEPS_PER_TURN,
  userText,
} from "./_conversation.ts";
import { flag, forceGc, heapUsed, median, numberOption, printResult, round, runtimeVersion } from "./_stats.ts";

/** The figures of one run of T turns. */
interface RunFigures {
  /** Wall time of all turns, ms. */
  wallMs: number;
  perStepUs: number;
  perChunkUs: number;
  /** Median per-step cost over the first 20 turns, µs. */
  first20Us: number;
  /** Median per-step cost over the last 20 turns, µs. */
  last20Us: number;
  /** Median per-step CPU time over the first 20 turns, µs. */
  first20CpuUs: number;
  /** Median per-step CPU time over the last 20 turns, µs. */
  last20CpuUs: number;
  /** Process CPU time (user + system) of all turns, per step, µs. */
  cpuPerStepUs: number;
  /** Heap held by the live session after GC, bytes (NaN when GC cannot be forced). */
  heapBytes: number;
}

const WARMUP_TURNS = 20;
const EDGE = 20;
let gcAvailable = false;

function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

function figures(
  turns: number,
  times: readonly number[],
  cpuTimes: readonly number[],
  cpuUs: number,
  heapBytes: number,
): RunFigures {
  const wallMs = times.reduce((a, b) => a + b, 0);
  const edge = Math.min(EDGE, turns);
  return {
    wallMs,
    perStepUs: (wallMs * 1000) / (turns * STEPS_PER_TURN),
    perChunkUs: (wallMs * 1000) / (turns * CHUNKS_PER_TURN),
    first20Us: (median(times.slice(0, edge)) * 1000) / STEPS_PER_TURN,
    last20Us: (median(times.slice(-edge)) * 1000) / STEPS_PER_TURN,
    first20CpuUs: median(cpuTimes.slice(0, edge)) / STEPS_PER_TURN,
    last20CpuUs: median(cpuTimes.slice(-edge)) / STEPS_PER_TURN,
    cpuPerStepUs: cpuUs / (turns * STEPS_PER_TURN),
    heapBytes,
  };
}

function heapBaseline(): number {
  gcAvailable = forceGc();
  return heapUsed();
}

function heapHeld(baseline: number): number {
  return gcAvailable && forceGc() ? heapUsed() - baseline : NaN;
}

async function runBare(turns: number): Promise<RunFigures> {
  const before = heapBaseline();
  const loop = new BareLoop();
  const times: number[] = [];
  const cpuTimes: number[] = [];
  let answers = 0;
  const cpu0 = cpuMicros();
  for (let turn = 1; turn <= turns; turn++) {
    const c0 = cpuMicros();
    const t0 = performance.now();
    const text = await loop.turn(turn);
    times.push(performance.now() - t0);
    cpuTimes.push(cpuMicros() - c0);
    if (text === FINAL_TEXT) answers++;
  }
  const cpu = cpuMicros() - cpu0;
  const heap = heapHeld(before);
  checkCounts("bare", turns, loop.counts());
  if (answers !== turns) throw new Error(`bare answered ${answers} of ${turns} turns with the scripted text`);
  return figures(turns, times, cpuTimes, cpu, heap);
}

interface HarnessRun {
  readonly figures: RunFigures;
  readonly events: readonly SessionEvent[];
}

async function runHarness(
  subject: string,
  turns: number,
  adapter: LlmAdapter,
  invariants: boolean,
  consume: "subscribe" | "listen" = "subscribe",
): Promise<HarnessRun> {
  const before = heapBaseline();
  let ids = 0;
  const harness: Harness = await createHarness({
    adapters: [adapter],
    model: { provider: BENCH_PROVIDER, model: BENCH_MODEL },
    tools: [addTool()],
    invariants,
    newId: () => `id${++ids}`,
  });
  let deltas = 0;
  let agent: Agent | undefined;
  try {
    agent = await harness.createAgent();
    const updates = consume === "listen"
      ? (agent.listen((update) => {
        if (update.kind === "delta") deltas++;
      }),
        undefined)
      : (async () => {
        for await (const update of agent.subscribe()) if (update.kind === "delta") deltas++;
      })();
    const times: number[] = [];
    const cpuTimes: number[] = [];
    let answers = 0;
    const cpu0 = cpuMicros();
    for (let turn = 1; turn <= turns; turn++) {
      const c0 = cpuMicros();
      const t0 = performance.now();
      const result = await agent.run(userText(turn));
      times.push(performance.now() - t0);
      cpuTimes.push(cpuMicros() - c0);
      if (result.text === FINAL_TEXT && result.reason.kind === "completed") answers++;
    }
    const cpu = cpuMicros() - cpu0;
    const heap = heapHeld(before);
    const session = agent.session;
    await harness.dispose();
    await updates;
    checkCounts(subject, turns, sessionCounts(session, deltas));
    if (answers !== turns) throw new Error(`${subject} completed ${answers} of ${turns} turns with the scripted text`);
    return { figures: figures(turns, times, cpuTimes, cpu, heap), events: session.events };
  } finally {
    await harness.dispose();
  }
}

async function replayOf(events: readonly SessionEvent[]): Promise<LlmAdapter> {
  return replayAdapter({ fixture: await loadFixture(events) });
}

function medianFigures(runs: readonly RunFigures[]): RunFigures {
  const pick = (key: keyof RunFigures) => median(runs.map((r) => r[key]));
  return {
    wallMs: pick("wallMs"),
    perStepUs: pick("perStepUs"),
    perChunkUs: pick("perChunkUs"),
    first20Us: pick("first20Us"),
    last20Us: pick("last20Us"),
    first20CpuUs: pick("first20CpuUs"),
    last20CpuUs: pick("last20CpuUs"),
    cpuPerStepUs: pick("cpuPerStepUs"),
    heapBytes: pick("heapBytes"),
  };
}

const turns = numberOption("turns", "BENCH_TURNS", 200);
const repeat = numberOption("repeat", "BENCH_REPEAT", 3);
const withInvariants = flag("invariants-on");
const SUBJECTS = ["bare", "scripted", "replay", "invariants-on", "listen"] as const;
type Subject = typeof SUBJECTS[number];
const only = subjectOption();

/** `--subject <name>`: run only this subject (its warm-up and its sessions) in this process. */
function subjectOption(): Subject | undefined {
  const args = process.argv.slice(2);
  const i = args.indexOf("--subject");
  if (i < 0) return undefined;
  const name = args[i + 1] as Subject;
  if (!SUBJECTS.includes(name)) throw new Error(`--subject must be one of ${SUBJECTS.join(", ")}, got "${name}"`);
  return name;
}
const wants = (subject: Subject): boolean =>
  only === undefined ? (subject !== "invariants-on" && subject !== "listen") || withInvariants : only === subject;

// Warm-up: one discarded 20-turn session per subject. The replay warm-up
// plays the first 20 turns of a recorded scripted session.
if (wants("bare")) await runBare(WARMUP_TURNS);
if (wants("scripted") || wants("replay")) {
  const warm = await runHarness("harness-scripted warm-up", WARMUP_TURNS, benchAdapter(), false);
  if (wants("replay")) await runHarness("harness-replay warm-up", WARMUP_TURNS, await replayOf(warm.events), false);
}

const runs: Record<"bare" | "scripted" | "replay", RunFigures[]> = { bare: [], scripted: [], replay: [] };
let recorded: readonly SessionEvent[] | undefined;
// A replay-only process records its fixture first (one scripted session, not timed).
if (only === "replay") {
  recorded = (await runHarness("harness-scripted (recording)", turns, benchAdapter(), false)).events;
}
for (let r = 0; r < repeat; r++) {
  if (wants("bare")) runs.bare.push(await runBare(turns));
  if (wants("scripted")) {
    const scripted = await runHarness("harness-scripted", turns, benchAdapter(), false);
    runs.scripted.push(scripted.figures);
    recorded ??= scripted.events;
  }
  if (wants("replay")) {
    runs.replay.push((await runHarness("harness-replay", turns, await replayOf(recorded!), false)).figures);
  }
}
let invariantsOn: RunFigures | undefined;
if (wants("invariants-on")) {
  await runHarness("harness-scripted (invariants on) warm-up", WARMUP_TURNS, benchAdapter(), true);
  invariantsOn = (await runHarness("harness-scripted (invariants on)", turns, benchAdapter(), true)).figures;
}
let listening: RunFigures | undefined;
if (wants("listen")) {
  await runHarness("harness-scripted (listen) warm-up", WARMUP_TURNS, benchAdapter(), true, "listen");
  listening = (await runHarness("harness-scripted (invariants on, listen)", turns, benchAdapter(), true, "listen"))
    .figures;
}

const rows: [string, RunFigures][] = [];
if (runs.bare.length > 0) rows.push(["bare", medianFigures(runs.bare)]);
if (runs.scripted.length > 0) rows.push(["harness-scripted", medianFigures(runs.scripted)]);
if (runs.replay.length > 0) rows.push(["harness-replay", medianFigures(runs.replay)]);
if (invariantsOn) rows.push(["harness-scripted, invariants on (1 run)", invariantsOn]);
if (listening) rows.push(["harness-scripted, invariants on, listen() (1 run)", listening]);
const bare = rows.find(([name]) => name === "bare")?.[1];

console.log(
  `loop overhead — ${runtimeVersion()}, T = ${turns}, medians of ${repeat} runs, gc ${
    gcAvailable ? "forced" : "not available"
  }${only === undefined ? "" : `, subject ${only} alone in this process`}`,
);
console.table(Object.fromEntries(rows.map(([name, f]) => [name, {
  "µs/step": round(f.perStepUs, 1),
  "µs/chunk": round(f.perChunkUs, 2),
  "×bare": bare ? round(f.perStepUs / bare.perStepUs) : "—",
  "cpu µs/step": round(f.cpuPerStepUs, 1),
  "cpu ×bare": bare ? round(f.cpuPerStepUs / bare.cpuPerStepUs) : "—",
  "first-20 µs/step": round(f.first20Us, 1),
  "last-20 µs/step": round(f.last20Us, 1),
  "last/first": round(f.last20Us / f.first20Us),
  "cpu last/first": round(f.last20CpuUs / f.first20CpuUs),
  "heap KB": round(f.heapBytes / 1024, 0),
}])));

printResult({
  bench: "loop_overhead",
  runtime: runtimeVersion(),
  turns,
  repeat,
  gc: gcAvailable,
  subject: only ?? "all",
  subjects: Object.fromEntries(rows.map(([name, f]) => [name, f])),
  runs,
});
