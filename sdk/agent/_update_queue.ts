/**
 * What the agent hands its updates to: an `UpdateQueue` feeds one
 * `Agent.subscribe()` iterator, with its bound; an `UpdateListener` calls one
 * `Agent.listen()` listener at once.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { AgentUpdate } from "./agent.ts";
import { containRejection } from "../kernel/_contain_rejection.ts";

/** Where the agent publishes its updates, in order; `close()` ends the delivery. */
export interface UpdateSink {
  push(update: AgentUpdate): void;
  close(): void;
}

/**
 * A queue that feeds one `subscribe()` iterator. Written as a plain async
 * iterator (not a generator) so that `return()` ends it at once, even while
 * the consumer is waiting for the next item.
 */
export class UpdateQueue implements AsyncIterableIterator<AgentUpdate>, UpdateSink {
  // The oldest buffered update, then the rest in order. A streamed delta is usually the only one buffered (pushed
  // right after its event, which the waiting reader took): it stays in `#first`, because an array that a `shift()`
  // empties loses its backing store on V8, and the next `push` allocates a new one, once per chunk.
  #first: AgentUpdate | undefined;
  readonly #items: AgentUpdate[] = [];
  #waiting: ((result: IteratorResult<AgentUpdate>) => void) | undefined;
  #closed = false;
  #overflow: HarnessError | undefined;
  readonly #onClose: () => void;
  readonly #max: number;

  constructor(onClose: () => void, max: number) {
    this.#onClose = onClose;
    this.#max = max;
  }

  push(update: AgentUpdate): void {
    if (this.#closed) return;
    const waiting = this.#waiting;
    if (waiting) {
      this.#waiting = undefined;
      waiting({ value: update, done: false });
    } else if (this.#first === undefined) {
      this.#first = update;
    } else if (1 + this.#items.length >= this.#max) {
      // A consumer this far behind is dropped rather than buffered without bound.
      this.#first = undefined;
      this.#items.length = 0;
      this.#overflow = new HarnessError(
        "SUBSCRIBER_OVERFLOW",
        `The subscriber fell more than ${this.#max} updates behind and was dropped; resume from the session log`,
      );
      this.close();
    } else {
      this.#items.push(update);
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#onClose();
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<AgentUpdate>> {
    const first = this.#first;
    if (first !== undefined) {
      this.#first = this.#items.length > 0 ? this.#items.shift() : undefined;
      return Promise.resolve({ value: first, done: false });
    }
    if (this.#overflow !== undefined) {
      const error = this.#overflow;
      this.#overflow = undefined;
      return Promise.reject(error);
    }
    if (this.#closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise(this.#park);
  }

  // The executor of a waiting read, made once per queue rather than once per read.
  readonly #park = (resolve: (result: IteratorResult<AgentUpdate>) => void): void => {
    this.#waiting = resolve;
  };

  return(): Promise<IteratorResult<AgentUpdate>> {
    this.#first = undefined;
    this.#items.length = 0;
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<AgentUpdate> {
    return this;
  }
}

/**
 * Calls one `listen()` listener with each update, synchronously. A listener
 * that throws is reported on the console and keeps listening, as a session
 * observer does: the agent and the other listeners go on.
 */
export class UpdateListener implements UpdateSink {
  #listener: ((update: AgentUpdate) => void) | undefined;
  readonly #agentId: string;

  constructor(listener: (update: AgentUpdate) => void, agentId: string) {
    this.#listener = listener;
    this.#agentId = agentId;
  }

  push(update: AgentUpdate): void {
    const listener = this.#listener;
    if (listener === undefined) return;
    try {
      containRejection(listener(update), (error) => this.#report(error));
    } catch (error) {
      this.#report(error);
    }
  }

  #report(error: unknown): void {
    console.error(`[@dsh/harness] a listener of agent ${this.#agentId} threw:`, error);
  }

  close(): void {
    this.#listener = undefined;
  }
}
