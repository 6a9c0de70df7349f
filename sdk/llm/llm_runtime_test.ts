import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createKernel, createScope, HarnessError, type KernelEvents } from "../kernel/mod.ts";
import {
  DEFAULT_RETRY_POLICY,
  type GenerateOptions,
  type LlmAdapter,
  type LlmEvents,
  LlmFailure,
  LlmRuntime,
  llmRuntimePlugin,
  type LlmServices,
  type Message,
  type ModelInfo,
  type StreamChunk,
} from "./mod.ts";

const stop: StreamChunk = { type: "finish", reason: { kind: "stop" } };
const hello: StreamChunk[] = [
  { type: "block-start", index: 0, blockType: "text" },
  { type: "text-delta", index: 0, text: "hello" },
  { type: "block-end", index: 0, block: { type: "text", text: "hello" } },
  stop,
];

interface FakeAdapter extends LlmAdapter {
  readonly seen: GenerateOptions[];
}

function fake(
  provider: string,
  play: (options: GenerateOptions) => AsyncIterable<StreamChunk> = () => fromArray(hello),
  models: ModelInfo[] = [{ id: "m" }],
): FakeAdapter {
  const seen: GenerateOptions[] = [];
  return {
    provider,
    models,
    seen,
    stream(options) {
      seen.push(options);
      return play(options);
    },
  };
}

async function* fromArray(chunks: readonly StreamChunk[]): AsyncGenerator<StreamChunk> {
  for (const chunk of chunks) yield chunk;
}

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

const request = (provider = "p", model = "m", messages: Message[] = []): GenerateOptions => ({
  provider,
  model,
  messages,
});
const signal = () => new AbortController().signal;
const callFields = (o: GenerateOptions) => {
  const { messages: _messages, signal: _signal, sessionId: _sessionId, purpose: _purpose, ...config } = o;
  return config;
};
const failureOf = (chunks: StreamChunk[]) => {
  const last = chunks.at(-1);
  assert.equal(last?.type, "finish");
  return last as Extract<StreamChunk, { type: "finish" }>;
};

describe("LlmRuntime registry", () => {
  it("registerAdapter() registers several adapters at once and releases them", () => {
    const llm = new LlmRuntime();
    const release = llm.registerAdapter([fake("a"), fake("b", undefined, [{ id: "x" }, { id: "y" }])]);
    assert.deepEqual(llm.listProviders(), ["a", "b"]);
    assert.deepEqual(llm.listModels(), [{ id: "m", provider: "a" }, { id: "x", provider: "b" }, {
      id: "y",
      provider: "b",
    }]);
    assert.deepEqual(llm.listModels("b").map((m) => m.id), ["x", "y"]);
    assert.deepEqual(llm.listModels("nope"), []);
    release();
    release();
    assert.deepEqual(llm.listProviders(), []);
  });

  it("a duplicate route fails atomically with DUPLICATE_ADAPTER", () => {
    const llm = new LlmRuntime();
    llm.registerAdapter(fake("a"));
    assert.throws(
      () => llm.registerAdapter([fake("b"), fake("a")]),
      (e) => HarnessError.isInstance(e, "DUPLICATE_ADAPTER"),
    );
    assert.throws(
      () => llm.registerAdapter([fake("c"), fake("c")]),
      (e) => HarnessError.isInstance(e, "DUPLICATE_ADAPTER"),
    );
    assert.deepEqual(llm.listProviders(), ["a"]);
  });

  it("rejects malformed adapters with INVALID_ARGS", () => {
    const llm = new LlmRuntime();
    const bad = [{}, { provider: "", models: [], stream() {} }, { provider: "x", models: [] }, []];
    for (const adapter of bad) {
      assert.throws(
        () => llm.registerAdapter(adapter as unknown as LlmAdapter),
        (e) => HarnessError.isInstance(e, "INVALID_ARGS"),
      );
    }
  });

  it("releasing an old registration leaves a newer one of the same route alone", () => {
    const llm = new LlmRuntime();
    const releaseOld = llm.registerAdapter(fake("a"));
    releaseOld();
    llm.registerAdapter(fake("a"));
    releaseOld();
    assert.deepEqual(llm.listProviders(), ["a"]);
  });

  it("resolveModelInfo() returns the exact model, or throws NO_ADAPTER / UNSUPPORTED_MODEL", () => {
    const llm = new LlmRuntime();
    llm.registerAdapter(fake("a", undefined, [{ id: "m", contextWindow: 1000, defaultMaxTokens: 50 }]));
    assert.deepEqual(llm.resolveModelInfo("a", "m"), { id: "m", contextWindow: 1000, defaultMaxTokens: 50 });
    assert.throws(() => llm.resolveModelInfo("z", "m"), (e) => e instanceof LlmFailure && e.code === "NO_ADAPTER");
    assert.throws(
      () => llm.resolveModelInfo("a", "q"),
      (e) => e instanceof LlmFailure && e.code === "UNSUPPORTED_MODEL",
    );
  });
});

