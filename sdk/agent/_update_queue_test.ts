import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { HarnessError } from "../kernel/harness_error.ts";
import type { AgentUpdate } from "./agent.ts";
import { UpdateQueue } from "./_update_queue.ts";

const update = (n: number): AgentUpdate => ({ kind: "status", status: n % 2 === 0 ? "idle" : "running" });

// What a reader of the queue sees, as plain values: an update's number, "done", or the error code.
type Seen = number | "done" | string;

async function read(queue: UpdateQueue, numbers: Map<AgentUpdate, number>): Promise<Seen> {
  try {
    const result = await queue.next();
    return result.done ? "done" : numbers.get(result.value)!;
  } catch (error) {
    return HarnessError.isInstance(error) ? error.code : "other";
  }
}

describe("UpdateQueue", () => {
  it("buffers in order up to its bound, then drops the reader (against a model)", async () => {
    // Ops: push the next update, read one (only while something is buffered, or after the queue ended), close.
    const op = fc.oneof(fc.constant("push" as const), fc.constant("read" as const), fc.constant("close" as const));
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.array(op, { maxLength: 40 }), async (max, ops) => {
        const queue = new UpdateQueue(() => {}, max);
        const numbers = new Map<AgentUpdate, number>();
        // The model: an array that drops everything and fails once more than `max` updates wait.
        let model: number[] = [];
        let closed = false;
        let overflow = false;
        let next = 0;
        for (const what of ops) {
          if (what === "push") {
            const u = update(next);
            numbers.set(u, next);
            queue.push(u);
            if (!closed) {
              if (model.length >= max) {
                model = [];
                overflow = true;
                closed = true;
              } else model.push(next);
            }
            next++;
          } else if (what === "close") {
            queue.close();
            closed = true;
          } else if (model.length > 0 || closed) {
            const want: Seen = model.length > 0
              ? model.shift()!
              : overflow
              ? (overflow = false, "SUBSCRIBER_OVERFLOW")
              : "done";
            assert.equal(await read(queue, numbers), want);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it("hands an update to a waiting reader at once, and ends a waiting read on return()", async () => {
    const queue = new UpdateQueue(() => {}, 2);
    const first = update(0);
    const waiting = queue.next();
    queue.push(first);
    assert.deepEqual(await waiting, { value: first, done: false });
    queue.push(update(1));
    await queue.return();
    assert.deepEqual(await queue.next(), { value: undefined, done: true });
  });
});
