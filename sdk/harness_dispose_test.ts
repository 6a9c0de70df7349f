import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHarness } from "./harness.ts";
import { HarnessError } from "./kernel/harness_error.ts";
import { settledWithin, within } from "./kernel/_test_within.ts";
import { capturingErrors } from "./kernel/_test_console_errors.ts";
import { memoryStorage } from "./persistence/memory_storage.ts";
import { withFaults } from "./persistence/_test_storage_faults.ts";
import { createScope } from "./kernel/scope.ts";
import type { HarnessContext } from "./kernel/harness_context.ts";
import type { SessionEvents } from "./session/session_store.ts";
import { unrefTimer } from "./kernel/_unref_timer.ts";
import { scriptedAdapter, textResponse } from "../testing/scripted_adapter.ts";

/** A harness over memory storage whose agent is in a turn that waits for the model for ever. */
async function hangingTurn() {
  const storage = memoryStorage();
  const harness = await createHarness({ adapters: [scriptedAdapter({ hang: true })], storage });
  const agent = await harness.createAgent({ id: "a" });
  const run = agent.run("hello").then((result) => result.reason.kind);
  while (!agent.session.events.some((e) => e.type === "request/header")) await new Promise((r) => setTimeout(r, 1));
  return { storage, harness, agent, run };
}

