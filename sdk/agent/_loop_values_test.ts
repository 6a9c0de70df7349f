import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { defaultSleep } from "./_loop_values.ts";

describe("defaultSleep()", () => {
  it("sleeps a delay past the longest timer (2^31-1 ms) in timers of at most that, one after another", async () => {
    const scheduled: number[] = [];
    const realSet = globalThis.setTimeout;
    const realClear = globalThis.clearTimeout;
    // Timers that record their delay and fire at once.
    globalThis.setTimeout = ((callback: () => void, ms: number) => {
      scheduled.push(ms);
      queueMicrotask(callback);
      return 0;
    }) as unknown as typeof setTimeout;
    globalThis.clearTimeout = (() => {}) as typeof clearTimeout;
    try {
      await defaultSleep(3e9, new AbortController().signal);
      await defaultSleep(100, new AbortController().signal);
    } finally {
      globalThis.setTimeout = realSet;
      globalThis.clearTimeout = realClear;
    }
    assert.deepEqual(scheduled, [2 ** 31 - 1, 3e9 - (2 ** 31 - 1), 100]);
  });

  it("ends at once when the signal aborts during a long delay, and at once for none (NaN, negative, 0)", async () => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve("hung"), 1000)));
    try {
      const sleeping = defaultSleep(3e9, controller.signal).then(() => "woke");
      const abort = setTimeout(() => controller.abort(), 5);
      assert.equal(await Promise.race([sleeping, late]), "woke");
      clearTimeout(abort);
      for (const ms of [NaN, -1, 0]) {
        assert.equal(
          await Promise.race([defaultSleep(ms, new AbortController().signal).then(() => "woke"), late]),
          "woke",
        );
      }
    } finally {
      clearTimeout(timer);
    }
  });
});
