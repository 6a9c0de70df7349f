import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createKernel, createScope, type HarnessContext, HarnessError, type KernelEvents } from "./mod.ts";
import { wrapContext } from "./harness_context.ts";

interface Events extends KernelEvents {
  "t/note": (value: string) => void;
  "t/ask": (value: number) => Promise<string | undefined> | string | undefined;
  "t/wrap": (value: string, next: () => string) => string;
  "t/all": (value: number) => Promise<void>;
}
interface Services {
  counter: { count: number };
}
type Ctx = HarnessContext<Events, Services>;

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("HarnessContext dispatch modes", () => {
  it("waterfall runs listeners in registration order around the inner call", () => {
    const ctx: Ctx = createKernel<Events, Services>();
    const order: string[] = [];
    ctx.on("t/wrap", (_v, next) => {
      order.push("a:before");
      const r = next();
      order.push("a:after");
      return `a(${r})`;
    });
    ctx.on("t/wrap", (_v, next) => {
      order.push("b:before");
      const r = next();
      order.push("b:after");
      return `b(${r})`;
    });
    const out = ctx.waterfall("t/wrap", "x", () => {
      order.push("inner");
      return "inner";
    });
    assert.equal(out, "a(b(inner))");
    assert.deepEqual(order, ["a:before", "b:before", "inner", "b:after", "a:after"]);
  });

  it("waterfall short-circuits when a listener does not call next()", () => {
    const ctx: Ctx = createKernel<Events, Services>();
    let innerCalled = false;
    let laterCalled = false;
    ctx.on("t/wrap", () => "denied");
    ctx.on("t/wrap", (_v, next) => {
      laterCalled = true;
      return next();
    });
    const out = ctx.waterfall("t/wrap", "x", () => {
      innerCalled = true;
      return "inner";
    });
    assert.equal(out, "denied");
    assert.equal(innerCalled, false);
    assert.equal(laterCalled, false);
  });

  it("waterfall with prepend runs the prepended listener first", () => {
    const ctx: Ctx = createKernel<Events, Services>();
    ctx.on("t/wrap", (_v, next) => `late(${next()})`);
    ctx.on("t/wrap", (_v, next) => `early(${next()})`, { prepend: true });
    assert.equal(ctx.waterfall("t/wrap", "x", () => "i"), "early(late(i))");
  });

  it("serial returns the first non-empty result and stops there", async () => {
    const ctx: Ctx = createKernel<Events, Services>();
    const called: number[] = [];
    ctx.on("t/ask", async () => {
      called.push(1);
      await tick();
      return undefined;
    });
    ctx.on("t/ask", (n) => {
      called.push(2);
      return `two:${n}`;
    });
    ctx.on("t/ask", () => {
      called.push(3);
      return "three";
    });
    assert.equal(await ctx.serial("t/ask", 5), "two:5");
    assert.deepEqual(called, [1, 2]);
  });

  it("serial resolves to undefined when no listener answers", async () => {
    const ctx: Ctx = createKernel<Events, Services>();
    ctx.on("t/ask", () => undefined);
    assert.equal(await ctx.serial("t/ask", 1), undefined);
  });

  it("serialEach runs every listener in order, each awaited, whatever they return; a throw ends the run", async () => {
    const ctx: Ctx = createKernel<Events, Services>();
    const called: string[] = [];
    ctx.on("t/ask", async (n) => {
      await tick();
      called.push(`one:${n}`);
      return "a value serial would stop at";
    });
    ctx.on("t/ask", (n) => {
      called.push(`two:${n}`);
      return "another";
    });
    assert.equal(await ctx.serialEach("t/ask", 5), undefined);
    assert.deepEqual(called, ["one:5", "two:5"]);
    ctx.on("t/ask", () => {
      throw new Error("third");
    }, { prepend: true });
    await assert.rejects(ctx.serialEach("t/ask", 6), /third/);
    assert.deepEqual(called, ["one:5", "two:5"]);
  });

  it("parallel starts every listener at once and waits for all", async () => {
    const ctx: Ctx = createKernel<Events, Services>();
    const events: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    ctx.on("t/all", async () => {
      events.push("a:start");
      await gate;
      events.push("a:end");
    });
    ctx.on("t/all", async () => {
      events.push("b:start");
      await tick();
      events.push("b:end");
    });
    let done = false;
    const p = ctx.parallel("t/all", 1).then(() => (done = true));
    await tick();
    await tick();
    assert.deepEqual(events, ["a:start", "b:start", "b:end"]);
    assert.equal(done, false);
    release();
    await p;
    assert.deepEqual(events, ["a:start", "b:start", "b:end", "a:end"]);
  });

  it("parallel rejects with every listener failure after all settle", async () => {
    const ctx: Ctx = createKernel<Events, Services>();
    let finished = false;
    ctx.on("t/all", () => Promise.reject(new Error("boom")));
    ctx.on("t/all", async () => {
      await tick();
      finished = true;
    });
    await assert.rejects(ctx.parallel("t/all", 1), AggregateError);
    assert.equal(finished, true);
  });

  it("emit contains a throwing listener and reports it", () => {
    const ctx: Ctx = createKernel<Events, Services>();
    const seen: string[] = [];
    const errors: unknown[] = [];
    ctx.on("kernel/listener-error", (name, error) => void errors.push([name, (error as Error).message]));
    ctx.on("t/note", () => {
      throw new Error("observer broke");
    });
    ctx.on("t/note", (v) => void seen.push(v));
    ctx.emit("t/note", "hello");
    assert.deepEqual(seen, ["hello"]);
    assert.deepEqual(errors, [["t/note", "observer broke"]]);
  });

  it("an async listener's rejection is reported as a throw is, not left unhandled", async () => {
    const ctx: Ctx = createKernel<Events, Services>();
    const errors: unknown[] = [];
    ctx.on("kernel/listener-error", (name, error) => void errors.push([name, (error as Error).message]));
    ctx.on(
      "t/note",
      (async () => {
        await Promise.resolve();
        throw new Error("async observer broke");
      }) as never,
    );
    ctx.emit("t/note", "hello");
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(errors, [["t/note", "async observer broke"]]);
  });

  it("an async kernel/listener-error reporter that rejects is contained too: the emitter's process goes on", async () => {
    const ctx: Ctx = createKernel<Events, Services>();
    const reports: string[] = [];
    ctx.on("kernel/listener-error", async (name) => {
      reports.push(name);
      await Promise.resolve();
      throw new Error("the reporter broke");
    });
    ctx.on("t/note", () => {
      throw new Error("observer broke");
    });
    ctx.emit("t/note", "hello");
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(reports, ["t/note"]);
  });

  it("kernel/listener-error is admitted by scope like any event: a sibling scope's reporter does not hear", () => {
    const root: Ctx = createKernel<Events, Services>();
    const a = createScope(root, "a");
    const b = createScope(root, "b");
    const heard: string[] = [];
    for (const [who, ctx] of [["root", root], ["a", a.ctx], ["b", b.ctx]] as const) {
      ctx.on("kernel/listener-error", (name) => void heard.push(`${who} heard ${name}`));
    }
    b.ctx.on("t/note", () => {
      throw new Error("b's observer broke");
    });
    b.ctx.emit("t/note", "from b");
    assert.deepEqual(heard.sort(), ["b heard t/note", "root heard t/note"]);
  });

  it("on() returns a disposer that removes the listener", () => {
    const ctx: Ctx = createKernel<Events, Services>();
    const seen: string[] = [];
    const off = ctx.on("t/note", (v) => void seen.push(v));
    ctx.emit("t/note", "a");
    off();
    ctx.emit("t/note", "b");
    assert.deepEqual(seen, ["a"]);
  });
});

