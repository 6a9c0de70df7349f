import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  checkInvariants,
  childSessions,
  createHarness,
  defineTool,
  fileStorage,
  type GenerateOptions,
  LlmFailure,
  memoryStorage,
  pluginCtx,
  type Session,
  type SessionEvent,
} from "../../mod.ts";
import { scriptedAdapter, type ScriptEntry, textResponse, toolCallResponse } from "../../testing/mod.ts";
import { loadFixture, replayAdapter } from "../../replay/mod.ts";
import { lookup, scenarioHarness, secret } from "./_test_scenario.ts";
import { inProcessSubagents, type SubagentDefinition, type SubagentServices } from "./mod.ts";
import { childCommand } from "../kernel/_test_child_command.ts";
import { resolveConfig } from "../config/mod.ts";

const delegate = toolCallResponse([
  {
    id: "call_a",
    name: "task",
    arguments: JSON.stringify({ agent: "worker", description: "First task", prompt: "Define alpha" }),
  },
  {
    id: "call_b",
    name: "task",
    arguments: JSON.stringify({ agent: "worker", description: "Second task", prompt: "Define beta" }),
  },
]);

function toolResultTexts(request: GenerateOptions | undefined): string[] {
  const out: string[] = [];
  for (const message of request?.messages ?? []) {
    for (const block of message.content) {
      if (block.type !== "tool-result") continue;
      for (const inner of block.content) if (inner.type === "text") out.push(inner.text);
    }
  }
  return out;
}

function turnEnds(events: readonly SessionEvent[]): unknown[] {
  return events.filter((e) => e.type === "turn/end").map((e) => e.type === "turn/end" && e.data.reason);
}

/** The parent delegates two tasks; child A answers only once child B's request has arrived. */
function parallelModel() {
  let releaseB: () => void = () => {};
  const bArrived = new Promise<void>((resolve) => (releaseB = resolve));
  const state = { overlapped: false };
  const model = scriptedAdapter(async (request): Promise<ScriptEntry> => {
    const id = request.sessionId;
    if (id === "parent") {
      return request.messages.some((m) => m.role === "assistant") ? textResponse("Both are defined.") : delegate;
    }
    if (id === "parent.call_b") {
      releaseB();
      return textResponse("Beta is the second letter.");
    }
    // Child A waits for child B: only children that run at the same time get past this.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, 5000)));
    await Promise.race([bArrived.then(() => (state.overlapped = true)), timeout]);
    clearTimeout(timer);
    return textResponse("Alpha is the first letter.");
  });
  return { model, state };
}

