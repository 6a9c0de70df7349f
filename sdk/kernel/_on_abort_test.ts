import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { abortAnnounced, announcedController, onAbort } from "./_on_abort.ts";
import { ABORTED, untilAborted } from "./_until_aborted.ts";

/** The `abort` listeners `signal` holds, counted through its own add/remove calls. */
function counted(signal: AbortSignal): { readonly count: number } {
  const state = { count: 0 };
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((type: string, ...rest: [EventListener, AddEventListenerOptions?]) => {
    if (type === "abort") state.count++;
    add(type, ...rest);
  }) as typeof signal.addEventListener;
  signal.removeEventListener = ((type: string, ...rest: [EventListener]) => {
    if (type === "abort") state.count--;
    remove(type, ...rest);
  }) as typeof signal.removeEventListener;
  return state;
}

describe("onAbort()", () => {
  it("calls every callback still registered, once, through one listener", () => {
    const controller = new AbortController();
    const listeners = counted(controller.signal);
    const called: number[] = [];
    const offs = Array.from({ length: 20 }, (_, i) => onAbort(controller.signal, () => void called.push(i)));
    assert.equal(listeners.count, 1);
    offs[3]();
    offs[3]();
    controller.abort();
    controller.abort();
    assert.deepEqual(called, Array.from({ length: 20 }, (_, i) => i).filter((i) => i !== 3));
  });

  it("removes its listener with the last callback, and a throwing callback does not stop the others", () => {
    const controller = new AbortController();
    const listeners = counted(controller.signal);
    const offs = [onAbort(controller.signal, () => {}), onAbort(controller.signal, () => {})];
    for (const off of offs) off();
    assert.equal(listeners.count, 0);
    const called: string[] = [];
    const error = console.error;
    console.error = () => {};
    try {
      onAbort(controller.signal, () => {
        throw new Error("boom");
      });
      onAbort(controller.signal, () => void called.push("second"));
      controller.abort();
    } finally {
      console.error = error;
    }
    assert.deepEqual(called, ["second"]);
  });

  it("an announced controller's callbacks are run by abortAnnounced(), with no listener on the signal", async () => {
    const controller = announcedController();
    const listeners = counted(controller.signal);
    const called: string[] = [];
    const off = onAbort(controller.signal, () => void called.push("removed"));
    onAbort(controller.signal, () => void called.push("kept"), true);
    onAbort(controller.signal, () => void called.push("once"));
    off();
    // A listener someone else adds is an EventTarget listener as usual, called by the abort itself.
    controller.signal.addEventListener("abort", () => void called.push("event"));
    const wait = untilAborted(new Promise(() => {}), controller.signal);
    assert.equal(listeners.count, 1, "only the listener added with addEventListener");
    abortAnnounced(controller, new Error("cancelled"));
    assert.deepEqual(called, ["event", "kept", "once"]);
    assert.equal((controller.signal.reason as Error).message, "cancelled");
    assert.equal(await wait, ABORTED, "a wait on the signal is settled");
    // A second abort changes nothing: the reason stays, and a callback added since is not called (as an abort
    // listener added to an aborted signal is not).
    onAbort(controller.signal, () => void called.push("late"));
    abortAnnounced(controller, new Error("again"));
    assert.deepEqual(called, ["event", "kept", "once"]);
    assert.equal((controller.signal.reason as Error).message, "cancelled");
  });
});
