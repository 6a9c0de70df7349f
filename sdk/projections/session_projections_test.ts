import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  childSessions,
  createHarness,
  defineProjection,
  foldProjection,
  Session,
  type SessionEvent,
  SessionProjections,
  SHIPPED_PROJECTIONS,
  todos,
  turnBoundary,
  usageTotals,
} from "../../mod.ts";
import { arbSessionLog, propertyRuns, replayLog, scriptedAdapter, textResponse } from "../../testing/mod.ts";
import { memoryStorage } from "../persistence/memory_storage.ts";

/** A property over generated logs and read points, with a fresh service of the shipped units and an empty session. */
function overLogs(
  maxCuts: number,
  check: (log: readonly SessionEvent[], cuts: number[], projections: SessionProjections, session: Session) => void,
  numRuns: number,
): void {
  fc.assert(
    fc.property(
      arbSessionLog({ maxTurns: 4, maxSteps: 3 }),
      fc.array(fc.nat(), { maxLength: maxCuts }),
      (log, cuts) => {
        const projections = new SessionProjections();
        for (const unit of SHIPPED_PROJECTIONS) projections.register(unit);
        check(log, cuts, projections, Session.create("live", undefined, { now: () => 0 }));
      },
    ),
    { numRuns: Math.min(propertyRuns(), numRuns) },
  );
}

