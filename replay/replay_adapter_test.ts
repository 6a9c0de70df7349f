import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createHarness,
  defineTool,
  fileStorage,
  type GenerateOptions,
  HarnessError,
  type LlmAdapter,
  LlmRuntime,
  type Message,
  type RunResult,
  type SessionEvent,
  type StreamChunk,
  TurnFailedError,
} from "../mod.ts";
import { scriptedAdapter, textResponse } from "../testing/mod.ts";
import { type Fixture, fixtureFromLogs, type FixtureSession, loadFixture } from "./fixture.ts";
import { normalizeLog } from "./normalize_log.ts";
import { replayAdapter, type ReplayAdapterOptions } from "./replay_adapter.ts";
import {
  chunk,
  conversation,
  INPUTS,
  log,
  recordConversation,
  runSession,
  shoutTool,
  STOP,
  text,
} from "./_test_support.ts";

/** A fixture of two sessions: A answers "a1", "a2"; B answers "b1". */
function twoSessions(): ReplayAdapterOptions["fixture"] {
  return fixtureFromLogs([
    { id: "A", events: log(chunk(1, 1, text("a1")), chunk(1, 1, STOP), chunk(2, 1, text("a2")), chunk(2, 1, STOP)) },
    { id: "B", events: log(chunk(1, 1, text("b1")), chunk(1, 1, STOP)) },
  ]);
}

function runtimeFor(options: Omit<ReplayAdapterOptions, "providers" | "models">) {
  const replay = replayAdapter({ ...options, providers: ["replay"], models: [{ id: "m" }] });
  const llm = new LlmRuntime();
  llm.registerAdapter(replay.adapters);
  const call = async (
    sessionId: string,
    request: Partial<GenerateOptions> = {},
    signal = new AbortController().signal,
  ): Promise<StreamChunk[]> => {
    const chunks: StreamChunk[] = [];
    const options = { provider: "replay", model: "m", messages: [], sessionId, signal, ...request };
    for await (const c of llm.stream(options)) chunks.push(c);
    return chunks;
  };
  const textOf = (chunks: StreamChunk[]) => chunks.map((c) => (c.type === "text-delta" ? c.text : "")).join("");
  return { replay, call, textOf };
}

function finishOf(chunks: StreamChunk[]) {
  const last = chunks.at(-1);
  assert.equal(last?.type, "finish");
  return last.type === "finish" ? last.reason : undefined;
}

describe("replayAdapter() through the full loop", () => {
  it("reproduces the recorded log event for event, except times and ids", async () => {
    const recorded = await recordConversation({ idPrefix: "rec", clock: 1_000 });
    const replay = replayAdapter({ fixture: recorded, strict: true });
    assert.equal(replay.provider, "scripted");
    const { session, results } = await runSession(replay.adapters, { idPrefix: "again", clock: 9_000_000 });
    replay.assertConsumed();
    assert.deepEqual(results.map((r) => [r.text, r.reason.kind]), [["Shouted.", "completed"], [
      "Second answer.",
      "completed",
    ]]);
    assert.notDeepEqual(session.events, recorded, "times and ids differ before normalisation");
    assert.deepEqual(normalizeLog(session.events), normalizeLog(recorded));
    assert.equal(replay.requests.length, 3);
  });

  it("serves the recorded models with the defaults the recorded adapter filled in", async () => {
    const model = { id: "scripted-model", defaultMaxTokens: 4096, reasoningEfforts: ["low", "high"] as const };
    const recorder = scriptedAdapter(conversation(), { models: [{ ...model, defaultReasoningEffort: "high" }] });
    const { session } = await runSession([recorder]);
    const replay = replayAdapter({ fixture: session.events, strict: true });
    assert.deepEqual(replay.models, [{
      id: "scripted-model",
      reasoningEfforts: ["high"],
      defaultReasoningEffort: "high",
      defaultMaxTokens: 4096,
    }]);
    const again = await runSession(replay.adapters);
    assert.deepEqual(again.results.map((r) => r.reason.kind), ["completed", "completed"]);
    replay.assertConsumed();
  });

  it("plays on without strict mode when the live request has drifted", async () => {
    const replay = replayAdapter({ fixture: await recordConversation() });
    const { results } = await runSession(replay.adapters, { system: "Be quiet.", inputs: ["Whisper hi", "Again?"] });
    assert.deepEqual(results.map((r) => r.text), ["Shouted.", "Second answer."]);
    replay.assertConsumed();
  });
});

