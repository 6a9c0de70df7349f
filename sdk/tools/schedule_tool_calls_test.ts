import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { createKernel, HarnessError } from "../kernel/mod.ts";
import { scheduleToolCalls } from "./schedule_tool_calls.ts";
import { ToolRuntime } from "./tool_runtime.ts";
import { type Deferred, deferred, echoTool, settle, signal } from "./_test_util.ts";

interface Call {
  readonly id: string;
  readonly parallel: boolean;
}
const P = (id: string): Call => ({ id, parallel: true });
const X = (id: string): Call => ({ id, parallel: false });

/** Runs calls that finish only when released; records starts and the maximum in flight. */
function harness(calls: readonly Call[], maxParallel?: number) {
  const gates = new Map<string, Deferred<void>>(calls.map((c) => [c.id, deferred()]));
  const events: string[] = [];
  const yielded: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const done = (async () => {
    for await (
      const { item, result } of scheduleToolCalls(calls, {
        ...(maxParallel !== undefined ? { maxParallel } : {}),
        isParallel: (c) => c.parallel,
        run: async (c) => {
          events.push(`start:${c.id}`);
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          await gates.get(c.id)!.promise;
          inFlight--;
          events.push(`end:${c.id}`);
          return `result:${c.id}`;
        },
      })
    ) {
      assert.equal(result, `result:${item.id}`);
      yielded.push(item.id);
    }
  })();
  return {
    events,
    yielded,
    done,
    get maxInFlight() {
      return maxInFlight;
    },
    release: async (...ids: string[]) => {
      for (const id of ids) gates.get(id)!.resolve();
      await settle();
    },
  };
}

describe("scheduleToolCalls()", () => {
  it("parallel calls overlap; an exclusive call waits for them and blocks the next", async () => {
    const h = harness([P("a"), P("b"), X("c"), P("d")]);
    await settle();
    assert.deepEqual(h.events, ["start:a", "start:b"]);
    await h.release("b");
    assert.deepEqual(h.events, ["start:a", "start:b", "end:b"]);
    await h.release("a");
    assert.deepEqual(h.events.slice(3), ["end:a", "start:c"]);
    await h.release("d"); // d's gate is open, but d must not start before c ends
    assert.deepEqual(h.events.slice(3), ["end:a", "start:c"]);
    await h.release("c");
    assert.deepEqual(h.events.slice(3), ["end:a", "start:c", "end:c", "start:d", "end:d"]);
    await h.done;
    assert.deepEqual(h.yielded, ["a", "b", "c", "d"]);
  });

  it("consecutive exclusive calls run one at a time", async () => {
    const h = harness([X("a"), X("b")]);
    await settle();
    assert.deepEqual(h.events, ["start:a"]);
    await h.release("b");
    assert.deepEqual(h.events, ["start:a"]);
    await h.release("a");
    await h.done;
    assert.deepEqual(h.events, ["start:a", "end:a", "start:b", "end:b"]);
  });

  it("results keep model order even when a later call finishes first, and each is yielded once its prefix is done", async () => {
    const h = harness([P("a"), P("b"), P("c")]);
    await h.release("c");
    await h.release("b");
    assert.deepEqual(h.yielded, []);
    await h.release("a");
    await h.done;
    assert.deepEqual(h.events, ["start:a", "start:b", "start:c", "end:c", "end:b", "end:a"]);
    assert.deepEqual(h.yielded, ["a", "b", "c"]);
  });

  it("yields the first result while a later call is still running", async () => {
    const h = harness([P("a"), P("b")]);
    await h.release("a");
    assert.deepEqual(h.yielded, ["a"]);
    await h.release("b");
    await h.done;
  });

  it("the pool never exceeds its cap, and refills as calls finish", async () => {
    const calls = Array.from({ length: 8 }, (_, i) => P(`p${i}`));
    const h = harness(calls, 3);
    await settle();
    assert.deepEqual(h.events, ["start:p0", "start:p1", "start:p2"]);
    await h.release("p1");
    assert.deepEqual(h.events.slice(3), ["end:p1", "start:p3"]);
    await h.release(...calls.map((c) => c.id));
    await h.done;
    assert.equal(h.maxInFlight, 3);
    assert.deepEqual(h.yielded, calls.map((c) => c.id));
  });

  it("the default cap is 10", async () => {
    const calls = Array.from({ length: 15 }, (_, i) => P(`p${i}`));
    const h = harness(calls);
    await settle();
    assert.equal(h.events.length, 10);
    await h.release(...calls.map((c) => c.id));
    await h.done;
    assert.equal(h.maxInFlight, 10);
  });

  it("an isParallel that throws or returns a truthy non-true value is exclusive", async () => {
    const started: string[] = [];
    const gate = deferred();
    const run = (async () => {
      const out: string[] = [];
      for await (
        const { item } of scheduleToolCalls(["ok1", "throws", "truthy", "ok2"], {
          isParallel: (id) => {
            if (id === "throws") throw new Error("classifier bug");
            return (id === "truthy" ? 1 : id.startsWith("ok")) as boolean;
          },
          run: async (id) => {
            started.push(id);
            await gate.promise;
          },
        })
      ) out.push(item);
      return out;
    })();
    await settle();
    assert.deepEqual(started, ["ok1"]);
    gate.resolve();
    assert.deepEqual(await run, ["ok1", "throws", "truthy", "ok2"]);
  });

  it("a rejected run stops later starts and throws at its position", async () => {
    const started: number[] = [];
    const seen: number[] = [];
    await assert.rejects(
      (async () => {
        for await (
          const { index } of scheduleToolCalls([0, 1, 2], {
            isParallel: () => false,
            run: (n) => {
              started.push(n);
              return n === 1 ? Promise.reject(new Error("run failed")) : Promise.resolve(n);
            },
          })
        ) seen.push(index);
      })(),
      /run failed/,
    );
    assert.deepEqual(seen, [0]);
    assert.deepEqual(started, [0, 1]);
  });

  it("rejects an invalid maxParallel at once", () => {
    const options = { isParallel: () => true, run: () => Promise.resolve(0) };
    for (const maxParallel of [0, -1, 1.5, Number.NaN]) {
      assert.throws(
        () => scheduleToolCalls([1], { ...options, maxParallel }),
        (e) => HarnessError.isInstance(e, "INVALID_ARGS"),
      );
    }
  });

  it("drives ToolRuntime calls: executionMode() classifies, execute() runs, results come in model order", async () => {
    const tools = new ToolRuntime(createKernel());
    const reads = deferred();
    tools.register(echoTool("read", {
      isConcurrencySafe: () => true,
      execute: async ({ text }: { text: string }) => {
        if (text === "first") await reads.promise;
        return text;
      },
    }));
    const calls = [
      { callId: "1", name: "read", arguments: '{"text":"first"}' },
      { callId: "2", name: "read", arguments: '{"text":"second"}' },
    ];
    const out: string[] = [];
    const done = (async () => {
      for await (
        const { result } of scheduleToolCalls(calls, {
          isParallel: (c) => tools.executionMode(c) === "parallel",
          run: (c) => tools.execute({ ...c, signal }),
        })
      ) out.push(result.value as string);
    })();
    await settle();
    assert.deepEqual(out, []);
    reads.resolve();
    await done;
    assert.deepEqual(out, ["first", "second"]);
  });
});

