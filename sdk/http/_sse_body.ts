// Internal: the body of an SSE response, a ReadableStream that the server
// pulls from. A write enqueues its bytes straight into the response (Hono's
// `streamSSE` passes each write through a TransformStream and a second
// ReadableStream: three hops and their promises per chunk, which with many
// readers cost most on Deno's and Bun's servers) and resolves once the server
// wants more, so a reader that stops reading holds at most one chunk here.

const encoder = new TextEncoder();
const done: Promise<void> = Promise.resolve();

/** A pull-driven SSE response body. */
export class SseBody {
  /** The response body. */
  readonly readable: ReadableStream<Uint8Array>;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #demand: Promise<void> | undefined;
  #wanted: (() => void) | undefined;
  #aborted = false;
  #closed = false;
  readonly #onAbort: (() => void)[] = [];

  constructor() {
    this.readable = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      pull: () => this.#want(),
      // The client left (or the server dropped the connection).
      cancel: () => this.abort(),
    }, { highWaterMark: 1 });
  }

  /** Whether the client left or the stream was dropped. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** Call `listener` once the stream is aborted. */
  onAbort(listener: () => void): void {
    this.#onAbort.push(listener);
  }

  /** Send `chunk`; resolves when the server wants more (at once while it does). */
  write(chunk: Uint8Array | string): Promise<void> {
    if (this.#aborted || this.#closed) return done;
    try {
      this.#controller.enqueue(typeof chunk === "string" ? encoder.encode(chunk) : chunk);
    } catch {
      this.abort();
      return done;
    }
    // Deno's server may cancel the body from inside enqueue() when the connection is gone: nothing will pull again,
    // and a demand made now would never be met (the writer would wait for ever, its keep-alive timer with it).
    if (this.#aborted || this.#closed) return done;
    if ((this.#controller.desiredSize ?? 0) > 0) return done;
    return this.#demand ??= new Promise<void>((resolve) => (this.#wanted = resolve));
  }

  /** End the response (what was written still goes out). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#want();
    try {
      this.#controller.close();
    } catch {
      // Already cancelled by the client.
    }
  }

  /** Give up on the client: end the response and tell the abort listeners. */
  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.close();
    for (const listener of this.#onAbort.splice(0)) {
      try {
        listener();
      } catch {
        // A listener's failure does not stop the others.
      }
    }
  }

  #want(): void {
    const wanted = this.#wanted;
    this.#demand = this.#wanted = undefined;
    wanted?.();
  }
}