describe("SessionProjections", () => {
  it("folding incrementally equals folding the whole log from scratch, for every shipped unit", () => {
    overLogs(6, (log, cuts, projections, session) => {
      // Read every unit at random points while the log grows: each read folds only what is new.
      const readAt = new Set(cuts.map((c) => c % (log.length + 1)));
      let count = 0;
      replayLog(session, log, () => {
        count++;
        if (readAt.has(count)) { for (const unit of SHIPPED_PROJECTIONS) projections.stateOf(session, unit); }
      });
      for (const unit of SHIPPED_PROJECTIONS) {
        assert.deepEqual(projections.stateOf(session, unit), foldProjection(unit, session.events), unit.name);
        assert.deepEqual(projections.stateOf(session.events, unit), foldProjection(unit, log), unit.name);
      }
    }, 300);
  });

  it("a prefix of a live session (upTo) folds like its events below upTo, apart from the whole log's fold", () => {
    overLogs(8, (log, cuts, projections, session) => {
      replayLog(session, log);
      // Prefixes read in any order (growing, as a stored prefix does, or not), with the whole log read between.
      for (const cut of cuts) {
        const upTo = cut % (session.seq + 2); // one past the end too: clamped to the log
        for (const unit of SHIPPED_PROJECTIONS) {
          const expected = foldProjection(
            unit,
            session.slice(0, Math.min(upTo, session.seq)),
            undefined,
            session.header,
          );
          assert.deepEqual(projections.stateOf(session, unit, { upTo }), expected, `${unit.name} upTo ${upTo}`);
          assert.deepEqual(projections.stateOf(session, unit), foldProjection(unit, session.events), unit.name);
        }
      }
    }, 200);
    const projections = new SessionProjections();
    projections.register(turnBoundary);
    for (const upTo of [-1, 1.5, Number.NaN]) {
      assert.throws(() => projections.stateOf(Session.create("s"), turnBoundary, { upTo }), { code: "INVALID_ARGS" });
    }
    const session = Session.create("s");
    session.append("turn/start", { turn: 1 });
    assert.deepEqual(projections.snapshot(session, { upTo: 0 }).turnBoundary, { turns: 0, completedPrefix: 0 });
  });

  it("the shipped units see what the generated logs hold", () => {
    // Guards the property above against folding nothing: some generated logs carry each kind of event.
    const seen = { todos: false, children: false, chunkUsage: false, open: false };
    fc.assert(
      fc.property(arbSessionLog(), (log) => {
        if (foldProjection(todos, log).length > 0) seen.todos = true;
        if (foldProjection(childSessions, log).length > 0) seen.children = true;
        if (log.some((e) => e.type === "assistant/chunk" && e.data.chunk.type === "usage")) seen.chunkUsage = true;
        const cut = log.findIndex((e) => e.type === "step/start");
        if (cut >= 0 && foldProjection(turnBoundary, log.slice(0, cut + 1)).open?.step === 1) seen.open = true;
      }),
      { numRuns: 200, seed: 7 },
    );
    assert.deepEqual(seen, { todos: true, children: true, chunkUsage: true, open: true });
  });

  it("turnBoundary tracks the open turn, its step and the completed prefix", () => {
    const session = Session.create("s", undefined, { now: () => 0 });
    session.append("turn/start", { turn: 1 });
    session.append("step/start", { turn: 1, step: 1 });
    const projections = new SessionProjections();
    projections.register(turnBoundary);
    assert.deepEqual(projections.stateOf(session, turnBoundary), {
      turns: 1,
      open: { turn: 1, startSeq: 0, step: 1 },
      completedPrefix: 0,
    });
    session.append("step/end", { turn: 1, step: 1 });
    session.append("turn/end", { turn: 1, reason: { kind: "completed" } });
    session.append("compaction/start", { reason: "manual" });
    assert.deepEqual(projections.stateOf(session, turnBoundary), {
      turns: 1,
      lastEnd: { turn: 1, reason: { kind: "completed" }, seq: 3 },
      completedPrefix: 5,
    });
  });

  it("usageTotals counts usage chunks, and a message's usage only when its step streamed none", () => {
    const session = Session.create("s", undefined, { now: () => 0 });
    const message = (turn: number, id: string) => ({
      turn,
      step: 1,
      message: {
        id,
        role: "assistant" as const,
        content: [],
        source: { kind: "model" as const, provider: "p", model: "m" },
      },
      usage: { inputTokens: 10, outputTokens: 10 },
    });
    session.append("turn/start", { turn: 1 });
    const c = session.append("assistant/chunk", {
      turn: 1,
      step: 1,
      chunk: { type: "usage", usage: { inputTokens: 10, outputTokens: 10, reasoningTokens: 4 } },
    });
    session.append("assistant/message", message(1, "a1"), { surfaceOp: "append", sourceEventSeqs: [c.seq] });
    session.append("turn/end", { turn: 1, reason: { kind: "completed" } });
    session.append("turn/start", { turn: 2 });
    session.append("assistant/message", message(2, "a2"), { surfaceOp: "append", sourceEventSeqs: [] });
    const state = foldProjection(usageTotals, session.events);
    assert.deepEqual(state.total, { inputTokens: 20, outputTokens: 20, reasoningTokens: 4 });
    assert.deepEqual(state.turn, { inputTokens: 10, outputTokens: 10 });
  });

  it("usageTotals counts a compaction's usage in the turn it ran in, after the turn's own usage too", () => {
    const session = Session.create("s", undefined, { now: () => 0 });
    const compaction = (inputTokens: number) => {
      session.append("compaction/start", { reason: "overflow" });
      session.append("compaction/end", { outcome: "failed", error: "x", usage: { inputTokens, outputTokens: 1 } });
    };
    session.append("turn/start", { turn: 1 });
    session.append("assistant/chunk", {
      turn: 1,
      step: 1,
      chunk: { type: "usage", usage: { inputTokens: 10, outputTokens: 1 } },
    });
    compaction(100);
    let state = foldProjection(usageTotals, session.events);
    assert.deepEqual([state.turn.inputTokens, state.total.inputTokens], [110, 110]);
    session.append("turn/end", { turn: 1, reason: { kind: "completed" } });
    compaction(1000); // between turns: the session's, not the last turn's
    state = foldProjection(usageTotals, session.events);
    assert.deepEqual([state.turn.inputTokens, state.total.inputTokens], [110, 1110]);
  });

  it("usageTotals counts one usage chunk per model call, the first (as the call's message keeps), and each retry's", () => {
    const session = Session.create("s", undefined, { now: () => 0 });
    const usage = (inputTokens: number) => ({ type: "usage" as const, usage: { inputTokens, outputTokens: 1 } });
    session.append("turn/start", { turn: 1 });
    session.append("assistant/chunk", { turn: 1, step: 1, chunk: usage(5) });
    session.append("llm/retry", {
      turn: 1,
      step: 1,
      attempt: 1,
      delayMs: 0,
      failure: { code: "SERVER", message: "busy" },
    });
    session.append("assistant/chunk", { turn: 1, step: 1, chunk: usage(100) });
    session.append("assistant/chunk", { turn: 1, step: 1, chunk: usage(1000) });
    session.append("assistant/chunk", { turn: 1, step: 2, chunk: usage(7) });
    const state = foldProjection(usageTotals, session.events);
    assert.deepEqual(state.total, { inputTokens: 112, outputTokens: 3 });
    assert.deepEqual(state.turn, { inputTokens: 112, outputTokens: 3 });
  });

  it("usageTotals of a fork counts the fork's own calls; its seed's, its parent's, are inherited", async () => {
    const storage = memoryStorage();
    const answer = (inputTokens: number) => textResponse("ok", { usage: { inputTokens, outputTokens: 1 } });
    const harness = await createHarness({
      adapters: [scriptedAdapter([answer(100), answer(7), answer(30)])],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
    });
    const projections = harness.ctx.service("sessionProjections");
    const parent = await harness.createAgent({ id: "parent" });
    await parent.run("one");
    const fork = await harness.forkAgent(parent.session, { id: "fork" });
    // Before the fork runs anything, it has spent nothing.
    assert.deepEqual(projections.stateOf(fork.session, usageTotals).total, { inputTokens: 0, outputTokens: 0 });
    await fork.run("two");
    await fork.run("three");
    const state = projections.stateOf(fork.session, usageTotals);
    assert.deepEqual(state.total, { inputTokens: 37, outputTokens: 2 });
    assert.deepEqual(state.inherited, { inputTokens: 100, outputTokens: 1 });
    assert.deepEqual(state.turn, { inputTokens: 30, outputTokens: 1 });
    assert.deepEqual(projections.snapshot(fork.session).usageTotals, { inputTokens: 37, outputTokens: 2 });
    assert.deepEqual(projections.stateOf(parent.session, usageTotals).total, { inputTokens: 100, outputTokens: 1 });
    assert.equal(projections.stateOf(parent.session, usageTotals).inherited, undefined);
    // The same from storage with the header, and after a resume (whose own seed end is no fork's).
    const events = fork.session.events;
    await harness.dispose();
    const loaded = await storage.inspect("fork");
    assert.deepEqual(foldProjection(usageTotals, loaded.events, undefined, loaded.header).total, state.total);
    const again = await createHarness({
      adapters: [scriptedAdapter([answer(5)])],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
    });
    const resumed = await again.resumeAgent("fork");
    await resumed.run("four");
    const after = again.ctx.service("sessionProjections").stateOf(resumed.session, usageTotals);
    assert.deepEqual([after.total, after.inherited], [{ inputTokens: 42, outputTokens: 3 }, state.inherited]);
    await again.dispose();
    // Bare events carry no header: read as a log of their own, the seed counts.
    assert.deepEqual(foldProjection(usageTotals, events).total, { inputTokens: 137, outputTokens: 3 });
  });

  it("reading or snapshotting an unregistered unit fails with PROJECTION_NOT_REGISTERED", () => {
    const projections = new SessionProjections();
    projections.register(todos);
    const session = Session.create("s");
    assert.throws(() => projections.stateOf(session, usageTotals), { code: "PROJECTION_NOT_REGISTERED" });
    assert.throws(() => projections.snapshot(session, { units: ["usageTotals"] }), {
      code: "PROJECTION_NOT_REGISTERED",
    });
    assert.throws(() => projections.register(todos), { code: "PROJECTION_ALREADY_REGISTERED" });
    assert.throws(() => defineProjection({ name: "", initial: () => 0, fold: (s) => s }), { code: "INVALID_ARGS" });
  });

  it("snapshot() gives each unit's client view", () => {
    const projections = new SessionProjections();
    for (const unit of SHIPPED_PROJECTIONS) projections.register(unit);
    const session = Session.create("s", undefined, { now: () => 0 });
    session.append("turn/start", { turn: 1 });
    const snap = projections.snapshot(session);
    assert.deepEqual(Object.keys(snap), ["turnBoundary", "todos", "usageTotals", "childSessions"]);
    assert.deepEqual(snap.usageTotals, { inputTokens: 0, outputTokens: 0 });
    assert.deepEqual(snap.todos, []);
  });
});