describe("LlmRuntime retry settings", () => {
  it("carries the retry policy and sleep it was given, read-only, for callers that retry (DEFAULT_RETRY_POLICY without)", async () => {
    assert.equal(new LlmRuntime().retryPolicy, DEFAULT_RETRY_POLICY);
    assert.equal(new LlmRuntime().sleep, undefined);
    const policy = { ...DEFAULT_RETRY_POLICY, maxRetries: 0 };
    const sleep = () => Promise.resolve();
    const ctx = createKernel<LlmEvents, LlmServices>();
    await ctx.plugin(llmRuntimePlugin, { retryPolicy: policy, sleep }).ready;
    const llm = ctx.service("llm");
    assert.deepEqual(llm.retryPolicy, policy);
    assert.ok(Object.isFrozen(llm.retryPolicy), "a copy, frozen: a plugin cannot change the harness's");
    assert.equal(llm.sleep, sleep);
  });
});

describe("LlmRuntime.prepareCall()", () => {
  const models: ModelInfo[] = [
    {
      id: "r",
      contextWindow: 64000,
      reasoningEfforts: ["low", "high"],
      defaultReasoningEffort: "high",
      defaultMaxTokens: 4096,
    },
    { id: "plain" },
  ];

  it("fills the adapter defaults the caller left out and marks them", () => {
    const llm = new LlmRuntime();
    llm.registerAdapter(fake("p", undefined, models));
    const call = llm.prepareCall({ provider: "p", model: "r", temperature: 0.5 });
    assert.deepEqual(call.config, {
      provider: "p",
      model: "r",
      temperature: 0.5,
      reasoningEffort: "high",
      maxTokens: 4096,
    });
    assert.deepEqual(call.adapterDefaults, { reasoningEffort: true, maxTokens: true });
    assert.equal(call.contextWindow, 64000);
    assert.equal(call.modelInfo.id, "r");
    assert.ok(Object.isFrozen(call.config));
  });

  it("keeps explicit values and marks nothing", () => {
    const llm = new LlmRuntime();
    llm.registerAdapter(fake("p", undefined, models));
    const call = llm.prepareCall({ provider: "p", model: "r", reasoningEffort: "low", maxTokens: 10 });
    assert.deepEqual(call.config, { provider: "p", model: "r", reasoningEffort: "low", maxTokens: 10 });
    assert.deepEqual(call.adapterDefaults, {});
    assert.equal(llm.prepareCall({ provider: "p", model: "plain" }).contextWindow, undefined);
  });

  it("rejects an effort the model does not accept, without clamping", () => {
    const llm = new LlmRuntime();
    llm.registerAdapter(fake("p", undefined, models));
    for (const [model, effort] of [["r", "max"], ["plain", "low"]] as const) {
      assert.throws(
        () => llm.prepareCall({ provider: "p", model, reasoningEffort: effort }),
        (e) => e instanceof LlmFailure && e.code === "UNSUPPORTED_FEATURE",
      );
    }
  });

  it("rejects a config without provider or model with INVALID_ARGS", () => {
    const llm = new LlmRuntime();
    assert.throws(
      () => llm.prepareCall({ provider: "", model: "m" }),
      (e) => HarnessError.isInstance(e, "INVALID_ARGS"),
    );
  });

  it("rejects sampling settings no provider takes with INVALID_ARGS naming the field (the config schema's bounds)", () => {
    const llm = new LlmRuntime();
    llm.registerAdapter(fake("p", undefined, models));
    const bad: [Record<string, unknown>, string][] = [
      [{ maxTokens: -5 }, "maxTokens"],
      [{ maxTokens: 0 }, "maxTokens"],
      [{ maxTokens: 1.5 }, "maxTokens"],
      [{ maxTokens: "100" }, "maxTokens"],
      [{ temperature: Number.NaN }, "temperature"],
      [{ temperature: -0.1 }, "temperature"],
      [{ temperature: 2.5 }, "temperature"],
      [{ stop: "END" }, "stop"],
      [{ stop: ["END", 3] }, "stop"],
    ];
    for (const [settings, field] of bad) {
      for (
        const call of [
          () => llm.prepareCall({ provider: "p", model: "plain", ...settings }),
          () => llm.stream({ provider: "p", model: "plain", messages: [], ...settings }),
        ]
      ) {
        assert.throws(call, (e) => {
          assert.ok(HarnessError.isInstance(e, "INVALID_ARGS"), String(e));
          assert.equal(e.details?.field, field);
          return true;
        }, JSON.stringify(settings));
      }
    }
    const good = { temperature: 0, maxTokens: 1, stop: [] as string[] };
    assert.deepEqual(llm.prepareCall({ provider: "p", model: "plain", ...good }).config, {
      provider: "p",
      model: "plain",
      ...good,
    });
    assert.equal(llm.prepareCall({ provider: "p", model: "plain", temperature: 2 }).config.temperature, 2);
  });

  it("the prepared call keeps its adapter after the route is released or replaced", async () => {
    const llm = new LlmRuntime();
    const first = fake("p");
    const release = llm.registerAdapter(first);
    const call = llm.prepareCall({ provider: "p", model: "m" });
    release();
    const second = fake("p");
    llm.registerAdapter(second);
    const chunks = await collect(call.stream(request()));
    assert.deepEqual(chunks, hello);
    assert.equal(first.seen.length, 1);
    assert.equal(second.seen.length, 0);
  });

  it("the adapter receives the effective config, on prepared and direct calls alike", async () => {
    const llm = new LlmRuntime();
    const adapter = fake("p", undefined, models);
    llm.registerAdapter(adapter);
    const call = llm.prepareCall({ provider: "p", model: "r" });
    await collect(call.stream(request("p", "r")));
    await collect(llm.stream(request("p", "r")));
    const effective = { provider: "p", model: "r", reasoningEffort: "high", maxTokens: 4096 };
    assert.deepEqual(adapter.seen.map(callFields), [effective, effective]);
    const rejected = await collect(llm.stream({ ...request("p", "plain"), reasoningEffort: "low" }));
    assert.equal((failureOf(rejected).reason as { failure: { code: string } }).failure.code, "UNSUPPORTED_FEATURE");
  });

  it("the prepared call refuses a request for another route", () => {
    const llm = new LlmRuntime();
    llm.registerAdapter(fake("p"));
    const call = llm.prepareCall({ provider: "p", model: "m" });
    assert.throws(
      () => call.stream(request("p", "other")),
      (e) => HarnessError.isInstance(e, "INVALID_ARGS"),
    );
  });
});

