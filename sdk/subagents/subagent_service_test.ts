import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  checkInvariants,
  childSessions,
  createHarness,
  foldProjection,
  type HarnessContext,
  memoryStorage,
  type ToolRuntime,
} from "../../mod.ts";
import { scriptedAdapter, textResponse, toolCallResponse } from "../../testing/mod.ts";
import { withFaults } from "../persistence/_test_storage_faults.ts";
import { scenarioHarness } from "./_test_scenario.ts";
import { inProcessSubagents } from "./mod.ts";

const delegateTo = (...ids: string[]) =>
  toolCallResponse(ids.map((id) => ({
    id,
    name: "task",
    arguments: JSON.stringify({ agent: "worker", description: "x", prompt: `task ${id}` }),
  })));

describe("the link of a child to its parent", () => {
  it("is stored before the child runs (a crash then leaves no child with a turn that its parent does not link)", async () => {
    const storage = memoryStorage();
    const storedLinks: string[][] = [];
    const model = scriptedAdapter(async (request) => {
      if (request.sessionId === "parent") {
        return request.messages.some((m) => m.role === "assistant") ? textResponse("done") : delegateTo("c1", "c2");
      }
      // What storage holds of the parent when the child calls its model (its own turn is stored by then).
      const { events } = await storage.inspect("parent");
      storedLinks.push(events.flatMap((e) => e.type === "subagent/spawned" ? [String(e.data.session)] : []));
      return textResponse("child answer");
    });
    const harness = await scenarioHarness(model, { storage });
    const parent = await harness.createAgent({ id: "parent" });
    assert.equal((await parent.run("go")).reason.kind, "completed");
    await harness.dispose();
    assert.equal(storedLinks.length, 2);
    for (const links of storedLinks) assert.ok(links.includes("parent.c1"), JSON.stringify(storedLinks));
    assert.ok(storedLinks.some((links) => links.includes("parent.c2")), JSON.stringify(storedLinks));
  });
});

describe("a fork child's children", () => {
  it("are its own: the children its parent linked in the seed it copied are left out", async () => {
    const storage = memoryStorage();
    const delegate = (id: string, agent: string) =>
      toolCallResponse([{ id, name: "task", arguments: JSON.stringify({ agent, description: "x", prompt: "p" }) }]);
    const model = scriptedAdapter((request) => {
      if (request.sessionId !== "p") return textResponse("child ok");
      const last = JSON.stringify(request.messages.at(-1)?.content);
      if (last.includes("first")) return delegate("c1", "fresh");
      if (last.includes("second")) return delegate("c2", "forky");
      return textResponse("end");
    });
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
      plugins: [
        inProcessSubagents({
          agents: [{ name: "fresh", description: "d" }, { name: "forky", description: "d", mode: "fork" }],
        }),
      ],
    });
    const projections = harness.ctx.service("sessionProjections");
    const p = await harness.createAgent({ id: "p" });
    await p.run("first");
    await p.run("second");
    assert.deepEqual(projections.stateOf(p.session, childSessions).map((c) => c.session), ["p.c1", "p.c2"]);
    const stored = await storage.load("p.c2");
    assert.equal(stored.header.parentSession, "p");
    // The seed holds the link to p.c1 (bare events, read with no header, still show it).
    assert.deepEqual(foldProjection(childSessions, stored.events).map((c) => c.session), ["p.c1"]);
    assert.deepEqual(foldProjection(childSessions, stored.events, undefined, stored.header), []);
    assert.deepEqual(projections.stateOf(stored, childSessions), []);
    assert.deepEqual(projections.snapshot(stored, { units: ["childSessions"] }), { childSessions: [] });
    const fork = await harness.resumeAgent("p.c2");
    assert.deepEqual(projections.stateOf(fork.session, childSessions), []);
    await harness.dispose();
  });
});

