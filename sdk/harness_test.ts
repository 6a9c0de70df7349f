import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHarness } from "./harness.ts";
import { HarnessError } from "./kernel/harness_error.ts";
import type { TurnFailedError } from "./agent/turn_failed_error.ts";
import { memoryStorage } from "./persistence/memory_storage.ts";
import { withFaults } from "./persistence/_test_storage_faults.ts";
import { scriptedAdapter, textResponse } from "../testing/scripted_adapter.ts";

const userHooks = (raw: { events: { _hooks: Record<string, unknown[]> } }) =>
  Object.entries(raw.events._hooks).filter(([name, hooks]) => !name.startsWith("internal/") && hooks.length > 0)
    .map(([name]) => name).sort();

describe("createHarness()", () => {
  it("createAgent() and forkAgent() register nothing and build no Error synchronously, under the caller's frames", async () => {
    // Deno captures a detailed stack for every error; the first one built under a large function (a bundled
    // program's top level) re-parses it for its source positions. Cordis builds errors while it registers, so the
    // agent's registrations wait for a job of their own.
    const harness = await createHarness({
      adapters: [scriptedAdapter(textResponse("ok"))],
      model: { provider: "scripted", model: "scripted-model" },
    });
    const registry = (harness.ctx.raw as unknown as { registry: { size: number } }).registry;
    const original = globalThis.Error;
    let built = 0;
    const counting = new Proxy(original, {
      construct(target, args, newTarget) {
        built++;
        return Reflect.construct(target, args, newTarget);
      },
    });
    const synchronously = <T>(call: () => T): T => {
      globalThis.Error = counting;
      try {
        return call();
      } finally {
        globalThis.Error = original;
      }
    };
    // V8 (Node, Deno) looks `Error` up on the global object; Bun's compiled code does not, so the count is
    // observed there only. The registry's size is observed everywhere.
    synchronously(() => new Error("the counter counts"));
    const counted = built === 1;
    assert.equal(counted, !("Bun" in globalThis));
    built = 0;
    const plugins = registry.size;
    const pending = synchronously(() => harness.createAgent({ id: "a" }));
    assert.equal(registry.size, plugins, "createAgent() registered a plugin before its first await");
    if (counted) assert.equal(built, 0, "createAgent() built an Error before its first await");
    const agent = await pending;
    assert.equal(registry.size, plugins + 1, "the agent's scope is a plugin");
    await agent.run("hi");
    const forked = synchronously(() => harness.forkAgent(agent.session, { id: "b" }));
    assert.equal(registry.size, plugins + 1, "forkAgent() registered a plugin before its first await");
    if (counted) assert.equal(built, 0, "forkAgent() built an Error before its first await");
    assert.equal((await forked).session.events.length > 0, true);
    await harness.dispose();
  });

  it("dispose() stops agents, unwinds scopes and plugins, and leaves no listener behind", async () => {
    const storage = memoryStorage();
    const harness = await createHarness({
      adapters: [scriptedAdapter(textResponse("ok"))],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
    });
    const order: string[] = [];
    const offs = [
      harness.ctx.on("agent/disposed", (agent) => void order.push(`agent/disposed ${agent.id}`)),
      harness.ctx.on("session/disposed", (session) => void order.push(`session/disposed ${session.id}`)),
    ];
    const a = await harness.createAgent({ id: "a" });
    const b = await harness.createAgent({ id: "b" });
    a.ctx.on("agent/status", () => {});
    await a.run("hi");
    await b.run("hi");
    assert.equal(harness.ctx.service("agents").list().length, 2);
    await harness.dispose();
    assert.deepEqual(order, ["agent/disposed b", "session/disposed b", "agent/disposed a", "session/disposed a"]);
    for (const off of offs) off(); // the test's own root listeners
    assert.deepEqual(userHooks(harness.ctx.raw as never), []);
    assert.equal(harness.ctx.get("agents"), undefined);
    assert.equal(harness.ctx.get("sessions"), undefined);
    assert.equal((await storage.load("a")).events.at(-1)?.type, "turn/end", "sessions were flushed on dispose");
    await harness.dispose(); // idempotent
    await assert.rejects(harness.createAgent(), { code: "HARNESS_DISPOSED" });
  });

  it("disposeAgent() tears one agent down; its scoped registrations go with it", async () => {
    const harness = await createHarness({
      adapters: [scriptedAdapter(textResponse("ok"))],
      model: { provider: "scripted", model: "scripted-model" },
    });
    const agent = await harness.createAgent({
      id: "x",
      setup: (ctx) => {
        ctx.service("systemPrompt" as never);
      },
    });
    await harness.disposeAgent(agent);
    assert.equal(harness.ctx.service("agents").get("x"), undefined);
    assert.equal(harness.sessions.get("x"), undefined);
    await assert.rejects(harness.disposeAgent("x"), { code: "AGENT_NOT_FOUND" });
    await harness.dispose();
  });

  it("a failing setup rolls the creation back and pairs every announcement", async () => {
    const harness = await createHarness({
      adapters: [scriptedAdapter(textResponse("ok"))],
      model: { provider: "scripted", model: "scripted-model" },
    });
    const seen: string[] = [];
    harness.ctx.on("session/created", (s) => void seen.push(`created ${s.id}`));
    harness.ctx.on("agent/created", (a) => void seen.push(`agent ${a.id}`));
    await assert.rejects(
      harness.createAgent({
        id: "bad",
        setup: () => {
          throw new Error("setup failed");
        },
      }),
      /setup failed/,
    );
    assert.deepEqual(seen, []);
    assert.equal(harness.sessions.get("bad"), undefined);
    const again = await harness.createAgent({ id: "bad" });
    assert.equal(again.id, "bad");
    await harness.dispose();
  });

  it("refuses an agent without a route when the adapters do not make one obvious", async () => {
    for (
      const adapters of [
        [],
        [scriptedAdapter(textResponse("ok")), scriptedAdapter(textResponse("ok"), { provider: "other" })],
        [scriptedAdapter(textResponse("ok"), { models: [] })],
      ]
    ) {
      const harness = await createHarness({ adapters });
      await assert.rejects(harness.createAgent(), { code: "INVALID_ARGS" });
      await harness.dispose();
    }
  });

  it("with exactly one adapter and no model, routes agents to that adapter's first model", async () => {
    const model = scriptedAdapter(textResponse("ok"), { provider: "solo", models: [{ id: "m1" }, { id: "m2" }] });
    const harness = await createHarness({ adapters: [model] });
    const agent = await harness.createAgent();
    assert.deepEqual([agent.options.provider, agent.options.model], ["solo", "m1"]);
    assert.equal((await agent.run("Hi")).text, "ok");
    assert.equal(model.lastRequest()?.model, "m1");
    const other = await harness.createAgent({ model: "m2" });
    assert.deepEqual([other.options.provider, other.options.model], ["solo", "m2"]);
    await harness.dispose();
  });
});

