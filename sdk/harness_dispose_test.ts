import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHarness } from "./harness.ts";
import { HarnessError } from "./kernel/harness_error.ts";
import { within } from "./agent/_test_support.ts";
import { memoryStorage } from "./persistence/memory_storage.ts";
import { withFaults } from "./persistence/_test_storage_faults.ts";
import { createScope } from "./kernel/scope.ts";
import { unrefTimer } from "./kernel/_unref_timer.ts";
import { scriptedAdapter } from "../testing/scripted_adapter.ts";

/** A harness over memory storage whose agent is in a turn that waits for the model for ever. */
async function hangingTurn() {
  const storage = memoryStorage();
  const harness = await createHarness({ adapters: [scriptedAdapter({ hang: true })], storage });
  const agent = await harness.createAgent({ id: "a" });
  const run = agent.run("hello").then((result) => result.reason.kind);
  while (!agent.session.events.some((e) => e.type === "request/header")) await new Promise((r) => setTimeout(r, 1));
  return { storage, harness, agent, run };
}

describe("harness.dispose() while a disposeAgent() is under way", () => {
  it("waits for that agent's teardown: its last events reach storage before persistence is undone", async () => {
    const { storage, harness, agent, run } = await hangingTurn();
    const leaving = harness.disposeAgent(agent);
    await harness.dispose();
    await leaving;
    assert.equal(await run, "aborted");
    const live = agent.session.events.map((e) => e.type);
    assert.deepEqual(live.slice(-2), ["step/end", "turn/end"]);
    // Stored whole: no repair needed to load it.
    assert.deepEqual((await storage.load("a")).events.map((e) => e.type), live);
  });
});

describe("harness.dispose() called twice", () => {
  it("the second call settles with the first, once everything is disposed and written", async () => {
    const { storage, harness, agent, run } = await hangingTurn();
    const first = harness.dispose(); // a signal handler's, say
    await harness.dispose(); // then main's, and the program exits
    assert.equal(harness.ctx.get("sessions"), undefined, "the core is disposed");
    assert.equal((await storage.stat("a"))?.nextSeq, agent.session.events.length, "the whole log is stored");
    await first;
    assert.equal(await run, "aborted");
  });

  it("the second call rejects with the first's failure", async () => {
    let full = false;
    const storage = withFaults(memoryStorage(), {
      append: (append) => (id, events, options) =>
        full ? Promise.reject(new Error("disk full")) : append(id, events, options),
    });
    const failing = await createHarness({ adapters: [scriptedAdapter({ hang: true })], storage });
    (await failing.createAgent({ id: "b" })).inject("a note"); // written at disposal
    // The agent's last write fails: dispose() rejects with it, and so does every later call.
    full = true;
    await assert.rejects(Promise.all([failing.dispose(), failing.dispose()]), /disk full/);
    await assert.rejects(failing.dispose(), /disk full/);
  });
});

describe("harness.dispose() and what was registered through harness.ctx after createHarness()", () => {
  it("unwinds those plugins, scopes, listeners and effects too, the latest first and before the core", async () => {
    const harness = await createHarness({});
    const undone: string[] = [];
    const sessionsAt = (what: string) => () =>
      void undone.push(`${what}${harness.ctx.get("sessions") === undefined ? " (core gone)" : ""}`);
    let ticks = 0;
    const late = harness.ctx.plugin((ctx) => {
      ctx.effect(() => {
        const timer = setInterval(() => void ticks++, 1);
        unrefTimer(timer); // (should the test fail)
        return () => {
          clearInterval(timer);
          sessionsAt("plugin")();
        };
      });
      ctx.on("agent/created", () => {});
    });
    await late.ready;
    const scope = createScope(harness.ctx, "mine");
    scope.ctx.effect(() => sessionsAt("scope"));
    harness.ctx.on("agent/created", () => {});
    harness.ctx.effect(() => sessionsAt("root effect"));
    await harness.dispose();
    assert.deepEqual(undone, ["root effect", "scope", "plugin"]);
    const hooks = (harness.ctx.raw.events as unknown as { _hooks: Record<string, unknown[]> })._hooks;
    assert.equal(hooks["agent/created"]?.length ?? 0, 0, "no listener is left");
    const after = ticks;
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(ticks, after, "the plugin's timer was cleared: nothing keeps the process alive");
  });

  it("refuses every registration through harness.ctx once disposed (CONTEXT_DISPOSED), which nothing would undo", async () => {
    const harness = await createHarness({});
    await harness.dispose();
    let ran = false;
    const refused = (e: unknown) => HarnessError.isInstance(e, "CONTEXT_DISPOSED");
    assert.throws(() => harness.ctx.on("agent/created", () => {}), refused);
    assert.throws(() => harness.ctx.effect(() => (ran = true, () => {})), refused);
    assert.throws(() => harness.ctx.provide("mine" as never, {} as never), refused);
    assert.throws(() => harness.ctx.plugin(() => void (ran = true)), refused);
    assert.throws(() => createScope(harness.ctx, "late"), refused);
    assert.equal(ran, false);
    // Reading is still fine.
    assert.equal(harness.ctx.get("sessions"), undefined);
  });
});