describe("subagent definitions", () => {
  it("a bad field is INVALID_ARGS naming it when defined, not the model's INVALID_ARGS when first delegated to", async () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ tools: { allow: "lookup" } }, /tools/],
      [{ tools: {} }, /tools/],
      [{ tools: { deny: [1] } }, /tools/],
      [{ tools: null }, /tools/],
      [{ system: 42 }, /system/],
      [{ setup: "x" }, /setup/],
      [{ model: "fast" }, /model/],
      [{ concurrencySafe: "yes" }, /concurrencySafe/],
    ];
    for (const [fields, field] of bad) {
      const agents = [{ name: "w", description: "d", ...fields }] as never;
      await assert.rejects(
        createHarness({ plugins: [inProcessSubagents({ agents })] }),
        { code: "INVALID_ARGS", message: field },
        JSON.stringify(fields),
      );
    }
    for (const agents of [undefined, { name: "w", description: "d" }]) {
      await assert.rejects(
        createHarness({ plugins: [inProcessSubagents({ agents } as never)] }),
        { code: "INVALID_ARGS", message: /agents/ },
      );
    }
    const good = await createHarness({
      plugins: [
        inProcessSubagents({ agents: [{ name: "w", description: "d", tools: { deny: [] }, setup: () => {} }] }),
      ],
    });
    await good.dispose();
  });
});

describe("maxDepth: 0", () => {
  it("offers no task tool, since every delegation would fail SUBAGENT_DEPTH", async () => {
    const model = scriptedAdapter([textResponse("ok")]);
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      plugins: [inProcessSubagents({ maxDepth: 0, agents: [{ name: "w", description: "d" }] })],
    });
    const agent = await harness.createAgent({ id: "q" });
    await agent.run("go");
    assert.deepEqual((model.requests[0].tools ?? []).map((t) => t.name), []);
    await harness.dispose();
  });
});

describe("a child resumed with harness.resumeAgent", () => {
  it("runs in its live parent's scope (a restriction made there in code holds), is disposed with it, and without it sees no inherited tool", async () => {
    const storage = memoryStorage();
    const model = scriptedAdapter((request) => {
      if (request.sessionId === "parent") {
        return request.messages.some((m) => m.role === "assistant") ? textResponse("done") : delegateTo("c1");
      }
      const last = JSON.stringify(request.messages.at(-1)?.content);
      if (last.includes("use secret")) return toolCallResponse([{ id: "s1", name: "secret", arguments: "{}" }]);
      return textResponse("child text");
    });
    const restrictParent = (ctx: HarnessContext) => {
      const tools = ctx.service("tools" as never) as unknown as ToolRuntime;
      tools.restrict({ deny: ["lookup"] }, ctx);
    };
    const first = await scenarioHarness(model, { storage });
    await (await first.createAgent({ id: "parent", setup: restrictParent })).run("go");
    await first.dispose();

    // Ids of its own: message ids stay unique in a session across restarts (a counter restarted would repeat them).
    const harness = await scenarioHarness(model, { storage, idPrefix: "again" });
    const tools = harness.ctx.service("tools");
    const parent = await harness.resumeAgent("parent", { setup: restrictParent });
    const child = await harness.resumeAgent("parent.c1");
    // The definition denies "secret" (and "task" at maxDepth) from what it inherits; the parent's scope denied "lookup".
    assert.deepEqual(tools.schemas(child.ctx.scope).map((s) => s.name), []);
    await harness.disposeAgent(parent);
    assert.equal(harness.sessions.get("parent.c1"), undefined);
    await assert.rejects(child.run("x"), { code: "AGENT_DISPOSED" });

    // The parent not live: nothing it inherits.
    const alone = await harness.resumeAgent("parent.c1");
    assert.deepEqual(tools.schemas(alone.ctx.scope).map((s) => s.name), []);
    await alone.run("use secret");
    const results = alone.session.events.flatMap((e) => e.type === "tool/result" ? [e.data.error?.code] : []);
    assert.deepEqual(results, ["UNKNOWN_TOOL"]);
    await harness.dispose();
    assert.deepEqual(checkInvariants((await storage.load("parent.c1")).events), []);
  });
});

