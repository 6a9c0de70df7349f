import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { checkInvariants, checkStreamGrammar, type SessionEvent, type StreamChunk } from "../mod.ts";
import { fixtureFromLogs } from "../replay/fixture.ts";
import { arbSessionLog } from "./arb_session_log.ts";

/** Each model call of a log: the chunks of one step up to and including a finish (a retried step has several). */
function modelCalls(log: readonly SessionEvent[]): { key: string; chunks: StreamChunk[] }[] {
  const calls: { key: string; chunks: StreamChunk[] }[] = [];
  let open: { key: string; chunks: StreamChunk[] } | undefined;
  for (const event of log) {
    if (event.type !== "assistant/chunk") continue;
    const key = `${event.data.turn}.${event.data.step}`;
    if (open === undefined || open.key !== key) calls.push(open = { key, chunks: [] });
    open.chunks.push(event.data.chunk);
    if (event.data.chunk.type === "finish") open = undefined;
  }
  return calls;
}

/** The shapes of the loop, compaction and the hook bridge that a log holds. */
function shapesOf(log: readonly SessionEvent[]): Set<string> {
  const shapes = new Set<string>();
  let bracket: string | undefined;
  const answered = new Set<string>();
  for (const event of log) {
    const data = event.data as Record<string, unknown>;
    if (event.type === "hook/result") answered.add(data.handlerId as string);
  }
  for (const event of log) {
    switch (event.type) {
      case "assistant/message":
        if (event.data.interrupted) shapes.add("interrupted message");
        if (event.data.message.source.kind === "model" && event.data.message.source.replayState !== undefined) {
          shapes.add("replay state");
        }
        break;
      case "assistant/chunk": {
        const chunk = event.data.chunk;
        if (chunk.type === "finish" && chunk.reason.kind === "aborted") shapes.add("cancelled stream");
        if (chunk.type === "finish" && chunk.reason.kind === "max-tokens") shapes.add("max-tokens");
        break;
      }
      case "llm/retry":
        shapes.add(`retry ${event.data.failure.code}`);
        break;
      case "compaction/start":
        bracket = event.data.reason;
        break;
      case "compaction/end":
        bracket = undefined;
        break;
      case "user/message":
        // The summary replaces its range inside the bracket, after compaction/summary.
        if (
          bracket !== undefined && event.surfaceOp !== "append" && log[event.seq - 1].type === "compaction/summary" &&
          event.data.source.kind === "plugin" && event.data.source.form === "summary"
        ) shapes.add(`summary (${bracket})`);
        break;
      case "hook/invoked":
        shapes.add(`hook ${event.data.event}${answered.has(event.data.handlerId) ? "" : " unanswered"}`);
        break;
      case "system/message":
        if (event.data.source.kind === "plugin" && event.data.source.plugin.startsWith("hooks:")) {
          shapes.add(`context ${event.data.source.plugin}`);
        }
        break;
    }
  }
  return shapes;
}

describe("arbSessionLog()", () => {
  it("streams each model call as a grammar-valid stream with a finish, so a log loads as a fixture", () => {
    fc.assert(
      fc.property(arbSessionLog({ maxTurns: 5 }), (log) => {
        const calls = modelCalls(log);
        for (const { key, chunks } of calls) assert.deepEqual(checkStreamGrammar(chunks), [], key);
        const fixture = fixtureFromLogs(log);
        assert.equal(fixture.sessions[0].calls.length, calls.length);
      }),
      { numRuns: 300 },
    );
  });

  it("generates the loop's retries, interrupted messages, compactions in their brackets and hook events", () => {
    // Each shape in some of 300 logs of the default size (the size the property suites draw), every log valid.
    const seen = new Map<string, number>();
    for (const log of fc.sample(arbSessionLog(), { numRuns: 300, seed: 42 })) {
      assert.deepEqual(checkInvariants(log), []);
      for (const shape of shapesOf(log)) seen.set(shape, (seen.get(shape) ?? 0) + 1);
    }
    for (
      const shape of [
        "interrupted message",
        "cancelled stream",
        "max-tokens",
        "replay state",
        "retry RATE_LIMIT",
        "retry CONTEXT_WINDOW_EXCEEDED",
        "summary (manual)",
        "summary (threshold)",
        "summary (overflow)",
        "hook UserPromptSubmit",
        "hook UserPromptSubmit unanswered",
        "hook PreToolUse",
        "hook PostToolUse",
        "hook Stop",
        "hook Stop unanswered",
        "context hooks:UserPromptSubmit",
        "context hooks:PostToolUse",
      ]
    ) assert.ok((seen.get(shape) ?? 0) > 0, `no generated log has: ${shape} (${JSON.stringify([...seen])})`);
  });

  it("names in each assistant message the chunks of its own attempt only, never a failed attempt's", () => {
    fc.assert(
      fc.property(arbSessionLog(), (log) => {
        for (const event of log) {
          if (event.type !== "assistant/message" || event.surfaceOp !== "append") continue;
          const seqs = event.sourceEventSeqs ?? [];
          // The attempt's chunks, unbroken, up to the message; before them no chunk (a failed attempt ends in its
          // llm/retry).
          assert.deepEqual(seqs, seqs.map((_, i) => event.seq - seqs.length + i));
          assert.ok(seqs.every((seq) => log[seq].type === "assistant/chunk"));
          assert.notEqual(log[seqs[0] - 1].type, "assistant/chunk");
        }
      }),
      { numRuns: 200 },
    );
  });

  it("logs each tool/call with the name and arguments of its tool-call block, as the loop does", () => {
    let calls = 0;
    fc.assert(
      fc.property(arbSessionLog(), (log) => {
        let blocks = new Map<string, unknown>();
        for (const event of log) {
          if (event.type === "assistant/message" && event.surfaceOp === "append") {
            blocks = new Map(
              event.data.message.content.filter((b) => b.type === "tool-call").map((b) => [
                b.id,
                { name: b.name, arguments: b.arguments },
              ]),
            );
          } else if (event.type === "tool/call") {
            calls++;
            const { callId, name, arguments: args } = event.data;
            assert.deepEqual({ name, arguments: args }, blocks.get(callId), `tool/call at seq ${event.seq}`);
          }
        }
      }),
      { numRuns: 200 },
    );
    assert.ok(calls > 0);
  });
});
