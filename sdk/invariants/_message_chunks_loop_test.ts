// checkInvariants on logs the agent loop writes, over generated model streams: every log the loop writes, whatever
// the adapter streams (grammar-valid, tolerated by the assembler, cut short by a throw or a cancel at any chunk),
// passes ASSISTANT_MESSAGE_CHUNKS_MISMATCH and every other invariant.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { z } from "zod";
import { checkInvariants } from "./check_invariants.ts";
import type { SessionEvent } from "../session/session_events.ts";
import type { StreamChunk } from "../llm/stream_chunk.ts";
import { LlmFailure } from "../llm/mod.ts";
import { createHarness } from "../harness.ts";
import { defineTool } from "../tools/mod.ts";
import { counterClock, counterIds } from "../agent/_test_support.ts";
import { arbStreamChunks } from "../../testing/arb_stream_chunks.ts";
import { scriptedAdapter, type ScriptEntry, textResponse } from "../../testing/scripted_adapter.ts";

const RUNS = Math.max(150, Number(process.env.DSH_PROPERTY_RUNS ?? 0) || 0);

const tools = ["read", "write", "search"].map((name) =>
  defineTool({
    name,
    description: `The ${name} tool`,
    parameters: z.object({}).passthrough(),
    output: { schema: z.string(), render: (_args, text) => text },
    execute: () => "ok",
  })
);

const pieces = fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 });

/**
 * Streams the grammar forbids but the assembler folds, as a loose adapter sends them: deltas with no block-start,
 * block-ends with no delta, usage before the content, no finish at all.
 */
const arbLooseStream: fc.Arbitrary<StreamChunk[]> = fc.array(
  fc.oneof(
    fc.record({ index: fc.nat(2), texts: pieces }).map(({ index, texts }) =>
      texts.map((text): StreamChunk => ({ type: "text-delta", index, text }))
    ),
    fc.record({ index: fc.nat(2), texts: pieces }).map(({ index, texts }) =>
      texts.map((text): StreamChunk => ({ type: "reasoning-delta", index, text }))
    ),
    fc.record({ index: fc.nat(2), texts: pieces, name: fc.constantFrom("read", "write") }).map((
      { index, texts, name },
    ) =>
      texts.map((argumentsDelta, i): StreamChunk => ({
        type: "tool-call-delta",
        index,
        id: `loose_${index}`,
        ...(i === 0 ? { name } : {}),
        argumentsDelta,
      }))
    ),
    fc.record({ index: fc.nat(2), text: fc.string({ maxLength: 6 }), type: fc.constantFrom("text", "reasoning") }).map((
      { index, text, type },
    ): StreamChunk[] => [{ type: "block-end", index, block: { type, text } as never }]),
    fc.nat(2).map((index): StreamChunk[] => [{ type: "block-start", index, blockType: "text" }]),
    fc.constant<StreamChunk[]>([{ type: "usage", usage: { inputTokens: 2, outputTokens: 1 } }]),
    // A chunk the log refuses (NaN tokens): the loop ends the call with an error finish in its place.
    fc.constant<StreamChunk[]>([{ type: "usage", usage: { inputTokens: Number.NaN, outputTokens: 1 } }]),
  ),
  { maxLength: 5 },
).chain((parts) =>
  fc.option(
    fc.constantFrom<StreamChunk>({ type: "finish", reason: { kind: "stop" } }, {
      type: "finish",
      reason: { kind: "max-tokens" },
    }),
    { nil: undefined },
  ).map((finish) => [...parts.flat(), ...(finish ? [finish] : [])])
);

/** A grammar-valid stream whose block-ends carry the block as the adapter normalised it (trimmed, re-serialised). */
const arbNormalisedStream: fc.Arbitrary<StreamChunk[]> = arbStreamChunks({ maxBlocks: 3, maxDeltas: 3 }).map((
  chunks,
) =>
  chunks.map((c): StreamChunk => {
    if (c.type !== "block-end") return c;
    const block = c.block;
    if (block.type === "tool-call") return { ...c, block: { ...block, arguments: ` ${block.arguments} ` } };
    if (block.type === "text" || block.type === "reasoning") return { ...c, block: { ...block, text: "normalised" } };
    return c;
  })
);

/** A replay state on the finish: per-block entries (as many as the blocks, or not), or an opaque one. */
const arbReplayState = fc.option(
  fc.oneof(
    fc.nat(4).map((n) => ({ blocks: Array.from({ length: n }, (_, i) => ({ signature: `sig${i}` })) })),
    fc.constant({ response: "resp_1" }),
  ),
  { nil: undefined },
);