describe("HarnessContext plugins, effects and services", () => {
  it("disposing a plugin rolls back its effects in reverse order and removes its listeners", async () => {
    const ctx: Ctx = createKernel<Events, Services>();
    const log: string[] = [];
    const handle = ctx.plugin((pctx) => {
      pctx.effect(() => {
        log.push("effect1:on");
        return () => void log.push("effect1:off");
      });
      pctx.effect(() => {
        log.push("effect2:on");
        return () => void log.push("effect2:off");
      });
      pctx.on("t/note", (v) => void log.push(`heard:${v}`));
    });
    await handle.ready;
    ctx.emit("t/note", "x");
    await handle.dispose();
    ctx.emit("t/note", "y");
    assert.deepEqual(log, ["effect1:on", "effect2:on", "heard:x", "effect2:off", "effect1:off"]);
  });

  it("a plugin that injects a service starts only when it is provided and stops when it goes", async () => {
    const ctx: Ctx = createKernel<Events, Services>();
    const log: string[] = [];
    const consumer = Object.assign(
      (pctx: Ctx) => {
        log.push(`start:${pctx.service("counter").count}`);
        pctx.effect(() => () => void log.push("stop"));
      },
      { inject: ["counter"] as const },
    );
    ctx.plugin(consumer);
    await tick();
    assert.deepEqual(log, []);
    const provider = ctx.plugin((pctx: Ctx) => {
      pctx.provide("counter", { count: 3 });
    });
    await provider.ready;
    await tick();
    assert.deepEqual(log, ["start:3"]);
    assert.equal(ctx.counter?.count, 3);
    await provider.dispose();
    await tick();
    assert.deepEqual(log, ["start:3", "stop"]);
    assert.equal(ctx.counter, undefined);
  });

  it("a second provider of a service name is refused with SERVICE_ALREADY_PROVIDED; the first one stays", async () => {
    const ctx: Ctx = createKernel<Events, Services>();
    await ctx.plugin((pctx: Ctx) => void pctx.provide("counter", { count: 1 })).ready;
    await assert.rejects(
      ctx.plugin((pctx: Ctx) => void pctx.provide("counter", { count: 2 })).ready,
      (e) => HarnessError.isInstance(e, "SERVICE_ALREADY_PROVIDED") && /"counter"/.test(e.message),
    );
    assert.equal(ctx.counter?.count, 1);
  });

  it("service() throws SERVICE_MISSING for an absent service", () => {
    const ctx: Ctx = createKernel<Events, Services>();
    assert.throws(() => ctx.service("counter"), (e) => HarnessError.isInstance(e, "SERVICE_MISSING"));
    assert.equal(ctx.get("counter"), undefined);
  });
});

