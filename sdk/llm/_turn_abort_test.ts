import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../kernel/harness_error.ts";
import { abortOf, bindTurnAbort, boundTurnAbort, TurnAbort } from "./_turn_abort.ts";
import { forEachChunk, guardStream } from "./_guard_stream.ts";
import type { GenerateOptions } from "./llm_adapter.ts";
import type { StreamChunk } from "./stream_chunk.ts";
import { createKernel, type KernelEvents } from "../kernel/mod.ts";
import { defineTool, type ToolEvents, ToolRuntime } from "../tools/mod.ts";
import { z } from "zod";

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

describe("a tool call on a turn's abort", () => {
  const call = (abort: TurnAbort, name: string) => {
    const input = {
      callId: "c1",
      name,
      arguments: "{}",
      get signal(): AbortSignal {
        return abort.signal;
      },
    };
    bindTurnAbort(input, abort);
    return input;
  };
  const runtime = () => {
    const tools = new ToolRuntime(createKernel());
    let seen: AbortSignal | undefined;
    let release: (() => void) | undefined;
    tools.register(defineTool({
      name: "sync",
      description: "Returns at once",
      parameters: z.object({}),
      output: { schema: z.string(), render: (_a, v) => v },
      execute: () => "done",
    }));
    tools.register(defineTool({
      name: "reads",
      description: "Reads its signal",
      parameters: z.object({}),
      output: { schema: z.string(), render: (_a, v) => v },
      execute: (_a, exec) => {
        seen = exec.signal;
        return "read";
      },
    }));
    tools.register(defineTool({
      name: "hangs",
      description: "Never settles and never reads its signal",
      parameters: z.object({}),
      output: { schema: z.string(), render: (_a, v) => v },
      execute: () => new Promise<string>((resolve) => (release = () => resolve("late"))),
    }));
    return { tools, seen: () => seen, release: () => release?.() };
  };

  it("a synchronous tool runs without making the signal; one that reads it gets the turn's", async () => {
    const { tools, seen } = runtime();
    const abort = new TurnAbort();
    const result = await tools.execute(call(abort, "sync"));
    assert.equal(result.error, undefined);
    assert.equal(abort.materialized, false);
    await tools.execute(call(abort, "reads"));
    assert.equal(seen(), abort.signal);
  });

  it("an asynchronous tool that never reads its signal still ends ABORTED at once on the turn's abort", async () => {
    const { tools, release } = runtime();
    const abort = new TurnAbort();
    const pending = tools.execute(call(abort, "hangs"));
    await new Promise((resolve) => setTimeout(resolve, 5));
    abort.abort(new HarnessError("ABORTED", "Turn cancelled: user"));
    const result = await pending;
    assert.equal(result.error?.code, "ABORTED");
    assert.equal(abort.materialized, false);
    release();
  });

  it("a call on a turn already aborted is ABORTED before its body runs", async () => {
    const { tools, seen } = runtime();
    const abort = new TurnAbort();
    abort.abort(new HarnessError("ABORTED", "Turn cancelled: user"));
    const result = await tools.execute(call(abort, "reads"));
    assert.equal(result.error?.code, "ABORTED");
    assert.equal(seen(), undefined);
  });

  it("hooks see the turn's signal; a tools/execute wrapper may still give the body another one", async () => {
    const kernel = createKernel<ToolEvents & KernelEvents>();
    const tools = new ToolRuntime(kernel);
    let body: AbortSignal | undefined;
    tools.register(defineTool({
      name: "reads",
      description: "Reads its signal",
      parameters: z.object({}),
      output: { schema: z.string(), render: (_a, v) => v },
      execute: (_a, exec) => {
        body = exec.signal;
        return "read";
      },
    }));
    const own = new AbortController();
    let hooked: AbortSignal | undefined;
    kernel.on("tools/execute", (dispatch, next) => {
      hooked = dispatch.signal;
      dispatch.signal = own.signal;
      return next();
    });
    const abort = new TurnAbort();
    await tools.execute(call(abort, "reads"));
    assert.equal(hooked, abort.signal);
    assert.ok(body !== undefined && body !== abort.signal);
    own.abort();
    assert.ok(body.aborted);
  });
});
