/**
 * Reading a `text/event-stream` body as events, with `eventsource-parser`.
 *
 * @module
 */

import { createParser, type EventSourceMessage } from "eventsource-parser";

/** How much of a body's text {@linkcode readSse} keeps in `head` before the first event. */
export const HEAD_LIMIT = 65_536;

/**
 * The events of an SSE body, in order. Aborting `signal` cancels the body and
 * makes the pending read reject with the signal's reason, even on a runtime
 * whose fetch does not error the body itself. Stopping the iteration early
 * cancels the body too. `onBytes` is called whenever bytes arrive, even bytes
 * that complete no event (such as keep-alive comments). `head`, when given,
 * collects the body's text (up to {@linkcode HEAD_LIMIT} characters) until
 * the first event: what a body that held no event at all said.
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  onBytes?: () => void,
  head?: { text: string },
): AsyncGenerator<EventSourceMessage, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const queue: EventSourceMessage[] = [];
  let dispatched = false;
  const parser = createParser({
    onEvent: (event) => {
      dispatched = true;
      queue.push(event);
    },
  });
  const feed = (text: string) => {
    if (head !== undefined && !dispatched && head.text.length < HEAD_LIMIT) {
      head.text += text.slice(0, HEAD_LIMIT - head.text.length);
    }
    parser.feed(text);
  };
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
        feed(`${decoder.decode()}\n`);
        parser.reset({ consume: true });
      } else {
        onBytes?.();
        feed(decoder.decode(result.value, { stream: true }));
      }
      while (queue.length > 0) yield queue.shift()!;
    }
  } finally {
    signal.removeEventListener("abort", onAbort!);
    if (!done) reader.cancel().catch(() => {});
  }
}
