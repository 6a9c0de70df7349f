// The coding agent example, replayed offline in strict mode from its fixture:
// it must reproduce the recorded log, render the committed golden transcript,
// and leave the project fixed.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { assertGoldenTranscript, loadFixture, normalizeLog } from "../replay/mod.ts";
import { FIXTURE_DIR, GOLDEN_FILE, replayFixture } from "./coding_agent.ts";

describe("examples/coding_agent.ts", () => {
  it("replays offline, reproduces the recorded log and fixes the project", async () => {
    const run = await replayFixture();
    assert.equal(run.result.reason.kind, "completed");
    assert.equal(run.files["src/math.js"], "export function add(a, b) {\n  return a + b;\n}\n");
    const recorded = (await loadFixture(FIXTURE_DIR)).sessions[0].events;
    assert.deepEqual(normalizeLog(run.session.events), normalizeLog(recorded));
  });

  it("renders the committed golden transcript", async () => {
    const run = await replayFixture();
    await assertGoldenTranscript(run.session.events, GOLDEN_FILE, { title: "Coding agent" });
  });
});