describe("replayAdapter() strict mode", () => {
  async function divergence(options: Parameters<typeof runSession>[1]): Promise<string> {
    const replay = replayAdapter({
      fixture: fixtureFromLogs([{ id: "s1", events: await recordConversation() }]),
      strict: true,
    });
    const { results } = await runSession(replay.adapters, options);
    const first = results[0].reason;
    assert.equal(first.kind, "error");
    assert.equal(first.kind === "error" && first.error.code, "REPLAY_DIVERGED");
    let message = "";
    assert.throws(() => replay.assertConsumed(), (error: unknown) => {
      message = (error as Error).message;
      return HarnessError.isInstance(error, "REPLAY_DIVERGED");
    });
    return message;
  }

  it("catches a changed system prompt with a diff of the prompt", async () => {
    const message = await divergence({ system: "Be quiet." });
    assert.match(
      message,
      /^Strict replay diverged at call 1 of fixture session s1 \(turn 1, step 1\): the system prompt differs\n/,
    );
    assert.match(message, /--- fixture\n\+\+\+ live\n@@ -1,1 \+1,1 @@\n-Be loud\.\n\+Be quiet\.\n/);
  });

  it("catches a changed tool schema, naming the tool and the changed field", async () => {
    const changed = defineTool({
      name: "shout",
      description: "Shout a text, loudly",
      parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
      output: { schema: { type: "string" }, render: (_a, v) => String(v) },
      execute: () => "HI!",
    });
    const message = await divergence({ tools: [changed] });
    assert.match(message, /: the schema of tool "shout" differs\n/);
    assert.match(message, /\n- {2}"description": "Shout a text",\n\+ {2}"description": "Shout a text, loudly",\n/);
  });

  it("catches an added tool", async () => {
    const extra = defineTool({
      name: "whisper",
      description: "Whisper",
      parameters: { type: "object" },
      output: { schema: {}, render: () => "" },
      execute: () => "",
    });
    const message = await divergence({ tools: [shoutTool(), extra] });
    assert.match(message, /the tool list differs \(added "whisper"\)\n[^]*\n\+whisper\n/);
  });

  it("catches a changed user message, naming its index and showing a line diff", async () => {
    const message = await divergence({ inputs: ["Shout hello", "Again?"] });
    assert.match(message, /: message 0 differs: user \(user: text\) \(fixture has 1 messages, live 1\)\n/);
    assert.match(message, /\n- {6}"text": "Shout hi",?\n\+ {6}"text": "Shout hello",?\n/);
  });

  it("catches a changed tool output at the next request", async () => {
    const message = await divergence({ tools: [shoutTool("?")], inputs: INPUTS });
    assert.match(
      message,
      /at call 2 of fixture session s1 \(turn 1, step 2\): message 2 differs: user \(tool: tool-result\)/,
    );
    assert.match(message, /\n-\s+"text": "HI!",\n\+\s+"text": "HI\?",\n/);
  });
});

