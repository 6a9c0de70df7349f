/**
 * Reading a `text/event-stream` body as events, with `eventsource-parser`.
 *
 * @module
 */

import { createParser, type EventSourceMessage } from "eventsource-parser";

/**
 * The events of an SSE body, in order. Aborting `signal` cancels the body and
 * makes the pending read reject with the signal's reason, even on a runtime
 * whose fetch does not error the body itself. Stopping the iteration early
 * cancels the body too. `onBytes` is called whenever bytes arrive, even bytes
 * that complete no event (such as keep-alive comments).
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  onBytes?: () => void,
): AsyncGenerator<EventSourceMessage, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => void queue.push(event) });
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  aborted.catch(() => {});
  let done = false;
  try {
    if (signal.aborted) throw signal.reason;
    while (!done) {
      const read = reader.read();
      read.catch(() => {});
      const result = await Promise.race([read, aborted]);
      if (result.done) {
        done = true;
        // A line end at the close: an event whose last line ended with a lone CR (held by the parser until it knows
        // no LF follows) or that lacks only its blank line is dispatched; a line cut mid-way is still dropped.
        parser.feed(`${decoder.decode()}\n`);
        parser.reset({ consume: true });
      } else {
        onBytes?.();
        parser.feed(decoder.decode(result.value, { stream: true }));
      }
      while (queue.length > 0) yield queue.shift()!;
    }
  } finally {
    signal.removeEventListener("abort", onAbort!);
    if (!done) reader.cancel().catch(() => {});
  }
}