describe("createAgent() options", () => {
  it("refuses a sampling setting out of bounds at once; a listener's config is checked per call", async () => {
    const model = scriptedAdapter(() => textResponse("ok"));
    const harness = await createHarness({ adapters: [model] });
    for (const [settings, field] of [[{ maxTokens: -5 }, "maxTokens"], [{ temperature: 3 }, "temperature"]] as const) {
      await assert.rejects(harness.createAgent({ id: "bad", ...settings }), (e) => {
        assert.ok(HarnessError.isInstance(e, "INVALID_ARGS"), String(e));
        assert.equal(e.details?.field, field);
        return true;
      });
      assert.equal(harness.sessions.get("bad"), undefined);
    }
    assert.equal(model.requests.length, 0);
    // An agent/request listener's config is checked per call: the step fails with the code, nothing is sent.
    const agent = await harness.createAgent({ id: "ok" });
    agent.ctx.on("agent/request", async (_agent, _draft, next) => ({ ...(await next()), maxTokens: -1 }));
    await assert.rejects(agent.run("go"), (e) => (e as TurnFailedError).failure?.code === "INVALID_ARGS");
    assert.equal(model.requests.length, 0);
    await harness.dispose();
  });
});

describe("createHarness() that fails to start", () => {
  it("undoes the plugins that started and the core before it rejects: nothing keeps the process alive", async () => {
    const undone: string[] = [];
    let ticks = 0;
    const started = (ctx: { effect(execute: () => () => void): unknown }) => {
      ctx.effect(() => {
        const timer = setInterval(() => ticks++, 5);
        return () => {
          clearInterval(timer);
          undone.push("A");
        };
      });
    };
    const failing = () => {
      throw new Error("B failed to start");
    };
    await assert.rejects(createHarness({ plugins: [started, failing] }), /B failed to start/);
    assert.deepEqual(undone, ["A"]);
    const after = ticks;
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(ticks, after, "the started plugin's timer was cleared");
  });
});

