/**
 * Normalisation of a model stream: whatever the producer does, the consumer
 * sees chunks ending with exactly one `finish`, and never a throw.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
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

/**
 * Run `open()` and pass its chunks through, so that the result never throws,
 * ends with exactly one `finish`, and stops promptly when `signal` fires even
 * if the producer ignores it.
 */
export async function* guardStream(
  open: () => AsyncIterable<StreamChunk>,
  signal: AbortSignal,
): AsyncGenerator<StreamChunk, void, undefined> {
  if (signal.aborted) {
    yield abortedFinish(signal);
    return;
  }
  let iterator: AsyncIterator<StreamChunk> | undefined;
  let finished = false;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<"aborted">((resolve) => {
    onAbort = () => resolve("aborted");
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    iterator = open()[Symbol.asyncIterator]();
    while (true) {
      const next = iterator.next();
      // If the abort wins the race, a later rejection of `next` must not go unhandled.
      next.catch(() => {});
      const step = await Promise.race([next, aborted]);
      if (step === "aborted") {
        finished = true;
        const pending = iterator;
        iterator = undefined;
        // The producer ignored the signal: ask it to stop, without waiting for it.
        Promise.resolve().then(() => pending.return?.()).catch(() => {});
        yield abortedFinish(signal);
        return;
      }
      if (step.done) break;
      const chunk = step.value;
      if (chunk?.type === "finish") {
        finished = true;
        yield chunk;
        return;
      }
      yield chunk;
    }
  } catch (error) {
    if (!finished) {
      finished = true;
      iterator = undefined;
      yield thrownFinish(error, signal);
    }
    return;
  } finally {
    signal.removeEventListener("abort", onAbort!);
    if (iterator !== undefined) {
      const open = iterator;
      iterator = undefined;
      try {
        await open.return?.();
      } catch { /* the stream is over; a failing cleanup changes nothing */ }
    }
  }
  if (!finished) yield signal.aborted ? abortedFinish(signal) : CLOSED;
}
