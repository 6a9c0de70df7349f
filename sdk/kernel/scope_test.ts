import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createKernel, createScope, type HarnessContext, HarnessError, type KernelEvents, scopeOf } from "./mod.ts";

interface Events extends KernelEvents {
  "t/note": (value: string) => void;
  "t/wrap": (value: string, next: () => string) => string;
}
interface Services {
  label: string;
}
type Ctx = HarnessContext<Events, Services>;

describe("createScope()", () => {
  it("labels the scope context, and nested scopes point at their parent", async () => {
    const root: Ctx = createKernel<Events, Services>();
    assert.equal(scopeOf(root), undefined);
    const outer = createScope(root, "outer");
    const inner = createScope(outer.ctx, "inner");
    assert.equal(scopeOf(outer.ctx)?.key, "outer");
    assert.equal(scopeOf(inner.ctx)?.key, "inner");
    assert.equal(scopeOf(inner.ctx)?.parent, outer.info);
    await outer.dispose();
  });

  it("rejects an empty key", () => {
    const root: Ctx = createKernel<Events, Services>();
    assert.throws(() => createScope(root, ""), (e) => HarnessError.isInstance(e, "INVALID_ARGS"));
  });

  it("registrations are visible in the scope and torn down with it", async () => {
    const root: Ctx = createKernel<Events, Services>();
    const scope = createScope(root, "a");
    const undone: string[] = [];
    scope.ctx.provide("label", "scoped");
    scope.ctx.effect(() => () => void undone.push("effect"));
    const heard: string[] = [];
    scope.ctx.on("t/note", (v) => void heard.push(v));
    const child = scope.ctx.plugin((c) => {
      c.effect(() => () => void undone.push("child-plugin"));
    });
    await child.ready;
    assert.equal(scope.ctx.label, "scoped");
    scope.ctx.emit("t/note", "before");
    await scope.dispose();
    assert.equal(scope.disposed, true);
    assert.deepEqual(undone.sort(), ["child-plugin", "effect"]);
    assert.equal(root.label, undefined);
    root.emit("t/note", "after");
    assert.deepEqual(heard, ["before"]);
    await scope.dispose(); // idempotent
  });

  it("an ancestor's listener hears descendant events; a descendant's does not hear the ancestor's", () => {
    const root: Ctx = createKernel<Events, Services>();
    const parent = createScope(root, "parent");
    const child = createScope(parent.ctx, "child");
    const heard: string[] = [];
    root.on("t/note", (v) => void heard.push(`global:${v}`));
    parent.ctx.on("t/note", (v) => void heard.push(`parent:${v}`));
    child.ctx.on("t/note", (v) => void heard.push(`child:${v}`));
    child.ctx.emit("t/note", "from-child");
    parent.ctx.emit("t/note", "from-parent");
    assert.deepEqual(heard, [
      "global:from-child",
      "parent:from-child",
      "child:from-child",
      "global:from-parent",
      "parent:from-parent",
    ]);
  });

  it("sibling scopes do not hear each other, in every dispatch mode", async () => {
    const root: Ctx = createKernel<Events, Services>();
    const a = createScope(root, "a");
    const b = createScope(root, "b");
    a.ctx.on("t/wrap", (_v, next) => `a(${next()})`);
    b.ctx.on("t/wrap", (_v, next) => `b(${next()})`);
    root.on("t/wrap", (_v, next) => `g(${next()})`);
    assert.equal(a.ctx.waterfall("t/wrap", "x", () => "i"), "a(g(i))");
    assert.equal(b.ctx.waterfall("t/wrap", "x", () => "i"), "b(g(i))");
    await a.dispose();
    await b.dispose();
  });

  it("an event dispatched outside every scope is a global announcement heard by all", () => {
    const root: Ctx = createKernel<Events, Services>();
    const a = createScope(root, "a");
    const heard: string[] = [];
    a.ctx.on("t/note", (v) => void heard.push(`a:${v}`));
    root.emit("t/note", "announce");
    assert.deepEqual(heard, ["a:announce"]);
  });
});

describe("scope.dispose() called twice", () => {
  it("the second call settles once the scope is undone, not at once", async () => {
    const root: Ctx = createKernel<Events, Services>();
    const scope = createScope(root, "a");
    let undone = false;
    scope.ctx.effect(() => async () => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      undone = true;
    });
    const first = scope.dispose();
    assert.equal(scope.disposed, true);
    await scope.dispose();
    assert.equal(undone, true);
    await first;
  });
});
