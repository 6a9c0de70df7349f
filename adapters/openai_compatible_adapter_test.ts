import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  BlockAssembler,
  checkStreamGrammar,
  type GenerateOptions,
  LlmRuntime,
  type StreamChunk,
} from "../sdk/llm/mod.ts";
import { openaiCompatibleAdapter, type OpenAiCompatibleAdapterOptions } from "./mod.ts";
import {
  collect,
  finishOf,
  fixtureJson,
  fixturePayloads,
  playSse,
  sseText,
  startWireServer,
  type WireServer,
} from "./_test_wire_server.ts";

const request = (extra: Partial<GenerateOptions> = {}): GenerateOptions => ({
  provider: "xai",
  model: "grok-3-mini",
  messages: [{
    id: "u1",
    role: "user",
    content: [{ type: "text", text: "Say a single word" }],
    source: { kind: "user" },
  }],
  ...extra,
});

function reasoningOf(name: string): string {
  let out = "";
  for (const payload of fixtureJson(name)) {
    for (const choice of (payload.choices as { delta?: { reasoning_content?: string } }[]) ?? []) {
      out += choice.delta?.reasoning_content ?? "";
    }
  }
  return out;
}

function assemble(chunks: readonly StreamChunk[]): BlockAssembler {
  const assembler = new BlockAssembler();
  for (const chunk of chunks) assembler.push(chunk);
  return assembler;
}

