import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createHarness,
  deriveEventMessage,
  fileStorage,
  HarnessError,
  type Message,
  packChunkRows,
  type SessionEvent,
  SurfaceManager,
} from "../mod.ts";
import { scriptedAdapter, textResponse } from "../testing/mod.ts";
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

  it("ends a call the session stopped inside (a crash; the log's repair closed its step) with an aborted finish", () => {
    const events = log(
      { type: "turn/start", data: { turn: 1 } },
      { type: "step/start", data: { turn: 1, step: 1 } },
      chunk(1, 1, text("cut off")),
      { type: "step/end", data: { turn: 1, step: 1 } },
      { type: "turn/end", data: { turn: 1, reason: { kind: "interrupted" } } },
      { type: "turn/start", data: { turn: 2 } },
      { type: "step/start", data: { turn: 2, step: 1 } },
      chunk(2, 1, text("whole")),
      chunk(2, 1, STOP),
      { type: "step/end", data: { turn: 2, step: 1 } },
      { type: "turn/end", data: { turn: 2, reason: { kind: "completed" } } },
    );
    const calls = fixtureFromLogs(events).sessions[0].calls;
    assert.deepEqual(calls.map((c) => [c.turn, c.step, c.seq, c.chunks.map((k) => k.type)]), [
      [1, 1, 2, ["text-delta", "finish"]],
      [2, 1, 7, ["text-delta", "finish"]],
    ]);
    const finish = calls[0].chunks[1];
    assert.equal(finish.type === "finish" && finish.reason.kind, "aborted");
    assert.equal(finish.type === "finish" && finish.reason.kind === "aborted" && finish.reason.failure.code, "ABORTED");
    // A turn that ends with the call still open, without its step's end, is closed as well.
    const turnEnd = log(chunk(1, 1, text("a")), {
      type: "turn/end",
      data: { turn: 1, reason: { kind: "interrupted" } },
    });
    assert.equal(fixtureFromLogs(turnEnd).sessions[0].calls[0].chunks.at(-1)?.type, "finish");
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

  it("cuts a log at its seedLength when given: a resume's marker follows calls that are the session's own", () => {
    // Turn 1, then a resume (its own end-seed), then turn 2: a session created empty (seedLength 0).
    const resumed = log(
      chunk(1, 1, text("one")),
      chunk(1, 1, STOP),
      { type: "session/end-seed", data: {} },
      chunk(2, 1, text("two")),
      chunk(2, 1, STOP),
    );
    const [own] = fixtureFromLogs([{ id: "r", seedLength: 0, events: resumed }]).sessions;
    assert.equal(own.firstLiveSeq, 0);
    assert.deepEqual(own.calls.map((c) => c.seq), [0, 3]);
    // Without it, everything up to the last marker counts as seeded, as for a fork.
    assert.deepEqual(fixtureFromLogs([{ id: "r", events: resumed }]).sessions[0].calls.map((c) => c.seq), [3]);
    // A fork of two events, resumed later: its own calls on both sides of the second marker.
    const fork = log(
      chunk(1, 1, STOP),
      { type: "turn/end", data: { turn: 1, reason: { kind: "completed" } } },
      { type: "session/end-seed", data: {} },
      chunk(2, 1, STOP),
      { type: "session/end-seed", data: {} },
      chunk(3, 1, STOP),
    );
    const [forked] = fixtureFromLogs([{ id: "f", parentSession: "p", seedLength: 2, events: fork }]).sessions;
    assert.equal(forked.firstLiveSeq, 3);
    assert.deepEqual(forked.calls.map((c) => c.seq), [3, 5]);
    for (const seedLength of [-1, 1.5, 7, Number.NaN]) {
      assert.throws(() => fixtureFromLogs([{ id: "f", seedLength, events: fork }]), { code: "INVALID_ARGS" });
    }
  });

  it("records the request header in force and the derived history at each call", async () => {
    const events = await recordConversation();
    const [session] = fixtureFromLogs(events).sessions;
    assert.equal(session.calls.length, 3);
    assert.equal(session.calls[0].request.header?.system, "Be loud.");
    assert.deepEqual(session.calls[0].request.header?.tools?.map((t) => t.name), ["shout"]);
    assert.deepEqual(session.calls.map((c) => c.request.messages.length), [1, 3, 5]);
  });

  it("derives each call's history across appends, empty assistant messages and replacements", () => {
    const user = (id: string) => ({
      id,
      role: "user",
      content: [{ type: "text", text: id }],
      source: { kind: "user" },
    });
    const said = (id: string, content: unknown[]) => ({
      turn: 1,
      step: 1,
      message: { id, role: "assistant", content, source: { kind: "model", provider: "p", model: "m" } },
    });
    const result = (id: string, output: string) => ({
      turn: 1,
      step: 1,
      message: {
        id,
        role: "user",
        content: [{ type: "tool-result", toolCallId: "c1", content: [{ type: "text", text: output }] }],
        source: { kind: "tool", callId: "c1" },
      },
    });
    const events = log(
      { type: "user/message", data: user("u0"), surfaceOp: "append" } as never, // 0
      chunk(1, 1, STOP), // 1
      { type: "assistant/message", data: said("a2", []), surfaceOp: "append" } as never, // 2: derives none
      { type: "tool/result", data: result("r3", "long output"), surfaceOp: "append" } as never, // 3
      { type: "user/message", data: user("u4"), surfaceOp: "append" } as never, // 4
      chunk(1, 2, STOP), // 5
      {
        type: "tool/result",
        data: result("r3", "elided"),
        surfaceOp: { op: "replace", start: 3, end: 3 },
        sourceEventSeqs: [3],
      } as never, // 6
      chunk(1, 3, STOP), // 7
      { type: "user/message", data: user("u8"), surfaceOp: "append" } as never, // 8
      {
        type: "system/message",
        data: { ...user("s9"), role: "system", source: { kind: "plugin", plugin: "compaction" } },
        surfaceOp: { op: "replace", start: 0, end: 4 },
        sourceEventSeqs: [0, 2, 4, 6],
      } as never, // 9
      chunk(2, 1, STOP), // 10
      { type: "user/message", data: user("u11"), surfaceOp: "append" } as never, // 11
      {
        type: "user/message",
        data: user("u12"),
        surfaceOp: { op: "replace", start: 11, end: 11 },
        sourceEventSeqs: [11],
      } as never, // 12: replaced before any call saw u11
      chunk(2, 2, STOP), // 13
      { type: "assistant/message", data: said("a14", [{ type: "text", text: "ok" }]), surfaceOp: "append" } as never,
      chunk(2, 3, STOP), // 15
    );
    // The history before each call as the surface fold derives it, from scratch.
    const expected = (seq: number): Message[] =>
      new SurfaceManager(events.slice(0, seq)).nodes
        .map((node) => deriveEventMessage(events[node]))
        .filter((m): m is Message => m !== null);
    const [session] = fixtureFromLogs(events).sessions;
    assert.deepEqual(session.calls.map((c) => c.seq), [1, 5, 7, 10, 13, 15]);
    for (const call of session.calls) {
      assert.deepEqual(call.request.messages, expected(call.seq), `call at ${call.seq}`);
    }
    assert.deepEqual(session.calls[3].request.messages.map((m) => m.id), ["s9", "u8"]);
    assert.deepEqual(session.calls[5].request.messages.map((m) => m.id), ["s9", "u8", "u12", "a14"]);
    assert.deepEqual(JSON.parse(JSON.stringify(session.calls[1].request)).messages.map((m: Message) => m.id), [
      "u0",
      "r3",
      "u4",
    ]);
  });

  it("reads each event of the log a bounded number of times, however many calls share its history", () => {
    const turns = 200;
    const drafts: Parameters<typeof log> = [];
    for (let turn = 1; turn <= turns; turn++) {
      drafts.push(
        {
          type: "user/message",
          data: { id: `u${turn}`, role: "user", content: [{ type: "text", text: "q" }], source: { kind: "user" } },
          surfaceOp: "append",
        } as never,
        chunk(turn, 1, STOP),
      );
    }
    const events = log(...drafts);
    let reads = 0;
    const counted = new Proxy(events, {
      get(target, key, receiver) {
        if (typeof key === "string" && /^[0-9]+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver);
      },
    });
    const [session] = fixtureFromLogs(counted).sessions;
    assert.equal(session.calls.length, turns);
    assert.equal(session.calls.at(-1)!.request.messages.length, turns);
    // Deriving every call's history from the log afresh read an event per message per call (~20,000 here).
    assert.ok(reads <= 3 * events.length, `${reads} reads of ${events.length} events`);
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

  it("refuses an override sidecar that cannot be read or has another shape, with INVALID_FIXTURE", async () => {
    const dir = await tempDir();
    try {
      const lines = [{ type: "session", version: 1, id: "plain", createdAt: 5 }];
      await writeFile(join(dir, "plain.jsonl"), lines.map((r) => JSON.stringify(r)).join("\n") + "\n");
      const sidecar = join(dir, "plain.override.json");
      for (const text of ["null", "5", '"x"', "{}", '{"patches":{}}']) {
        await writeFile(sidecar, text);
        await assert.rejects(
          loadFixture(join(dir, "plain.jsonl")),
          (e: unknown) => HarnessError.isInstance(e, "INVALID_FIXTURE") && /neither an array/.test(e.message),
          text,
        );
      }
      // An entry of another shape, or a chunk the runtime cannot play, is refused at load with its path.
      const bad: [unknown, string][] = [
        [[{ chunks: [{ type: "bogus" }] }], "[0].chunks[0].type"],
        [
          { patches: [{ at: 0, entry: { chunks: [] } }, { at: 1, entry: { hang: true, chunks: [5] } }] },
          "patches[1].entry.chunks[0]",
        ],
        [{ patches: [{ at: 0, entry: { nothing: 1 } }] }, "patches[0].entry"],
        [{ patches: [7] }, "patches[0]"],
      ];
      for (const [overrides, path] of bad) {
        await writeFile(sidecar, JSON.stringify(overrides));
        await assert.rejects(
          loadFixture(join(dir, "plain.jsonl")),
          (e: unknown) =>
            HarnessError.isInstance(e, "INVALID_FIXTURE") && e.details?.path === path && e.details?.file === sidecar &&
            e.message.includes(path),
          path,
        );
      }
      await rm(sidecar);
      await mkdir(sidecar); // there, but not a file
      await assert.rejects(
        loadFixture(join(dir, "plain.jsonl")),
        (e: unknown) => HarnessError.isInstance(e, "INVALID_FIXTURE") && /cannot be read/.test(e.message),
      );
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("refuses a fixture directory with a session folder it cannot read or that is named after another id", async () => {
    const dir = await tempDir();
    try {
      const events = await recordConversation();
      const storage = fileStorage(dir);
      await storage.create({ id: "alpha", createdAt: 1 }, { events });
      await storage.create({ id: "beta", createdAt: 2 }, { events });
      assert.deepEqual((await loadFixture(dir)).sessions.map((s) => s.id), ["alpha", "beta"]);
      const file = join(dir, "alpha", "session.v1.jsonl");
      const text = await readFile(file, "utf8");
      const refused = async (folder: string) =>
        await assert.rejects(
          loadFixture(dir),
          (e: unknown) => HarnessError.isInstance(e, "INVALID_FIXTURE") && e.message.includes(`folder ${folder} `),
        );
      await writeFile(file, text.replace('"type":"session"', '"type":"sessioN"'));
      await refused("alpha");
      await writeFile(file, text);
      await rename(join(dir, "alpha"), join(dir, "gamma"));
      await refused("gamma");
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("says why a session folder's log cannot be read: a newer format version, a damaged line, another id", async () => {
    const dir = await tempDir();
    try {
      const events = await recordConversation();
      await fileStorage(dir).create({ id: "alpha", createdAt: 1 }, { events });
      const file = join(dir, "alpha", "session.v1.jsonl");
      const text = await readFile(file, "utf8");
      const refused = async (pattern: RegExp, code: string) =>
        await assert.rejects(loadFixture(dir), (e: unknown) => {
          assert.ok(HarnessError.isInstance(e, "INVALID_FIXTURE"), String(e));
          assert.match(e.message, pattern);
          assert.deepEqual(e.details, { dir, folder: "alpha", code });
          assert.ok(HarnessError.isInstance(e.cause, code));
          return true;
        });
      // Written by a newer release: the storage's list() leaves it out, and the fixture says which version it is.
      await rename(file, join(dir, "alpha", "session.v2.jsonl"));
      await refused(
        /folder alpha whose log cannot be read: .*format version 2; this build reads version 1/,
        "SESSION_FORMAT_UNSUPPORTED",
      );
      await rename(join(dir, "alpha", "session.v2.jsonl"), file);
      // A line damaged in the middle (listed, then refused by inspect()): the file and the line.
      const lines = text.split("\n");
      lines[4] = lines[4].replace('"turn":1', '"turn":2');
      await writeFile(file, lines.join("\n"));
      await refused(
        /folder alpha whose log cannot be read: .*alpha.session\.v1\.jsonl is corrupt at line 5: the line fails its checksum/,
        "SESSION_CORRUPT",
      );
      await writeFile(file, text);
      await rename(join(dir, "alpha"), join(dir, "gamma"));
      await assert.rejects(
        loadFixture(dir),
        (e: unknown) =>
          HarnessError.isInstance(e, "INVALID_FIXTURE") &&
          /folder gamma .*the header names session "alpha"/.test(e.message),
      );
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

  it("keeps the calls a session made before it was resumed: a stored session's seed length is its header's", async () => {
    const dir = await tempDir();
    try {
      const storage = fileStorage(dir);
      const run = async (answer: string, prompt: string, resume: boolean) => {
        const harness = await createHarness({ adapters: [scriptedAdapter([textResponse(answer)])], storage });
        const agent = resume ? await harness.resumeAgent("conv") : await harness.createAgent({ id: "conv" });
        await agent.run(prompt);
        await harness.dispose();
      };
      await run("first", "one", false);
      await run("second", "two", true);
      const [session] = (await loadFixture(dir)).sessions;
      assert.ok(session.events.some((e) => e.type === "session/end-seed"), "the resume left its marker");
      assert.equal(session.firstLiveSeq, 0);
      assert.deepEqual(session.calls.map((c) => c.turn), [1, 2]);
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("cuts a fork of a plain log file whose header has no seedLength after its last marker, as before headers had one", async () => {
    const harness = await createHarness({
      adapters: [scriptedAdapter([textResponse("parent answer"), textResponse("fork answer")])],
    });
    const parent = await harness.createAgent({ id: "p" });
    await parent.run("question");
    const fork = await harness.forkAgent("p", { id: "f" });
    await fork.run("follow-up in the fork");
    const lines: string[] = [];
    for (const session of [parent.session, fork.session]) {
      const { parentSession } = session.header;
      lines.push(JSON.stringify({
        type: "session",
        version: 1,
        id: session.id,
        createdAt: session.header.createdAt,
        ...(parentSession !== undefined ? { parentSession } : {}),
      }));
      for (const event of session.events) lines.push(JSON.stringify(event));
    }
    await harness.dispose();
    const dir = await tempDir();
    try {
      await writeFile(join(dir, "conversation.jsonl"), lines.join("\n") + "\n");
      const fixture = await loadFixture(join(dir, "conversation.jsonl"));
      const answers = (id: string) =>
        fixture.sessions.find((s) => s.id === id)!.calls.map((call) =>
          call.chunks.map((chunk) => chunk.type === "text-delta" ? chunk.text : "").join("")
        );
      assert.deepEqual(answers("p"), ["parent answer"]);
      assert.deepEqual(answers("f"), ["fork answer"]);
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("reads a storage directory whose plain logs have CRLF line endings (a git checkout with core.autocrlf)", async () => {
    const dir = await tempDir();
    try {
      const events = await recordConversation();
      await fileStorage(dir).create({ id: "crlf", createdAt: 1 }, { events });
      const file = join(dir, "crlf", "session.v1.jsonl");
      await writeFile(file, (await readFile(file, "utf8")).replaceAll("\n", "\r\n"));
      const fixture = await loadFixture(dir);
      assert.deepEqual(fixture.sessions.map((s) => [s.id, s.createdAt, s.calls.length]), [["crlf", 1, 3]]);
      assert.deepEqual(fixture.sessions[0].events, events);
      // Damage beyond the line endings is still refused, and the message names the CRLF.
      await writeFile(file, (await readFile(file, "utf8")).replace('"turn/start"', '"turn/star"'));
      await assert.rejects(
        loadFixture(dir),
        (error: unknown) =>
          HarnessError.isInstance(error, "INVALID_FIXTURE") && /CRLF line endings/.test(error.message),
      );
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
      await assert.rejects(loadFixture(join(dir, "torn.jsonl")), /torn.jsonl line 2: the line is not JSON/);
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("reads several logs of one file with the storage's line decoder: checksums, blank lines, file line numbers", async () => {
    const dir = await tempDir();
    try {
      const source = await tempDir();
      const events = await recordConversation();
      const storage = fileStorage(source);
      await storage.create({ id: "parent", createdAt: 1 }, { events });
      await storage.create({ id: "child", createdAt: 2, parentSession: "parent" }, { events: events.slice(0, 3) });
      const stored = (id: string) => readFile(join(source, id, "session.v1.jsonl"), "utf8");
      const parentText = await stored("parent");
      const childText = await stored("child");
      await rm(source, { recursive: true });
      assert.match(parentText.split("\n")[1], /\t[0-9a-f]{8}$/, "fileStorage writes checksummed lines");
      const file = join(dir, "two.jsonl");
      await writeFile(file, `${parentText}\n\r\n${childText}`);
      const fixture = await loadFixture(file);
      assert.deepEqual(fixture.sessions.map((s) => [s.id, s.parentSession, s.events.length]), [
        ["parent", undefined, events.length],
        ["child", "parent", 3],
      ]);
      assert.deepEqual(fixture.sessions[0].events, events);

      // A byte changed inside the child's turn/start record: its checksum fails, and records follow.
      const parentLines = parentText.split("\n").length - 1; // newline-terminated
      const childLines = childText.split("\n");
      const at = childLines.findIndex((l) => l.includes('"turn/start"'));
      assert.ok(at > 0 && at < childLines.length - 2);
      childLines[at] = childLines[at].replace('"turn":1', '"turn":7');
      await writeFile(file, `${parentText}\n${childLines.join("\n")}`);
      const line = parentLines + 1 + at + 1; // the blank line, then the child's lines
      await assert.rejects(loadFixture(file), (error: unknown) => {
        assert.ok(HarnessError.isInstance(error, "INVALID_FIXTURE"), String(error));
        assert.match(error.message, new RegExp(`two\\.jsonl line ${line}: the line fails its checksum`));
        assert.deepEqual(error.details, { file, line });
        return true;
      });
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("refuses an event the append validator refuses, a seq gap, a bad header checksum and another format", async () => {
    const dir = await tempDir();
    try {
      const file = join(dir, "bad.jsonl");
      const header = '{"type":"session","id":"h"}';
      const rejects = async (lines: string[], pattern: RegExp) => {
        await writeFile(file, lines.join("\n") + "\n");
        await assert.rejects(
          loadFixture(file),
          (e: unknown) => HarnessError.isInstance(e, "INVALID_FIXTURE") && pattern.test(e.message),
        );
      };
      await rejects([header, '{"type":"turn/start","seq":0,"time":0,"data":{"turn":"one"}}'], /bad\.jsonl line 2: /);
      await rejects(
        [header, '{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}', '{"type":"step/end","seq":5,"time":0}'],
        /bad\.jsonl line 3: the event has seq 5, not 1/,
      );
      await rejects(['{"type":"session","id":"h"}\t00000000'], /line 1: the header line fails its checksum/);
      await rejects(['{"type":"session","version":9,"id":"h"}'], /line 1: format version 9 is not supported/);
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