describe("replayAdapter() strict mode, a fork that switches provider", () => {
  // Provider a answers with replay state; the runtime sends it to a only, so the fork's calls to b carried the
  // parent's answers without it, while the fork's log (its seed) still holds it.
  const answer = (provider: string) => {
    let k = 0;
    return scriptedAdapter(() => ({
      chunks: [{ type: "text-delta", index: 0, text: `${provider}${++k}` }, {
        type: "finish",
        reason: { kind: "stop" },
        replayState: { signature: `sig-${provider}${k}` },
      }],
    }), { provider, models: [{ id: `m${provider}`, contextWindow: 1000 }] });
  };
  const scenario = async (adapters: readonly LlmAdapter[], prefix: string) => {
    let n = 0;
    const harness = await createHarness({ adapters, system: "Be loud.", newId: () => `${prefix}-${++n}` });
    try {
      const parent = await harness.createAgent({ provider: "a", model: "ma", id: "p" });
      const results: RunResult[] = [];
      for (const input of ["one", "two"]) results.push(await parent.run(input));
      const child = await harness.forkAgent(parent.session, { provider: "b", model: "mb", id: "p-fork" });
      for (const input of ["three", "four"]) {
        results.push(
          await child.run(input).catch((e) => e instanceof TurnFailedError ? e.result : Promise.reject(e)),
        );
      }
      return { parent: parent.session.events.slice(), child: child.session.events.slice(), results };
    } finally {
      await harness.dispose();
    }
  };

  it("compares the fork's calls with the recorded history as the runtime sent it to b", async () => {
    const adapterSaw: unknown[][] = [];
    const b = answer("b");
    const seen: LlmAdapter = {
      ...b,
      stream: (request) => {
        adapterSaw.push(request.messages.map((m) => m.source.kind === "model" ? m.source.replayState : undefined));
        return b.stream(request);
      },
    };
    const recorded = await scenario([answer("a"), seen], "rec");
    // b never sees a's replay state, but sees its own.
    assert.deepEqual(adapterSaw.at(-1), [
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      { signature: "sig-b1" },
      undefined,
    ]);
    const fixture = fixtureFromLogs([
      { id: "p", createdAt: 1, events: recorded.parent },
      { id: "p-fork", createdAt: 2, parentSession: "p", events: recorded.child },
    ]);
    const replay = replayAdapter({ fixture, strict: true });
    const replayed = await scenario(replay.adapters, "again");
    assert.deepEqual(replay.failures, []);
    replay.assertConsumed();
    assert.deepEqual(replayed.results.map((r) => [r.reason.kind, r.text]), [
      ["completed", "a1"],
      ["completed", "a2"],
      ["completed", "b1"],
      ["completed", "b2"],
    ]);
    assert.deepEqual(normalizeLog(replayed.parent), normalizeLog(recorded.parent));
    assert.deepEqual(normalizeLog(replayed.child), normalizeLog(recorded.child));
  });

  it("still catches a changed message of the parent in the fork's first call", async () => {
    const recorded = await scenario([answer("a"), answer("b")], "rec");
    // The fork's seed says the parent's first answer was "a1 changed".
    const seedEnd = recorded.child.findIndex((e) => e.type === "session/end-seed");
    const child = recorded.child.map((e, i) =>
      i < seedEnd && e.type === "assistant/message" &&
        e.data.message.content.some((b) => b.type === "text" && b.text === "a1")
        ? {
          ...e,
          data: { ...e.data, message: { ...e.data.message, content: [{ type: "text", text: "a1 changed" }] } },
        } as SessionEvent
        : e
    );
    const fixture = fixtureFromLogs([
      { id: "p", createdAt: 1, events: recorded.parent },
      { id: "p-fork", createdAt: 2, parentSession: "p", events: child },
    ]);
    const replay = replayAdapter({ fixture, strict: true });
    const replayed = await scenario(replay.adapters, "again");
    const third = replayed.results[2].reason;
    assert.equal(third.kind === "error" && third.error.code, "REPLAY_DIVERGED");
    assert.match(
      third.kind === "error" ? third.error.message : "",
      /at call 1 of fixture session p-fork \(turn 3, step 1\): message 1 differs: assistant/,
    );
  });
});