describe("createHarness() with a plugin that fails to start", () => {
  it("rejects naming the plugin, with the failure's code when it is a HarnessError, the failure as the cause", async () => {
    const failure = new Error("bad plugin");
    const bad = {
      name: "bad",
      apply() {
        throw failure;
      },
    };
    await assert.rejects(createHarness({ plugins: [bad] }), (error: unknown) => {
      assert.ok(HarnessError.isInstance(error, "PLUGIN_FAILED"), String(error));
      assert.equal(error.message, 'Plugin "bad" failed to start: bad plugin');
      assert.deepEqual(error.details, { plugin: "bad" });
      assert.equal(error.cause, failure);
      return true;
    });
    const coded = new HarnessError("MY_CODE", "refused", { details: { why: "test" } });
    const named = Object.assign(() => Promise.reject(coded), { pluginName: "coded" });
    await assert.rejects(createHarness({ plugins: [() => {}, named] }), (error: unknown) => {
      assert.ok(HarnessError.isInstance(error, "MY_CODE"), String(error));
      assert.equal(error.message, 'Plugin "coded" failed to start: refused');
      assert.deepEqual(error.details, { why: "test", plugin: "coded" });
      assert.equal(error.cause, coded);
      return true;
    });
  });
});

describe("harness.fork() and forkAgent() sources", () => {
  it("an agent passed for a session is INVALID_ARGS saying to pass agent.session", async () => {
    const harness = await createHarness({ adapters: [scriptedAdapter(textResponse("ok"))] });
    const agent = await harness.createAgent();
    await agent.run("hi");
    for (const fork of [() => harness.forkAgent(agent as never), () => harness.fork(agent as never)]) {
      await assert.rejects(fork(), (e: Error & { code?: string }) => {
        assert.equal(e.code, "INVALID_ARGS");
        assert.match(e.message, /pass agent\.session/);
        return true;
      });
    }
    assert.equal((await harness.forkAgent(agent.session)).session.deriveMessages().length, 2);
    await harness.dispose();
  });
});

describe("createHarness({ newId })", () => {
  it("reaches the tool runtime: two identically seeded runs write identical logs", async () => {
    const { z } = await import("zod");
    const { defineTool } = await import("./tools/define_tool.ts");
    const { toolCallResponse } = await import("../testing/scripted_adapter.ts");
    const run = async () => {
      let n = 0;
      let t = 0;
      const harness = await createHarness({
        adapters: [scriptedAdapter([
          toolCallResponse([{ id: "call-1", name: "echo", arguments: '{"text":"hi"}' }]),
          textResponse("done"),
        ])],
        model: { provider: "scripted", model: "scripted-model" },
        tools: [defineTool({
          name: "echo",
          description: "Echo",
          parameters: z.object({ text: z.string() }),
          output: { schema: z.string(), render: (_args, text) => text },
          execute: ({ text }) => text,
        })],
        now: () => ++t,
        newId: () => `id-${++n}`,
      });
      const agent = await harness.createAgent({ id: "same" });
      await agent.run("Echo hi");
      const events = JSON.parse(JSON.stringify(agent.session.events));
      await harness.dispose();
      return events;
    };
    const first = await run();
    const result = first.find((e: { type: string }) => e.type === "tool/result");
    assert.match(result.data.message.id, /^id-\d+$/, "the tool result's id comes from newId");
    assert.deepEqual(await run(), first);
  });
});

