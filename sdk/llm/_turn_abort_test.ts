import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../kernel/harness_error.ts";
import { abortOf, bindTurnAbort, boundTurnAbort, TurnAbort } from "./_turn_abort.ts";
import { forEachChunk, guardStream } from "./_guard_stream.ts";
import type { GenerateOptions } from "./llm_adapter.ts";
import type { StreamChunk } from "./stream_chunk.ts";

describe("TurnAbort", () => {
  it("answers aborted and reason without making a signal; the signal is made once, on first read", () => {
    const abort = new TurnAbort();
    assert.equal(abort.aborted, false);
    assert.equal(abort.reason, undefined);
    assert.equal(abort.materialized, false);
    const signal = abort.signal;
    assert.ok(signal instanceof AbortSignal && !signal.aborted);
    assert.equal(abort.signal, signal);
    assert.equal(abort.materialized, true);
  });

  it("aborts a signal already made, its listeners first, then the watchers, once", () => {
    const abort = new TurnAbort();
    const heard: string[] = [];
    abort.signal.addEventListener("abort", () => heard.push(`listener:${abort.signal.reason.code}`));
    abort.watch(() => heard.push(`watcher:${abort.aborted}`));
    const unwatched = () => heard.push("unwatched");
    abort.watch(unwatched);
    abort.unwatch(unwatched);
    const reason = new HarnessError("ABORTED", "Turn cancelled: user");
    abort.abort(reason);
    abort.abort(new Error("second"));
    assert.deepEqual(heard, ["listener:ABORTED", "watcher:true"]);
    assert.equal(abort.reason, reason);
    assert.equal(abort.signal.reason, reason);
    abort.watch(() => heard.push("late"));
    assert.equal(heard.length, 2);
  });

  it("a signal made after the abort is aborted already, with the same reason", () => {
    const abort = new TurnAbort();
    const reason = new HarnessError("ABORTED", "Turn cancelled: user");
    abort.abort(reason);
    assert.equal(abort.materialized, false);
    assert.ok(abort.signal.aborted);
    assert.equal(abort.signal.reason, reason);
    const plain = new TurnAbort();
    plain.abort();
    assert.ok(plain.reason instanceof DOMException && plain.reason.name === "AbortError");
    assert.equal(plain.signal.reason, plain.reason);
  });

  it("a request is bound to its turn's abort, a copy of it is not", () => {
    const abort = new TurnAbort();
    const request: GenerateOptions = Object.freeze({
      provider: "p",
      model: "m",
      messages: [],
      get signal() {
        return abort.signal;
      },
    });
    bindTurnAbort(request, abort);
    assert.equal(boundTurnAbort(request), abort);
    assert.equal(abortOf(request), abort);
    assert.equal(abort.materialized, false);
    const copy = { ...request };
    assert.equal(boundTurnAbort(copy), undefined);
    assert.equal(abortOf(copy), abort.signal);
    assert.equal(abortOf({ provider: "p", model: "m", messages: [] }), undefined);
  });
});

describe("guardStream() on a TurnAbort", () => {
  const delta: StreamChunk = { type: "text-delta", index: 0, text: "a" };

  it("streams without making the signal, and ends aborted at once when the turn is aborted", async () => {
    const abort = new TurnAbort();
    let release: (() => void) | undefined;
    const chunks: StreamChunk[] = [];
    const done = forEachChunk(
      guardStream(async function* () {
        yield delta;
        // A producer that ignores the abort.
        await new Promise<void>((resolve) => (release = resolve));
        yield delta;
      }, abort),
      (chunk) => {
        chunks.push(chunk);
        if (chunks.length === 1) setTimeout(() => abort.abort(new HarnessError("ABORTED", "Turn cancelled: user")));
      },
    );
    await done;
    assert.equal(abort.materialized, false);
    assert.equal(chunks.length, 2);
    const finish = chunks[1];
    assert.ok(finish.type === "finish" && finish.reason.kind === "aborted");
    assert.match(finish.reason.kind === "aborted" ? finish.reason.failure.message : "", /Turn cancelled: user/);
    release?.();
  });

  it("a turn aborted before the stream opens gives the aborted finish without calling the producer", async () => {
    const abort = new TurnAbort();
    abort.abort(new HarnessError("ABORTED", "Turn cancelled: user"));
    let opened = false;
    const chunks: StreamChunk[] = [];
    await forEachChunk(
      guardStream(() => {
        opened = true;
        return (async function* () {})();
      }, abort),
      (chunk) => void chunks.push(chunk),
    );
    assert.equal(opened, false);
    assert.equal(chunks.length, 1);
    assert.ok(chunks[0].type === "finish" && chunks[0].reason.kind === "aborted");
  });
});