/** A plugin "audit" whose teardown (its effect "audit sink") fails with `message`. */
function failingTeardown(message: string) {
  return {
    name: "audit",
    apply(ctx: { effect(execute: () => () => Promise<void>, label?: string): unknown }) {
      ctx.effect(() => () => Promise.reject(new Error(message)), "audit sink");
    },
  };
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
    const harness = await createHarness({ plugins: [failingTeardown("the final flush to the audit sink failed")] });
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
    const outcome = await settledWithin(harness.dispose(), 3000);
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

describe("harness.dispose() and a last write that fails for a moment", () => {
  /** A harness whose storage fails the next `failures` appends once armed, with an agent that has input to write. */
  async function flaky(error: () => Error) {
    const state = { failures: 0, appends: 0 };
    const base = memoryStorage();
    const storage = withFaults(base, {
      append: (append) => (id, events, options) => {
        state.appends++;
        if (state.failures === 0) return append(id, events, options);
        state.failures--;
        return Promise.reject(error());
      },
    });
    const harness = await createHarness({ adapters: [scriptedAdapter({ hang: true })], storage });
    const agent = await harness.createAgent({ id: "a" });
    agent.inject("note"); // written at disposal
    return { base, state, harness, agent };
  }

  it("is tried again, as agent.flushed() tries it: dispose() resolves and the input is stored", async () => {
    const { base, state, harness, agent } = await flaky(() => new HarnessError("SESSION_WRITE_FAILED", "busy disk"));
    state.failures = 1;
    await harness.dispose();
    const stored = (await base.load("a")).events;
    assert.deepEqual(stored, agent.session.events);
    assert.ok(stored.some((e) => e.type === "agent/inbox/spliced"));
  });

  it("one storage refused for good is not tried again after a wait: dispose() rejects with the refusal", async () => {
    const { base, state, harness } = await flaky(() => new HarnessError("SESSION_LEASE_LOST", "taken over"));
    state.failures = Infinity;
    const before = state.appends;
    await assert.rejects(harness.dispose(), (e) => HarnessError.isInstance(e, "SESSION_LEASE_LOST"));
    // The flush's one try and the release's own write, nothing more.
    assert.equal(state.appends - before, 2);
    assert.equal((await base.load("a")).events.length, 0);
  });
});

describe("harness.dispose() and a live session that is not an agent's", () => {
  it("rejects when that session's last write fails: a fork's events are reported, not dropped", async () => {
    let full = false;
    const base = memoryStorage();
    const storage = withFaults(base, {
      append: (append) => (id, events, options) =>
        full ? Promise.reject(new HarnessError("SESSION_WRITE_FAILED", "disk full")) : append(id, events, options),
    });
    const harness = await createHarness({ adapters: [scriptedAdapter(textResponse("hi"))], storage });
    const agent = await harness.createAgent({ id: "a" });
    await agent.run("one");
    const fork = await harness.fork(agent.session, undefined, "f");
    fork.append("todo/write", { todos: [] }); // written at disposal
    full = true;
    await assert.rejects(harness.dispose(), (e) => HarnessError.isInstance(e, "SESSION_WRITE_FAILED"));
    assert.equal((await base.load("f")).events.length, fork.events.length - 1);
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

describe("dispose() called again from inside the disposal it would wait for", () => {
  /** Listen to `session/release` on an agent's context: its teardown waits for the listeners. */
  const onRelease = (ctx: HarnessContext, listener: () => Promise<void>) =>
    (ctx as unknown as HarnessContext<SessionEvents>).on("session/release", listener);
  const outcome = (promise: Promise<unknown>) => settledWithin(promise, 3000);

  it("harness.dispose() from a plugin's teardown settles at once; the outer call settles once all is disposed", async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => open = resolve);
    let inner: unknown;
    let finished = false;
    const closer = {
      name: "server",
      apply(ctx: { effect(execute: () => () => Promise<void>, label?: string): unknown }) {
        // A server plugin whose close disposes the harness (it may also be what started the disposal).
        ctx.effect(() => async () => {
          inner = await outcome(harness.dispose());
          await gate;
          finished = true;
        }, "server");
      },
    };
    const harness = await createHarness({ plugins: [closer] });
    const first = harness.dispose();
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(inner, "resolved", "the call from inside the disposal settled without waiting for it");
    // A call from outside made meanwhile waits for the whole disposal, the teardown that is still running included.
    const second = harness.dispose();
    assert.equal(await within(second, 20), "still waiting");
    open();
    assert.equal(await outcome(second), "resolved");
    assert.ok(finished, "the outside call settled after the plugin's teardown");
    assert.equal(harness.ctx.get("sessions"), undefined, "and after the core");
    assert.equal(await outcome(first), "resolved");
  });

  it("harness.dispose() from an agent's teardown (a session/release listener) settles, and so does the disposal", async () => {
    const storage = memoryStorage();
    const harness = await createHarness({ adapters: [scriptedAdapter({ hang: true })], storage });
    let inner: unknown;
    await harness.createAgent({
      id: "a",
      setup: (ctx) => void onRelease(ctx, async () => void (inner = await outcome(harness.dispose()))),
    });
    assert.equal(await outcome(harness.dispose()), "resolved");
    assert.equal(inner, "resolved");
    assert.deepEqual((await storage.list()).map((h) => h.id), ["a"]);
  });

  it("harness.disposeAgent() from the agent's own teardown settles at once; a call from outside shares the teardown", async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => open = resolve);
    const harness = await createHarness({ adapters: [scriptedAdapter({ hang: true })] });
    const inner: unknown[] = [];
    const agent = await harness.createAgent({
      id: "a",
      setup: (ctx) => {
        // An effect of the agent's scope, undone by its teardown, and a listener its teardown waits for.
        ctx.effect(() => async () => {
          inner.push(await outcome(harness.disposeAgent("a")));
          await gate;
        });
        onRelease(ctx, async () => void inner.push(await outcome(harness.disposeAgent("a"))));
      },
    });
    const first = harness.disposeAgent(agent);
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(inner, ["resolved", "resolved"]);
    const second = harness.disposeAgent("a");
    assert.equal(second, first, "a call from outside gets the teardown under way");
    assert.equal(await within(second, 20), "still waiting");
    open();
    assert.equal(await outcome(first), "resolved");
    assert.equal(harness.ctx.service("agents").get("a"), undefined);
    await harness.dispose();
  });

  it("an agent handle's dispose() from the agent's own teardown settles at once", async () => {
    const harness = await createHarness({ adapters: [scriptedAdapter({ hang: true })] });
    let inner: unknown;
    const handle: { dispose(): Promise<void> } = await harness.ctx.service("agents").create(harness.ctx, {
      id: "h",
      setup: (ctx) => void ctx.effect(() => async () => void (inner = await outcome(handle.dispose()))),
    });
    assert.equal(await outcome(handle.dispose()), "resolved");
    assert.equal(inner, "resolved");
    await harness.dispose();
  });

  it("harness.dispose() first called from an agent's teardown starts the disposal and settles at once", async () => {
    const harness = await createHarness({ adapters: [scriptedAdapter({ hang: true })] });
    let inner: unknown;
    await harness.createAgent({
      id: "a",
      setup: (ctx) => void ctx.effect(() => async () => void (inner = await outcome(harness.dispose()))),
    });
    await harness.createAgent({ id: "b" });
    assert.equal(await outcome(harness.disposeAgent("a")), "resolved");
    assert.equal(inner, "resolved");
    // The disposal it started goes on; a call from outside waits for its end.
    assert.equal(await outcome(harness.dispose()), "resolved");
    assert.equal(harness.ctx.get("sessions"), undefined);
    assert.deepEqual(harness.ctx.get("agents"), undefined);
  });

  it("a disposal started so that fails, with no call from outside waiting for it, is written to the console", async () => {
    const audit = failingTeardown("the audit sink failed");
    const harness = await createHarness({ adapters: [scriptedAdapter({ hang: true })], plugins: [audit] });
    await harness.createAgent({ id: "a", setup: (ctx) => void ctx.effect(() => () => harness.dispose()) });
    const printed = await capturingErrors(async (sofar) => {
      assert.equal(await outcome(harness.disposeAgent("a")), "resolved");
      for (let i = 0; i < 100 && sofar.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    });
    assert.match(String(printed[0]?.[0]), /disposing the harness failed/);
    assert.match(String(printed[0]?.[1]), /the audit sink failed/);
    // A later call from outside hears the failure too.
    await assert.rejects(harness.dispose(), /the audit sink failed/);
  });

  it("harness.dispose() from the teardown of a plugin disposed on its own waits for the disposal, and hears its failure", async () => {
    // The harness's disposal does not wait for that plugin's teardown (it is not one of its own): the call is an
    // ordinary one, which `await` follows once the agents' last writes are made and everything is undone.
    const audit = failingTeardown("the audit sink failed");
    const storage = memoryStorage();
    const harness = await createHarness({ adapters: [scriptedAdapter({ hang: true })], storage, plugins: [audit] });
    let after: unknown = "not reached";
    const server = harness.ctx.plugin((ctx) => {
      ctx.effect(() => async () => {
        await harness.dispose();
        after = harness.ctx.get("sessions");
      });
    });
    await server.ready;
    await harness.createAgent({ id: "a" });
    const printed = await capturingErrors(async () => {
      await assert.rejects(within(server.dispose(), 3000), /the audit sink failed/);
    });
    assert.equal(after, "not reached", "the undo's await rejected with the disposal's failure");
    assert.deepEqual(printed, [], "the failure went to the call that awaited it, not to the console");
    assert.equal(
      harness.ctx.get("sessions"),
      undefined,
      "the harness was disposed when the plugin's dispose() settled",
    );
    // The agent let go of its session: another harness takes it over at once.
    const next = await createHarness({ adapters: [scriptedAdapter({ hang: true })], storage });
    assert.equal((await next.resumeAgent("a")).id, "a");
    await next.dispose();
  });
});