describe("harness.dispose() and disposeAgent() report a failed last write", () => {
  /** A harness whose writes wait for a flush (a long batch window) and fail, once armed, for the sessions named. */
  async function failingAtDisposal() {
    const memory = memoryStorage();
    const failing = new Set<string>();
    const storage = withFaults(memory, {
      append: (append) => (id, events, options) =>
        failing.has(id) ? Promise.reject(new Error(`disk full (${id})`)) : append(id, events, options),
    });
    const harness = await createHarness({
      adapters: [scriptedAdapter(textResponse("Hi"))],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
      batchWindowMs: 60_000,
    });
    const errors: unknown[] = [];
    harness.ctx.on("agent/error", (_agent, error) => void errors.push(error));
    const disposed: string[] = [];
    harness.ctx.on("agent/disposed", (agent) => void disposed.push(agent.id));
    return { harness, memory, failing, errors, disposed };
  }

  it("disposeAgent() rejects with the failed write, after disposing the agent (agent/error is emitted too)", async () => {
    const { harness, memory, failing, errors } = await failingAtDisposal();
    const agent = await harness.createAgent({ id: "a" });
    agent.inject("a note"); // committed, written with the next batch: at disposal
    failing.add("a");
    await assert.rejects(harness.disposeAgent(agent), /disk full \(a\)/);
    assert.equal(errors.length, 1);
    assert.equal(harness.ctx.service("agents").get("a"), undefined);
    assert.equal(harness.sessions.get("a"), undefined);
    // The lease was given up all the same: the session can be resumed.
    failing.clear();
    const again = await harness.resumeAgent("a");
    assert.equal(again.session.seq, (await memory.load("a")).events.length);
    await harness.dispose();
  });

  it("dispose() disposes every agent and plugin, then rejects with the one failure or an AggregateError", async () => {
    const one = await failingAtDisposal();
    for (const id of ["a", "b", "c"]) (await one.harness.createAgent({ id })).inject("a note");
    one.failing.add("b");
    await assert.rejects(one.harness.dispose(), /disk full \(b\)/);
    assert.deepEqual(one.disposed.sort(), ["a", "b", "c"]);
    // The agents that could write did.
    for (const id of ["a", "c"]) {
      assert.deepEqual((await one.memory.load(id)).events.map((e) => e.type), ["agent/inbox/spliced"]);
    }
    await assert.rejects(one.harness.dispose(), /disk full \(b\)/, "a later call settles as the first did");

    const two = await failingAtDisposal();
    for (const id of ["a", "b", "c"]) (await two.harness.createAgent({ id })).inject("a note");
    two.failing.add("a");
    two.failing.add("c");
    await assert.rejects(two.harness.dispose(), (error: unknown) => {
      assert.ok(error instanceof AggregateError, String(error));
      assert.deepEqual(error.errors.map((e: Error) => e.message).sort(), ["disk full (a)", "disk full (c)"]);
      return true;
    });
    assert.deepEqual(two.disposed.sort(), ["a", "b", "c"]);
  });

  it("when giving up the lease fails too, the failed write is the error reported", async () => {
    const memory = memoryStorage();
    let failing = false;
    const storage = withFaults(memory, {
      append: (append) => (id, events, options) =>
        failing ? Promise.reject(new Error("disk full")) : append(id, events, options),
      acquireWriter: (acquire) => async (id) => {
        const writer = await acquire(id);
        const release = writer.release.bind(writer);
        // The same writer (storage knows it by identity), whose release fails once armed.
        Object.defineProperty(writer, "release", {
          value: () => release().then(() => failing ? Promise.reject(new Error("connection lost")) : undefined),
        });
        return writer;
      },
    });
    const harness = await createHarness({
      adapters: [scriptedAdapter(textResponse("Hi"))],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
      batchWindowMs: 60_000,
    });
    (await harness.createAgent({ id: "a" })).inject("a note");
    failing = true;
    await assert.rejects(harness.disposeAgent("a"), /disk full/);
    await harness.dispose();
  });
});

describe("harness.createAgent() over a storage that fails every write", () => {
  it("tries the new session's write as its start's retries do, and its teardown does not retry it again", async () => {
    const storageCalls: string[] = [];
    const storage = withFaults(memoryStorage(), {
      create: () => (header) => {
        storageCalls.push(`create ${header.id}`);
        return Promise.reject(new Error("disk full"));
      },
      append: () => (id) => {
        storageCalls.push(`append ${id}`);
        return Promise.reject(new Error("disk full"));
      },
    });
    const harness = await createHarness({
      adapters: [scriptedAdapter(textResponse("Hi"))],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
    });
    let flushes = 0;
    harness.ctx.on("session/flush", () => {
      flushes++;
      return Promise.resolve();
    });
    await assert.rejects(harness.createAgent({ id: "a" }), /disk full/);
    // The start's flush and its two retries (50 and 250 ms); the teardown's flush does not wait those out again.
    assert.equal(flushes, 3);
    assert.deepEqual(storageCalls, ["create a"]);
    assert.equal(harness.ctx.service("agents").get("a"), undefined);
    await harness.dispose();
  });
});