describe("openaiCompatibleAdapter() over HTTP on recorded streams", () => {
  let server: WireServer;
  let body = "";
  before(async () => {
    server = await startWireServer((_req, res) => playSse(res, body));
  });
  after(() => server.close());

  const stream = async (options: GenerateOptions, extra: Partial<OpenAiCompatibleAdapterOptions> = {}) => {
    const llm = new LlmRuntime();
    llm.registerAdapter(openaiCompatibleAdapter({
      baseURL: `${server.url}/v1`,
      apiKey: "xai-test",
      provider: "xai",
      models: [{ id: "grok-3-mini", reasoningEfforts: ["low", "high"] }],
      ...extra,
    }));
    return await collect(llm.stream(options));
  };

  it("assembles openai-compatible-xai-text: usage in a last chunk with empty choices, reasoning counted apart", async () => {
    body = sseText(fixturePayloads("openai-compatible-xai-text.chunks.jsonl"));
    const chunks = await stream(request());
    assert.deepEqual(checkStreamGrammar(chunks), []);
    const assembler = assemble(chunks);
    const reasoning = reasoningOf("openai-compatible-xai-text.chunks.jsonl");
    assert.equal(reasoning.length, 1455);
    assert.deepEqual(assembler.blocks(), [{ type: "reasoning", text: reasoning }, { type: "text", text: "Grok" }]);
    // prompt 12 of which 11 cached; completion 2 + reasoning 340 reported outside it.
    assert.deepEqual(assembler.usage, { inputTokens: 1, outputTokens: 342, cacheReadTokens: 11, reasoningTokens: 340 });
    assert.deepEqual(assembler.finish, { kind: "stop" });
  });

  it("assembles openai-compatible-xai-tool-call: a tool call whole in one delta", async () => {
    body = sseText(fixturePayloads("openai-compatible-xai-tool-call.chunks.jsonl"));
    const chunks = await stream(request());
    assert.deepEqual(checkStreamGrammar(chunks), []);
    const assembler = assemble(chunks);
    assert.deepEqual(assembler.blocks(), [
      { type: "reasoning", text: reasoningOf("openai-compatible-xai-tool-call.chunks.jsonl") },
      { type: "tool-call", id: "call_79382389", name: "weather", arguments: '{"location":"San Francisco"}' },
    ]);
    assert.deepEqual(assembler.usage, {
      inputTokens: 1,
      outputTokens: 253,
      cacheReadTokens: 306,
      reasoningTokens: 227,
    });
    assert.deepEqual(assembler.finish, { kind: "tool-calls" });
    assert.equal(chunks.filter((c) => c.type === "tool-call-delta").length, 1);
  });

  it('reasoningTokens: "inside" keeps completion_tokens as the output count', async () => {
    body = sseText(fixturePayloads("openai-compatible-xai-text.chunks.jsonl"));
    const assembler = assemble(await stream(request(), { reasoningTokens: "inside" }));
    assert.deepEqual(assembler.usage, { inputTokens: 1, outputTokens: 2, cacheReadTokens: 11, reasoningTokens: 340 });
  });

  it("reads `reasoning` deltas as reasoning too", async () => {
    body = sseText([
      '{"choices":[{"index":0,"delta":{"reasoning":"Hmm"}}]}',
      '{"choices":[{"index":0,"delta":{"content":"Yes"},"finish_reason":"stop"}]}',
    ]);
    const assembler = assemble(await stream(request()));
    assert.deepEqual(assembler.blocks(), [{ type: "reasoning", text: "Hmm" }, { type: "text", text: "Yes" }]);
    assert.equal(assembler.usage, undefined);
  });

  it("sends reasoning_effort, images as image_url parts, and no reasoning_content by default", async () => {
    body = sseText(fixturePayloads("openai-compatible-xai-text.chunks.jsonl"));
    const before = server.requests.length;
    await stream({
      provider: "xai",
      model: "grok-3-mini",
      reasoningEffort: "low",
      messages: [
        {
          id: "u1",
          role: "user",
          content: [{ type: "text", text: "What is this?" }, { type: "image", mediaType: "image/png", data: "AAAA" }],
          source: { kind: "user" },
        },
        {
          id: "a1",
          role: "assistant",
          content: [{ type: "reasoning", text: "Look" }, { type: "text", text: "A dot" }],
          source: { kind: "model", provider: "xai", model: "grok-3-mini" },
        },
      ],
    });
    const sent = server.requests[before];
    assert.equal(sent.url, "/v1/chat/completions");
    assert.equal(sent.headers["authorization"], "Bearer xai-test");
    assert.match(String(sent.headers["user-agent"]), /^@dsh\/harness\/\d+\.\d+\.\d+/);
    assert.deepEqual(sent.json, {
      model: "grok-3-mini",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is this?" },
            { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
          ],
        },
        { role: "assistant", content: "A dot" },
      ],
      stream: true,
      stream_options: { include_usage: true },
      reasoning_effort: "low",
    });
  });

  it("sends an assistant message with nothing to send as empty content (roles keep alternating), and a call with no arguments as {}", async () => {
    body = sseText(fixturePayloads("openai-compatible-xai-text.chunks.jsonl"));
    const model = { kind: "model", provider: "xai", model: "grok-3-mini" } as const;
    const user = (id: string, text: string) =>
      ({ id, role: "user", content: [{ type: "text", text }], source: { kind: "user" } }) as const;
    const messages = [
      user("u1", "Question one"),
      // A turn cancelled while the model was still reasoning: its reasoning is not sent back by default.
      { id: "a1", role: "assistant", content: [{ type: "reasoning", text: "Let me think" }], source: model },
      user("u2", "Question two"),
      {
        id: "a2",
        role: "assistant",
        content: [{ type: "tool-call", id: "c1", name: "now", arguments: "" }],
        source: model,
      },
      {
        id: "t1",
        role: "user",
        content: [{ type: "tool-result", toolCallId: "c1", content: [{ type: "text", text: "noon" }] }],
        source: { kind: "tool", callId: "c1" },
      },
    ] as const;
    let before = server.requests.length;
    await stream(request({ messages: [...messages] }));
    assert.deepEqual((server.requests[before].json as { messages: unknown }).messages, [
      { role: "user", content: "Question one" },
      // Strict-alternation chat templates refuse two user messages in a row.
      { role: "assistant", content: "" },
      { role: "user", content: "Question two" },
      {
        role: "assistant",
        content: "",
        tool_calls: [{ id: "c1", type: "function", function: { name: "now", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "noon" },
    ]);
    // With sendReasoningContent, the reasoning is something to send.
    before = server.requests.length;
    await stream(request({ messages: [...messages] }), { sendReasoningContent: true });
    assert.deepEqual((server.requests[before].json as { messages: unknown[] }).messages[1], {
      role: "assistant",
      content: "",
      reasoning_content: "Let me think",
    });
  });

  it("sends no Authorization header without an API key", async () => {
    body = sseText(fixturePayloads("openai-compatible-xai-text.chunks.jsonl"));
    const before = server.requests.length;
    const chunks = await stream(request(), { apiKey: undefined });
    assert.equal(finishOf(chunks).reason.kind, "stop");
    assert.equal(server.requests[before].headers["authorization"], undefined);
  });

  it("headers: names match whatever their case, the caller's replace the defaults, the API key's Authorization wins", async () => {
    body = sseText(fixturePayloads("openai-compatible-xai-text.chunks.jsonl"));
    const sent = async (extra: Partial<OpenAiCompatibleAdapterOptions>) => {
      const before = server.requests.length;
      assert.equal(finishOf(await stream(request(), extra)).reason.kind, "stop");
      return server.requests[before].headers;
    };
    const lower = await sent({
      headers: {
        "authorization": "Bearer override",
        "user-agent": "myapp/1.0",
        "content-type": "application/json; charset=utf-8",
      },
    });
    assert.equal(lower["authorization"], "Bearer xai-test");
    assert.equal(lower["user-agent"], "myapp/1.0");
    assert.equal(lower["content-type"], "application/json; charset=utf-8");
    const capital = await sent({
      headers: { "Authorization": "Bearer override", "User-Agent": "myapp/1.0", "X-Team": "t" },
    });
    assert.equal(capital["authorization"], "Bearer xai-test");
    assert.equal(capital["user-agent"], "myapp/1.0");
    assert.equal(capital["x-team"], "t");
    assert.equal(capital["accept"], "text/event-stream");
    // Without an API key, the caller's Authorization is the one sent.
    const keyless = await sent({ apiKey: undefined, headers: { "authorization": "Basic dTpw" } });
    assert.equal(keyless["authorization"], "Basic dTpw");
    assert.throws(
      () => openaiCompatibleAdapter({ baseURL: server.url, provider: "p", models: [], headers: { "bad name": "x" } }),
      /bad name/,
    );
  });

  it("a custom fetch gets the headers as a plain record, one entry per name, in the case of whoever set it", async () => {
    let seen: unknown;
    const adapter = openaiCompatibleAdapter({
      baseURL: "http://proxy.invalid/v1",
      provider: "p",
      apiKey: "sk-1",
      models: [{ id: "m" }],
      headers: { "user-agent": "myapp/1.0", "authorization": "Bearer override", "X-Team": "t" },
      fetch: (_url, init) => {
        seen = { ...init?.headers }; // a proxying wrapper that spreads the headers it forwards
        return Promise.resolve(
          new Response(sseText(fixturePayloads("openai-compatible-xai-text.chunks.jsonl")), {
            headers: { "Content-Type": "text/event-stream" },
          }),
        );
      },
    });
    assert.equal(finishOf(await collect(adapter.stream(request()))).reason.kind, "stop");
    assert.deepEqual(seen, {
      "Content-Type": "application/json",
      "Accept": "text/event-stream",
      "user-agent": "myapp/1.0",
      "Authorization": "Bearer sk-1",
      "X-Team": "t",
    });
  });

  it("shares the failure mapping: HTTP 429 with Retry-After, a torn stream", async () => {
    const errorServer = await startWireServer((_req, res) => {
      res.writeHead(429, { "Retry-After": "2", "x-request-id": "xr-1" });
      res.end('{"error":{"message":"Too many requests"}}');
    });
    try {
      const adapter = openaiCompatibleAdapter({
        baseURL: errorServer.url,
        provider: "xai",
        models: [{ id: "grok-3-mini" }],
      });
      const finish = finishOf(await collect(adapter.stream(request())));
      assert.deepEqual(finish.reason, {
        kind: "error",
        failure: {
          code: "RATE_LIMIT",
          message: 'Provider "xai" answered HTTP 429: Too many requests',
          status: 429,
          providerRetryAfterMs: 2000,
          requestId: "xr-1",
        },
      });
    } finally {
      await errorServer.close();
    }
    body = sseText(fixturePayloads("openai-compatible-xai-tool-call.chunks.jsonl"), { done: false });
    const chunks = await stream(request());
    assert.equal((finishOf(chunks).reason as { failure?: { code: string } }).failure?.code, "STREAM_CLOSED");
  });

  it("rejects malformed options at once", () => {
    assert.throws(
      () => openaiCompatibleAdapter({ baseURL: "http://x", provider: "", models: [] }),
      /provider/,
    );
    assert.throws(
      () => openaiCompatibleAdapter({ baseURL: "nope", provider: "p", models: [] }),
      /baseURL/,
    );
    assert.throws(
      () =>
        openaiCompatibleAdapter({
          baseURL: "http://x",
          provider: "p",
          models: [],
          reasoningTokens: "sideways" as "auto",
        }),
      /reasoningTokens/,
    );
  });
});

describe("openaiCompatibleAdapter() on servers that bend the protocol", () => {
  let server: WireServer;
  let answer: (res: import("node:http").ServerResponse) => void = () => {};
  before(async () => {
    server = await startWireServer((_req, res) => answer(res));
  });
  after(() => server.close());

  const run = async (respond: typeof answer) => {
    answer = respond;
    const adapter = openaiCompatibleAdapter({
      baseURL: server.url,
      provider: "xai",
      apiKey: "k",
      models: [{ id: "grok-3-mini" }],
    });
    const chunks = await collect(adapter.stream(request()));
    assert.deepEqual(checkStreamGrammar(chunks), []);
    return { chunks, finish: finishOf(chunks).reason as { kind: string; failure?: { code: string; message: string } } };
  };
  const sse = (text: string, type = "text/event-stream") => (res: import("node:http").ServerResponse) => {
    res.writeHead(200, { "Content-Type": type });
    res.end(text);
  };
  const payload = (delta: unknown, finish: string | null = null) =>
    `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

  it("two whole tool calls that share index 0 stay two calls", async () => {
    const call = (id: string, name: string, args: string) => ({
      tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: args } }],
    });
    const { chunks, finish } = await run(sse(
      payload(call("call_a", "weather", '{"city":"Paris"}')) + payload(call("call_b", "clock", '{"tz":"UTC"}')) +
        payload({}, "tool_calls") + "data: [DONE]\n\n",
    ));
    assert.equal(finish.kind, "tool-calls");
    const blocks = assemble(chunks).blocks();
    assert.deepEqual(blocks, [
      { type: "tool-call", id: "call_a", name: "weather", arguments: '{"city":"Paris"}' },
      { type: "tool-call", id: "call_b", name: "clock", arguments: '{"tz":"UTC"}' },
    ]);
  });

  it("a call whose id arrives on its second delta, or whose later deltas carry no index, stays one call", async () => {
    const calls = (...list: unknown[]) => ({ tool_calls: list });
    // (A) index and name first, the id with the arguments: the call keeps the id it was given first.
    let { chunks, finish } = await run(sse(
      payload(calls({ index: 0, type: "function", function: { name: "echo", arguments: "" } })) +
        payload(calls({ index: 0, id: "late", function: { arguments: '{"v":"x"}' } }), "tool_calls") +
        "data: [DONE]\n\n",
    ));
    assert.equal(finish.kind, "tool-calls");
    assert.deepEqual(assemble(chunks).blocks(), [
      { type: "tool-call", id: "call_0", name: "echo", arguments: '{"v":"x"}' },
    ]);
    // (B) no index on any delta: one without an id (or with the open call's) continues the call opened last.
    ({ chunks, finish } = await run(sse(
      payload(calls({ id: "a", type: "function", function: { name: "echo", arguments: '{"v":' } })) +
        payload(calls({ function: { arguments: '"x"' } })) + payload(calls({ id: "a", function: { arguments: "}" } })) +
        payload(calls({ id: "b", type: "function", function: { name: "clock", arguments: "{}" } }), "tool_calls") +
        "data: [DONE]\n\n",
    )));
    assert.equal(finish.kind, "tool-calls");
    assert.deepEqual(assemble(chunks).blocks(), [
      { type: "tool-call", id: "a", name: "echo", arguments: '{"v":"x"}' },
      { type: "tool-call", id: "b", name: "clock", arguments: "{}" },
    ]);
    // A whole call without an id, then another whole call at the same index with an id and a name: two calls.
    ({ chunks, finish } = await run(sse(
      payload(calls({ index: 0, type: "function", function: { name: "echo", arguments: '{"v":"1"}' } })) +
        payload(calls({ index: 0, id: "b", type: "function", function: { name: "clock", arguments: "{}" } })) +
        payload({}, "tool_calls") + "data: [DONE]\n\n",
    )));
    assert.deepEqual(assemble(chunks).blocks(), [
      { type: "tool-call", id: "call_0", name: "echo", arguments: '{"v":"1"}' },
      { type: "tool-call", id: "b", name: "clock", arguments: "{}" },
    ]);
  });

  it("whole calls streamed with neither index nor id (older Ollama, Mistral) stay calls of their own", async () => {
    const whole = (name: string, args: string) => ({
      tool_calls: [{ type: "function", function: { name, arguments: args } }],
    });
    const { chunks, finish } = await run(sse(
      payload(whole("weather", '{"city":"Paris"}')) + payload(whole("clock", '{"tz":"CET"}')) +
        payload({ tool_calls: [{ function: { arguments: "" } }] }) + payload({}, "tool_calls") + "data: [DONE]\n\n",
    ));
    assert.equal(finish.kind, "tool-calls");
    assert.deepEqual(assemble(chunks).blocks(), [
      { type: "tool-call", id: "call_0", name: "weather", arguments: '{"city":"Paris"}' },
      { type: "tool-call", id: "call_1", name: "clock", arguments: '{"tz":"CET"}' },
    ]);
  });

  it("two calls of one response with the same id get ids of their own, and their argument deltas stay theirs", async () => {
    const start = (index: number, name: string) => ({
      tool_calls: [{ index, id: "dup", type: "function", function: { name, arguments: "" } }],
    });
    const more = (index: number, args: string) => ({
      tool_calls: [{ index, id: "dup", type: "function", function: { arguments: args } }],
    });
    const { chunks, finish } = await run(sse(
      payload(start(0, "weather")) + payload(start(1, "clock")) + payload(more(0, '{"city":"Paris"}')) +
        payload(more(1, '{"tz":"UTC"}')) + payload({}, "tool_calls") + "data: [DONE]\n\n",
    ));
    assert.equal(finish.kind, "tool-calls");
    assert.deepEqual(assemble(chunks).blocks(), [
      { type: "tool-call", id: "dup", name: "weather", arguments: '{"city":"Paris"}' },
      { type: "tool-call", id: "dup_1", name: "clock", arguments: '{"tz":"UTC"}' },
    ]);
  });

  it("finish reasons other servers send: eos_token, stop_sequence, end_turn are stop; model_length is max-tokens", async () => {
    const cases: [string, string][] = [
      ["eos_token", "stop"],
      ["stop_sequence", "stop"],
      ["end_turn", "stop"],
      ["model_length", "max-tokens"],
    ];
    for (const [reason, kind] of cases) {
      const { chunks, finish } = await run(sse(payload({ content: "The answer is 42." }, reason) + "data: [DONE]\n\n"));
      assert.equal(finish.kind, kind, reason);
      assert.deepEqual(assemble(chunks).blocks(), [{ type: "text", text: "The answer is 42." }], reason);
    }
    // The Anthropic-style names of the other two, and any reason in upper case.
    for (
      const [reason, kind] of [["tool_use", "tool-calls"], ["max_tokens", "max-tokens"], ["STOP", "stop"], [
        "MAX_TOKENS",
        "max-tokens",
      ]]
    ) {
      const call = { tool_calls: [{ index: 0, id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] };
      const delta = kind === "tool-calls" ? call : { content: "x" };
      const { finish } = await run(sse(payload(delta, reason) + "data: [DONE]\n\n"));
      assert.equal(finish.kind, kind, reason);
    }
    // A stop synonym with nothing in it is still an empty response; an unknown reason is still its own final code.
    let { finish } = await run(sse(payload({}, "eos_token") + "data: [DONE]\n\n"));
    assert.equal(finish.failure?.code, "EMPTY_RESPONSE");
    ({ finish } = await run(sse(payload({ content: "x" }, "content_filter") + "data: [DONE]\n\n")));
    assert.equal(finish.failure?.code, "CONTENT_FILTER");
  });

  it("a 200 that is not an event stream: its error object is classified, anything else is MALFORMED_RESPONSE", async () => {
    const json = (body: unknown) => sse(JSON.stringify(body), "application/json");
    let { finish } = await run(json({ error: { message: "Invalid API key", code: 401 } }));
    assert.equal(finish.failure?.code, "AUTH");
    assert.match(finish.failure!.message, /Invalid API key/);
    ({ finish } = await run(json({ error: { message: "Slow down", type: "rate_limit_error" } })));
    assert.equal(finish.failure?.code, "RATE_LIMIT");
    ({ finish } = await run(sse("<html><body>Down for maintenance</body></html>", "text/html")));
    assert.equal(finish.failure?.code, "MALFORMED_RESPONSE");
    assert.match(finish.failure!.message, /text\/html instead of an event stream: <html><body>Down for maintenance/);
    // A JSON body without a content type, or under text/event-stream, is what it says too, not a torn stream.
    const overloaded = { error: { message: "Service overloaded", type: "server_error", code: "503" } };
    ({ finish } = await run((res) => {
      res.writeHead(200);
      res.end(JSON.stringify(overloaded));
    }));
    assert.equal(finish.failure?.code, "SERVER");
    assert.match(finish.failure!.message, /Service overloaded/);
    ({ finish } = await run(sse(JSON.stringify({ error: { message: "Invalid API key", code: 401 } }))));
    assert.equal(finish.failure?.code, "AUTH");
    ({ finish } = await run(sse('{"id":"x","choices":[]}')));
    assert.equal(finish.failure?.code, "MALFORMED_RESPONSE");
    assert.match(finish.failure!.message, /answered a JSON body instead of an event stream/);
    // Events under another content type are read all the same.
    ({ finish } = await run(sse(payload({ content: "Hi" }, "stop") + "data: [DONE]\n\n", "application/json")));
    assert.equal(finish.kind, "stop");
    // A page with no content type holds no event: what it says, not a stream that was cut.
    ({ finish } = await run((res) => {
      res.writeHead(200);
      res.end("<html><body>Down for maintenance</body></html>");
    }));
    assert.equal(finish.failure?.code, "MALFORMED_RESPONSE");
    assert.match(finish.failure!.message, /<html><body>Down for maintenance/);
  });

  it("events under another content type stream as they arrive, not once the body has ended", async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => release = resolve);
    answer = (res) => {
      res.writeHead(200, { "Content-Type": "text/plain; charset=utf-8" });
      res.write(payload({ content: "first " }));
      void released.then(() => res.end(payload({ content: "second" }, "stop") + "data: [DONE]\n\n"));
    };
    const adapter = openaiCompatibleAdapter({
      baseURL: server.url,
      provider: "xai",
      apiKey: "k",
      models: [{ id: "grok-3-mini" }],
      streamIdleTimeoutMs: 5_000,
    });
    // The rest of the body is sent only once the first delta has come through: a body read whole never gets it.
    const chunks: StreamChunk[] = [];
    for await (const chunk of adapter.stream(request())) {
      chunks.push(chunk);
      if (chunk.type === "text-delta") release();
    }
    assert.deepEqual(checkStreamGrammar(chunks), []);
    assert.equal(finishOf(chunks).reason.kind, "stop");
    assert.deepEqual(assemble(chunks).blocks(), [{ type: "text", text: "first second" }]);
  });

  it("an error object mid-stream is classified by its status or code, else SERVER", async () => {
    const cases: [unknown, string][] = [
      [{ message: "Invalid API key", code: 401 }, "AUTH"],
      [{ message: "Invalid API key", code: "invalid_api_key" }, "AUTH"],
      [{ message: "You exceeded your quota", type: "insufficient_quota" }, "QUOTA"],
      [{ message: "This model's maximum context length is 8192 tokens" }, "CONTEXT_WINDOW_EXCEEDED"],
      [{ message: "Overloaded", type: "overloaded_error" }, "SERVER"],
      ["boom", "SERVER"],
    ];
    for (const [error, code] of cases) {
      const { finish } = await run(sse(payload({ content: "Hel" }) + `data: ${JSON.stringify({ error })}\n\n`));
      assert.equal(finish.failure?.code, code, JSON.stringify(error));
    }
    // A numeric code is a status only as an integer in 100–599: a provider's own code, or one JSON makes Infinity, is
    // classified by its names, and the finish carries no status (a lossless chunk).
    for (
      const raw of [
        '{"message":"boom","code":1302}',
        '{"message":"boom","code":1e400}',
        '{"message":"boom","code":4.5e2}',
      ]
    ) {
      const { chunks, finish } = await run(sse(payload({ content: "Hel" }) + `data: {"error":${raw}}\n\n`));
      assert.deepEqual(finish.failure, {
        code: raw.includes("4.5e2") ? "HTTP_450" : "SERVER",
        message: 'Provider "xai" reported an error mid-stream: boom',
        ...(raw.includes("4.5e2") ? { status: 450 } : {}),
      }, raw);
      assert.deepEqual(JSON.parse(JSON.stringify(chunks.at(-1))), chunks.at(-1), raw);
    }
  });

  it("an `event: error` is a failure carrying what it says: its JSON classified, its text a retryable SERVER", async () => {
    let { finish } = await run(sse(payload({ content: "Hi" }) + "event: error\ndata: Internal Server Error\n\n"));
    assert.deepEqual(finish.failure, {
      code: "SERVER",
      message: 'Provider "xai" sent an error event mid-stream: Internal Server Error',
    });
    ({ finish } = await run(sse(
      payload({ content: "Hi" }) +
        'event: error\ndata: {"error":{"message":"Slow down","type":"rate_limit_error"}}\n\n',
    )));
    assert.equal(finish.failure?.code, "RATE_LIMIT");
    assert.match(finish.failure!.message, /Slow down/);
  });

  it("a last event ended by a lone CR, or lacking only its blank line, still ends the stream", async () => {
    const body = payload({ content: "Hi" }, "stop");
    let { finish } = await run(sse(body.replaceAll("\n", "\r") + "data: [DONE]\r\r"));
    assert.equal(finish.kind, "stop");
    ({ finish } = await run(sse(body + "data: [DONE]\n")));
    assert.equal(finish.kind, "stop");
    // A line cut mid-way is still a torn stream.
    ({ finish } = await run(sse(body + "data: [DO")));
    assert.equal(finish.failure?.code, "STREAM_CLOSED");
  });
});
