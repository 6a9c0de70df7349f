/**
 * Internal: scope-filtered dispatch for a scope named by its label rather than
 * by a context. The tool runtime and the system prompt are services shared by
 * every scope; a call carries the scope it runs for (`input.scope`,
 * `context.scope`), and hooks must be admitted by the kernel's rule for that
 * scope: listeners outside every scope, and those of the scope and its
 * ancestors. Waterfalls composed here allow `next()` to be called more than
 * once, so a `tools/execute` wrapper can retry.
 *
 * @module
 */

import { Context } from "cordis";
import { admits, type ScopeInfo, unheard, wrapContext } from "../kernel/harness_context.ts";
import { containRejection } from "../kernel/_contain_rejection.ts";

// deno-lint-ignore no-explicit-any
type AnyFunction = (...args: any[]) => any;

interface RawLike {
  readonly raw: Context;
}

function scopeOfRaw(raw: Context): ScopeInfo | undefined {
  return wrapContext(raw).scope;
}

/**
 * Whether a registration made in `owner` applies to a call or assembly for
 * `target`: registrations outside every scope always apply; scoped ones apply
 * to their scope and its descendants only, so a call without a scope reaches
 * unscoped registrations only. (Unlike an announcement, a call for no scope
 * is not a broadcast.)
 */
export function appliesTo(owner: ScopeInfo | undefined, target: ScopeInfo | undefined): boolean {
  return owner === undefined || (target !== undefined && admits(owner, target));
}

const eventsOf = new WeakMap<object, Context["events"]>();

/**
 * The listeners of `name` for a call from `scope` (see {@linkcode appliesTo}),
 * in registration order; `"all"` admits every listener (an announcement).
 */
export function admittedListeners(ctx: RawLike, scope: ScopeInfo | undefined | "all", name: string): AnyFunction[] {
  // No listener at all (the common case on the hot path): the harness context's own check, which reads Cordis's
  // listener table without its tracing proxy; no filter or bind work.
  if (unheard(ctx, name)) return [];
  let events = eventsOf.get(ctx);
  // Read once per host: a property read on a Cordis context goes through its tracing proxy.
  if (events === undefined) eventsOf.set(ctx, events = ctx.raw.events);
  const thisArg = {
    [Context.filter]: (hookCtx: Context) => scope === "all" || appliesTo(scopeOfRaw(hookCtx), scope),
  };
  // `dispatch` resolves and binds the admitted callbacks without calling them.
  return events.dispatch("waterfall", [thisArg, name]) as AnyFunction[];
}

/**
 * Run listeners as middleware around `inner`. Each listener receives `args`
 * followed by `next`; `next` may be called again (a retry re-runs the rest).
 */
export function runWaterfall<R>(listeners: readonly AnyFunction[], args: readonly unknown[], inner: () => R): R {
  const at = (index: number): () => R => () =>
    index < listeners.length ? listeners[index](...args, at(index + 1)) : inner();
  return at(0)();
}

/**
 * Call every listener with `args`; a listener that throws is reported on
 * `kernel/listener-error` (through `report`) and the others still run.
 */
export function emitContained(
  listeners: readonly AnyFunction[],
  name: string,
  args: readonly unknown[],
  report: (name: string, error: unknown) => void,
): void {
  for (const listener of listeners) {
    try {
      containRejection(listener(...args), (error) => report(name, error));
    } catch (error) {
      report(name, error);
    }
  }
}

/**
 * Report a failing observer the way the kernel does: on `kernel/listener-error` (to the reporters admitted for
 * `scope`, the call's, as the failing listener was), else on the console.
 */
export function reportListenerError(
  ctx: RawLike,
  name: string,
  error: unknown,
  scope: ScopeInfo | undefined | "all" = "all",
): void {
  const reporters = admittedListeners(ctx, scope, "kernel/listener-error");
  if (reporters.length === 0) {
    console.error(`[@dsh/harness] a listener of "${name}" threw:`, error);
    return;
  }
  for (const reporter of reporters) {
    // A failing error reporter is ignored, an async one that rejects too (nothing would hear it).
    try {
      containRejection(reporter(name, error), () => {});
    } catch { /* ignored */ }
  }
}

/** Emit `name` to every listener (an unfiltered announcement), containing failures. */
export function announce(ctx: RawLike, name: string): void {
  emitContained(admittedListeners(ctx, "all", name), name, [], (n, e) => reportListenerError(ctx, n, e));
}
