/**
 * `withoutStacks(run)`: run a synchronous call into Cordis without the stack
 * captures Cordis makes for itself.
 *
 * Cordis builds `new Error()` objects eagerly on its registration paths, only
 * to have a stack at hand should something fail later: one in `plugin()`, two
 * per effect (every `provide`, `on`, plugin fiber and mixin), one per read of
 * a mixin accessor through a context proxy. A `createHarness()` makes about
 * 150 of them, and capturing a stack over code that has never run is what
 * makes the first call slow (measured in bench/PROFILE.md, "Cold start").
 * V8 skips the capture when `Error.stackTraceLimit` is 0, so the limit is 0 for
 * the duration of the call and restored in `finally` (on engines where Cordis
 * can work with such errors: see `supported`; not Bun).
 *
 * What this may change, and how it is kept honest:
 * - Only synchronous calls are wrapped, so no other task runs while the limit
 *   is 0; nothing is awaited inside.
 * - An error created inside the call (a Cordis refusal, e.g. a service
 *   provided twice in one fiber) would carry no frames: before it is rethrown
 *   its stack is captured again at the caller of `withoutStacks`, so it still
 *   says where the failing call was made. Its class, message and code are
 *   untouched.
 * - Callers pass only calls whose callbacks are Cordis's own (no user code runs
 *   synchronously inside): registering a listener or a service, creating a
 *   context, starting a plugin fiber (whose `apply` runs later, in a microtask,
 *   with the limit restored). Listeners of Cordis's `internal/*` events, which
 *   Cordis may fire synchronously while a service is registered, are the one
 *   exception; the harness registers none.
 * - Cordis keeps a stack captured at registration to splice into errors that
 *   a plugin or effect throws later: callers that care pass their own,
 *   captured with the limit in force (see `CoreImpl.plugin`).
 *
 * @module
 */

interface ErrorStatics {
  stackTraceLimit?: number;
  captureStackTrace?: (target: object, constructorOpt?: AnyFunction) => void;
}

// deno-lint-ignore no-explicit-any
type AnyFunction = (...args: any[]) => any;

const errors = Error as unknown as ErrorStatics;

/**
 * Whether an error created with the limit at 0 still has a string `stack`.
 * Cordis reads `error.stack.split(…)` when it composes an error: on V8 (Node,
 * Deno) the stack is then the header line alone, on JavaScriptCore (Bun) it is
 * `undefined`, which would turn a Cordis refusal into a `TypeError`. Probed on
 * the first call (no import-time effect); where it fails, nothing is changed.
 */
let supported: boolean | undefined;

function probe(limit: number): boolean {
  errors.stackTraceLimit = 0;
  try {
    return typeof new Error("probe").stack === "string";
  } finally {
    errors.stackTraceLimit = limit;
  }
}

/**
 * Run `run` with `Error.stackTraceLimit` at 0, restoring it afterwards.
 *
 * @param run A synchronous call into Cordis that runs no user code.
 * @returns What `run` returns.
 */
export function withoutStacks<T>(run: () => T): T {
  const limit = errors.stackTraceLimit;
  // Not supported by the engine, or already 0 (set by the user, or an
  // enclosing call): nothing to save.
  if (typeof limit !== "number" || limit === 0 || !(supported ??= probe(limit))) return run();
  errors.stackTraceLimit = 0;
  try {
    return run();
  } catch (error) {
    errors.stackTraceLimit = limit;
    if (error instanceof Error && typeof errors.captureStackTrace === "function") {
      errors.captureStackTrace(error, withoutStacks);
    }
    throw error;
  } finally {
    errors.stackTraceLimit = limit;
  }
}
