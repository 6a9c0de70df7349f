// Internal: the code a disposal runs and waits for (an effect's undo, a `session/release` listener) while it runs
// synchronously, so that a `dispose()` called from there can tell it is re-entrant.
//
// A disposal waits for the code it runs. When that code awaits a `dispose()` of what is being disposed (the harness,
// the agent), the disposal waits for the call and the call for the disposal: neither would ever settle. Such a call
// is told apart here by where it is made: from code a teardown runs, while that code runs synchronously (from its
// start to its first `await`), its context known. Nothing else tells a call from inside from one made meanwhile by
// someone else (a signal handler's, which must wait) without an async context, which not every runtime this package
// serves has, or has cheaply. A call made after such code's first `await` is not seen, and waits as any other does.

import type { Context } from "cordis";
import { withoutStacks } from "./_without_stacks.ts";

/** The contexts whose teardown code is running now, innermost last. */
const running: Context[] = [];

/**
 * Run `code` for the disposal of `ctx` (its fiber's or an enclosing one's): while it runs synchronously, a
 * `dispose()` of that fiber or of one above it is known to be called from inside (see {@linkcode calledFromTeardown}).
 *
 * @param ctx The context the code belongs to (an effect's, a scope's).
 * @param code The undo or listener call.
 * @returns What `code` returns.
 */
export function runForTeardown<T>(ctx: Context, code: () => T): T {
  running.push(ctx);
  try {
    return code();
  } finally {
    running.pop();
  }
}

/**
 * Whether teardown code of a context in `fiber`, or in a fiber under it, is running synchronously now: a `dispose()`
 * of `fiber` made now is made from inside its own disposal, or from inside one that disposal waits for.
 *
 * @param fiber A Cordis fiber (a context's `fiber`: the root's for a harness, a scope's for an agent).
 * @returns `true` when such code is on the stack.
 */
export function calledFromTeardown(fiber: object): boolean {
  for (const ctx of running) {
    for (let f = fiberOf(ctx); f !== undefined;) {
      if (f === fiber) return true;
      const parent = withoutStacks(() => (f as { parent?: { fiber?: object } }).parent?.fiber);
      f = parent === f ? undefined : parent;
    }
  }
  return false;
}

/** The fiber of `ctx` (read without the stack captures Cordis's getters may make). */
export function fiberOf(ctx: Context): object | undefined {
  return withoutStacks(() => ctx.fiber) as object | undefined;
}