describe("inProcessSubagents", () => {
  it("runs two delegations in parallel, answers in model order, persists, resumes in a new process and replays strictly", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-subagents-"));
    try {
      const { model, state } = parallelModel();
      const harness = await scenarioHarness(model, { storage: fileStorage(dir) });
      const parent = await harness.createAgent({ id: "parent" });
      const result = await parent.run("Define alpha and beta");
      assert.equal(result.text, "Both are defined.");
      assert.equal(state.overlapped, true, "the two children ran at the same time");
      const last = model.requests.filter((r) => r.sessionId === "parent").at(-1);
      assert.deepEqual(toolResultTexts(last), ["Alpha is the first letter.", "Beta is the second letter."]);

      const children = harness.ctx.service("sessionProjections").stateOf(parent.session, childSessions);
      assert.deepEqual(children.map((c) => [c.session, c.callId, c.mode, c.agent]), [
        ["parent.call_a", "call_a", "in-process", "worker"],
        ["parent.call_b", "call_b", "in-process", "worker"],
      ]);
      // The child's own prompt and restricted tools: no "secret", and no "task" at the depth limit.
      const childRequest = model.requests.find((r) => r.sessionId === "parent.call_a")!;
      assert.equal(childRequest.system, "You are a worker. Answer in one line.");
      assert.deepEqual(childRequest.tools?.map((t) => t.name), ["lookup"]);
      assert.deepEqual(model.requests.find((r) => r.sessionId === "parent")?.tools?.map((t) => t.name), [
        "lookup",
        "secret",
        "task",
      ]);
      await harness.dispose();

      // Persisted: three logs, each valid, the children naming their parent.
      const storage = fileStorage(dir);
      const logs = new Map<string, readonly SessionEvent[]>();
      for (const id of ["parent", "parent.call_a", "parent.call_b"]) {
        const loaded = await storage.load(id);
        assert.deepEqual(checkInvariants(loaded.events), [], id);
        if (id !== "parent") {
          assert.equal(loaded.header.parentSession, "parent");
          assert.equal(loaded.header.delegationDepth, 1);
        }
        logs.set(id, loaded.events);
      }
      assert.deepEqual(turnEnds(logs.get("parent.call_a")!), [{ kind: "completed" }]);

      // Strict replay of the whole tree from the storage directory.
      const fixture = await loadFixture(dir);
      assert.deepEqual(fixture.sessions.map((s) => s.id), ["parent", "parent.call_a", "parent.call_b"]);
      const replay = replayAdapter({ fixture, strict: true });
      const replayed = await scenarioHarness(replay);
      const again = await replayed.createAgent({ id: "parent" });
      const replayResult = await again.run("Define alpha and beta");
      assert.equal(replayResult.text, "Both are defined.");
      replay.assertConsumed();
      await replayed.dispose();

      // Resumed in a new process: the parent finds its children through the projection.
      const script = fileURLToPath(new URL("./_test_resume_tree.ts", import.meta.url));
      const out = await runChild(script, dir);
      assert.deepEqual(out, {
        children: ["parent.call_a", "parent.call_b"],
        childParent: "parent",
        childOrigin: "subagent",
        parentText: "Parent again",
        childText: "Child parent.call_a again",
        childSystem: "You are a worker. Answer in one line.",
        violations: [],
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("cancelling the parent mid-child aborts both children with cause parent", async () => {
    let started = 0;
    let bothStarted: () => void = () => {};
    const ready = new Promise<void>((resolve) => (bothStarted = resolve));
    const model = scriptedAdapter((request): ScriptEntry => {
      if (request.sessionId === "parent") return delegate;
      if (++started === 2) bothStarted();
      return { hang: true, chunks: [{ type: "block-start", index: 0, blockType: "text" }] };
    });
    const harness = await scenarioHarness(model);
    const sessions: Session[] = [];
    harness.ctx.on("session/created", (s) => void sessions.push(s));
    const parent = await harness.createAgent({ id: "parent" });
    const run = parent.run("Define alpha and beta");
    await ready;
    parent.cancel("user");
    const result = await run;
    assert.deepEqual(result.reason, { kind: "aborted", reason: "user" });
    const children = sessions.filter((s) => s.header.parentSession === "parent");
    assert.equal(children.length, 2);
    for (const child of children) {
      assert.deepEqual(turnEnds(child.events), [{ kind: "aborted", reason: "parent" }]);
      assert.deepEqual(checkInvariants(child.events), []);
    }
    assert.deepEqual(checkInvariants(parent.session.events), []);
    const results = parent.session.events.filter((e) => e.type === "tool/result");
    assert.deepEqual(results.map((e) => e.type === "tool/result" && e.data.error?.code), ["ABORTED", "ABORTED"]);
    await harness.dispose();
  });

  for (const [kind, mode] of [["memory", "in-process"], ["file", "in-process"], ["file", "fork"]] as const) {
    it(`cancelling the parent while its children start stores none of them (${kind} storage, ${mode})`, async () => {
      const model = scriptedAdapter((request): ScriptEntry =>
        request.sessionId === "parent" ? delegate : textResponse(`done by ${request.sessionId}`)
      );
      const dir = kind === "file" ? await mkdtemp(join(tmpdir(), "dsh-subagents-")) : undefined;
      try {
        const storage = dir !== undefined ? fileStorage(dir) : memoryStorage();
        const harness = await scenarioHarness(model, { storage, mode });
        const parent = await harness.createAgent({ id: "parent" });
        const children: string[] = [];
        harness.ctx.on("session/created", (s) => {
          if (s.id === "parent") return;
          children.push(s.id);
          parent.cancel("user");
        });
        const result = await parent.run("Define alpha and beta");
        assert.deepEqual(result.reason, { kind: "aborted", reason: "user" });
        // Let the children's starts run out.
        while (harness.sessions.get("parent.call_a") ?? harness.sessions.get("parent.call_b")) {
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        const linked = harness.ctx.service("sessionProjections").stateOf(parent.session, childSessions);
        await harness.dispose();
        assert.deepEqual(children, ["parent.call_a", "parent.call_b"]);
        assert.equal(model.requests.filter((r) => r.sessionId !== "parent").length, 0, "no child asked the model");
        assert.deepEqual(linked, []);
        // The children were stored before the cancel was seen (a child is stored before it is linked): their logs
        // (a header, or a fork's seed) are deleted with the abandoned start, not left unlinked.
        for (const id of children) assert.equal(await storage.stat(id), undefined, id);
        assert.deepEqual((await storage.list()).map((h) => h.id), ["parent"]);
        if (dir !== undefined) assert.deepEqual(await readdir(dir), ["parent"], "no folder is left behind");
        assert.deepEqual(checkInvariants(parent.session.events), []);
      } finally {
        if (dir !== undefined) await rm(dir, { recursive: true, force: true });
      }
    });
  }

  it("ten delegations of one step add one abort listener to the turn's signal, not one each", async () => {
    // Ten: the default number of parallel tool calls.
    const calls = Array.from({ length: 10 }, (_, i) => ({
      id: `c${i}`,
      name: "task",
      arguments: JSON.stringify({ agent: "worker", description: "x", prompt: `p${i}` }),
    }));
    let waiting = 0;
    let release: () => void = () => {};
    const all = new Promise<void>((resolve) => (release = resolve));
    const model = scriptedAdapter(async (request): Promise<ScriptEntry> => {
      if (request.sessionId === "parent") {
        if (request.messages.some((m) => m.content.some((b) => b.type === "tool-result"))) return textResponse("ok");
        return toolCallResponse(calls);
      }
      // Every child is running (and listening) at once.
      if (++waiting === calls.length) release();
      await all;
      return textResponse(`done by ${request.sessionId}`);
    });
    const harness = await scenarioHarness(model);
    const parent = await harness.createAgent({ id: "parent" });
    // Count the abort listeners each signal holds at most (Node warns of a leak past 10 on one target).
    const proto = EventTarget.prototype;
    const { addEventListener: add, removeEventListener: remove } = proto;
    const held = new Map<EventTarget, Set<unknown>>();
    let most = 0;
    proto.addEventListener = function (this: EventTarget, type: string, listener: unknown, ...rest: unknown[]) {
      if (type === "abort" && this instanceof AbortSignal && listener) {
        const set = held.get(this) ?? new Set();
        held.set(this, set.add(listener));
        most = Math.max(most, set.size);
      }
      return (add as (...args: unknown[]) => void).call(this, type, listener, ...rest);
    } as typeof proto.addEventListener;
    proto.removeEventListener = function (this: EventTarget, type: string, listener: unknown, ...rest: unknown[]) {
      if (type === "abort") held.get(this)?.delete(listener);
      return (remove as (...args: unknown[]) => void).call(this, type, listener, ...rest);
    } as typeof proto.removeEventListener;
    try {
      assert.equal((await parent.run("go")).reason.kind, "completed");
    } finally {
      proto.addEventListener = add;
      proto.removeEventListener = remove;
    }
    assert.deepEqual(
      toolResultTexts(model.requests.filter((r) => r.sessionId === "parent").at(-1)),
      calls.map((c) => `done by parent.${c.id}`),
    );
    assert.ok(most <= 10, `a signal held ${most} abort listeners`);
    await harness.dispose();
  });

  it("a fork child starts from the parent's completed prefix and answers only its task", async () => {
    const model = scriptedAdapter((request): ScriptEntry => {
      if (request.sessionId === "parent") {
        const turn2 = request.messages.filter((m) => m.role === "user" && m.source.kind === "user").length === 2;
        if (!turn2) return textResponse("Noted: the codeword is plum.");
        return request.messages.some((m) => m.content.some((b) => b.type === "tool-result"))
          ? textResponse("Done.")
          : toolCallResponse([{
            id: "call_f",
            name: "task",
            arguments: JSON.stringify({ agent: "worker", description: "Recall", prompt: "What is the codeword?" }),
          }]);
      }
      return textResponse("plum");
    });
    const storage = memoryStorage();
    const harness = await scenarioHarness(model, { mode: "fork", storage });
    const parent = await harness.createAgent({ id: "parent" });
    await parent.run("The codeword is plum.");
    await parent.run("Ask a fork for the codeword");
    const child = model.requests.find((r) => r.sessionId === "parent.call_f")!;
    const texts = child.messages.map((m) => m.content.map((b) => (b.type === "text" ? b.text : b.type)).join(""));
    // The first turn (completed), then the task: not the open turn's prompt.
    assert.deepEqual(texts, ["The codeword is plum.", "Noted: the codeword is plum.", "What is the codeword?"]);
    const last = model.requests.filter((r) => r.sessionId === "parent").at(-1);
    assert.deepEqual(toolResultTexts(last), ["plum"]);
    await harness.dispose();

    // The fork child's log: the parent's first turn as its seed, then its own turn; the pair replays strictly.
    const logs = await Promise.all(["parent", "parent.call_f"].map(async (id) => {
      const loaded = await storage.load(id);
      assert.deepEqual(checkInvariants(loaded.events), [], id);
      return {
        id,
        createdAt: loaded.header.createdAt,
        parentSession: loaded.header.parentSession,
        events: loaded.events,
      };
    }));
    const childLog = await storage.load("parent.call_f");
    const openTurnStart = logs[0].events.findIndex((e) => e.type === "turn/start" && e.data.turn === 2);
    assert.equal(childLog.header.seedLength, openTurnStart);
    assert.deepEqual(turnEnds(childLog.events), [{ kind: "completed" }, { kind: "completed" }]);
    const replay = replayAdapter({ fixture: await loadFixture(logs), strict: true });
    const replayed = await scenarioHarness(replay, { mode: "fork" });
    const again = await replayed.createAgent({ id: "parent" });
    await again.run("The codeword is plum.");
    assert.equal((await again.run("Ask a fork for the codeword")).text, "Done.");
    replay.assertConsumed();
    await replayed.dispose();
  });

  it("an unknown subagent and a bad call become tool errors without breaking the turn", async () => {
    const model = scriptedAdapter([
      toolCallResponse([
        { id: "c1", name: "task", arguments: JSON.stringify({ agent: "nobody", description: "x", prompt: "y" }) },
      ]),
      textResponse("ok"),
    ]);
    const harness = await scenarioHarness(model);
    const parent = await harness.createAgent({ id: "parent" });
    const result = await parent.run("go");
    assert.equal(result.reason.kind, "completed");
    const error = parent.session.events.find((e) => e.type === "tool/result");
    assert.equal(error?.type === "tool/result" && error.data.error?.code, "SUBAGENT_NOT_FOUND");
    await harness.dispose();
  });
});

describe("the task tool's listing", () => {
  it("follows the definitions: one defined or removed later is in (or out of) the next request's tool schema", async () => {
    const harness = await scenarioHarness(scriptedAdapter([textResponse("x")]));
    const service = (harness.ctx as unknown as { service(name: "subagents"): SubagentServices["subagents"] })
      .service("subagents");
    const description = () => harness.ctx.service("tools").schemas().find((s) => s.name === "task")?.description ?? "";
    assert.match(description(), /- worker: Works on one task/);
    const remove = service.define({ name: "reviewer", description: "Reviews code" });
    assert.match(description(), /- worker: Works on one task\n- reviewer: Reviews code/);
    remove();
    assert.doesNotMatch(description(), /reviewer/);
    await harness.dispose();
  });
});

describe("permission rules on the task tool", () => {
  it("match the subagent named: task(admin) refuses delegating to admin, not to another", async () => {
    const model = scriptedAdapter((request): ScriptEntry => {
      if (request.sessionId?.includes(".")) return textResponse(`${request.sessionId} ran`);
      if (request.messages.some((m) => m.role === "assistant")) return textResponse("done");
      return toolCallResponse(["admin", "worker"].map((agent) => ({
        id: `call_${agent}`,
        name: "task",
        arguments: JSON.stringify({ agent, description: "d", prompt: "p" }),
      })));
    }, { provider: "local", models: [{ id: "m1" }] });
    const harness = await createHarness({
      config: resolveConfig([{
        name: "p",
        value: {
          model: { provider: "local", model: "m1" },
          adapters: { deepseek: null },
          permissions: [{ tool: "task(admin)", action: "deny", reason: "no admin" }],
        },
      }]),
      adapters: [model],
      plugins: [inProcessSubagents({
        agents: [{ name: "admin", description: "Admin" }, { name: "worker", description: "Works" }],
      })],
    });
    const parent = await harness.createAgent({ id: "parent" });
    await parent.run("go");
    const codes = parent.session.events.flatMap((e) => e.type === "tool/result" ? [e.data.error?.code ?? "ok"] : []);
    assert.deepEqual(codes, ["DENIED", "ok"]);
    assert.deepEqual(model.requests.map((r) => r.sessionId).filter((id) => id?.includes(".")), ["parent.call_worker"]);
    await harness.dispose();
  });
});

describe("child session ids", () => {
  it("a call id the model reuses in a later turn gets a child session of its own, each stored whole", async () => {
    const storage = memoryStorage();
    const task = (prompt: string) =>
      toolCallResponse([
        { id: "call_0", name: "task", arguments: JSON.stringify({ agent: "worker", description: prompt, prompt }) },
      ]);
    const model = scriptedAdapter((request) => {
      if (request.sessionId !== "parent") return textResponse(`done by ${request.sessionId}`);
      const last = request.messages.at(-1);
      const asked = last?.role === "user" && last.content[0]?.type === "text" ? last.content[0].text : undefined;
      return asked === undefined ? textResponse("ok") : task(`Do ${asked}`);
    });
    const harness = await scenarioHarness(model, { storage });
    const parent = await harness.createAgent({ id: "parent" });
    // A spawn reads the parent's log on from the last one, never a copy of the whole log (that made delegation O(log)).
    const events = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(parent.session), "events")!.get!;
    let copies = 0;
    Object.defineProperty(parent.session, "events", { get: () => (copies++, events.call(parent.session)) });
    for (const prompt of ["first", "second"]) assert.equal((await parent.run(prompt)).reason.kind, "completed");
    assert.equal(copies, 0);
    const spawned = parent.session.events.flatMap((e) => e.type === "subagent/spawned" ? [e.data.session] : []);
    assert.deepEqual(spawned, ["parent.call_0", "parent.call_0.2"]);
    await harness.dispose();
    for (const id of spawned) {
      const { events } = await storage.inspect(id);
      assert.deepEqual(checkInvariants(events), [], id);
      assert.equal(events.filter((e) => e.type === "turn/start").length, 1, id);
    }
  });

  it("a child name whose log storage already holds (an earlier life of the parent's) is passed over, not refused", async () => {
    const storage = memoryStorage();
    // A child log outlived its parent: the parent was deleted and a new session took its id.
    await storage.create({ id: "parent.call_0", createdAt: 1 });
    await storage.create({ id: "parent.call_0.2", createdAt: 1 });
    const model = scriptedAdapter((request) => {
      if (request.sessionId !== "parent") return textResponse(`done by ${request.sessionId}`);
      if (request.messages.some((m) => m.content.some((b) => b.type === "tool-result"))) return textResponse("ok");
      return toolCallResponse([
        { id: "call_0", name: "task", arguments: JSON.stringify({ agent: "worker", description: "x", prompt: "y" }) },
      ]);
    });
    const harness = await scenarioHarness(model, { storage });
    const parent = await harness.createAgent({ id: "parent" });
    assert.equal((await parent.run("go")).reason.kind, "completed");
    const spawned = parent.session.events.flatMap((e) => e.type === "subagent/spawned" ? [e.data.session] : []);
    assert.deepEqual(spawned, ["parent.call_0.3"]);
    const result = parent.session.events.find((e) => e.type === "tool/result");
    assert.equal(result?.type === "tool/result" && result.data.error, undefined);
    await harness.dispose();
    for (const id of ["parent.call_0", "parent.call_0.2"]) assert.equal((await storage.stat(id))?.nextSeq, 0, id);
    assert.deepEqual(checkInvariants((await storage.inspect("parent.call_0.3")).events), []);
  });

  it("three deep under a UUID parent with 30-character call ids, each child gets a valid session id", async () => {
    const callId = (n: number) => "toolu_01" + String(n).repeat(22);
    let n = 0;
    const model = scriptedAdapter((request) => {
      const answered = request.messages.some((m) => m.content.some((b) => b.type === "tool-result"));
      if (answered) return textResponse(`done: ${toolResultTexts(request).join("")}`);
      if (model.requests.filter((r) => r.sessionId === request.sessionId).length === 1 && n < 3) {
        return toolCallResponse([
          {
            id: callId(++n),
            name: "task",
            arguments: JSON.stringify({ agent: "worker", description: "x", prompt: "y" }),
          },
        ]);
      }
      return textResponse("leaf");
    });
    const storage = memoryStorage();
    const harness = await scenarioHarness(model, { storage, maxDepth: 3 });
    const parent = await harness.createAgent({ id: "5d298310-1cc9-44df-baef-bb0991c66f30" });
    assert.equal((await parent.run("go")).text, "done: done: done: leaf");
    const ids = [...new Set(model.requests.map((r) => r.sessionId!))];
    assert.equal(ids.length, 4);
    assert.deepEqual(ids.slice(0, 3), [
      parent.id,
      `${parent.id}.${callId(1)}`,
      `${parent.id}.${callId(1)}.${callId(2)}`,
    ]);
    assert.ok(ids[3].length <= 128, ids[3]);
    await harness.dispose();
    for (const id of ids.slice(1)) assert.deepEqual(checkInvariants((await storage.inspect(id)).events), [], id);
  });

  it("call ids with a path separator, a control character or 300 characters still name valid children", async () => {
    const odd = ["../../escape", "a/b", "x".repeat(300), "tab\tnl\n", "call_0"];
    const model = scriptedAdapter((request) => {
      if (request.sessionId !== "parent") return textResponse(`done by ${request.sessionId}`);
      if (request.messages.some((m) => m.content.some((b) => b.type === "tool-result"))) return textResponse("ok");
      return toolCallResponse(
        odd.map((id) => ({
          id,
          name: "task",
          arguments: JSON.stringify({ agent: "worker", description: "x", prompt: "y" }),
        })),
      );
    });
    const dir = await mkdtemp(join(tmpdir(), "dsh-subagents-"));
    try {
      const harness = await scenarioHarness(model, { storage: fileStorage(dir) });
      const parent = await harness.createAgent({ id: "parent" });
      assert.equal((await parent.run("go")).reason.kind, "completed");
      const results = parent.session.events.flatMap((e) => e.type === "tool/result" ? [e.data.error?.code] : []);
      assert.deepEqual(results, odd.map(() => undefined));
      const spawned = parent.session.events.flatMap((e) => e.type === "subagent/spawned" ? [e.data.session] : []);
      assert.equal(spawned.length, odd.length);
      assert.equal(new Set(spawned).size, odd.length);
      assert.equal(spawned.at(-1), "parent.call_0");
      for (const id of spawned) assert.match(id, /^parent\.[A-Za-z0-9_-]+$/);
      await harness.dispose();
      const storage = fileStorage(dir);
      for (const id of spawned) assert.deepEqual(checkInvariants((await storage.inspect(id)).events), [], id);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses a depth limit that is not a non-negative integer", async () => {
    for (const maxDepth of [Number.NaN, -1, 0.5, Infinity]) {
      await assert.rejects(
        scenarioHarness(scriptedAdapter([textResponse("x")]), { maxDepth }),
        { code: "INVALID_ARGS" },
        String(maxDepth),
      );
    }
  });

  it("a new session under an id that is already stored is refused, not appended to the stored log", async () => {
    const storage = memoryStorage();
    await storage.create({ id: "taken", createdAt: 1 });
    const harness = await scenarioHarness(scriptedAdapter([textResponse("x")]), { storage });
    await assert.rejects(harness.createAgent({ id: "taken" }), { code: "SESSION_ALREADY_EXISTS" });
    assert.equal((await storage.stat("taken"))?.nextSeq, 0);
    await harness.dispose();
  });
});

describe("a child whose turn fails", () => {
  it("is a SUBAGENT_FAILED tool error of the parent's call, not a failed parent turn", async () => {
    const model = scriptedAdapter((request): ScriptEntry => {
      if (request.sessionId !== "parent") return { throw: new LlmFailure("AUTH", "Bad key", { status: 401 }) };
      if (request.messages.some((m) => m.content.some((b) => b.type === "tool-result"))) return textResponse("ok");
      return toolCallResponse([
        { id: "c1", name: "task", arguments: JSON.stringify({ agent: "worker", description: "x", prompt: "y" }) },
      ]);
    });
    const harness = await scenarioHarness(model);
    const parent = await harness.createAgent({ id: "parent" });
    const result = await parent.run("go");
    assert.equal(result.reason.kind, "completed");
    const error = parent.session.events.find((e) => e.type === "tool/result");
    assert.equal(error?.type === "tool/result" && error.data.error?.code, "SUBAGENT_FAILED");
    // The parent's model is told why: the child's error code and message, not only "error".
    const told = toolResultTexts(model.requests.filter((r) => r.sessionId === "parent").at(-1));
    assert.deepEqual(told, ["Subagent parent.c1 ended: error, its model call failed with AUTH: Bad key"]);
    await harness.dispose();
  });

  it("shows the parent's model a long provider message cut to 500 characters, never inside a character", async () => {
    const long = "😀".repeat(600);
    const model = scriptedAdapter((request): ScriptEntry => {
      if (request.sessionId !== "parent") {
        return { throw: new LlmFailure("CONTEXT_WINDOW_EXCEEDED", long, { status: 400 }) };
      }
      if (request.messages.some((m) => m.content.some((b) => b.type === "tool-result"))) return textResponse("ok");
      return toolCallResponse([
        { id: "c1", name: "task", arguments: JSON.stringify({ agent: "worker", description: "x", prompt: "y" }) },
      ]);
    });
    const harness = await scenarioHarness(model);
    const parent = await harness.createAgent({ id: "parent" });
    assert.equal((await parent.run("go")).reason.kind, "completed");
    const [told] = toolResultTexts(model.requests.filter((r) => r.sessionId === "parent").at(-1));
    const prefix = "Subagent parent.c1 ended: error, its model call failed with CONTEXT_WINDOW_EXCEEDED: ";
    assert.equal(told, `${prefix}${"😀".repeat(500)}…`);
    assert.deepEqual(checkInvariants(parent.session.events), []);
    await harness.dispose();
  });
});

function runChild(script: string, dir: string): Promise<unknown> {
  const [cmd, args] = childCommand(script, dir);
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  return new Promise((resolve, reject) => {
    child.on("exit", (code) => {
      const line = out.split("\n").find((l) => l.startsWith("RESULT "));
      if (code === 0 && line) resolve(JSON.parse(line.slice(7)));
      else reject(new Error(`resume process exited ${code}: ${err}${out}`));
    });
  });
}

describe("SubagentService.run() outside a turn", () => {
  it("runs the child and records no subagent/spawned in the idle parent", async () => {
    const model = scriptedAdapter((request) => textResponse(`answer for ${request.sessionId}`));
    const harness = await scenarioHarness(model);
    const parent = await harness.createAgent({ id: "parent" });
    const subagents = pluginCtx<object, SubagentServices>(harness.ctx).service("subagents");
    const result = await subagents.run({
      agent: "worker",
      prompt: "Do it",
      parent: "parent",
      callId: "direct",
      turn: 0,
      step: 0,
    });
    assert.equal(result.text, "answer for parent.direct");
    assert.equal(result.session, "parent.direct");
    assert.deepEqual(parent.session.events.filter((e) => e.type === "subagent/spawned"), []);
    assert.deepEqual(checkInvariants(parent.session.events), []);
    await assert.rejects(
      subagents.run({ agent: "worker", prompt: "x", parent: "nobody", callId: "c", turn: 0, step: 0 }),
      {
        code: "SESSION_NOT_FOUND",
      },
    );
    await harness.dispose();
  });
});

describe("a resumed child whose definition is not known", () => {
  it("sees none of the tools it inherits (fails closed), and a call to one is refused", async () => {
    const storage = memoryStorage();
    const model = scriptedAdapter((request) => {
      if (request.sessionId === "parent") {
        if (request.messages.some((m) => m.content.some((b) => b.type === "tool-result"))) return textResponse("ok");
        return toolCallResponse([
          { id: "c1", name: "task", arguments: JSON.stringify({ agent: "worker", description: "x", prompt: "y" }) },
        ]);
      }
      const turns = request.messages.filter((m) => m.role === "user" && m.source.kind === "user").length;
      if (turns < 2) return textResponse("child ok");
      if (request.messages.some((m) => m.content.some((b) => b.type === "tool-result"))) return textResponse("child 2");
      return toolCallResponse([{ id: "s1", name: "secret", arguments: "{}" }]);
    });
    const harness = await scenarioHarness(model, { storage });
    const parent = await harness.createAgent({ id: "parent" });
    assert.equal((await parent.run("go")).reason.kind, "completed");
    await harness.dispose();

    // A new harness (a restart) that no longer defines "worker".
    const restarted = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      tools: [lookup, secret],
      storage,
      plugins: [inProcessSubagents({ agents: [] })],
    });
    const child = await restarted.resumeAgent("parent.c1");
    assert.equal(child.session.header.agentPreset, "worker");
    await child.run("Go on");
    const requests = model.requests.filter((r) => r.sessionId === "parent.c1");
    assert.deepEqual(requests.at(-1)?.tools ?? [], []);
    const results = child.session.events.flatMap((e) => e.type === "tool/result" ? [e.data.error?.code] : []);
    assert.deepEqual(results, ["UNKNOWN_TOOL"]);
    await restarted.dispose();
  });

  it("runs with the system prompt its log last sent, never the harness's", async () => {
    const storage = memoryStorage();
    const model = scriptedAdapter((request) => {
      if (request.sessionId !== "parent") return textResponse("child ok");
      if (request.messages.some((m) => m.content.some((b) => b.type === "tool-result"))) return textResponse("ok");
      return toolCallResponse([
        { id: "c1", name: "task", arguments: JSON.stringify({ agent: "worker", description: "x", prompt: "y" }) },
      ]);
    });
    const make = (agents: SubagentDefinition[]) =>
      createHarness({
        adapters: [model],
        model: { provider: "scripted", model: "scripted-model" },
        system: "You are the LEAD. Lead-only plan: X.",
        storage,
        plugins: [inProcessSubagents({ agents })],
      });
    // Its logged prompt holds "{{" (an escaped brace), which the restored prompt takes literally.
    const first = await make([{ name: "worker", description: "Works", system: "You are a worker: \\{{ braces }}." }]);
    const parent = await first.createAgent({ id: "parent" });
    assert.equal((await parent.run("go")).reason.kind, "completed");
    await first.dispose();
    const restarted = await make([]);
    const child = await restarted.resumeAgent("parent.c1");
    await child.run("Go on");
    const systems = model.requests.filter((r) => r.sessionId === "parent.c1").map((r) => r.system);
    assert.equal(systems.length, 2);
    assert.equal(systems[1], systems[0]);
    assert.match(String(systems[0]), /worker: \{\{ braces \}\}/);
    assert.doesNotMatch(String(systems[1]), /LEAD/);
    await restarted.dispose();
  });
});

describe("a resumed child of a known definition", () => {
  // A parent that delegates once to "worker"; the child calls its own tool `child_only` on each turn, then answers.
  const childOnly = defineTool({
    name: "child_only",
    description: "The child's own tool",
    parameters: { type: "object" },
    output: { schema: { type: "string" }, render: (_args, value) => String(value) },
    execute: () => "ran child_only",
  });
  const model = () =>
    scriptedAdapter((request) => {
      const answered = request.messages.at(-1)?.content.some((b) => b.type === "tool-result") === true;
      if (request.sessionId === "parent") {
        if (request.messages.some((m) => m.role === "assistant")) return textResponse("parent done");
        return toolCallResponse([
          { id: "c1", name: "task", arguments: JSON.stringify({ agent: "worker", description: "x", prompt: "p" }) },
        ]);
      }
      if (answered) return textResponse("child done");
      return toolCallResponse([{ id: `k${request.messages.length}`, name: "child_only", arguments: "{}" }]);
    });
  const worker = (setup: SubagentDefinition["setup"]): SubagentDefinition => ({
    name: "worker",
    description: "Works",
    system: "You are a worker.",
    setup,
  });

  it("runs its definition's setup again before its first turn: its own tool is back", async () => {
    const storage = memoryStorage();
    const scripted = model();
    let setups = 0;
    const definition = worker((ctx) => {
      setups++;
      pluginCtx(ctx).service("tools").register(childOnly, ctx);
    });
    const make = () =>
      createHarness({ adapters: [scripted], storage, plugins: [inProcessSubagents({ agents: [definition] })] });
    const first = await make();
    assert.equal((await (await first.createAgent({ id: "parent" })).run("go")).text, "parent done");
    await first.dispose();
    assert.equal(setups, 1);

    const restarted = await make();
    await restarted.resumeAgent("parent");
    const child = await restarted.resumeAgent("parent.c1");
    assert.equal((await child.run("again")).text, "child done");
    assert.equal(setups, 2);
    const last = scripted.requests.filter((r) => r.sessionId === "parent.c1").at(-1)!;
    assert.deepEqual(last.tools?.map((t) => t.name), ["child_only"]);
    const results = child.session.events.flatMap((e) => e.type === "tool/result" ? [e.data.error?.code ?? "ok"] : []);
    assert.deepEqual(results, ["ok", "ok"]);
    assert.deepEqual(checkInvariants(child.session.events), []);
    await restarted.dispose();
  });

  it("a setup that throws on resume is the agent's error, and the child sees none of the tools it inherits", async () => {
    const storage = memoryStorage();
    const scripted = model();
    let fail = false;
    const definition = worker((ctx) => {
      if (fail) throw new Error("setup broke");
      pluginCtx(ctx).service("tools").register(childOnly, ctx);
    });
    const make = () =>
      createHarness({
        adapters: [scripted],
        storage,
        tools: [lookup],
        plugins: [inProcessSubagents({ agents: [definition] })],
      });
    const first = await make();
    await (await first.createAgent({ id: "parent" })).run("go");
    await first.dispose();

    fail = true;
    const restarted = await make();
    const errors: unknown[] = [];
    restarted.ctx.on("agent/error", (_agent, error) => void errors.push(error));
    await restarted.resumeAgent("parent");
    const child = await restarted.resumeAgent("parent.c1");
    await child.run("again");
    assert.deepEqual(errors.map((e) => (e as Error).message), ["setup broke"]);
    const last = scripted.requests.filter((r) => r.sessionId === "parent.c1").at(-1)!;
    assert.deepEqual(last.tools ?? [], []);
    await restarted.dispose();
  });
});
