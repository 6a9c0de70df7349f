/**
 * `scheduleToolCalls()`: run one step's tool calls with exclusive barriers and
 * a capped parallel pool, delivering results in the model's order.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";

/** Options of {@linkcode scheduleToolCalls}. */
export interface ScheduleToolCallsOptions<T, R> {
  /**
   * The most calls of one parallel run in flight at once.
   *
   * @default {10}
   */
  maxParallel?: number;
  /** Whether an item may overlap its parallel neighbours; a throw counts as `false`. */
  isParallel(item: T, index: number): boolean;
  /** Run one item (for the loop: append `tool/call`, then execute). */
  run(item: T, index: number): Promise<R>;
}

/** One settled item, as {@linkcode scheduleToolCalls} yields it. */
export interface ScheduledResult<T, R> {
  /** The item as given. */
  readonly item: T;
  /** Its position in the input. */
  readonly index: number;
  /** What `run` resolved to. */
  readonly result: R;
}

/**
 * Schedule one step's calls.
 *
 * Contract: an exclusive item (one for which `isParallel` is not `true`) runs
 * alone, after every earlier item has settled and before any later item
 * starts. Consecutive parallel items form a run that shares a pool of at most
 * `maxParallel` items in flight; a slot is refilled as soon as one settles.
 * Items start in input order. Results are yielded in input order, each as
 * soon as it and every earlier item have settled, whatever order they settle
 * in. Items start without waiting for the consumer. If `run` rejects, no
 * further item starts and the generator throws that error when it reaches the
 * item; stopping the iteration early also stops starting new items (those in
 * flight are not cancelled; abort them through their own signal).
 *
 * @param items The calls, in the model's order.
 * @param options How to classify and run them.
 * @returns An async generator of results in input order.
 * @throws {HarnessError} `INVALID_ARGS` at once when `maxParallel` is not a positive integer.
 *
 * @example Parallel reads around an exclusive write
 * ```ts
 * import { scheduleToolCalls } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const calls = ["read a", "read b", "write c", "read d"];
 * const order: string[] = [];
 * for await (const { item, result } of scheduleToolCalls(calls, {
 *   isParallel: (call) => call.startsWith("read"),
 *   run: async (call) => call.toUpperCase(),
 * })) {
 *   order.push(`${item}=${result}`);
 * }
 * assert.deepEqual(order, ["read a=READ A", "read b=READ B", "write c=WRITE C", "read d=READ D"]);
 * ```
 */
export function scheduleToolCalls<T, R>(
  items: readonly T[],
  options: ScheduleToolCallsOptions<T, R>,
): AsyncGenerator<ScheduledResult<T, R>> {
  const maxParallel = options.maxParallel ?? 10;
  if (!Number.isInteger(maxParallel) || maxParallel < 1) {
    throw new HarnessError("INVALID_ARGS", `Cannot schedule tool calls with maxParallel ${maxParallel}`);
  }
  if (!Array.isArray(items)) {
    throw new HarnessError("INVALID_ARGS", "Cannot schedule tool calls: items must be an array");
  }
  return drive([...items], maxParallel, options);
}

type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown };

async function* drive<T, R>(
  items: T[],
  maxParallel: number,
  options: ScheduleToolCallsOptions<T, R>,
): AsyncGenerator<ScheduledResult<T, R>> {
  const settled: (Settled<R> | undefined)[] = items.map(() => undefined);
  const waiters = new Map<number, () => void>();
  let stopped = false;

  const modes: (boolean | undefined)[] = [];
  // Each item is classified once; a throw is exclusive (fail closed).
  const parallel = (index: number): boolean => {
    if (modes[index] === undefined) {
      try {
        modes[index] = options.isParallel(items[index], index) === true;
      } catch {
        modes[index] = false;
      }
    }
    return modes[index];
  };
  const start = (index: number): Promise<void> =>
    Promise.resolve()
      .then(() => options.run(items[index], index))
      .then((value): Settled<R> => ({ ok: true, value }), (error: unknown): Settled<R> => ({ ok: false, error }))
      .then((outcome) => {
        settled[index] = outcome;
        if (!outcome.ok) stopped = true;
        waiters.get(index)?.();
      });

  const schedule = async () => {
    let next = 0;
    while (next < items.length && !stopped) {
      if (!parallel(next)) {
        await start(next++);
        continue;
      }
      // A run of parallel items: a rolling pool of at most maxParallel.
      let end = next;
      while (end < items.length && (end === next || parallel(end))) end++;
      const inFlight = new Set<Promise<void>>();
      while (next < end && !stopped) {
        const p = start(next++).then(() => void inFlight.delete(p));
        inFlight.add(p);
        if (inFlight.size >= maxParallel) await Promise.race(inFlight);
      }
      await Promise.all(inFlight);
    }
  };
  const scheduling = schedule();

  try {
    for (let index = 0; index < items.length; index++) {
      if (settled[index] === undefined) {
        await new Promise<void>((resolve) => {
          waiters.set(index, resolve);
          // Not started and never will be: the schedule stopped before it.
          void scheduling.then(() => {
            if (settled[index] === undefined) resolve();
          });
        });
        waiters.delete(index);
      }
      const outcome = settled[index];
      if (outcome === undefined) return;
      if (!outcome.ok) throw outcome.error;
      yield { item: items[index], index, result: outcome.value };
    }
  } finally {
    stopped = true;
  }
}
