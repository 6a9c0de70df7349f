// Waiting on a listener chain that may ignore the caller's signal: once the
// signal aborts, the caller goes on (its listeners' late answers are dropped).

import { onAbort } from "./_on_abort.ts";

/** What {@linkcode untilAborted} resolves to when the signal aborted first. */
export const ABORTED: unique symbol = Symbol("aborted");

const whenAborted = new WeakMap<AbortSignal, Promise<typeof ABORTED>>();

// One promise per signal, settled by one listener: a turn waits on several chains, and each wait adds only a
// reaction, not an abort listener. It settles a macrotask after the abort: a chain that answers the abort at once
// (in its abort listener, or in the reactions that follow, as a hook that cancels the turn and then decides does)
// is still heard.
function abortedPromise(signal: AbortSignal): Promise<typeof ABORTED> {
  let promise = whenAborted.get(signal);
  if (promise === undefined) {
    promise = new Promise((resolve) => {
      const later = () => void setTimeout(() => resolve(ABORTED), 0);
      if (signal.aborted) later();
      else onAbort(signal, later, true); // the signal's one listener, shared with the stream guard's watch
    });
    whenAborted.set(signal, promise);
  }
  return promise;
}

/**
 * `value` as it settles, or {@linkcode ABORTED} once `signal` has aborted and
 * `value` did not settle in the macrotask that followed, whichever comes
 * first. A rejection of `value` after that is handled (and dropped). A value
 * that is not a promise is returned as it is.
 *
 * @param value What a listener chain returned.
 * @param signal The caller's signal.
 */
export function untilAborted<T>(value: T | Promise<T>, signal: AbortSignal): T | Promise<T | typeof ABORTED> {
  if (!(value instanceof Promise)) return value;
  return Promise.race([value, abortedPromise(signal)]);
}
