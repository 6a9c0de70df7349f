/**
 * Scopes: per-agent registration worlds on the plugin kernel.
 *
 * A scope is an empty plugin started under the caller's context and labelled.
 * What is registered through `scope.ctx` (listeners, services, tools, prompt
 * sections, child plugins) is visible in that scope and torn down with it.
 * Events dispatched in a scope reach listeners of the scope and of its
 * ancestors, never those of a descendant or a sibling. A scope is a routing
 * device, not a security boundary.
 *
 * @module
 */

import type { Context } from "cordis";
import {
  disposer,
  type HarnessContext,
  registering,
  type ScopeInfo,
  tagScope,
  wrapContext,
} from "./harness_context.ts";
import { HarnessError } from "./harness_error.ts";
import { withoutStacks } from "./_without_stacks.ts";

/** A scope created by {@linkcode createScope}. */
export interface Scope<E extends object, S extends object> {
  /** The key the scope was created with. */
  readonly key: string;
  /** The scope's label, as returned by {@linkcode scopeOf}. */
  readonly info: ScopeInfo;
  /** The context whose registrations belong to the scope. */
  readonly ctx: HarnessContext<E, S>;
  /** Resolves once the scope's plugin is active. */
  readonly ready: Promise<void>;
  /** Whether {@linkcode Scope.dispose} has been called. */
  readonly disposed: boolean;
  /**
   * Undo every registration made in the scope, in reverse order. Idempotent: every call settles with the first,
   * once the scope is undone. Rejects, once everything is undone, with what an undo threw (an `AggregateError`
   * when several did). A call made by one of those undo functions (before its first `await`) would wait for itself:
   * it settles at once instead, resolved.
   */
  dispose(): Promise<void>;
}

/**
 * Create a scope under `ctx` (which may itself be scoped: the new scope is then
 * its child).
 *
 * @param ctx The parent context.
 * @param key A label for diagnostics, such as the agent id.
 * @returns The new scope.
 * @throws {HarnessError} `INVALID_ARGS` when `key` is empty, `CONTEXT_DISPOSED` when `ctx` is disposed.
 *
 * @example A scoped listener hears its own events, not the parent's
 * ```ts
 * import { createKernel, createScope, scopeOf } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * interface Events { "demo/tick": (from: string) => void }
 * const root = createKernel<Events>();
 * const scope = createScope(root, "agent-1");
 * const heard: string[] = [];
 * scope.ctx.on("demo/tick", (from) => void heard.push(from));
 * root.emit("demo/tick", "root");
 * scope.ctx.emit("demo/tick", "scope");
 * assert.deepEqual(heard, ["root", "scope"]);
 * assert.equal(scopeOf(scope.ctx)?.key, "agent-1");
 * await scope.dispose();
 * ```
 */
export function createScope<E extends object, S extends object>(
  ctx: HarnessContext<E, S>,
  key: string,
): Scope<E, S> {
  if (typeof key !== "string" || key.length === 0) {
    throw new HarnessError("INVALID_ARGS", "Cannot create a scope without a key");
  }
  const info: ScopeInfo = Object.freeze({ key, parent: ctx.scope });
  // An empty plugin: no stack Cordis could capture here would ever be used.
  const fiber = registering(
    ctx.raw,
    `create scope "${key}"`,
    () => withoutStacks(() => ctx.raw.plugin({ name: `scope:${key}`, apply() {} })),
  );
  // The fiber's context exists as soon as the fiber does; the plugin body may
  // run later, but registrations made through this context belong to the fiber.
  const scopeRaw: Context = fiber.ctx;
  tagScope(scopeRaw, info);
  const dispose = disposer(fiber, `scope "${key}"`);
  let disposed = false;
  return {
    key,
    info,
    ctx: wrapContext<E, S>(scopeRaw),
    ready: Promise.resolve(fiber).then(() => undefined),
    get disposed() {
      return disposed;
    },
    dispose() {
      disposed = true;
      return dispose();
    },
  };
}

/**
 * The scope a context belongs to: the nearest label, inherited by derived contexts.
 *
 * @param ctx Any harness context.
 * @returns The scope's label, or `undefined` outside every scope.
 */
export function scopeOf(ctx: { readonly scope: ScopeInfo | undefined }): ScopeInfo | undefined {
  return ctx.scope;
}
