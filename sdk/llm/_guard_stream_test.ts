import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { forEachChunk, guardStream } from "./_guard_stream.ts";
import type { StreamChunk } from "./stream_chunk.ts";

const text = (t: string): StreamChunk => ({ type: "text-delta", index: 0, text: t });
const stop: StreamChunk = { type: "finish", reason: { kind: "stop" } };

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

async function pushed(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  await forEachChunk(stream, (chunk) => void out.push(chunk));
  return out;
}

describe("forEachChunk()", () => {
  it("gives a guarded stream's chunks in order, as for await does, ending with one finish", async () => {
    const producers: (() => AsyncIterable<StreamChunk>)[] = [
      async function* () {
        yield text("a");
        yield text("b");
        yield stop;
        yield text("after the finish");
      },
      async function* () {
        yield text("a");
      },
      async function* () {
        yield text("a");
        throw new Error("boom");
      },
      () => {
        throw new Error("no stream");
      },
    ];
    for (const open of producers) {
      const signal = new AbortController().signal;
      assert.deepEqual(await pushed(guardStream(open, signal)), await collect(guardStream(open, signal)));
    }
    const chunks = await pushed(guardStream(producers[2], new AbortController().signal));
    assert.equal(chunks.length, 2);
    assert.equal(chunks[1].type === "finish" && chunks[1].reason.kind, "error");
  });

  it("passes any other async iterable through for await", async () => {
    async function* plain() {
      yield text("x");
      yield stop;
    }
    assert.deepEqual(await pushed(plain()), [text("x"), stop]);
  });

  it("closes the producer and rejects with the sink's error", async () => {
    let closed = false;
    const stream = guardStream(async function* () {
      try {
        yield text("a");
        yield text("b");
        yield stop;
      } finally {
        closed = true;
      }
    }, new AbortController().signal);
    const seen: StreamChunk[] = [];
    await assert.rejects(
      forEachChunk(stream, (chunk) => {
        seen.push(chunk);
        throw new Error("sink failed");
      }),
      /sink failed/,
    );
    assert.deepEqual(seen, [text("a")]);
    assert.equal(closed, true);
  });

  it("ends without waiting for a producer whose cleanup never settles (after its finish, or a sink's throw)", async () => {
    // A producer whose return() is called but never answers, as a generator whose finally awaits for ever.
    const hanging = () => {
      const state = { closed: false };
      const open = () => {
        const chunks = [text("a"), stop];
        let i = 0;
        return {
          [Symbol.asyncIterator]: () => ({
            next: () => Promise.resolve({ value: chunks[i++], done: false }),
            return: () => {
              state.closed = true;
              return new Promise<IteratorResult<StreamChunk>>(() => {});
            },
          }),
        };
      };
      return { open, state };
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve("hung"), 1000)));
    try {
      for (const drive of [pushed, collect]) {
        const { open, state } = hanging();
        assert.deepEqual(await Promise.race([drive(guardStream(open, new AbortController().signal)), late]), [
          text("a"),
          stop,
        ]);
        assert.equal(state.closed, true);
      }
      const { open, state } = hanging();
      const failing = forEachChunk(guardStream(open, new AbortController().signal), () => {
        throw new Error("sink failed");
      }).then(() => "resolved", (error: Error) => error.message);
      assert.equal(await Promise.race([failing, late]), "sink failed");
      assert.equal(state.closed, true);
      const { open: open2, state: state2 } = hanging();
      const stream = guardStream(open2, new AbortController().signal);
      await stream.next();
      assert.deepEqual(await Promise.race([stream.return!(), late]), { value: undefined, done: true });
      assert.equal(state2.closed, true);
    } finally {
      clearTimeout(timer);
    }
  });

  it("answers at once with an aborted finish when the signal fires while the producer hangs", async () => {
    const controller = new AbortController();
    const stream = guardStream(async function* () {
      yield text("a");
      await new Promise(() => {}); // ignores the signal
    }, controller.signal);
    const seen: StreamChunk[] = [];
    await forEachChunk(stream, (chunk) => {
      seen.push(chunk);
      if (seen.length === 1) setTimeout(() => controller.abort(), 1);
    });
    assert.equal(seen.length, 2);
    assert.equal(seen[1].type === "finish" && seen[1].reason.kind, "aborted");
  });

  it("a sink that aborts the signal gets the aborted finish next", async () => {
    const controller = new AbortController();
    const stream = guardStream(async function* () {
      yield text("a");
      yield text("b");
      yield stop;
    }, controller.signal);
    const seen: StreamChunk[] = [];
    await forEachChunk(stream, (chunk) => {
      seen.push(chunk);
      controller.abort();
    });
    assert.equal(seen.length, 2);
    assert.deepEqual(seen[0], text("a"));
    assert.equal(seen[1].type === "finish" && seen[1].reason.kind, "aborted");
  });

  it("a signal fired while the producer opens is answered by the first pull, without asking the producer", async () => {
    for (const drive of [pushed, collect]) {
      const controller = new AbortController();
      let pulls = 0;
      const stream = guardStream(() => {
        controller.abort(); // before the guard listens to the signal
        return (async function* () {
          for (const chunk of [text("a"), text("b"), stop]) {
            pulls++;
            yield chunk;
          }
        })();
      }, controller.signal);
      const seen = await drive(stream);
      assert.equal(pulls, 0);
      assert.equal(seen.length, 1);
      assert.equal(seen[0].type === "finish" && seen[0].reason.kind, "aborted");
    }
    // A producer that ignores the signal and never answers cannot hold the first pull.
    const controller = new AbortController();
    const never = guardStream(() => {
      controller.abort();
      return { [Symbol.asyncIterator]: () => ({ next: () => new Promise<IteratorResult<StreamChunk>>(() => {}) }) };
    }, controller.signal);
    const first = await never.next();
    assert.equal(!first.done && first.value.type === "finish" && first.value.reason.kind, "aborted");
  });

  it("next() called again before the last one settled is answered after it, in order: none is left pending", async () => {
    const stream = guardStream(() =>
      (async function* () {
        yield text("a");
        yield text("b");
        yield stop;
      })(), new AbortController().signal);
    const results = await Promise.all([stream.next(), stream.next(), stream.next(), stream.next(), stream.next()]);
    assert.deepEqual(
      results.map((r) => (r.done ? "done" : r.value.type === "text-delta" ? r.value.text : r.value.type)),
      [
        "a",
        "b",
        "finish",
        "done",
        "done",
      ],
    );
  });
});