describe("harness.resumeAgent() of a crashed log from two harnesses at once", () => {
  it("takes the lease before it loads: one resumes the repaired log storage holds, the other is WRITER_BUSY", async () => {
    const { mkdtemp, rm } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { fileStorage } = await import("./persistence/file_storage.ts");
    const { fsOps } = await import("./persistence/_fs.ts");
    const { LogBuilder } = await import("./persistence/_test_log.ts");
    const dir = await mkdtemp(join(tmpdir(), "dsh-resume-race-"));
    const { readFile, open } = fsOps;
    const harnesses: Awaited<ReturnType<typeof createHarness>>[] = [];
    try {
      // A turn cut by a crash with two tool calls open: repair answers them (fresh message ids) and closes the turn.
      const log = new LogBuilder();
      log.completeTurn(1);
      log.push({ type: "turn/start", data: { turn: 2 } });
      log.push({ type: "step/start", data: { turn: 2, step: 1 } });
      log.stream(2, 1, ["a"], { calls: ["k1", "k2"] });
      log.toolCall(2, 1, "k1");
      await fileStorage(dir).create({ id: "c" }, { events: log.events });
      // Two storage instances over one folder, driven step by step through the file-system seam: the first two
      // reads of the log wait for each other (both loads see the crashed log), and the second write to it waits
      // until one resume has settled. Before, both loads repaired without a lease and the later repair was written
      // over the earlier one after its harness had won the lease and gone on with its own repair in memory.
      const file = `${dir}/c/session.v1.jsonl`;
      let settled!: () => void;
      const oneSettled = new Promise<void>((resolve) => settled = resolve);
      let bothRead!: () => void;
      const twoReads = new Promise<void>((resolve) => bothRead = resolve);
      let reads = 0;
      let writes = 0;
      fsOps.readFile = async (path) => {
        if (path === file && reads < 2) {
          if (++reads === 2) bothRead();
          await Promise.race([twoReads, oneSettled]);
        }
        return await readFile(path);
      };
      fsOps.open = async (path, flags) => {
        if (path === file && flags === "r+" && ++writes === 2) await oneSettled;
        return await open(path, flags);
      };
      for (let i = 0; i < 2; i++) {
        harnesses.push(
          await createHarness({
            adapters: [scriptedAdapter(textResponse("x"))],
            model: { provider: "scripted", model: "scripted-model" },
            storage: fileStorage(dir),
          }),
        );
      }
      const results = await Promise.allSettled(harnesses.map((h) => {
        const resumed = h.resumeAgent("c");
        resumed.then(settled, settled);
        return resumed;
      }));
      const won = results.filter((r) => r.status === "fulfilled");
      const lost = results.filter((r) => r.status === "rejected");
      assert.equal(won.length, 1);
      assert.ok(HarnessError.isInstance(lost[0]?.reason, "SESSION_WRITER_BUSY"), String(lost[0]?.reason));
      const agent = won[0].value;
      const stored = (await fileStorage(dir).inspect("c")).events;
      assert.equal(stored.length, agent.session.events.length);
      assert.deepEqual(JSON.parse(JSON.stringify(stored)), JSON.parse(JSON.stringify(agent.session.events)));
    } finally {
      fsOps.readFile = readFile;
      fsOps.open = open;
      for (const h of harnesses) await h.dispose().catch(() => {});
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("creations racing harness.dispose()", () => {
  it("createAgent, resumeAgent, forkAgent and fork reject with HARNESS_DISPOSED, not a missing service", async () => {
    const memory = memoryStorage();
    const make = async (storage = memory) =>
      await createHarness({
        adapters: [scriptedAdapter(textResponse("Hi"))],
        model: { provider: "scripted", model: "scripted-model" },
        storage,
      });
    const seed = await make();
    await (await seed.createAgent({ id: "stored" })).run("hello");
    await seed.dispose();
    const disposedCode = (error: unknown) => {
      assert.ok(HarnessError.isInstance(error, "HARNESS_DISPOSED"), String(error));
      return true;
    };
    // createAgent: dispose() in the same tick (its first stretch ran, the agent service went away).
    const one = await make();
    const creating = one.createAgent({ id: "new" });
    await one.dispose();
    await assert.rejects(creating, disposedCode);
    // The others: dispose() while each waits for storage (an agent whose session reached storage meanwhile is let
    // go, not handed out by a disposed harness).
    for (const call of ["createAgent", "resumeAgent", "forkAgent", "fork"] as const) {
      let open!: () => void;
      const gate = new Promise<void>((resolve) => open = resolve);
      const later = <A extends unknown[], R>(read: (...args: A) => Promise<R>) => async (...args: A) => {
        await gate;
        return await read(...args);
      };
      const harness = await make(withFaults(memory, { stat: later, inspect: later, create: later }));
      const started = call === "createAgent"
        ? harness.createAgent({ id: "late" })
        : call === "resumeAgent"
        ? harness.resumeAgent("stored")
        : call === "forkAgent"
        ? harness.forkAgent("stored", { id: "child" })
        : harness.fork("stored", undefined, "child");
      const disposing = harness.dispose();
      open();
      await disposing;
      await assert.rejects(started as Promise<unknown>, disposedCode, call);
    }
    assert.equal((await memory.stat("stored"))?.header.id, "stored");
    assert.equal(await memory.stat("child"), undefined);
    assert.equal(await memory.stat("new"), undefined);
  });
});
