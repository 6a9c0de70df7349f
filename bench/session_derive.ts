/**
 * Benchmark: the cost of appending to a session log and deriving the history
 * after every surface append, early in a long log and late in it.
 *
 * 100,000 events in turns of two steps (user message, 20 text chunks, an
 * assistant message with a tool call, the call and its result; then 20 chunks
 * and a final assistant message), with a tool-result prune every 200 turns
 * and a compaction replace every 500 turns. `deriveMessages()` runs after each
 * surface append. Prints the cost per append (derive included) for the first
 * and the last 10% of the events, and their ratio (expected below 1.5: the
 * derive cache makes each call cost O(new nodes) plus the array copy), as the
 * medians of three sessions after a warm-up one.
 *
 * Run: `node --import tsx bench/session_derive.ts` (or `deno run bench/session_derive.ts`,
 * `bun bench/session_derive.ts`). Set `DSH_BENCH_EVENTS` to change the size.
 *
 * @module
 */

import { Session, type SessionEvent } from "../mod.ts";

function eventsWanted(): number {
  try {
    const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
    return Number(env?.DSH_BENCH_EVENTS ?? 100_000);
  } catch {
    return 100_000; // Deno without --allow-env
  }
}
const TOTAL = eventsWanted();

function run(total: number): { times: Float64Array; session: Session; derived: number } {
  const session = Session.create("bench", undefined, { now: () => 0 });
  const times = new Float64Array(total);
  let derived = 0;
  let turn = 0;
  let id = 0;
  const source = { kind: "model", provider: "bench", model: "bench-model" } as const;
  const timed = (fn: () => SessionEvent, surface: boolean): void => {
    const seq = session.seq;
    if (seq >= total) return;
    const start = performance.now();
    fn();
    if (surface) derived = session.deriveMessages().length;
    times[seq] = performance.now() - start;
  };
  while (session.seq < total) {
    turn++;
    timed(() => session.append("turn/start", { turn }), false);
    for (let step = 1; step <= 2 && session.seq < total; step++) {
      const at = { turn, step };
      timed(() => session.append("step/start", at), false);
      if (step === 1) {
        timed(() =>
          session.append("user/message", {
            id: `m${++id}`,
            role: "user",
            content: [{ type: "text", text: `Question ${turn}` }],
            source: { kind: "user" },
          }, { surfaceOp: "append" }), true);
      }
      const chunkSeqs: number[] = [];
      for (let c = 0; c < 20; c++) {
        chunkSeqs.push(session.seq);
        timed(
          () => session.append("assistant/chunk", { ...at, chunk: { type: "text-delta", index: 0, text: "words" } }),
          false,
        );
      }
      const callId = `call_${turn}`;
      const content = step === 1
        ? [{ type: "text" as const, text: "Let me add." }, {
          type: "tool-call" as const,
          id: callId,
          name: "add",
          arguments: '{"a":1,"b":2}',
        }]
        : [{ type: "text" as const, text: "The answer is 3." }];
      timed(() =>
        session.append("assistant/message", {
          ...at,
          message: { id: `m${++id}`, role: "assistant", content, source },
          usage: { inputTokens: 10, outputTokens: 20 },
        }, { surfaceOp: "append", sourceEventSeqs: chunkSeqs.filter((s) => s < session.seq) }), true);
      if (step === 1) {
        const callSeq = session.seq;
        timed(() => session.append("tool/call", { ...at, callId, name: "add", arguments: '{"a":1,"b":2}' }), false);
        const resultSeq = session.seq;
        timed(() =>
          session.append("tool/result", {
            ...at,
            message: {
              id: `m${++id}`,
              role: "user",
              content: [{ type: "tool-result", toolCallId: callId, content: [{ type: "text", text: "3" }] }],
              source: { kind: "tool", callId },
            },
          }, { surfaceOp: "append", sourceEventSeqs: [callSeq] }), true);
        if (turn % 200 === 0 && resultSeq < session.seq) {
          const old = session.events[resultSeq] as SessionEvent<"tool/result">;
          const block = old.data.message.content[0];
          timed(() =>
            session.append(
              "tool/result",
              {
                ...old.data,
                message: {
                  ...old.data.message,
                  content: [{ ...block, content: [{ type: "text", text: "[pruned]" }] }],
                },
              } as typeof old.data,
              { surfaceOp: { op: "replace", start: resultSeq, end: resultSeq }, sourceEventSeqs: [resultSeq] },
            ), true);
        }
      }
      timed(() => session.append("step/end", at), false);
    }
    timed(() => session.append("turn/end", { turn, reason: { kind: "completed" } }), false);
    if (turn % 500 === 0 && session.seq < total) {
      // Compaction: summarise the first four nodes of the surface.
      const nodes = session.surface.nodes.slice(0, 4);
      timed(() =>
        session.append("user/message", {
          id: `m${++id}`,
          role: "user",
          content: [{ type: "text", text: "Summary of earlier work" }],
          source: { kind: "plugin", plugin: "compaction" },
        }, { surfaceOp: { op: "replace", start: nodes[0], end: nodes[3] }, sourceEventSeqs: nodes }), true);
    }
  }
  return { times, session, derived };
}

function sum(times: Float64Array, from: number, to: number): number {
  let total = 0;
  for (let i = from; i < to; i++) total += times[i];
  return total;
}

run(Math.min(20_000, TOTAL)); // warm-up, discarded
// Three fresh sessions: one run's mean over a tenth of the appends moves with where the collector's pauses fall (a
// single run read 0.94 to 1.92 on Bun), so the figures are the medians of three.
const RUNS = 3;
const tenth = Math.floor(TOTAL / 10);
const firsts: number[] = [];
const lasts: number[] = [];
const ratios: number[] = [];
let last: { session: Session; derived: number } | undefined;
for (let r = 0; r < RUNS; r++) {
  const { times, session, derived } = run(TOTAL);
  if (session.seq !== TOTAL || derived !== session.deriveMessages().length || derived === 0) {
    throw new Error("The benchmark did not do its work");
  }
  firsts.push((sum(times, 0, tenth) / tenth) * 1000);
  lasts.push((sum(times, TOTAL - tenth, TOTAL) / tenth) * 1000);
  ratios.push(lasts[r] / firsts[r]);
  last = { session, derived };
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(
  `session_derive: ${TOTAL} events, ${last!.derived} derived messages, ${
    last!.session.surface.replaceGeneration
  } replaces, medians of ${RUNS} sessions`,
);
console.log(`  first 10%: ${median(firsts).toFixed(3)} µs/append`);
console.log(`  last 10%:  ${median(lasts).toFixed(3)} µs/append`);
console.log(
  `  ratio last/first: ${median(ratios).toFixed(2)} (each session: ${
    ratios.map((x) => x.toFixed(2)).join(", ")
  }; target < 1.5)`,
);