describe("guardStream() over a producer that breaks the iterator protocol", () => {
  // A hand-written iterator whose next() gives `answers` in turn (then ends), recording whether it was closed.
  function producer(answers: (() => unknown)[]) {
    const state = { closed: false };
    let i = 0;
    const open = () =>
      ({
        [Symbol.asyncIterator]: () => ({
          next: () => (i < answers.length ? answers[i++]() : Promise.resolve({ value: undefined, done: true })),
          return: () => {
            state.closed = true;
            return Promise.resolve({ value: undefined, done: true });
          },
        }),
      }) as unknown as AsyncIterable<StreamChunk>;
    return { open, state };
  }

  it("ends the call with a MALFORMED_RESPONSE error when next() answers a non-object, and closes the producer", async () => {
    for (const bad of [undefined, null, 42, "chunk"]) {
      for (const settled of [true, false]) {
        for (const drive of [pushed, collect]) {
          const answer = () => settled ? Promise.resolve(bad) : bad;
          const { open, state } = producer([() => Promise.resolve({ value: text("a"), done: false }), answer]);
          const seen = await drive(guardStream(open, new AbortController().signal));
          const label = `${String(bad)} (${settled ? "a promise" : "as is"}, ${drive.name})`;
          assert.equal(seen.length, 2, label);
          assert.deepEqual(seen[0], text("a"), label);
          const last = seen[1];
          assert.equal(last.type === "finish" && last.reason.kind, "error", label);
          assert.equal(
            last.type === "finish" && last.reason.kind === "error" && last.reason.failure.code,
            "MALFORMED_RESPONSE",
          );
          assert.equal(state.closed, true, label);
        }
      }
    }
  });

  it("ends the call with an error finish when a getter of the result or of its chunk's type throws", async () => {
    const throwing = (what: string) => {
      throw new Error(`${what} getter`);
    };
    const answers = [
      () =>
        Promise.resolve({
          get done() {
            return throwing("done");
          },
          value: text("a"),
        }),
      () =>
        Promise.resolve({
          done: false,
          get value() {
            return throwing("value");
          },
        }),
      () =>
        Promise.resolve({
          done: false,
          value: {
            get type() {
              return throwing("type");
            },
          },
        }),
    ];
    for (const bad of answers) {
      for (const drive of [pushed, collect]) {
        const { open, state } = producer([bad]);
        const seen = await drive(guardStream(open, new AbortController().signal));
        assert.equal(seen.length, 1);
        const last = seen[0];
        assert.equal(last.type === "finish" && last.reason.kind, "error");
        assert.match(
          last.type === "finish" && last.reason.kind === "error" ? last.reason.failure.message : "",
          /getter/,
        );
        assert.equal(state.closed, true);
      }
    }
  });

  it("takes an answer that is not a promise as the result itself, as for await does", async () => {
    for (const drive of [pushed, collect]) {
      const { open } = producer([() => ({ value: text("a"), done: false }), () => ({ value: stop, done: false })]);
      assert.deepEqual(await drive(guardStream(open, new AbortController().signal)), [text("a"), stop]);
    }
  });
});
