import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createKernel, type HarnessContext, HarnessError, type KernelEvents } from "./mod.ts";
import { capturingErrors } from "./_test_console_errors.ts";
import { settledWithin } from "./_test_within.ts";

interface Events extends KernelEvents {
  "t/note": (value: string) => void;
}
type Ctx = HarnessContext<Events, object>;

const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a plugin whose handle's `ready` nobody reads", () => {
  it("reports a failed start on kernel/plugin-error, not as an unhandled rejection", async () => {
    const root: Ctx = createKernel<Events, object>();
    const reported: [string, string][] = [];
    root.on("kernel/plugin-error", (plugin, error) => void reported.push([plugin, (error as Error).message]));
    root.plugin({
      name: "parent",
      apply(ctx) {
        ctx.plugin({ name: "child", apply: () => Promise.reject(new Error("child failed")) });
        ctx.plugin({
          name: "sync-child",
          apply() {
            throw new Error("sync child failed");
          },
        });
      },
    });
    await tick(5);
    assert.deepEqual(reported.sort(), [["child", "child failed"], ["sync-child", "sync child failed"]]);
  });

  it("writes it to the console when nothing listens", async () => {
    await capturingErrors(async (printed) => {
      const root: Ctx = createKernel<Events, object>();
      root.plugin({
        name: "bad",
        apply() {
          throw new Error("apply failed");
        },
      });
      await tick(5);
      assert.equal(printed.length, 1);
      assert.match(String(printed[0][0]), /plugin "bad" failed/);
      assert.equal((printed[0][1] as Error).message, "apply failed");
    });
  });

  it("a caller that reads `ready` hears the failure there, and it is not reported", async () => {
    await capturingErrors(async (printed) => {
      const root: Ctx = createKernel<Events, object>();
      const reported: string[] = [];
      root.on("kernel/plugin-error", (plugin) => void reported.push(plugin));
      const handle = root.plugin({
        name: "bad",
        apply() {
          throw new Error("apply failed");
        },
      });
      await assert.rejects(handle.ready, /apply failed/);
      await tick(5);
      assert.deepEqual([reported, printed], [[], []]);
    });
  });
});

describe("a plugin disposed while its async apply runs", () => {
  it("is a clean stop: `ready` resolves, nothing is reported, and what it registers after is refused", async () => {
    await capturingErrors(async (printed) => {
      const root: Ctx = createKernel<Events, object>();
      let refused: unknown;
      const heard: string[] = [];
      const handle = root.plugin({
        name: "slow",
        async apply(ctx) {
          await tick(10);
          try {
            ctx.on("t/note", (value) => void heard.push(value));
          } catch (error) {
            refused = error;
            throw error;
          }
        },
      });
      const unread = root.plugin({
        name: "slow-unread",
        async apply(ctx) {
          await tick(10);
          ctx.on("t/note", (value) => void heard.push(value));
        },
      });
      await Promise.all([handle.dispose(), unread.dispose()]);
      await handle.ready;
      await tick(20);
      root.emit("t/note", "after");
      assert.ok(refused !== undefined, "the registration after the disposal threw");
      assert.deepEqual([heard, printed], [[], []]);
    });
  });
});

describe("an undo that fails", () => {
  it("rejects the plugin's dispose() (and every later call) once every other undo has run", async () => {
    const root: Ctx = createKernel<Events, object>();
    const undone: string[] = [];
    const handle = root.plugin({
      name: "p",
      apply(ctx) {
        ctx.effect(() => () => void undone.push("first"));
        ctx.effect(() => () => {
          throw new Error("sync undo failed");
        });
        ctx.plugin({
          name: "child",
          apply(child) {
            child.effect(() => async () => {
              await tick();
              throw new Error("child's async undo failed");
            });
            child.effect(() => () => void undone.push("child's other"));
          },
        });
      },
    });
    await handle.ready;
    await assert.rejects(handle.dispose(), (error: unknown) => {
      assert.ok(error instanceof AggregateError, String(error));
      assert.match(error.message, /plugin "p"/);
      assert.deepEqual(error.errors.map((e: Error) => e.message).sort(), [
        "child's async undo failed",
        "sync undo failed",
      ]);
      return true;
    });
    assert.deepEqual(undone.sort(), ["child's other", "first"]);
    await assert.rejects(handle.dispose(), AggregateError);
  });

  it("rejects scope.dispose() with it, itself when it is the only one", async () => {
    const { createScope } = await import("./scope.ts");
    const root: Ctx = createKernel<Events, object>();
    const scope = createScope(root, "s");
    scope.ctx.effect(() => () => {
      throw new Error("scope undo failed");
    });
    await assert.rejects(scope.dispose(), /scope undo failed/);
  });

  it("called through the function effect() returned, rejects that call", async () => {
    const root: Ctx = createKernel<Events, object>();
    const undo = root.effect(() => () => {
      throw new Error("undo failed");
    });
    await assert.rejects(undo(), /undo failed/);
  });

  it("with no dispose() call waiting (a service the plugin injects went away), is reported", async () => {
    const root = createKernel<Events, { svc: string }>();
    const reported: [string, string][] = [];
    root.on("kernel/plugin-error", (plugin, error) => void reported.push([plugin, (error as Error).message]));
    const provider = root.plugin((ctx) => void ctx.provide("svc", "here"));
    await provider.ready;
    const user = root.plugin({
      name: "user",
      inject: ["svc"],
      apply(ctx) {
        ctx.effect(() => () => {
          throw new Error("undo failed");
        }, "sink");
      },
    });
    await user.ready;
    await provider.dispose();
    await tick(5);
    assert.deepEqual(reported, [["user (sink)", "undo failed"]]);
  });
});

