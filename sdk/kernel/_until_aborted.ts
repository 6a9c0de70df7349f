// Waiting on a listener chain that may ignore the caller's signal: once the
// signal aborts, the caller goes on (its listeners' late answers are dropped).

/** What {@linkcode untilAborted} resolves to when the signal aborted first. */
export const ABORTED: unique symbol = Symbol("aborted");

const whenAborted = new WeakMap<AbortSignal, Promise<typeof ABORTED>>();

// Signals aborted only through abortAnnounced(): their waits are settled by that call, not by an abort listener (on
// Node an EventTarget listener costs microseconds, and the loop makes a signal per turn). The value is the settling
// function once a wait needs it.
const announced = new WeakMap<AbortSignal, (() => void) | undefined>();

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
      else if (announced.has(signal)) announced.set(signal, later);
      else signal.addEventListener("abort", later, { once: true });
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

/**
 * A controller whose signal's waits in {@linkcode untilAborted} are settled
 * by {@linkcode abortAnnounced} rather than by an abort listener. Its owner
 * must abort it only through `abortAnnounced`.
 */
export function announcedController(): AbortController {
  const controller = new AbortController();
  announced.set(controller.signal, undefined);
  return controller;
}

/**
 * Abort a controller made by {@linkcode announcedController}, and settle the
 * waits on its signal as an abort listener would have.
 *
 * @param controller The controller.
 * @param reason The abort reason.
 */
export function abortAnnounced(controller: AbortController, reason: unknown): void {
  controller.abort(reason);
  announced.get(controller.signal)?.();
}
