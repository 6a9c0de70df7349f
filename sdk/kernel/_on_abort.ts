/**
 * Internal: many callbacks on one abort signal through a single listener.
 *
 * @module
 */

interface Listeners {
  readonly callbacks: Set<() => void>;
  readonly fire: () => void;
}

const listeners = new WeakMap<AbortSignal, Listeners>();

// Signals aborted only through abortAnnounced(), which runs their callbacks itself: they get no EventTarget listener
// (adding one costs microseconds on Node, and the loop makes a signal per turn).
const announced = new WeakSet<AbortSignal>();

/**
 * A controller whose signal's {@linkcode onAbort} callbacks are run by
 * {@linkcode abortAnnounced}, without an `abort` listener on the signal. Its
 * owner must abort it only through `abortAnnounced`; listeners others add to
 * the signal with `addEventListener` are called as usual.
 */
export function announcedController(): AbortController {
  const controller = new AbortController();
  announced.add(controller.signal);
  return controller;
}

/**
 * Abort a controller made by {@linkcode announcedController} and run its
 * signal's {@linkcode onAbort} callbacks, as its `abort` listener would have.
 * A controller already aborted is left as it is.
 *
 * @param controller The controller.
 * @param reason The abort reason.
 */
export function abortAnnounced(controller: AbortController, reason: unknown): void {
  const signal = controller.signal;
  if (signal.aborted) return;
  controller.abort(reason);
  listeners.get(signal)?.fire();
}

/**
 * Call `callback` once when `signal` aborts. Every callback on one signal
 * shares one `abort` listener: the parallel delegations and tool calls of a
 * step and the model calls of a turn share the turn's signal, and a listener
 * each made Node warn of a leak past 10 (its limit a target). A signal of
 * {@linkcode announcedController} gets no listener: its callbacks run from
 * {@linkcode abortAnnounced}, after the signal's own `abort` listeners (so a
 * callback registered by one of those, once the signal reads aborted, is
 * called too). A callback that throws does not stop the others. Otherwise, as
 * with `addEventListener`, a signal that has already aborted calls nothing:
 * callers look at `signal.aborted` first.
 *
 * @param signal The signal.
 * @param callback Called once, on abort.
 * @param keep Leave the listener on the signal when the last callback goes: for a signal that short registrations
 *   come and go on (a turn's model calls, one after another), where adding and removing an EventTarget listener each
 *   time costs microseconds on Node and a set entry does not.
 * @returns A function that removes the callback (and, unless `keep`, the listener with the last one).
 */
export function onAbort(signal: AbortSignal, callback: () => void, keep = false): () => void {
  let entry = listeners.get(signal);
  if (entry === undefined) {
    const callbacks = new Set<() => void>();
    const fire = () => {
      listeners.delete(signal);
      for (const f of callbacks) {
        try {
          f();
        } catch (error) {
          console.error("[@dsh/harness] an abort callback threw:", error);
        }
      }
      callbacks.clear();
    };
    entry = { callbacks, fire };
    listeners.set(signal, entry);
    if (!announced.has(signal)) signal.addEventListener("abort", fire, { once: true });
  }
  const own = entry;
  // A callback registered twice is called (and removed) once per registration.
  const once = () => callback();
  own.callbacks.add(once);
  return () => {
    if (!own.callbacks.delete(once) || own.callbacks.size > 0 || keep) return;
    if (listeners.get(signal) === own) listeners.delete(signal);
    if (!announced.has(signal)) signal.removeEventListener("abort", own.fire);
  };
}