describe("LlmRuntime.stream()", () => {
  const run = async (adapter: LlmAdapter, abortSignal = signal(), options = request()) => {
    const llm = new LlmRuntime();
    llm.registerAdapter(adapter);
    return await collect(llm.stream({ ...options, signal: abortSignal }));
  };

  it("passes a well-formed stream through unchanged", async () => {
    assert.deepEqual(await run(fake("p")), hello);
  });

  it("turns an LlmFailure thrown by stream() into an error finish with its code", async () => {
    const chunks = await run(fake("p", () => {
      throw new LlmFailure("RATE_LIMIT", "Slow down", { status: 429, providerRetryAfterMs: 2000 });
    }));
    assert.deepEqual(chunks, [{
      type: "finish",
      reason: {
        kind: "error",
        failure: { code: "RATE_LIMIT", message: "Slow down", status: 429, providerRetryAfterMs: 2000 },
      },
    }]);
  });

  it("turns any other throw mid-stream into UNKNOWN, after the chunks already streamed", async () => {
    const chunks = await run(fake("p", async function* () {
      yield hello[0];
      yield hello[1];
      throw new TypeError("boom");
    }));
    assert.deepEqual(chunks.slice(0, 2), hello.slice(0, 2));
    assert.deepEqual(failureOf(chunks).reason, {
      kind: "error",
      failure: { code: "UNKNOWN", message: "Model call failed: boom" },
    });
  });

  it("a throw after the signal fired becomes an aborted finish with ABORTED", async () => {
    const controller = new AbortController();
    const chunks = await run(
      fake("p", async function* () {
        yield hello[0];
        controller.abort();
        throw new Error("fetch aborted");
      }),
      controller.signal,
    );
    const finish = failureOf(chunks);
    assert.equal(finish.reason.kind, "aborted");
    assert.equal((finish.reason as { failure: { code: string } }).failure.code, "ABORTED");
  });

  it("a stream that ends without finish gets STREAM_CLOSED", async () => {
    const chunks = await run(fake("p", () => fromArray(hello.slice(0, 2))));
    assert.deepEqual(failureOf(chunks).reason, {
      kind: "error",
      failure: { code: "STREAM_CLOSED", message: "Model stream ended without a finish chunk" },
    });
  });

  it("nothing passes after the finish chunk", async () => {
    const chunks = await run(
      fake("p", () => fromArray([...hello, { type: "usage", usage: { inputTokens: 1, outputTokens: 1 } }])),
    );
    assert.deepEqual(chunks, hello);
  });

  it("an adapter that ignores the signal is cut off with an aborted finish", async () => {
    const controller = new AbortController();
    let returned = false;
    const stuck: LlmAdapter = fake("p", () => ({
      [Symbol.asyncIterator]: () => ({
        next: () => new Promise<IteratorResult<StreamChunk>>(() => {}),
        return: () => {
          returned = true;
          return Promise.resolve({ done: true, value: undefined });
        },
      }),
    }));
    const pending = run(stuck, controller.signal);
    await new Promise((resolve) => setTimeout(resolve, 0));
    controller.abort();
    const chunks = await pending;
    assert.equal(chunks.length, 1);
    assert.equal(failureOf(chunks).reason.kind, "aborted");
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.equal(returned, true);
  });

  it("the adapter receives one flat options object carrying the signal (seed 000 §4.4.4)", async () => {
    const controller = new AbortController();
    const adapter = fake("p");
    assert.equal(adapter.stream.length, 1, "stream(options) takes one parameter");
    await run(adapter, controller.signal, {
      ...request(),
      temperature: 0.5,
      sessionId: "s1",
      purpose: "session-title",
    });
    const seen = adapter.seen[0];
    assert.equal(seen.signal, controller.signal);
    assert.equal(seen.provider, "p");
    assert.equal(seen.model, "m");
    assert.equal(seen.temperature, 0.5);
    assert.equal(seen.sessionId, "s1");
    assert.equal(seen.purpose, "session-title");
    assert.equal("config" in seen, false);
  });

  it("a call without a signal streams, and the adapter sees no signal", async () => {
    const adapter = fake("p");
    const llm = new LlmRuntime();
    llm.registerAdapter(adapter);
    assert.deepEqual(await collect(llm.stream(request())), hello);
    assert.equal(adapter.seen[0].signal, undefined);
  });

  it("an already-aborted signal never reaches the adapter", async () => {
    const controller = new AbortController();
    controller.abort();
    const adapter = fake("p");
    const chunks = await run(adapter, controller.signal);
    assert.equal(failureOf(chunks).reason.kind, "aborted");
    assert.equal(adapter.seen.length, 0);
  });

  it("resolution failures arrive as the stream's error finish", async () => {
    const llm = new LlmRuntime();
    const chunks = await collect(llm.stream(request("nobody")));
    assert.equal((failureOf(chunks).reason as { failure: { code: string } }).failure.code, "NO_ADAPTER");
  });

  it("bad arguments throw at once", () => {
    const llm = new LlmRuntime();
    assert.throws(() => llm.stream({ provider: "p", model: "m" } as GenerateOptions), /messages/);
    assert.throws(() => llm.stream({ ...request(), signal: {} as AbortSignal }), /AbortSignal/);
    assert.throws(() => llm.stream({ ...request(), model: "" }), /provider and a model/);
  });

  it("accepts a deep-frozen request", async () => {
    const options = Object.freeze({ provider: "p", model: "m", messages: Object.freeze([]), signal: signal() });
    const adapter = fake("p");
    const llm = new LlmRuntime();
    llm.registerAdapter(adapter);
    assert.deepEqual(await collect(llm.stream(options)), hello);
    assert.equal(adapter.seen[0], options);
  });

  it("passes replay state only for messages of a provider served by the same adapter", async () => {
    const shared = fake("a");
    const other = fake("b");
    const llm = new LlmRuntime();
    llm.registerAdapter([shared, other]);
    const message = (provider: string): Message => ({
      id: provider,
      role: "assistant",
      content: [{ type: "text", text: "hi" }],
      source: { kind: "model", provider, model: "m", replayState: { sig: provider } },
    });
    await collect(llm.stream(request("a", "m", [message("a"), message("b")])));
    const sources = shared.seen[0].messages.map((m) => m.source);
    assert.deepEqual(sources, [
      { kind: "model", provider: "a", model: "m", replayState: { sig: "a" } },
      { kind: "model", provider: "b", model: "m" },
    ]);
  });

  it("re-checks replay state when routes change, even over a history it found clean before", async () => {
    const a = fake("a");
    const b = fake("b");
    const llm = new LlmRuntime();
    const releaseB = llm.registerAdapter(b);
    llm.registerAdapter(a);
    const fromB: Message = {
      id: "m1",
      role: "assistant",
      content: [{ type: "text", text: "hi" }],
      source: { kind: "model", provider: "b", model: "m", replayState: { sig: "b" } },
    };
    const fromA: Message = {
      ...fromB,
      id: "m2",
      source: { kind: "model", provider: "a", model: "m", replayState: { sig: "a" } },
    };
    // The history [fromA] is clean for a; then [fromA, fromB] must strip b's state for a.
    await collect(llm.stream(request("a", "m", [fromA])));
    await collect(llm.stream(request("a", "m", [fromA, fromB])));
    assert.deepEqual(
      a.seen[1].messages.map((m) => m.source.kind === "model" ? m.source.replayState ?? "stripped" : "?"),
      [
        { sig: "a" },
        "stripped",
      ],
    );
    // b is released: its message is foreign for every adapter from now on, including to a prefix seen before.
    releaseB();
    await collect(llm.stream(request("a", "m", [fromA, fromB])));
    assert.deepEqual(
      a.seen[2].messages.map((m) => m.source.kind === "model" ? m.source.replayState ?? "stripped" : "?"),
      [
        { sig: "a" },
        "stripped",
      ],
    );
  });
});