describe("scheduleToolCalls() properties", () => {
  it("for any mix of calls, cap and completion order: exclusives run alone, the cap holds, starts and results keep input order", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.boolean(), { maxLength: 14 }),
        fc.integer({ min: 1, max: 4 }),
        fc.scheduler(),
        async (flags, cap, s) => {
          const running = new Set<number>();
          const starts: number[] = [];
          let maxInFlight = 0;
          const problems: string[] = [];
          const items = flags.map((parallel, index) => ({ parallel, index }));
          const consumed = (async () => {
            const out: number[] = [];
            for await (
              const { index, result } of scheduleToolCalls(items, {
                maxParallel: cap,
                isParallel: (item) => item.parallel,
                run: async (item) => {
                  if (!item.parallel && running.size > 0) problems.push(`exclusive ${item.index} overlapped`);
                  for (const other of running) {
                    if (!items[other].parallel) problems.push(`${item.index} started during exclusive ${other}`);
                  }
                  starts.push(item.index);
                  running.add(item.index);
                  maxInFlight = Math.max(maxInFlight, running.size);
                  await s.schedule(Promise.resolve(), `finish ${item.index}`);
                  running.delete(item.index);
                  return item.index * 10;
                },
              })
            ) {
              assert.equal(result, index * 10);
              out.push(index);
            }
            return out;
          })();
          await s.waitFor(consumed);
          const expected = items.map((item) => item.index);
          assert.deepEqual(problems, []);
          assert.ok(maxInFlight <= cap, `max in flight ${maxInFlight} > cap ${cap}`);
          assert.deepEqual(starts, expected);
          assert.deepEqual(await consumed, expected);
        },
      ),
      { numRuns: 200 },
    );
  });
});