describe("HarnessContext service lookups", () => {
  // get()/service() call Cordis's `get` on its reflect service directly (not through the service's traceable proxy);
  // each lookup must answer what Cordis's own `raw.get` answers, in every state a service can be in.
  const same = (ctxs: Ctx[], label: string) => {
    for (const [i, c] of ctxs.entries()) {
      assert.equal(
        c.get("counter"),
        (c.raw as unknown as { get(n: string): unknown }).get("counter"),
        `${label} #${i}`,
      );
    }
  };

  it("answers as Cordis's own get: absent, provided, loading, isolated, scoped, disposed", async () => {
    const root: Ctx = createKernel<Events, Services>();
    const ctxs: Ctx[] = [root];
    same(ctxs, "absent");
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // A provider whose plugin is still loading: Cordis hides the service until the fiber is active.
    const slow = root.plugin(async (pctx: Ctx) => {
      ctxs.push(pctx);
      pctx.provide("counter", { count: 1 });
      await gate;
    });
    await tick();
    same(ctxs, "loading");
    open();
    await slow.ready;
    await tick();
    same(ctxs, "active");
    assert.equal(root.get("counter")?.count, 1);
    const scope = createScope(root, "agent");
    ctxs.push(scope.ctx as unknown as Ctx);
    await scope.ready;
    same(ctxs, "scoped");
    // An isolated context has its own "counter": provided there, absent from the others.
    const isolated = wrapContext<Events, Services>(root.raw.isolate("counter"));
    ctxs.push(isolated);
    same(ctxs, "isolated, before");
    const inner = isolated.plugin((pctx: Ctx) => {
      ctxs.push(pctx);
      pctx.provide("counter", { count: 2 });
    });
    await inner.ready;
    await tick();
    same(ctxs, "isolated, provided");
    assert.equal(isolated.get("counter")?.count, 2);
    assert.equal(root.get("counter")?.count, 1);
    await slow.dispose();
    await tick();
    same(ctxs, "disposed");
    assert.equal(root.get("counter"), undefined);
    await inner.dispose();
    await scope.dispose();
  });
});