describe("harness.dispose() and a plugin whose teardown fails", () => {
  it("rejects with that failure once everything else is disposed", async () => {
    const audit = {
      name: "audit",
      apply(ctx: { effect(execute: () => () => Promise<void>, label?: string): unknown }) {
        ctx.effect(() => () => Promise.reject(new Error("the final flush to the audit sink failed")), "audit sink");
      },
    };
    const harness = await createHarness({ plugins: [audit] });
    await assert.rejects(harness.dispose(), /the final flush to the audit sink failed/);
    assert.equal(harness.ctx.get("sessions"), undefined, "the core was disposed all the same");
  });
});

describe("harness.dispose() and teardowns that call back into it", () => {
  it("undo functions that keep registering new ones are stopped, reported as TEARDOWN_INCOMPLETE", async () => {
    const harness = await createHarness({});
    let runs = 0;
    const arm = () => void harness.ctx.effect(() => () => (runs++, arm()), "watchdog");
    arm();
    const outcome = await within(harness.dispose().then(() => "resolved", (e) => e), 3000);
    assert.ok(HarnessError.isInstance(outcome, "TEARDOWN_INCOMPLETE"), String(outcome));
    assert.ok(runs <= 8, `${runs} undo runs`);
  });

  it("an agent whose disposeAgent() began during the disposal has its failure reported by that call alone", async () => {
    let full = false;
    const storage = withFaults(memoryStorage(), {
      append: (append) => (id, events, options) =>
        full && id === "a" ? Promise.reject(new Error("disk full for a")) : append(id, events, options),
    });
    const harness = await createHarness({ adapters: [scriptedAdapter({ hang: true })], storage });
    const a = await harness.createAgent({ id: "a" });
    const b = await harness.createAgent({ id: "b" });
    a.inject("note a");
    b.inject("note b");
    full = true;
    const all = harness.dispose(); // b first, then a
    const one = harness.disposeAgent("a").then(() => "resolved", (e) => e.message);
    assert.equal(await one, "disk full for a");
    assert.equal(await all.then(() => "resolved", (e) => e.message), "resolved");
  });
});

describe("harness.disposeAgent() called twice", () => {
  it("the second call, made while the first is under way, returns its promise and its failure", async () => {
    let full = false;
    const storage = withFaults(memoryStorage(), {
      append: (append) => (id, events, options) =>
        full ? Promise.reject(new Error("disk full")) : append(id, events, options),
    });
    const harness = await createHarness({ adapters: [scriptedAdapter({ hang: true })], storage });
    const agent = await harness.createAgent({ id: "a" });
    agent.inject("note");
    full = true;
    const first = harness.disposeAgent(agent);
    const second = harness.disposeAgent("a");
    assert.equal(second, first);
    await assert.rejects(second, /disk full/);
    // Once it is over, the agent is gone; a bad argument is a rejected promise, not a synchronous throw.
    await assert.rejects(harness.disposeAgent("a"), (e) => HarnessError.isInstance(e, "AGENT_NOT_FOUND"));
    const bad = harness.disposeAgent(undefined as never);
    await assert.rejects(bad, (e) => HarnessError.isInstance(e, "INVALID_ARGS"));
    full = false;
    await harness.dispose();
  });
});

describe("harness.deleteSession() of a live agent", () => {
  it("tears the agent down through disposeAgent(): a disposeAgent() meanwhile shares that teardown", async () => {
    let slow = false;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => open = resolve);
    const storage = withFaults(memoryStorage(), {
      append: (append) => async (id, events, options) => {
        if (slow) await gate;
        return append(id, events, options);
      },
    });
    const harness = await createHarness({ adapters: [scriptedAdapter({ hang: true })], storage });
    const agent = await harness.createAgent({ id: "a" });
    agent.inject("note");
    slow = true; // the agent's last write waits: its teardown is under way for as long
    const deleting = harness.deleteSession("a");
    await new Promise((resolve) => setTimeout(resolve, 10)); // its teardown has begun and waits on the write
    const second = await Promise.race([
      harness.disposeAgent("a").then(() => "shared", (e) => e.code),
      new Promise((resolve) => setTimeout(() => resolve("pending"), 20)),
    ]);
    assert.equal(second, "pending", "a second call waits for the teardown under way");
    slow = false;
    open();
    assert.equal(await deleting, true);
    await harness.dispose();
  });
});