describe("llm/stream waterfall and llmRuntimePlugin", () => {
  interface Events extends KernelEvents, LlmEvents {
    "other/event": (n: number) => void;
  }

  it("provides ctx.llm, and wraps every call in the llm/stream waterfall", async () => {
    const ctx = createKernel<Events, LlmServices>();
    await ctx.plugin(llmRuntimePlugin).ready;
    const llm = ctx.llm!;
    llm.registerAdapter(fake("p"));
    const seen: string[] = [];
    ctx.on("llm/stream", (options, next) => {
      seen.push(options.model);
      return (async function* () {
        for await (const chunk of next()) {
          yield chunk.type === "text-delta" ? { ...chunk, text: chunk.text.toUpperCase() } : chunk;
        }
      })();
    });
    const chunks = await collect(llm.stream(request()));
    assert.deepEqual(seen, ["m"]);
    assert.deepEqual(chunks[1], { type: "text-delta", index: 0, text: "HELLO" });
    const prepared = await collect(llm.prepareCall({ provider: "p", model: "m" }).stream(request()));
    assert.deepEqual(seen, ["m", "m"]);
    assert.equal(prepared.length, hello.length);
  });

  it("a listener may short-circuit before any adapter lookup", async () => {
    const ctx = createKernel<Events, LlmServices>();
    await ctx.plugin(llmRuntimePlugin).ready;
    ctx.on("llm/stream", () => fromArray(hello));
    const chunks = await collect(ctx.llm!.stream(request("unregistered")));
    assert.deepEqual(chunks, hello);
  });

  it("a listener that throws ends the stream with an error finish", async () => {
    const ctx = createKernel<Events, LlmServices>();
    await ctx.plugin(llmRuntimePlugin).ready;
    ctx.llm!.registerAdapter(fake("p"));
    ctx.on("llm/stream", () => {
      throw new LlmFailure("TRANSPORT", "Proxy down");
    });
    const chunks = await collect(ctx.llm!.stream(request()));
    assert.deepEqual(chunks, [{
      type: "finish",
      reason: { kind: "error", failure: { code: "TRANSPORT", message: "Proxy down" } },
    }]);
  });

  it("a listener that returns no async iterable ends the stream with an INVALID_ARGS finish saying what it gave", async () => {
    for (const [given, what] of [[undefined, "undefined"], [null, "null"], [5, "number"], [[], "object"]] as const) {
      const ctx = createKernel<Events, LlmServices>();
      await ctx.plugin(llmRuntimePlugin).ready;
      ctx.llm!.registerAdapter(fake("p"));
      ctx.on("llm/stream", () => given as never);
      const chunks = await collect(ctx.llm!.stream(request()));
      assert.deepEqual(chunks, [{
        type: "finish",
        reason: {
          kind: "error",
          failure: {
            code: "INVALID_ARGS",
            message: `An llm/stream listener returned ${what}, not an async iterable of chunks`,
          },
        },
      }], String(given));
    }
  });

  it("dispatching from a scope reaches that scope's listeners and not a sibling's", async () => {
    const ctx = createKernel<Events, LlmServices>();
    await ctx.plugin(llmRuntimePlugin).ready;
    ctx.llm!.registerAdapter(fake("p"));
    const a = createScope(ctx, "a");
    const b = createScope(ctx, "b");
    const heard: string[] = [];
    a.ctx.on("llm/stream", (_o, next) => (heard.push("a"), next()));
    b.ctx.on("llm/stream", (_o, next) => (heard.push("b"), next()));
    await collect(ctx.llm!.stream(request(), { context: a.ctx }));
    assert.deepEqual(heard, ["a"]);
    await a.dispose();
    await b.dispose();
  });

  it("emits llm/adapters-changed when routes change, and withdraws ctx.llm on dispose", async () => {
    const ctx = createKernel<Events, LlmServices>();
    const plugin = ctx.plugin(llmRuntimePlugin);
    await plugin.ready;
    let changes = 0;
    ctx.on("llm/adapters-changed", () => void changes++);
    const release = ctx.llm!.registerAdapter(fake("p"));
    release();
    assert.equal(changes, 2);
    await plugin.dispose();
    assert.equal(ctx.llm, undefined);
  });
});