describe("dispose() called by an undo of the disposal it would wait for", () => {
  it("settles at once for a plugin's handle and a scope; a call from outside waits for the undo to finish", async () => {
    const { createScope } = await import("./scope.ts");
    const root: Ctx = createKernel<Events, object>();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => open = resolve);
    const inner: unknown[] = [];
    let finished = 0;
    const handle = root.plugin((ctx) => {
      ctx.effect(() => async () => {
        inner.push(await settledWithin(handle.dispose()));
        await gate;
        finished++;
      });
    });
    await handle.ready;
    const scope = createScope(root, "s");
    scope.ctx.effect(() => async () => {
      inner.push(await settledWithin(scope.dispose()));
      await gate;
      finished++;
    });
    const disposals = [handle.dispose(), scope.dispose()];
    await tick(5);
    assert.deepEqual(inner, ["resolved", "resolved"]);
    const outside = [handle.dispose(), scope.dispose()];
    assert.equal(await settledWithin(Promise.race(outside), 20), "still waiting");
    open();
    assert.deepEqual(await Promise.all([...disposals, ...outside].map((p) => settledWithin(p))), [
      "resolved",
      "resolved",
      "resolved",
      "resolved",
    ]);
    assert.equal(finished, 2);
  });
});

describe("a serial run whose earlier listener disposes a plugin", () => {
  it("skips that plugin's listeners: they do not run after its teardown", async () => {
    interface Ev extends KernelEvents {
      "t/each": () => unknown;
    }
    const root = createKernel<Ev, object>();
    const log: string[] = [];
    let state = "open";
    const plugin = root.plugin((ctx) => {
      ctx.effect(() => () => void (state = "closed"));
      ctx.on("t/each", () => void log.push(`P's listener ran, its resource ${state}`));
    });
    await plugin.ready;
    root.on("t/each", async () => {
      await plugin.dispose();
      log.push("P disposed");
    }, { prepend: true });
    const after = root.on("t/each", () => "last");
    await root.serialEach("t/each");
    assert.deepEqual(log.splice(0), ["P disposed"]);
    assert.equal(await root.serial("t/each"), "last", "a serial run still ends at the first value");
    after();
  });
});

describe("a plugin that throws what is not an Error", () => {
  it("rejects `ready` with a HarnessError keeping its code and message, the value as the cause", async () => {
    const root: Ctx = createKernel<Events, object>();
    const thrown = { code: "MY_CODE", message: "plain object" };
    const objectPlugin = root.plugin({
      name: "p",
      apply() {
        throw thrown;
      },
    });
    await assert.rejects(objectPlugin.ready, (error: unknown) => {
      assert.ok(HarnessError.isInstance(error, "MY_CODE"), String(error));
      assert.equal(error.message, "plain object");
      assert.equal(error.cause, thrown);
      return true;
    });
    const stringPlugin = root.plugin({ name: "s", apply: () => Promise.reject("a string") });
    await assert.rejects(stringPlugin.ready, (error: unknown) => {
      assert.ok(HarnessError.isInstance(error, "PLUGIN_FAILED"), String(error));
      assert.equal(error.message, 'Plugin "s" threw "a string"');
      assert.deepEqual(error.details, { plugin: "s" });
      return true;
    });
  });
});

describe("a registration on a disposed context", () => {
  it("is refused with CONTEXT_DISPOSED, Cordis's refusal as the cause", async () => {
    const { createScope } = await import("./scope.ts");
    const root: Ctx = createKernel<Events, object>();
    const scope = createScope(root, "agent");
    await scope.dispose();
    const disposed = (error: unknown) => {
      assert.ok(HarnessError.isInstance(error, "CONTEXT_DISPOSED"), String(error));
      assert.ok(error.cause instanceof Error);
      return true;
    };
    assert.throws(() => scope.ctx.on("t/note", () => {}), disposed);
    assert.throws(() => scope.ctx.effect(() => () => {}), disposed);
    assert.throws(() => scope.ctx.provide("svc" as never, {} as never), disposed);
    assert.throws(() => scope.ctx.plugin(() => {}), disposed);
    assert.throws(() => createScope(scope.ctx, "child"), disposed);
  });
});