const arbStream = fc.tuple(
  fc.oneof(
    { weight: 3, arbitrary: arbStreamChunks({ maxBlocks: 3, maxDeltas: 3 }) },
    { weight: 1, arbitrary: arbLooseStream },
    { weight: 1, arbitrary: arbNormalisedStream },
  ),
  arbReplayState,
).map(([chunks, replayState]) =>
  replayState === undefined ? chunks : chunks.map((c): StreamChunk => (c.type === "finish" ? { ...c, replayState } : c))
);

type Plan = { kind: "chunks" | "throw" | "hang"; chunks: StreamChunk[] };

const arbPlan: fc.Arbitrary<Plan> = fc.record({
  kind: fc.constantFrom<Plan["kind"]>("chunks", "chunks", "chunks", "throw", "hang"),
  chunks: arbStream,
}).map(({ kind, chunks }) =>
  // A throw or a hang comes mid-stream: the chunks before the finish.
  kind === "chunks" ? { kind, chunks } : { kind, chunks: chunks.filter((c) => c.type !== "finish") }
);

/** The log of one turn on the scripted plans, cancelled at the `cancelAt`-th chunk logged (if it comes). */
async function loopLog(plans: readonly Plan[], cancelAt: number | undefined): Promise<readonly SessionEvent[]> {
  let cancel = (): void => {};
  const timers: ReturnType<typeof setTimeout>[] = [];
  const script = scriptedAdapter((_request, i): ScriptEntry => {
    const plan = plans[i];
    if (plan === undefined) return textResponse("done");
    if (plan.kind === "throw") return { throw: new LlmFailure("RATE_LIMIT", "Slow down"), chunks: plan.chunks };
    if (plan.kind === "hang") {
      // Nothing else ends a hang: cancel once its chunks are out.
      timers.push(setTimeout(() => cancel(), 1));
      return { hang: true, chunks: plan.chunks };
    }
    return { chunks: plan.chunks };
  });
  const harness = await createHarness({
    adapters: [script],
    model: { provider: "scripted", model: "scripted-model" },
    tools,
    now: counterClock(),
    newId: counterIds(),
    sleep: () => Promise.resolve(),
  });
  try {
    const agent = await harness.createAgent({ id: "s1" });
    cancel = () => agent.cancel("user");
    let seen = 0;
    agent.ctx.on("session/event", (_s, e) => {
      if (e.type === "assistant/chunk" && seen++ === cancelAt) cancel();
    });
    await agent.run("Go").catch(() => {});
    return agent.session.events;
  } finally {
    // A hang's timer left over once an earlier cancel ended the turn: it must not reach a disposed agent.
    for (const timer of timers) clearTimeout(timer);
    await harness.dispose();
  }
}

describe("checkInvariants() on logs the agent loop writes over generated streams", () => {
  it("finds no violation, whatever the streams and wherever the cancel", async () => {
    // The shapes the property is about, counted over the runs.
    const seen = { interrupted: 0, retried: 0, maxTokens: 0, toolCalls: 0, normalised: 0, refused: 0, replay: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.array(arbPlan, { minLength: 1, maxLength: 4 }),
        fc.option(fc.nat(30), { nil: undefined }),
        async (plans, cancelAt) => {
          const events = await loopLog(plans, cancelAt);
          assert.deepEqual(checkInvariants(events).map((v) => `${v.seq} ${v.code}: ${v.message}`), []);
          for (const e of events) {
            if (e.type === "assistant/message" && e.data.interrupted === true) seen.interrupted++;
            if (e.type === "llm/retry") seen.retried++;
            if (e.type === "tool/call") seen.toolCalls++;
            if (e.type === "assistant/message" && e.data.message.source.kind === "model") {
              if (e.data.message.source.replayState !== undefined) seen.replay++;
            }
            if (e.type !== "assistant/chunk") continue;
            const c = e.data.chunk;
            if (c.type === "finish" && c.reason.kind === "max-tokens") seen.maxTokens++;
            if (c.type === "finish" && c.reason.kind === "error" && c.reason.failure.code === "MALFORMED_RESPONSE") {
              seen.refused++;
            }
            if (c.type === "block-end" && c.block.type === "text" && c.block.text === "normalised") {
              seen.normalised++;
            }
          }
        },
      ),
      { numRuns: RUNS },
    );
    for (const [shape, count] of Object.entries(seen)) assert.ok(count > 0, `no run had ${shape}`);
  });
});
