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
  return running.some((ctx) => fibersUp(ctx).includes(fiber));
}

/** The fibers of agents' scopes whose teardown is under way (see {@linkcode tearingDownAgent}). */
const agentTeardowns = new Set<object>();

/**
 * Run an agent's teardown: while it is under way, teardown code in its scope is known to belong to it (see
 * {@linkcode calledFromAgentTeardown}).
 *
 * @param fiber The fiber of the agent's scope.
 * @param teardown The agent's teardown.
 * @returns Its promise, settled once the agent is no longer marked.
 */
export function tearingDownAgent(fiber: object, teardown: () => Promise<void>): Promise<void> {
  agentTeardowns.add(fiber);
  return teardown().finally(() => agentTeardowns.delete(fiber));
}

/**
 * Whether code an agent's teardown runs, of an agent under `fiber`, is running synchronously now. A disposal of the
 * harness waits for every teardown of its agents, so a `harness.dispose()` made now is made from inside one that
 * disposal would wait for, even when it is the first call; code a plugin's or a scope's own `dispose()` runs is not
 * (the harness's disposal does not wait for that `dispose()`).
 *
 * @param fiber The harness's root fiber.
 * @returns `true` when such code is on the stack.
 */
export function calledFromAgentTeardown(fiber: object): boolean {
  return running.some((ctx) => {
    const up = fibersUp(ctx);
    return up.includes(fiber) && up.some((f) => agentTeardowns.has(f));
  });
}

/** The fiber of `ctx`, then those above it, up to the root's. */
function fibersUp(ctx: Context): object[] {
  const up: object[] = [];
  for (let f = fiberOf(ctx); f !== undefined;) {
    up.push(f);
    const parent = withoutStacks(() => (f as { parent?: { fiber?: object } }).parent?.fiber);
    f = parent === f ? undefined : parent;
  }
  return up;
}

/** The fiber of `ctx` (read without the stack captures Cordis's getters may make). */
export function fiberOf(ctx: Context): object | undefined {
  return withoutStacks(() => ctx.fiber) as object | undefined;
}
