import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { checkStreamGrammar, type StreamChunk } from "../mod.ts";
import { fixtureFromLogs } from "../replay/fixture.ts";
import { arbSessionLog } from "./arb_session_log.ts";

describe("arbSessionLog()", () => {
  it("streams each step's model call as a grammar-valid stream with a finish, so a log loads as a fixture", () => {
    fc.assert(
      fc.property(arbSessionLog({ maxTurns: 5 }), (log) => {
        const calls = new Map<string, StreamChunk[]>();
        for (const event of log) {
          if (event.type !== "assistant/chunk") continue;
          const key = `${event.data.turn}.${event.data.step}`;
          calls.set(key, [...calls.get(key) ?? [], event.data.chunk]);
        }
        for (const [key, chunks] of calls) assert.deepEqual(checkStreamGrammar(chunks), [], key);
        const fixture = fixtureFromLogs(log);
        assert.equal(fixture.sessions[0].calls.length, calls.size);
      }),
      { numRuns: 300 },
    );
  });
});
