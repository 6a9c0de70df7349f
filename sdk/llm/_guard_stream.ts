/**
 * Normalisation of a model stream: whatever the producer does, the consumer
 * sees chunks ending with exactly one `finish`, and never a throw.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import { onAbort } from "../kernel/_on_abort.ts";
import type { LlmFailureData } from "./llm_failure.ts";
import type { StreamChunk } from "./stream_chunk.ts";

/** The `finish` chunk of an aborted call. */
export function abortedFinish(signal: AbortSignal): StreamChunk {
  const reason = signal.reason;
  const detail = reason instanceof Error && reason.name !== "AbortError" ? `: ${reason.message}` : "";
  return {
    type: "finish",
    reason: { kind: "aborted", failure: { code: "ABORTED", message: `Model call was aborted${detail}` } },
  };
}

/** The failure data of anything thrown by an adapter or a listener. */
export function failureOf(error: unknown): LlmFailureData {
  if (HarnessError.isInstance(error)) {
    const toData = (error as { toData?: () => LlmFailureData }).toData;
    if (typeof toData === "function") return toData.call(error);
    return { code: error.code, message: error.message };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { code: "UNKNOWN", message: `Model call failed: ${message}` };
}

/** The terminal chunk for a throw: `aborted` when the signal fired, else `error`. */
export function thrownFinish(error: unknown, signal: AbortSignal): StreamChunk {
  if (signal.aborted) return abortedFinish(signal);
  return { type: "finish", reason: { kind: "error", failure: failureOf(error) } };
}

const CLOSED: StreamChunk = {
  type: "finish",
  reason: {
    kind: "error",
    failure: { code: "STREAM_CLOSED", message: "Model stream ended without a finish chunk" },
  },
};

/** The terminal chunk for a producer whose `next()` answered something that is not an iterator result. */
function notAResult(answer: unknown): StreamChunk {
  const what = answer === null ? "null" : typeof answer;
  return {
    type: "finish",
    reason: {
      kind: "error",
      failure: {
        code: "MALFORMED_RESPONSE",
        message: `Model stream's next() answered ${what}, not an iterator result object`,
      },
    },
  };
}

const DONE: IteratorResult<StreamChunk> = Object.freeze({ value: undefined, done: true });

/**
 * Run `open()` and pass its chunks through, so that the result never throws,
 * ends with exactly one `finish`, and stops promptly when `signal` fires even
 * if the producer ignores it. The producer is closed (its `return()` called)
 * after its `finish`, at an abort, or when the consumer stops early, and never
 * waited for: a cleanup that never settles cannot hold the call.
 *
 * Written as a plain iterator rather than an async generator: it sits on the
 * per-chunk path of every model call, and a generator costs an extra hop and a
 * `Promise.race` per chunk. The abort listener answers the pending pull itself.
 */
export function guardStream(
  open: () => AsyncIterable<StreamChunk>,
  signal: AbortSignal,
): AsyncIterableIterator<StreamChunk> {
  return new GuardedStream(open, signal);
}

/**
 * Give every chunk of `stream` to `sink`, in order, as `for await` would, and
 * resolve after the last one. A guarded stream is driven in push mode: each
 * chunk reaches the sink from the reaction to the producer's own promise, with
 * no promise of the guard's and no resumption of the caller in between. When
 * `sink` throws, the stream is closed (as `for await` closes it, but without
 * waiting for the producer's cleanup) and the returned promise rejects with
 * that error.
 *
 * @param stream The chunks (any async iterable; only a guarded one is pushed).
 * @param sink Called synchronously with each chunk.
 * @returns Resolves once the stream has ended.
 */
export function forEachChunk(stream: AsyncIterable<StreamChunk>, sink: (chunk: StreamChunk) => void): Promise<void> {
  if (stream instanceof GuardedStream) return stream.drain(sink);
  return (async () => {
    for await (const chunk of stream) sink(chunk);
  })();
}

class GuardedStream implements AsyncIterableIterator<StreamChunk> {
  readonly #open: () => AsyncIterable<StreamChunk>;
  readonly #signal: AbortSignal;
  #state: "fresh" | "open" | "final" | "done" = "fresh";
  #iterator: AsyncIterator<StreamChunk> | undefined;
  #waiting: ((result: IteratorResult<StreamChunk>) => void) | undefined;
  // The unanswered next(), and the next() calls made meanwhile (answered in order after it).
  #current: ((result: IteratorResult<StreamChunk>) => void) | undefined;
  #queued: ((result: IteratorResult<StreamChunk>) => void)[] | undefined;
  // Whether the signal fired since the stream opened: a field read per pull
  // instead of the `aborted` getter (a brand check and a call on Node).
  #aborted = false;
  readonly #onAbort = (): void => this.#abort();
  // Removes #onAbort from the signal's shared listener (onAbort with `keep`: a turn's steps stream one after
  // another on the turn's signal, and its one listener stays for all of them).
  #unwatch: (() => void) | undefined;

  constructor(open: () => AsyncIterable<StreamChunk>, signal: AbortSignal) {
    this.#open = open;
    this.#signal = signal;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<StreamChunk> {
    return this;
  }

  next(): Promise<IteratorResult<StreamChunk>> {
    // A next() made before the previous one settled waits for it, as an async generator queues them: one pull at a
    // time reaches the producer, and every call is answered, in order.
    if (this.#current !== undefined) return new Promise((resolve) => (this.#queued ??= []).push(resolve));
    if (this.#state === "done") return Promise.resolve(DONE);
    if (this.#state === "final") {
      this.#close();
      return Promise.resolve(DONE);
    }
    return new Promise((resolve) => {
      this.#current = resolve;
      this.#pull(this.#settleNext);
    });
  }

  // Answer the unanswered next(), then the next() calls queued behind it, each with a pull of its own (a stream that
  // ended answers them at once). Made once per stream.
  readonly #settleNext = (result: IteratorResult<StreamChunk>): void => {
    const resolve = this.#current!;
    this.#current = undefined;
    resolve(result);
    for (let waiter = this.#queued?.shift(); waiter !== undefined; waiter = this.#queued?.shift()) {
      if (this.#state === "done" || this.#state === "final") {
        if (this.#state === "final") this.#close();
        waiter(DONE);
        continue;
      }
      this.#current = waiter;
      this.#pull(this.#settleNext);
      return;
    }
  };

  /** The push mode of {@linkcode forEachChunk}: one pull after each chunk the sink took. */
  drain(sink: (chunk: StreamChunk) => void): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const deliver = (result: IteratorResult<StreamChunk>): void => {
        if (result.done) return resolve();
        try {
          sink(result.value);
        } catch (error) {
          // As `for await` does: close the stream, then rethrow.
          this.#close();
          reject(error);
          return;
        }
        if (this.#state === "open") this.#pull(deliver);
        else {
          this.#close();
          resolve();
        }
      };
      if (this.#state === "fresh" || this.#state === "open") this.#pull(deliver);
      else {
        this.#close();
        resolve();
      }
    });
  }

  // Ask for the next chunk; `settle` gets it (at once when the answer is known without the producer).
  #pull(settle: (result: IteratorResult<StreamChunk>) => void): void {
    if (this.#state === "fresh") {
      if (this.#signal.aborted) return settle(this.#final(abortedFinish(this.#signal)));
      try {
        this.#iterator = this.#open()[Symbol.asyncIterator]();
      } catch (error) {
        return settle(this.#final(thrownFinish(error, this.#signal), false));
      }
      this.#state = "open";
      this.#unwatch = onAbort(this.#signal, this.#onAbort, true);
      // Fired inside open(), before the relay listened (which an aborted signal never calls): this pull answers it,
      // as a later pull answers a later abort, without asking a producer that may ignore the signal.
      if (this.#signal.aborted) {
        this.#aborted = true;
        return settle(this.#abortResult());
      }
    } else if (this.#aborted) {
      return settle(this.#abortResult());
    }
    this.#waiting = settle;
    // Typed as the protocol says; #onStep checks what it actually gets.
    let next: Promise<IteratorResult<StreamChunk>> | IteratorResult<StreamChunk>;
    try {
      next = this.#iterator!.next();
    } catch (error) {
      next = Promise.reject(error);
    }
    // As `for await` does, an answer that is not a promise is taken as the result itself (a thenable is followed).
    if (next instanceof Promise) next.then(this.#onStep, this.#onError);
    else Promise.resolve(next).then(this.#onStep, this.#onError);
  }

  // The two settlers of a pull, made once per stream rather than once per
  // chunk. A pull is answered once: when the abort (or `return()`) answered it
  // first, `#waiting` is empty and the producer's late answer is dropped (no
  // pull follows an abort: the stream is final).
  readonly #onStep = (step: IteratorResult<StreamChunk>): void => {
    const resolve = this.#waiting;
    if (resolve === undefined) return;
    this.#waiting = undefined;
    let result: IteratorResult<StreamChunk>;
    try {
      result = this.#answer(step);
    } catch (error) {
      // A getter of the producer's result threw, where `for await` would throw: the call fails; the next pull closes
      // the producer.
      result = this.#final(thrownFinish(error, this.#signal));
    }
    resolve(result);
  };

  // What the consumer gets for the producer's answer: its chunk, or the terminal one.
  #answer(step: IteratorResult<StreamChunk>): IteratorResult<StreamChunk> {
    // Where `for await` would throw a TypeError: the call fails; the next pull closes the producer.
    if (typeof step !== "object" || step === null) return this.#final(notAResult(step));
    const done = step.done;
    if (done) {
      this.#iterator = undefined;
      return this.#final(this.#signal.aborted ? abortedFinish(this.#signal) : CLOSED);
    }
    const value = step.value;
    if (value?.type === "finish") return this.#final(value);
    // The producer's own result when it is an exact one (no allocation per chunk).
    return done === false ? step : { value, done: false };
  }

  readonly #onError = (error: unknown): void => {
    const resolve = this.#waiting;
    if (resolve === undefined) return;
    this.#waiting = undefined;
    this.#iterator = undefined; // a producer that threw is over: nothing to close
    resolve(this.#final(thrownFinish(error, this.#signal)));
  };

  return(): Promise<IteratorResult<StreamChunk>> {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.(DONE);
    this.#close();
    return Promise.resolve(DONE);
  }

  /** Deliver the terminal chunk; the pull after it closes the producer and ends the stream. */
  #final(chunk: StreamChunk, listening = true): IteratorResult<StreamChunk> {
    this.#state = "final";
    if (listening) this.#unwatch?.();
    return { value: chunk, done: false };
  }

  #abortResult(): IteratorResult<StreamChunk> {
    const pending = this.#iterator;
    this.#iterator = undefined;
    // The producer may ignore the signal: ask it to stop, without waiting for it.
    if (pending !== undefined) Promise.resolve().then(() => pending.return?.()).catch(() => {});
    return this.#final(abortedFinish(this.#signal));
  }

  #abort(): void {
    this.#aborted = true;
    const waiting = this.#waiting;
    if (waiting === undefined) return; // the next pull sees the signal
    this.#waiting = undefined;
    waiting(this.#abortResult());
  }

  // End the stream and ask the producer to stop (its `return()`), without waiting for it: the consumer has its
  // answer, and a producer whose cleanup never settles (a `finally` that awaits for ever, a `return()` that never
  // answers) must not hold the call, nor the cancel or disposal waiting on it.
  #close(): void {
    this.#state = "done";
    this.#unwatch?.();
    const iterator = this.#iterator;
    this.#iterator = undefined;
    if (iterator === undefined) return;
    Promise.resolve().then(() => iterator.return?.()).catch(() => {
      /* the stream is over; a failing cleanup changes nothing */
    });
  }
}