describe("a child's route", () => {
  it("takes the parent's sampling settings only while its definition keeps the parent's model", async () => {
    const model = scriptedAdapter((request) => {
      if (request.sessionId !== "p") return textResponse("child ok");
      if (request.messages.some((m) => m.role === "assistant")) return textResponse("end");
      const calls = ["cheap", "same"].map((agent, i) => ({
        id: `c${i}`,
        name: "task",
        arguments: JSON.stringify({ agent, description: "x", prompt: "p" }),
      }));
      return toolCallResponse(calls);
    }, { models: [{ id: "big", reasoningEfforts: ["high"] }, { id: "small" }] });
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "big" },
      plugins: [inProcessSubagents({
        agents: [
          { name: "cheap", description: "another model", model: { model: "small" } },
          { name: "same", description: "the parent's model, cooler", model: { temperature: 0 } },
        ],
      })],
    });
    try {
      const parent = await harness.createAgent({ id: "p", reasoningEffort: "high", maxTokens: 50_000 });
      await parent.run("go");
      const routes = model.requests.filter((r) => r.sessionId !== "p").map((r) => ({
        model: r.model,
        reasoningEffort: r.reasoningEffort,
        maxTokens: r.maxTokens,
        temperature: r.temperature,
      })).sort((a, b) => a.model.localeCompare(b.model));
      assert.deepEqual(routes, [
        { model: "big", reasoningEffort: "high", maxTokens: 50_000, temperature: 0 },
        { model: "small", reasoningEffort: undefined, maxTokens: undefined, temperature: undefined },
      ]);
    } finally {
      await harness.dispose();
    }
  });
});

describe("a child whose last write fails", () => {
  it("fails the delegation with its own SESSION_FLUSH_FAILED, not with the failure of its dispose after it", async () => {
    let failing = false;
    const storage = withFaults(memoryStorage(), {
      append: (append) => (id, events, options) =>
        failing && id !== "parent" ? Promise.reject(new Error(`disk full (${id})`)) : append(id, events, options),
    });
    const model = scriptedAdapter((request) => {
      if (request.sessionId === "parent") {
        return request.messages.some((m) => m.role === "assistant") ? textResponse("done") : delegateTo("c1");
      }
      failing = true; // the child's turn is never stored: its run, then its dispose's last write, fail
      return textResponse("child answer");
    });
    const harness = await scenarioHarness(model, { storage });
    const parent = await harness.createAgent({ id: "parent" });
    assert.equal((await parent.run("go")).reason.kind, "completed");
    const result = parent.session.events.find((e) => e.type === "tool/result");
    assert.equal(result?.type === "tool/result" && result.data.error?.code, "SESSION_FLUSH_FAILED");
    await harness.dispose();
  });
});

describe("a child abandoned before it ran (its parent cancelled while it started)", () => {
  it("is not written on at its teardown: its log is deleted at release, so no write (nor a retry of it) is made", async () => {
    let gate: (() => void) | undefined;
    const opened = new Promise<void>((resolve) => gate = resolve);
    let linkWaiting = false;
    const childWrites: string[] = [];
    const storage = withFaults(memoryStorage(), {
      append: (append) => async (id, events, options) => {
        if (id === "parent" && events.some((e) => e.type === "subagent/spawned")) {
          linkWaiting = true;
          await opened; // the first child's link waits: the second child, started, waits for it
        }
        if (id === "parent.c2") {
          childWrites.push(events.map((e) => e.type).join(","));
          throw new Error("disk full"); // a write that would be tried again, were it made
        }
        return append(id, events, options);
      },
    });
    const model = scriptedAdapter((request) =>
      request.sessionId === "parent" && !request.messages.some((m) => m.role === "assistant")
        ? delegateTo("c1", "c2")
        : textResponse("done")
    );
    const harness = await scenarioHarness(model, { storage });
    const parent = await harness.createAgent({ id: "parent" });
    const running = parent.run("go");
    const agents = harness.ctx.service("agents");
    while (!linkWaiting || agents.get("parent.c2") === undefined || await storage.stat("parent.c2") === undefined) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await new Promise((resolve) => setTimeout(resolve, 20)); // the second child's start settles
    agents.get("parent.c2")!.inject("a note"); // an event of the child's not yet written
    parent.cancel("user");
    gate!();
    assert.deepEqual((await running).reason, { kind: "aborted", reason: "user" });
    while (harness.sessions.get("parent.c2") !== undefined) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.deepEqual(childWrites, []);
    assert.equal(await storage.stat("parent.c2"), undefined, "the abandoned child's log is deleted");
    assert.ok(await storage.stat("parent.c1"), "the linked child's log is kept");
    await harness.dispose();
  });
});
