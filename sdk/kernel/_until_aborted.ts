// Waiting on a listener chain that may ignore the caller's signal: once the
// signal aborts, the caller goes on (its listeners' late answers are dropped).

/** What {@linkcode untilAborted} resolves to when the signal aborted first. */
export const ABORTED: unique symbol = Symbol("aborted");

const whenAborted = new WeakMap<AbortSignal, Promise<typeof ABORTED>>();

// One promise per signal, settled by one listener: a turn waits on several chains, and each wait adds only a
// reaction, not an abort listener.
function abortedPromise(signal: AbortSignal): Promise<typeof ABORTED> {
  let promise = whenAborted.get(signal);
  if (promise === undefined) {
    promise = signal.aborted
      ? Promise.resolve(ABORTED)
      : new Promise((resolve) => signal.addEventListener("abort", () => resolve(ABORTED), { once: true }));
    whenAborted.set(signal, promise);
  }
  return promise;
}

/**
 * `value` as it settles, or {@linkcode ABORTED} as soon as `signal` aborts,
 * whichever comes first. A rejection of `value` after that is handled (and
 * dropped). A value that is not a promise is returned as it is.
 *
 * @param value What a listener chain returned.
 * @param signal The caller's signal.
 */
export function untilAborted<T>(value: T | Promise<T>, signal: AbortSignal): T | Promise<T | typeof ABORTED> {
  if (!(value instanceof Promise)) return value;
  return Promise.race([value, abortedPromise(signal)]);
}