describe("replayAdapter() scripts and cursors", () => {
  it("binds each live session to the next unused script and keeps a cursor per session", async () => {
    const { call, textOf, replay } = runtimeFor({ fixture: twoSessions() });
    assert.equal(textOf(await call("x")), "a1");
    assert.equal(textOf(await call("y")), "b1");
    assert.equal(textOf(await call("x")), "a2");
    replay.assertConsumed();
  });

  it("binds a live session to the script recorded under its own id first, whatever order the sessions call in", async () => {
    const { call, textOf, replay } = runtimeFor({ fixture: twoSessions() });
    assert.equal(textOf(await call("B")), "b1");
    assert.equal(textOf(await call("A")), "a1");
    assert.equal(textOf(await call("A")), "a2");
    replay.assertConsumed();
  });

  it("binds a live child <live parent>.<call id> to <recorded parent>.<call id>, whatever order the children call in", async () => {
    // Children recorded in one millisecond: the fixture orders them by id (call_a before call_z).
    const fixture = fixtureFromLogs([
      { id: "P", createdAt: 5, events: log(chunk(1, 1, text("p1")), chunk(1, 1, STOP)) },
      { id: "P.call_a", createdAt: 5, parentSession: "P", events: log(chunk(1, 1, text("a")), chunk(1, 1, STOP)) },
      { id: "P.call_z", createdAt: 5, parentSession: "P", events: log(chunk(1, 1, text("z")), chunk(1, 1, STOP)) },
    ]);
    const { call, textOf, replay } = runtimeFor({ fixture });
    assert.equal(textOf(await call("X")), "p1");
    assert.equal(textOf(await call("X.call_z")), "z");
    assert.equal(textOf(await call("X.call_a")), "a");
    replay.assertConsumed();
  });

  it("among scripts tied on creation time (forks in one millisecond), binds the one whose first request matches", async () => {
    const user = (id: string, t: string): Message => ({
      id,
      role: "user",
      source: { kind: "user" },
      content: [{ type: "text", text: t }],
    });
    const session = (id: string, prompt: string, answer: string, parentSession?: string): FixtureSession => ({
      id,
      createdAt: 7,
      ...(parentSession !== undefined ? { parentSession } : {}),
      events: [],
      firstLiveSeq: 0,
      calls: [{
        turn: 1,
        step: 1,
        seq: 0,
        chunks: [text(answer), STOP],
        request: { messages: [user("m1", prompt)] },
      }],
    });
    // The fork that was made second sorts first (its id is smaller).
    const fixture: Fixture = {
      sessions: [
        session("P", "base", "p"),
        session("a-fork", "two", "second", "P"),
        session("b-fork", "one", "first", "P"),
      ],
    };
    for (const strict of [true, false]) {
      const { call, textOf, replay } = runtimeFor({ fixture, strict });
      const ask = async (id: string, prompt: string) => textOf(await call(id, { messages: [user("live", prompt)] }));
      assert.equal(await ask("p-live", "base"), "p");
      assert.equal(await ask("f1-live", "one"), "first");
      assert.equal(await ask("f2-live", "two"), "second");
      replay.assertConsumed();
    }
  });

  it("binds a session that calls first to the recording its first request matches, not the first created", async () => {
    const user = (t: string): Message => ({
      id: "m",
      role: "user",
      source: { kind: "user" },
      content: [{ type: "text", text: t }],
    });
    const session = (id: string, createdAt: number, prompt: string, answer: string): FixtureSession => ({
      id,
      createdAt,
      events: [],
      firstLiveSeq: 0,
      calls: [{ turn: 1, step: 1, seq: 0, chunks: [text(answer), STOP], request: { messages: [user(prompt)] } }],
    });
    // A was created before B, and B called the model first; the live ids are new (random ids, say).
    const fixture: Fixture = {
      sessions: [session("A", 1, "question for A", "a"), session("B", 2, "question for B", "b")],
    };
    for (const strict of [true, false]) {
      const { call, textOf, replay } = runtimeFor({ fixture, strict });
      assert.equal(textOf(await call("live-b", { messages: [user("question for B")] })), "b");
      assert.equal(textOf(await call("live-a", { messages: [user("question for A")] })), "a");
      replay.assertConsumed();
    }
    // The same request with its keys in another order is the same request.
    const reordered: Message = {
      content: [{ text: "question for B", type: "text" }],
      source: { kind: "user" },
      role: "user",
      id: "x",
    };
    const again = runtimeFor({ fixture, strict: true });
    assert.equal(again.textOf(await again.call("live-b", { messages: [reordered] })), "b");
    // A first request no recording has binds to the next script in order, as before (strict mode then reports it).
    const { call, textOf } = runtimeFor({ fixture });
    assert.equal(textOf(await call("live-x", { messages: [user("something else")] })), "a");
  });

  it("starts a session resumed with calls of its own at the recorded call its history matches", async () => {
    const user = (t: string): Message => ({
      id: t,
      role: "user",
      source: { kind: "user" },
      content: [{ type: "text", text: t }],
    });
    const answer = (t: string): Message => ({
      id: `a-${t}`,
      role: "assistant",
      source: { kind: "model", provider: "replay", model: "m" },
      content: [{ type: "text", text: t }],
    });
    // Recorded from turn 1 on; the live session was stored with turn 1 before this run and resumed for turn 2.
    const turn1 = [user("one")];
    const turn2 = [user("one"), answer("first"), user("two")];
    const fixture: Fixture = {
      sessions: [{
        id: "s",
        createdAt: 1,
        events: [],
        firstLiveSeq: 0,
        calls: [
          { turn: 1, step: 1, seq: 3, chunks: [text("first"), STOP], request: { messages: turn1 } },
          { turn: 2, step: 1, seq: 9, chunks: [text("second"), STOP], request: { messages: turn2 } },
        ],
      }],
    };
    for (const strict of [true, false]) {
      const { call, textOf, replay } = runtimeFor({ fixture, strict });
      assert.equal(textOf(await call("s", { messages: turn2 })), "second");
      replay.assertConsumed();
    }
    // A session that starts at its first call plays from there, as always.
    const { call, textOf } = runtimeFor({ fixture, strict: true });
    assert.equal(textOf(await call("s", { messages: turn1 })), "first");
    assert.equal(textOf(await call("s", { messages: turn2 })), "second");
    // A history no recorded call has (drifted: as long as the second call's, equal to none) starts at the first call,
    // and the calls it did not make are reported, not skipped.
    const drifted = runtimeFor({ fixture });
    const changed = [user("one"), answer("first"), user("something else")];
    assert.equal(drifted.textOf(await drifted.call("s", { messages: changed })), "first");
    assert.throws(() => drifted.replay.assertConsumed(), { code: "REPLAY_NOT_CONSUMED" });
  });

  it("replays a session resumed after a crash inside a model call, from the prefix the crash left stored", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-replay-crash-"));
    try {
      // What a crash leaves on storage: the log up to a chunk of the second turn's call, with no finish.
      const cut = scriptedAdapter([
        textResponse("first"),
        { hang: true, chunks: [{ type: "block-start", index: 0, blockType: "text" }, text("thinking")] },
      ]);
      const route = { provider: "scripted", model: "scripted-model" };
      const crashing = await createHarness({ adapters: [cut], model: route });
      const agent = await crashing.createAgent({ id: "c" });
      await agent.run("one");
      const second = agent.run("two").catch(() => undefined);
      const streaming = () =>
        agent.session.events.some((e) => e.type === "assistant/chunk" && e.data.turn === 2 && e.data.step === 1);
      while (!streaming()) {
        if (agent.session.events.length > 1000) assert.fail("the second call never streamed");
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      const left = agent.session.events.slice();
      await crashing.dispose();
      await second;
      const stored = async (name: string) => {
        const storage = fileStorage(join(dir, name));
        await storage.create({ id: "c", createdAt: 1 }, { events: left });
        return storage;
      };
      // Recorded: resumed (the load's repair closes the cut call's step and turn), then a third turn.
      const third = async (adapters: readonly LlmAdapter[], storage: Awaited<ReturnType<typeof stored>>) => {
        const harness = await createHarness({ adapters, model: route, storage });
        const resumed = await harness.resumeAgent("c");
        const result = await resumed.run("three");
        const events = resumed.session.events.slice();
        await harness.dispose();
        return { text: result.text, events };
      };
      const recorded = await third([scriptedAdapter([textResponse("after the crash")])], await stored("recorded"));
      const fixture = await loadFixture(join(dir, "recorded"));
      // The cut call ends aborted (it replays as a hang), and the calls after the resume are in the script.
      const finishes = fixture.sessions[0].calls.map((c) => c.chunks.at(-1));
      assert.deepEqual(finishes.map((f) => f?.type === "finish" && f.reason.kind), ["stop", "aborted", "stop"]);
      // Replayed strictly from the same stored prefix: the resumed session plays from the call after the crash.
      const replay = replayAdapter({ fixture, strict: true });
      const replayed = await third(replay.adapters, await stored("replayed"));
      replay.assertConsumed();
      assert.equal(replayed.text, "after the crash");
      assert.deepEqual(normalizeLog(replayed.events), normalizeLog(recorded.events));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a recorded session that never called the model takes no live session's place", async () => {
    const fixture = fixtureFromLogs([
      { id: "quiet", events: log() },
      { id: "A", events: log(chunk(1, 1, text("a1")), chunk(1, 1, STOP)) },
    ]);
    const { call, textOf, replay } = runtimeFor({ fixture });
    assert.equal(textOf(await call("renamed")), "a1");
    replay.assertConsumed();
  });

  it("plays recorded chunks verbatim: a placeholder-like text the model wrote is not filled", async () => {
    const fixture = fixtureFromLogs([{
      id: "A",
      events: log(chunk(1, 1, text("Write {{fromRequest:(\\w+)}}")), chunk(1, 1, STOP)),
    }]);
    const { call, textOf, replay } = runtimeFor({ fixture });
    assert.equal(textOf(await call("A")), "Write {{fromRequest:(\\w+)}}");
    replay.assertConsumed();
  });

  it("a recorded call the user cancelled replays as a hang: it ends when the live call is aborted", async () => {
    const aborted: StreamChunk = {
      type: "finish",
      reason: { kind: "aborted", failure: { code: "ABORTED", message: "x" } },
    };
    const fixture = fixtureFromLogs([{ id: "A", events: log(chunk(1, 1, text("Hal")), chunk(1, 1, aborted)) }]);
    const { call, replay } = runtimeFor({ fixture });
    const controller = new AbortController();
    const playing = call("A", {}, controller.signal);
    const early = await Promise.race([
      playing.then(() => "finished"),
      new Promise((r) => setTimeout(() => r("waiting"), 50)),
    ]);
    assert.equal(early, "waiting");
    controller.abort();
    const chunks = await playing;
    assert.equal(finishOf(chunks)?.kind, "aborted");
    replay.assertConsumed();
  });

  it("fails loudly past the end of a session's script", async () => {
    const { call, replay } = runtimeFor({ fixture: twoSessions() });
    await call("x");
    await call("y");
    const reason = finishOf(await call("y"));
    assert.equal(reason?.kind, "error");
    assert.equal(reason?.kind === "error" && reason.failure.code, "REPLAY_EXHAUSTED");
    assert.match(
      reason?.kind === "error" ? reason.failure.message : "",
      /^Replay ran past the end of fixture session B: session y made call 2, the script has 1$/,
    );
    assert.throws(() => replay.assertConsumed(), /Replay ran past the end of fixture session B/);
  });

  it("fails loudly when a session finds no script left", async () => {
    const { call, replay } = runtimeFor({ fixture: twoSessions() });
    await call("x");
    await call("y");
    const reason = finishOf(await call("z"));
    assert.equal(
      reason?.kind === "error" && reason.failure.message,
      "Replay has no script left for session z: the fixture's 2 sessions are all bound",
    );
    assert.equal(replay.failures.length, 1);
  });

  it("assertConsumed() names the scripts left unplayed", async () => {
    const { call, replay } = runtimeFor({ fixture: twoSessions() });
    await call("x");
    assert.throws(
      () => replay.assertConsumed(),
      (error: unknown) =>
        HarnessError.isInstance(error, "REPLAY_NOT_CONSUMED") &&
        error.message ===
          "Replay left calls unplayed: fixture session A (live x) played 1 of 2 calls; fixture session B was never bound (1 calls)",
    );
  });

  it("plays override entries: patches, throw and hang", async () => {
    const { call, textOf, replay } = runtimeFor({
      fixture: twoSessions(),
      overrides: {
        patches: [
          {
            at: 0,
            entry: {
              throw: {
                chunks: [{ type: "block-start", index: 0, blockType: "text" }],
                message: "Too many",
                code: "RATE_LIMIT",
              },
            },
          },
          {
            at: 1,
            entry: { hang: true, chunks: [{ type: "block-start", index: 0, blockType: "text" }, text("wait")] },
          },
          { session: "B", at: 1, entry: { chunks: [text("b2"), STOP] } },
        ],
      },
    });
    const thrown = finishOf(await call("x"));
    assert.deepEqual(thrown, { kind: "error", failure: { code: "RATE_LIMIT", message: "Too many" } });
    const controller = new AbortController();
    const hung = call("x", {}, controller.signal);
    controller.abort();
    const reason = finishOf(await hung);
    assert.equal(reason?.kind, "aborted");
    await call("y");
    assert.equal(textOf(await call("y")), "b2");
    replay.assertConsumed();
  });

  it("replaces the first session's script with an array of entries", async () => {
    const { call, textOf, replay } = runtimeFor({
      fixture: twoSessions(),
      overrides: [{ chunks: [text("only"), STOP] }],
    });
    assert.equal(textOf(await call("x")), "only");
    await call("y");
    replay.assertConsumed();
  });

  it("fills {{fromRequest:<regex>}} placeholders from the live request", async () => {
    const { call, textOf, replay } = runtimeFor({
      fixture: twoSessions(),
      overrides: [{ chunks: [text("Opening {{fromRequest:file (\\S+)}} now"), STOP] }, {
        chunks: [text("{{fromRequest:nothing-like-this}}"), STOP],
      }],
    });
    const user = {
      id: "u",
      role: "user" as const,
      content: [{ type: "text" as const, text: "open file notes.md" }],
      source: { kind: "user" as const },
    };
    assert.equal(textOf(await call("x", { messages: [user] })), "Opening notes.md now");
    const reason = finishOf(await call("x", { messages: [user] }));
    assert.equal(reason?.kind === "error" && reason.failure.code, "REPLAY_PLACEHOLDER");
    assert.throws(() => replay.assertConsumed(), /matches nothing in the live request/);
  });

  it("fills placeholders in tool-call arguments JSON-escaped, so quotes and backslashes keep the JSON valid", async () => {
    const args = '{"path":"{{fromRequest:open (.+)}}"}';
    const { call, replay } = runtimeFor({
      fixture: twoSessions(),
      overrides: [{
        chunks: [
          { type: "block-start", index: 0, blockType: "tool-call" },
          { type: "tool-call-delta", index: 0, id: "c1", name: "read", argumentsDelta: args },
          { type: "block-end", index: 0, block: { type: "tool-call", id: "c1", name: "read", arguments: args } },
          { type: "finish", reason: { kind: "tool-calls" } },
        ],
      }],
    });
    const path = 'D:\\notes\\my "draft".txt';
    const user = {
      id: "u",
      role: "user" as const,
      content: [{ type: "text" as const, text: `open ${path}` }],
      source: { kind: "user" as const },
    };
    const chunks = await call("x", { messages: [user] });
    const delta = chunks.find((c) => c.type === "tool-call-delta");
    const end = chunks.find((c) => c.type === "block-end");
    assert.deepEqual(JSON.parse(delta?.type === "tool-call-delta" ? delta.argumentsDelta : ""), { path });
    assert.deepEqual(
      JSON.parse(end?.type === "block-end" && end.block.type === "tool-call" ? end.block.arguments : ""),
      { path },
    );
    assert.equal(replay.failures.length, 0);
  });

  it("rejects malformed options and overrides at once", () => {
    assert.throws(() => replayAdapter(undefined as never), /needs a fixture/);
    assert.throws(() => replayAdapter({ fixture: twoSessions(), providers: [] }), /non-empty array/);
    assert.throws(
      () => replayAdapter({ fixture: twoSessions(), overrides: { patches: [{ at: 5, entry: { chunks: [] } }] } }),
      /Replay patch 0 is at call 5, but fixture session A has 2 calls/,
    );
    assert.throws(
      () =>
        replayAdapter({
          fixture: twoSessions(),
          overrides: { patches: [{ session: "nope", at: 0, entry: { chunks: [] } }] },
        }),
      /names fixture session "nope"/,
    );
    assert.throws(
      () => replayAdapter({ fixture: twoSessions(), overrides: [{ nothing: 1 } as never] }),
      /must be \{ chunks \}/,
    );
    for (const overrides of [null, 5, { patches: [null] }]) {
      assert.throws(() => replayAdapter({ fixture: twoSessions(), overrides: overrides as never }), {
        code: "INVALID_ARGS",
      });
    }
  });

  it("refuses an override chunk of an unknown type or shape when the overrides are given, naming its path", () => {
    const bogus = { type: "bogus-delta", index: 0, text: "x" } as unknown as StreamChunk;
    const cases: [unknown, string][] = [
      [[{ chunks: [text("a"), bogus, STOP] }], "overrides[0].chunks[1].type"],
      [
        { patches: [{ at: 0, entry: { chunks: [STOP] } }, { at: 1, entry: { chunks: [bogus] } }] },
        "overrides.patches[1].entry.chunks[0].type",
      ],
      [[{ throw: { message: "m", chunks: [bogus] } }], "overrides[0].throw.chunks[0].type"],
      [[{ hang: true, chunks: [text("a"), bogus] }], "overrides[0].chunks[1].type"],
      [[{ chunks: [null] }], "overrides[0].chunks[0]"],
      [[{ chunks: [{ type: "block-start", index: -1, blockType: "text" }] }], "overrides[0].chunks[0].index"],
      [[{ chunks: [{ type: "block-start", index: 0, blockType: "image" }] }], "overrides[0].chunks[0].blockType"],
      [[{ chunks: [{ type: "finish" }] }], "overrides[0].chunks[0].reason"],
      [[{ throw: { message: "m", chunks: "no" } }], "overrides[0].throw.chunks"],
    ];
    for (const [overrides, path] of cases) {
      assert.throws(
        () => replayAdapter({ fixture: twoSessions(), overrides: overrides as never }),
        (error: unknown) =>
          HarnessError.isInstance(error, "INVALID_ARGS") && error.details?.path === path &&
          error.message.includes(path),
        path,
      );
    }
    // Every chunk type of the protocol passes, as do a throw and a hang without chunks.
    replayAdapter({
      fixture: twoSessions(),
      overrides: [
        {
          chunks: [
            { type: "block-start", index: 0, blockType: "tool-call" },
            { type: "tool-call-delta", index: 0, id: "c", name: "t", argumentsDelta: "{}" },
            { type: "block-end", index: 0, block: { type: "tool-call", id: "c", name: "t", arguments: "{}" } },
            { type: "block-start", index: 1, blockType: "reasoning" },
            { type: "reasoning-delta", index: 1, text: "hm" },
            { type: "usage", usage: { inputTokens: 1, outputTokens: 1 } },
            { type: "finish", reason: { kind: "tool-calls" } },
          ],
        },
        { throw: { message: "m" } },
        { hang: true },
      ],
    });
  });

  it("plays a recorded chunk of a type it does not know, as the runtime took and logged it", async () => {
    const bogus = { type: "bogus-delta", index: 0, text: "x" } as unknown as StreamChunk;
    const fixture = fixtureFromLogs([{
      id: "A",
      events: log(chunk(1, 1, text("a")), chunk(1, 1, bogus), chunk(1, 1, STOP)),
    }]);
    const { call, replay } = runtimeFor({ fixture });
    assert.deepEqual(await call("x"), [text("a"), bogus, STOP]);
    replay.assertConsumed();
  });
});

describe("replayAdapter() request retention", () => {
  it("keeps only the latest keepRequests requests, and counts them all", async () => {
    const fixture = await recordConversation({ idPrefix: "rec", clock: 1_000 });
    const replay = replayAdapter({ fixture, keepRequests: 1 });
    await runSession(replay.adapters, { idPrefix: "keep", clock: 9_000_000 });
    assert.ok(replay.requestCount >= 2, "the fixture makes several calls");
    assert.equal(replay.requests.length, 1);
    assert.throws(() => replayAdapter({ fixture, keepRequests: -1 }), { code: "INVALID_ARGS" });
    assert.throws(() => replayAdapter({ fixture, keepRequests: 1.5 }), { code: "INVALID_ARGS" });
    const all = replayAdapter({ fixture, keepRequests: Infinity });
    await runSession(all.adapters, { idPrefix: "all", clock: 9_000_000 });
    assert.equal(all.requests.length, all.requestCount);
  });
});
