import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileStorage, HarnessError, packChunkRows, type SessionEvent } from "../mod.ts";
import { fixtureFromLogs, loadFixture } from "./fixture.ts";
import { chunk, errorFinish, log, recordConversation, STOP, text } from "./_test_support.ts";

async function tempDir(): Promise<string> {
  return await mkdtemp(join(tmpdir(), "dsh-fixture-"));
}

describe("fixtureFromLogs()", () => {
  it("groups assistant/chunk events by (turn, step) and cuts each call at its finish", () => {
    const events = log(
      { type: "turn/start", data: { turn: 1 } },
      chunk(1, 1, text("a")),
      chunk(1, 1, STOP),
      chunk(1, 2, text("b")),
      chunk(1, 2, STOP),
      { type: "turn/end", data: { turn: 1, reason: { kind: "completed" } } },
      chunk(2, 1, STOP),
    );
    const [session] = fixtureFromLogs(events).sessions;
    assert.deepEqual(
      session.calls.map((c) => [c.turn, c.step, c.seq, c.chunks.length]),
      [[1, 1, 1, 2], [1, 2, 3, 2], [2, 1, 6, 1]],
    );
  });

  it("makes a step with retries into several calls", () => {
    const events = log(
      chunk(1, 1, text("partial")),
      chunk(1, 1, errorFinish("SERVER")),
      {
        type: "llm/retry",
        data: { turn: 1, step: 1, attempt: 1, delayMs: 0, failure: { code: "SERVER", message: "x" } },
      },
      chunk(1, 1, text("whole")),
      chunk(1, 1, STOP),
    );
    const calls = fixtureFromLogs(events).sessions[0].calls;
    assert.equal(calls.length, 2);
    assert.deepEqual(calls.map((c) => c.chunks.at(-1)?.type === "finish" && c.chunks.at(-1)), [
      errorFinish("SERVER"),
      STOP,
    ]);
  });

  it("rejects a call without a finish, naming the session, turn, step and seq", () => {
    const trailing = log(chunk(1, 1, STOP), chunk(2, 1, text("cut off")));
    assert.throws(
      () => fixtureFromLogs([{ id: "s9", events: trailing }]),
      (error: unknown) =>
        HarnessError.isInstance(error, "REPLAY_MISSING_FINISH") &&
        /session s9 .* turn 2, step 1, from seq 1$/.test(error.message),
    );
    const interleaved = log(chunk(1, 1, text("a")), chunk(1, 2, STOP));
    assert.throws(() => fixtureFromLogs(interleaved), /turn 1, step 1, from seq 0/);
  });

  it("uses only the calls after a seeded session's end-seed, but derives history over the whole log", () => {
    const user: SessionEvent["data"] = {
      id: "u1",
      role: "user",
      content: [{ type: "text", text: "seeded" }],
      source: { kind: "user" },
    };
    const events = log(
      { type: "user/message", data: user, surfaceOp: "append" } as never,
      chunk(1, 1, STOP),
      { type: "session/end-seed", data: {} },
      chunk(2, 1, text("live")),
      chunk(2, 1, STOP),
    );
    const [session] = fixtureFromLogs(events).sessions;
    assert.equal(session.firstLiveSeq, 3);
    assert.deepEqual(session.calls.map((c) => c.seq), [3]);
    assert.deepEqual(session.calls[0].request.messages, [user]);
  });

  it("records the request header in force and the derived history at each call", async () => {
    const events = await recordConversation();
    const [session] = fixtureFromLogs(events).sessions;
    assert.equal(session.calls.length, 3);
    assert.equal(session.calls[0].request.header?.system, "Be loud.");
    assert.deepEqual(session.calls[0].request.header?.tools?.map((t) => t.name), ["shout"]);
    assert.deepEqual(session.calls.map((c) => c.request.messages.length), [1, 3, 5]);
  });

  it("orders parents first, then children by creation time", () => {
    const one = log(chunk(1, 1, STOP));
    const fixture = fixtureFromLogs([
      { id: "child-late", parentSession: "p", createdAt: 30, events: one },
      { id: "child-early", parentSession: "p", createdAt: 20, events: one },
      { id: "p", createdAt: 40, events: one },
    ]);
    assert.deepEqual(fixture.sessions.map((s) => s.id), ["p", "child-early", "child-late"]);
  });
});

describe("loadFixture()", () => {
  it("reads a plain log file with packed chunk rows and its override sidecar", async () => {
    const dir = await tempDir();
    try {
      const events = log(chunk(1, 1, text("a")), chunk(1, 1, text("b")), chunk(1, 1, text("c")), chunk(1, 1, STOP));
      const records = packChunkRows(events);
      assert.ok(records.length < events.length, "the deltas were packed into a row");
      const lines = [{ type: "session", version: 1, id: "plain", createdAt: 5 }, ...records];
      await writeFile(join(dir, "plain.jsonl"), lines.map((r) => JSON.stringify(r)).join("\n") + "\n");
      await writeFile(
        join(dir, "plain.override.json"),
        JSON.stringify({ patches: [{ at: 0, entry: { chunks: [] } }] }),
      );
      const fixture = await loadFixture(join(dir, "plain.jsonl"));
      assert.equal(fixture.sessions[0].id, "plain");
      assert.deepEqual(fixture.sessions[0].events, events);
      assert.equal(fixture.sessions[0].calls[0].chunks.length, 4);
      assert.deepEqual(fixture.overrides, { patches: [{ at: 0, entry: { chunks: [] } }] });
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("reads a zstd storage directory through fileStorage, with its replay.override.json", async () => {
    const dir = await tempDir();
    try {
      const events = await recordConversation();
      const storage = fileStorage(dir, { compression: "zstd" });
      await storage.create({ id: "zipped", createdAt: 1 }, { events });
      await writeFile(join(dir, "replay.override.json"), JSON.stringify([{ hang: true }]));
      const fixture = await loadFixture(new URL(`file://${dir}/`));
      assert.deepEqual(fixture.overrides, [{ hang: true }]);
      const file = await loadFixture(join(dir, "zipped", "session.v1.jsonl.zstd"));
      assert.deepEqual(file.sessions.map((s) => [s.id, s.calls.length]), [["zipped", 3]]);
      assert.equal(fixture.sessions.length, 1);
      assert.deepEqual(fixture.sessions[0].events, events);
      assert.equal(fixture.sessions[0].calls.length, 3);
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("fails clearly for a missing path, an empty directory and a file that is not a log", async () => {
    const dir = await tempDir();
    try {
      await assert.rejects(
        loadFixture(join(dir, "nope")),
        (e: unknown) => HarnessError.isInstance(e, "FIXTURE_NOT_FOUND"),
      );
      await assert.rejects(loadFixture(dir), /holds no session logs/);
      await writeFile(join(dir, "bad.jsonl"), '{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}\n');
      await assert.rejects(
        loadFixture(join(dir, "bad.jsonl")),
        /line 1: the file does not start with a session header line/,
      );
      await writeFile(join(dir, "torn.jsonl"), '{"type":"session","id":"t"}\n{"type":\n');
      await assert.rejects(loadFixture(join(dir, "torn.jsonl")), /torn.jsonl line 2: not valid JSON/);
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("takes events in memory", async () => {
    const fixture = await loadFixture(log(chunk(1, 1, STOP)));
    assert.equal(fixture.sessions[0].id, "session-1");
    assert.equal(fixture.sessions[0].calls.length, 1);
  });
});
