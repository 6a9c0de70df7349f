/**
 * Internal: the abort state of an agent turn, with its `AbortSignal` made on
 * first read.
 *
 * On Node a turn's `AbortController().signal` and an `abort` listener on it
 * cost microseconds (an EventTarget), which was a few percent of a turn. Most
 * turns are never cancelled and most of their readers only ask whether they
 * were: the loop, the prompt assembly and the stream guard read `aborted`
 * and `reason` here, and the guard waits for the abort through `watch()`. A
 * real signal is made only when something needs one (an adapter reading the
 * request's `signal`, a tool, the retry sleep), and is aborted with the same
 * reason, at once when the turn already was.
 *
 * @module
 */

import type { GenerateOptions } from "./llm_adapter.ts";

/** What the stream guard and the prompt assembly read of an abort: an `AbortSignal` has both. */
export interface AbortSource {
  /** Whether it fired. */
  readonly aborted: boolean;
  /** Why it fired (undefined before). */
  readonly reason: unknown;
}

/**
 * One turn's abort: the controller the agent's `cancel()` aborts. `signal`
 * is the turn's one `AbortSignal`, made on first read.
 */
export class TurnAbort implements AbortSource {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown = undefined;
  // Called once, after the signal's own listeners, when the turn is aborted.
  #watchers: Set<() => void> | undefined;

  /** Whether the turn was aborted. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** The reason given to {@linkcode TurnAbort.abort}. */
  get reason(): unknown {
    return this.#reason;
  }

  /** The turn's signal (the same object on every read); aborted already when the turn was. */
  get signal(): AbortSignal {
    let controller = this.#controller;
    if (controller === undefined) {
      controller = this.#controller = new AbortController();
      if (this.#aborted) controller.abort(this.#reason);
    }
    return controller.signal;
  }

  /** Whether the signal was made (for tests). */
  get materialized(): boolean {
    return this.#controller !== undefined;
  }

  /**
   * Abort the turn: the signal (if made) fires with `reason`, then every watcher is called. Only the first call counts.
   *
   * @param reason The reason; a `DOMException` `AbortError` when undefined, as `AbortController.abort()` gives.
   */
  abort(reason?: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason === undefined ? new DOMException("This operation was aborted", "AbortError") : reason;
    this.#controller?.abort(this.#reason);
    const watchers = this.#watchers;
    this.#watchers = undefined;
    if (watchers === undefined) return;
    for (const watcher of watchers) {
      try {
        watcher();
      } catch (error) {
        // As an EventTarget listener's throw: reported, and the other watchers still hear the abort.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  /**
   * Call `onAbort` when the turn is aborted (not when it already was).
   *
   * @param onAbort The callback.
   */
  watch(onAbort: () => void): void {
    if (this.#aborted) return;
    (this.#watchers ??= new Set()).add(onAbort);
  }

  /**
   * Stop watching.
   *
   * @param onAbort A callback given to {@linkcode TurnAbort.watch}.
   */
  unwatch(onAbort: () => void): void {
    this.#watchers?.delete(onAbort);
  }
}

// The requests the loop built with a lazy `signal` getter, and their turn's abort.
const turnAborts = new WeakMap<GenerateOptions, TurnAbort>();

/**
 * Record that `request`'s `signal` is `abort.signal`, so that the runtime can
 * guard its stream on the turn's abort without making the signal.
 *
 * @param request A request whose `signal` getter reads `abort.signal`.
 * @param abort The turn's abort.
 */
export function bindTurnAbort(request: GenerateOptions, abort: TurnAbort): void {
  turnAborts.set(request, abort);
}

/**
 * The turn's abort of a request the loop built (whose `signal` is that turn's).
 *
 * @param request The request.
 * @returns The abort, or `undefined` for any other request (a copy included).
 */
export function boundTurnAbort(request: GenerateOptions): TurnAbort | undefined {
  return turnAborts.get(request);
}

/**
 * What a stream of `request` is guarded on: the turn's abort for a request
 * the loop built, else its `signal`.
 *
 * @param request The request (this very object: a copy has its own signal).
 * @returns The abort source, or `undefined` for a request without a signal.
 */
export function abortOf(request: GenerateOptions): TurnAbort | AbortSignal | undefined {
  return turnAborts.get(request) ?? request.signal;
}
