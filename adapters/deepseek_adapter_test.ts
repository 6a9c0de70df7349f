import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  BlockAssembler,
  checkStreamGrammar,
  type GenerateOptions,
  isRetryableFailure,
  type LlmFailureData,
  LlmRuntime,
  type Message,
  type StreamChunk,
} from "../sdk/llm/mod.ts";
import { DEEPSEEK_MODELS, DEEPSEEK_REASONING_EFFORTS, deepseekAdapter } from "./mod.ts";
import { USER_AGENT, VERSION } from "./_version.ts";
import {
  collect,
  finishOf,
  fixtureJson,
  fixturePayloads,
  playSse,
  type RecordedRequest,
  sseText,
  startWireServer,
  type WireServer,
} from "./_test_wire_server.ts";

const request = (model = "deepseek-chat", extra: Partial<GenerateOptions> = {}): GenerateOptions => ({
  provider: "deepseek",
  model,
  messages: [{ id: "u1", role: "user", content: [{ type: "text", text: "Hi" }], source: { kind: "user" } }],
  ...extra,
});

/** An independent oracle: the concatenated deltas of a fixture. */
function concatenated(name: string, field: "content" | "reasoning_content"): string {
  let out = "";
  for (const payload of fixtureJson(name)) {
    for (const choice of (payload.choices as { delta?: Record<string, unknown> }[] | undefined) ?? []) {
      const value = choice.delta?.[field];
      if (typeof value === "string") out += value;
    }
  }
  return out;
}

function assemble(chunks: readonly StreamChunk[]): BlockAssembler {
  const assembler = new BlockAssembler();
  for (const chunk of chunks) assembler.push(chunk);
  return assembler;
}

describe("deepseekAdapter() over HTTP on recorded streams", () => {
  let server: WireServer;
  let play: (
    req: RecordedRequest,
  ) => { status?: number; headers?: Record<string, string>; body: string; piece?: number };
  before(async () => {
    server = await startWireServer(async (req, res) => {
      const answer = play(req);
      if (answer.status !== undefined && answer.status !== 200) {
        res.writeHead(answer.status, { "Content-Type": "application/json", ...answer.headers });
        res.end(answer.body);
        return;
      }
      await playSse(res, answer.body, answer.piece);
    });
  });
  after(() => server.close());

  const stream = async (options: GenerateOptions, adapterOptions: { apiKey?: string } = { apiKey: "sk-test" }) => {
    const llm = new LlmRuntime();
    llm.registerAdapter(
      deepseekAdapter({
        apiKey: adapterOptions.apiKey,
        baseURL: server.url,
        models: [{ id: "deepseek-chat" }, { id: "deepseek-reasoner", reasoningEfforts: ["high", "max"] }],
      }),
    );
    return await collect(llm.stream(options));
  };

  it("assembles deepseek-text.chunks.jsonl: text, max-tokens, usage", async () => {
    play = () => ({ body: sseText(fixturePayloads("deepseek-text.chunks.jsonl")) });
    const chunks = await stream(request());
    assert.deepEqual(checkStreamGrammar(chunks), []);
    const assembler = assemble(chunks);
    const text = concatenated("deepseek-text.chunks.jsonl", "content");
    assert.equal(text.length, 1855);
    assert.ok(text.startsWith("## **Holiday Name:** Starlight Remembrance"));
    assert.deepEqual(assembler.blocks(), [{ type: "text", text }]);
    assert.deepEqual(assembler.usage, { inputTokens: 13, outputTokens: 400 });
    assert.deepEqual(assembler.finish, { kind: "max-tokens" });
    // Block ends, usage and finish come last, after every delta.
    assert.deepEqual(chunks.slice(-3).map((c) => c.type), ["block-end", "usage", "finish"]);
  });

  it("assembles deepseek-reasoning.chunks.jsonl: the empty first reasoning delta opens no block", async () => {
    play = () => ({ body: sseText(fixturePayloads("deepseek-reasoning.chunks.jsonl")) });
    const chunks = await stream(request("deepseek-reasoner"));
    assert.deepEqual(checkStreamGrammar(chunks), []);
    assert.deepEqual(chunks[0], { type: "block-start", index: 0, blockType: "reasoning" });
    const assembler = assemble(chunks);
    assert.deepEqual(assembler.blocks(), [
      { type: "reasoning", text: concatenated("deepseek-reasoning.chunks.jsonl", "reasoning_content") },
      { type: "text", text: 'The word "strawberry" contains three "r"s.' },
    ]);
    assert.deepEqual(assembler.usage, { inputTokens: 18, outputTokens: 219, reasoningTokens: 205 });
    assert.deepEqual(assembler.finish, { kind: "stop" });
  });

  it("assembles deepseek-tool-call.chunks.jsonl: a tool call in argument pieces, cache hits subtracted", async () => {
    play = () => ({ body: sseText(fixturePayloads("deepseek-tool-call.chunks.jsonl")) });
    const chunks = await stream(request("deepseek-reasoner"));
    assert.deepEqual(checkStreamGrammar(chunks), []);
    const assembler = assemble(chunks);
    const reasoning = concatenated("deepseek-tool-call.chunks.jsonl", "reasoning_content");
    assert.ok(reasoning.startsWith("The user is asking for the weather in Sa"));
    assert.deepEqual(assembler.blocks(), [
      { type: "reasoning", text: reasoning },
      {
        type: "tool-call",
        id: "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",
        name: "weather",
        arguments: '{"location": "San Francisco"}',
      },
    ]);
    assert.deepEqual(assembler.usage, { inputTokens: 19, outputTokens: 83, cacheReadTokens: 320, reasoningTokens: 39 });
    assert.deepEqual(assembler.finish, { kind: "tool-calls" });
    const deltas = chunks.filter((c) => c.type === "tool-call-delta");
    assert.ok(deltas.length > 5, "arguments arrive in pieces");
    assert.ok(deltas.every((c) => c.type === "tool-call-delta" && c.id === "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF"));
  });

  it("gives the same chunks when the SSE bytes arrive in 61-character pieces", async () => {
    play = () => ({ body: sseText(fixturePayloads("deepseek-tool-call.chunks.jsonl")) });
    const whole = await stream(request("deepseek-reasoner"));
    play = () => ({ body: sseText(fixturePayloads("deepseek-tool-call.chunks.jsonl")), piece: 61 });
    const pieces = await stream(request("deepseek-reasoner"));
    assert.deepEqual(pieces, whole);
  });

  it("sends the request body, the bearer token and a User-Agent naming the SDK", async () => {
    play = () => ({ body: sseText(fixturePayloads("deepseek-reasoning.chunks.jsonl")) });
    const before = server.requests.length;
    await stream({
      provider: "deepseek",
      model: "deepseek-reasoner",
      reasoningEffort: "high",
      temperature: 0.2,
      maxTokens: 512,
      stop: ["END"],
      system: "Be brief",
      messages: request().messages,
      tools: [{ name: "weather", description: "Weather of a place", parameters: { type: "object" } }],
    });
    const sent = server.requests[before];
    assert.equal(sent.method, "POST");
    assert.equal(sent.url, "/chat/completions");
    assert.equal(sent.headers["authorization"], "Bearer sk-test");
    assert.equal(sent.headers["user-agent"], `@dsh/harness/${VERSION}`);
    assert.equal(sent.headers["accept"], "text/event-stream");
    assert.deepEqual(sent.json, {
      model: "deepseek-reasoner",
      messages: [{ role: "system", content: "Be brief" }, { role: "user", content: "Hi" }],
      stream: true,
      stream_options: { include_usage: true },
      thinking: { type: "enabled" },
      reasoning_effort: "high",
      tools: [{
        type: "function",
        function: { name: "weather", description: "Weather of a place", parameters: { type: "object" } },
      }],
      temperature: 0.2,
      max_tokens: 512,
      stop: ["END"],
    });
  });

  it("the default catalogue accepts every reasoning effort the request mapping sends, and only those", async () => {
    const llm = new LlmRuntime();
    llm.registerAdapter(deepseekAdapter({ apiKey: "sk-test", baseURL: server.url }));
    assert.deepEqual([...DEEPSEEK_REASONING_EFFORTS], ["high", "max"]);
    for (const model of DEEPSEEK_MODELS) {
      for (const effort of DEEPSEEK_REASONING_EFFORTS) {
        play = () => ({ body: sseText(fixturePayloads("deepseek-reasoning.chunks.jsonl")) });
        const before = server.requests.length;
        const chunks = await collect(llm.stream({ ...request(model.id), reasoningEffort: effort }));
        assert.equal(finishOf(chunks).reason.kind, "stop", `${model.id} with effort ${effort}`);
        const sent = server.requests[before].json as Record<string, unknown>;
        assert.equal(sent.reasoning_effort, effort);
        assert.deepEqual(sent.thinking, { type: "enabled" });
      }
      const refused = finishOf(await collect(llm.stream({ ...request(model.id), reasoningEffort: "low" })));
      assert.equal((refused.reason as { failure: { code: string } }).failure.code, "UNSUPPORTED_FEATURE");
    }
    // The mapping itself refuses an effort outside its set, whatever a custom catalogue says.
    const custom = new LlmRuntime();
    custom.registerAdapter(
      deepseekAdapter({ apiKey: "sk-test", baseURL: server.url, models: [{ id: "x", reasoningEfforts: ["low"] }] }),
    );
    const before = server.requests.length;
    const mapped = finishOf(await collect(custom.stream({ ...request("x"), reasoningEffort: "low" })));
    assert.equal((mapped.reason as { failure: { code: string } }).failure.code, "UNSUPPORTED_FEATURE");
    assert.equal(server.requests.length, before, "nothing is sent");
  });

  it("sends a logged system message in the system role, in its place in the history", async () => {
    play = () => ({ body: sseText(fixturePayloads("deepseek-text.chunks.jsonl")) });
    const before = server.requests.length;
    await stream({
      ...request(),
      system: "Be brief",
      messages: [
        ...request().messages,
        {
          id: "s1",
          role: "system",
          content: [{ type: "text", text: "Branch main." }, { type: "text", text: "Clean tree." }],
          source: { kind: "plugin", plugin: "git" },
        },
      ],
    });
    assert.deepEqual((server.requests[before].json as { messages: unknown }).messages, [
      { role: "system", content: "Be brief" },
      { role: "user", content: "Hi" },
      { role: "system", content: "Branch main.\nClean tree." },
    ]);
  });

  it("the SDK version in the User-Agent is the package version", () => {
    const deno = JSON.parse(readFileSync(new URL("../deno.json", import.meta.url), "utf8"));
    assert.equal(VERSION, deno.version);
    assert.equal(USER_AGENT, `@dsh/harness/${deno.version}`);
  });

  it("a two-step tool conversation sends reasoning_content, tool calls and a tool message back", async () => {
    play = () => ({ body: sseText(fixturePayloads("deepseek-tool-call.chunks.jsonl")) });
    const first: GenerateOptions = request("deepseek-reasoner");
    const assembler = assemble(await stream(first));
    const [call] = assembler.toolCalls();
    const assistant: Message = {
      id: "a1",
      role: "assistant",
      content: assembler.blocks(),
      source: { kind: "model", provider: "deepseek", model: "deepseek-reasoner" },
    };
    const result: Message = {
      id: "t1",
      role: "user",
      content: [{ type: "tool-result", toolCallId: call.id, content: [{ type: "text", text: "Sunny, 18 °C" }] }],
      source: { kind: "tool", callId: call.id },
    };
    play = () => ({ body: sseText(fixturePayloads("deepseek-reasoning.chunks.jsonl")) });
    const before = server.requests.length;
    await stream({ ...first, messages: [...first.messages, assistant, result] });
    const body = server.requests[before].json as { messages: unknown[] };
    assert.deepEqual(body.messages, [
      { role: "user", content: "Hi" },
      {
        role: "assistant",
        content: "",
        reasoning_content: concatenated("deepseek-tool-call.chunks.jsonl", "reasoning_content"),
        tool_calls: [{
          id: "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",
          type: "function",
          function: { name: "weather", arguments: '{"location": "San Francisco"}' },
        }],
      },
      { role: "tool", tool_call_id: "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", content: "Sunny, 18 °C" },
    ]);
  });

  it("an empty tool result is sent as (no output)", async () => {
    play = () => ({ body: sseText(fixturePayloads("deepseek-reasoning.chunks.jsonl")) });
    const before = server.requests.length;
    await stream(request("deepseek-chat", {
      messages: [{
        id: "t1",
        role: "user",
        content: [{ type: "tool-result", toolCallId: "c1", content: [] }],
        source: { kind: "tool", callId: "c1" },
      }],
    }));
    assert.deepEqual((server.requests[before].json as { messages: unknown[] }).messages, [
      { role: "tool", tool_call_id: "c1", content: "(no output)" },
    ]);
  });

  const httpCases: [number, Record<string, string>, string, Record<string, unknown>][] = [
    [401, {}, '{"error":{"message":"Authentication Fails"}}', { code: "AUTH", status: 401 }],
    [403, {}, "forbidden", { code: "AUTH", status: 403 }],
    [402, {}, '{"error":{"message":"Insufficient Balance"}}', { code: "QUOTA", status: 402 }],
    [429, { "Retry-After": "3", "x-request-id": "req-42" }, '{"error":{"message":"Rate limit reached"}}', {
      code: "RATE_LIMIT",
      status: 429,
      providerRetryAfterMs: 3000,
      requestId: "req-42",
    }],
    [429, {}, '{"error":{"message":"You exceeded your current quota"}}', { code: "QUOTA", status: 429 }],
    // OpenAI's free-tier rate limit links the billing page; its code says what it is: a rate limit, retried.
    [
      429,
      { "Retry-After": "1" },
      JSON.stringify({
        error: {
          message: "Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): Limit 3, " +
            "Used 3, Requested 1. Please try again in 20s. You can increase your rate limit by adding a payment " +
            "method to your account at https://platform.openai.com/account/billing.",
          type: "requests",
          param: null,
          code: "rate_limit_exceeded",
        },
      }),
      { code: "RATE_LIMIT", status: 429, providerRetryAfterMs: 1000 },
    ],
    [
      429,
      {},
      JSON.stringify({
        error: {
          message: "You exceeded your current quota, please check your plan and billing details.",
          type: "insufficient_quota",
          param: null,
          code: "insufficient_quota",
        },
      }),
      { code: "QUOTA", status: 429 },
    ],
    // Without a code, a message that merely mentions credits or billing is a rate limit.
    [429, {}, '{"error":{"message":"Too many requests; add credits on the billing page for higher limits"}}', {
      code: "RATE_LIMIT",
      status: 429,
    }],
    [
      400,
      {},
      '{"error":{"message":"This model\'s maximum context length is 131072 tokens. However, you requested 140000 tokens"}}',
      { code: "CONTEXT_WINDOW_EXCEEDED", status: 400 },
    ],
    [400, {}, '{"error":{"message":"Invalid tools"}}', { code: "INVALID_REQUEST", status: 400 }],
    [413, {}, "too large", { code: "INVALID_REQUEST", status: 413 }],
    [408, {}, "Request Timeout", { code: "TIMEOUT", status: 408 }],
    [500, {}, "oops", { code: "SERVER", status: 500 }],
    [503, { "retry-after-ms": "1500" }, '{"error":{"message":"Server overloaded"}}', {
      code: "SERVER",
      status: 503,
      providerRetryAfterMs: 1500,
    }],
    [422, {}, '{"error":{"message":"Invalid parameter"}}', { code: "HTTP_422", status: 422 }],
  ];
  for (const [status, headers, body, expected] of httpCases) {
    it(`maps HTTP ${status} ${JSON.stringify(headers)} to ${expected.code}`, async () => {
      play = () => ({ status, headers, body });
      const finish = finishOf(await stream(request()));
      assert.equal(finish.reason.kind, "error");
      const failure = (finish.reason as unknown as { failure: Record<string, unknown> }).failure;
      for (const [key, value] of Object.entries(expected)) assert.equal(failure[key], value, key);
      if (expected.providerRetryAfterMs === undefined) assert.equal(failure.providerRetryAfterMs, undefined);
      assert.match(String(failure.message), new RegExp(`HTTP ${status}`));
    });
  }

  it("a stream without [DONE] ends with STREAM_CLOSED, its blocks left open", async () => {
    play = () => ({ body: sseText(fixturePayloads("deepseek-reasoning.chunks.jsonl"), { done: false }) });
    const chunks = await stream(request());
    assert.deepEqual(finishOf(chunks).reason, {
      kind: "error",
      failure: { code: "STREAM_CLOSED", message: 'Stream from provider "deepseek" ended before [DONE]' },
    });
    assert.equal(chunks.some((c) => c.type === "block-end" || c.type === "usage"), false);
    assert.deepEqual(checkStreamGrammar(chunks), []);
  });

  it("a stream torn inside an event ends with STREAM_CLOSED", async () => {
    const payloads = fixturePayloads("deepseek-text.chunks.jsonl").slice(0, 5);
    play = () => ({ body: sseText(payloads, { done: false }) + `data: ${payloads[5] ?? "{"}`.slice(0, 40) });
    const chunks = await stream(request());
    assert.equal((finishOf(chunks).reason as { failure: { code: string } }).failure.code, "STREAM_CLOSED");
    assert.equal(assemble(chunks).interruptedBlocks().length, 1);
  });

  it("an event that is not JSON ends with MALFORMED_RESPONSE", async () => {
    const payloads = fixturePayloads("deepseek-text.chunks.jsonl").slice(0, 3);
    play = () => ({ body: sseText([...payloads, "{not json"]) });
    const finish = finishOf(await stream(request()));
    assert.equal((finish.reason as { failure: { code: string } }).failure.code, "MALFORMED_RESPONSE");
  });

  it("an in-band error object ends the stream with a mapped failure", async () => {
    play = () => ({ body: sseText(['{"error":{"message":"maximum context length exceeded"}}']) });
    const finish = finishOf(await stream(request()));
    assert.equal((finish.reason as { failure: { code: string } }).failure.code, "CONTEXT_WINDOW_EXCEEDED");
  });

  it("a completed response with no content is EMPTY_RESPONSE", async () => {
    const [first] = fixturePayloads("deepseek-reasoning.chunks.jsonl");
    const last = '{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}],' +
      '"usage":{"prompt_tokens":5,"completion_tokens":0,"total_tokens":5}}';
    play = () => ({ body: sseText([first, last]) });
    const chunks = await stream(request());
    assert.deepEqual(chunks, [
      { type: "usage", usage: { inputTokens: 5, outputTokens: 0 } },
      {
        type: "finish",
        reason: {
          kind: "error",
          failure: { code: "EMPTY_RESPONSE", message: 'Provider "deepseek" returned an empty response' },
        },
      },
    ]);
  });

  it("maps other finish reasons to an error with the reason as code", async () => {
    const last = '{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"content_filter"}]}';
    play = () => ({ body: sseText([last]) });
    const finish = finishOf(await stream(request()));
    assert.equal((finish.reason as { failure: { code: string } }).failure.code, "CONTENT_FILTER");
  });

  it("insufficient_system_resource (DeepSeek overloaded mid-answer) is a retryable SERVER failure", async () => {
    const last =
      '{"choices":[{"index":0,"delta":{"content":"Partial ans"},"finish_reason":"insufficient_system_resource"}]}';
    play = () => ({ body: sseText([last]) });
    const chunks = await stream(request());
    assert.deepEqual(checkStreamGrammar(chunks), []);
    const failure = (finishOf(chunks).reason as { failure: LlmFailureData }).failure;
    assert.equal(failure.code, "SERVER");
    assert.match(failure.message, /insufficient_system_resource/);
    assert.equal(isRetryableFailure(failure), true);
  });

  it("without an API key, fails with MISSING_CREDENTIAL and sends nothing", async () => {
    const before = server.requests.length;
    const finish = finishOf(await stream(request(), {}));
    assert.equal((finish.reason as { failure: { code: string } }).failure.code, "MISSING_CREDENTIAL");
    assert.equal(server.requests.length, before);
  });

  it("sends an image of older history, and one a tool returned, as a note: the session's next requests go through", async () => {
    play = () => ({ body: sseText(fixturePayloads("deepseek-text.chunks.jsonl")) });
    const before = server.requests.length;
    const image = { type: "image", mediaType: "image/png", data: "AAAA" } as const;
    const finish = finishOf(
      await stream({
        ...request(),
        messages: [
          { id: "u1", role: "user", content: [{ type: "text", text: "Look" }, image], source: { kind: "user" } },
          {
            id: "a1",
            role: "assistant",
            content: [{ type: "tool-call", id: "c1", name: "shot", arguments: "{}" }],
            source: { kind: "model", provider: "deepseek", model: "deepseek-chat" },
          },
          {
            id: "t1",
            role: "user",
            content: [{ type: "tool-result", toolCallId: "c1", content: [image] }],
            source: { kind: "tool", callId: "c1" },
          },
          ...request().messages,
        ],
      }),
    );
    assert.notEqual(finish.type === "finish" && finish.reason.kind, "error"); // the recorded answer's own finish
    const sent = (server.requests[before].json as { messages: { role: string; content: unknown }[] }).messages;
    assert.deepEqual(sent.map((m) => [m.role, m.content]), [
      ["user", 'Look\n[image not sent: provider "deepseek" does not accept image input]'],
      ["assistant", ""],
      ["tool", "[image not sent: tool messages carry text only]"],
      ["user", "Hi"],
    ]);
  });

  it("refuses image input with UNSUPPORTED_FEATURE", async () => {
    const finish = finishOf(
      await stream(request("deepseek-chat", {
        messages: [{
          id: "u1",
          role: "user",
          content: [{ type: "image", mediaType: "image/png", data: "AAAA" }],
          source: { kind: "user" },
        }],
      })),
    );
    assert.equal((finish.reason as { failure: { code: string } }).failure.code, "UNSUPPORTED_FEATURE");
    // Still the newest user input when a hook's context was entered after it (as a system message).
    const withContext = finishOf(
      await stream(request("deepseek-chat", {
        messages: [{
          id: "u1",
          role: "user",
          content: [{ type: "text", text: "Look" }, { type: "image", mediaType: "image/png", data: "AAAA" }],
          source: { kind: "user" },
        }, {
          id: "s1",
          role: "system",
          content: [{ type: "text", text: "Context from a hook" }],
          source: { kind: "plugin", plugin: "hooks" },
        }],
      })),
    );
    assert.equal((withContext.reason as { failure: { code: string } }).failure.code, "UNSUPPORTED_FEATURE");
  });
});

describe("deepseekAdapter() failures of the connection", () => {
  it("a test-server handler that throws fails the request at once, and close() rethrows its error", async () => {
    const server = await startWireServer(() => {
      throw new Error("fixture missing: nope.jsonl");
    });
    // An idle timeout of 20 s would fail the 30 s test budget's spirit; the
    // answer must be the handler's 500, not the watchdog.
    const adapter = deepseekAdapter({ apiKey: "sk", baseURL: server.url, streamIdleTimeoutMs: 20_000 });
    const finish = finishOf(await collect(adapter.stream(request())));
    assert.equal(finish.reason.kind, "error");
    const failure = (finish.reason as { failure: { code: string; message: string; status?: number } }).failure;
    assert.notEqual(failure.code, "STREAM_IDLE_TIMEOUT");
    assert.match(JSON.stringify(failure), /500|fixture missing/);
    await assert.rejects(server.close(), /fixture missing: nope\.jsonl/);
  });

  it("a refused connection is TRANSPORT", async () => {
    const server = await startWireServer(() => {});
    const url = server.url;
    await server.close();
    const adapter = deepseekAdapter({ apiKey: "sk", baseURL: url });
    const finish = finishOf(await collect(adapter.stream(request())));
    assert.equal(finish.reason.kind, "error");
    assert.equal((finish.reason as { failure: { code: string } }).failure.code, "TRANSPORT");
  });

  it("a connection reset mid-stream is TRANSPORT", async () => {
    const server = await startWireServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.write(sseText(fixturePayloads("deepseek-text.chunks.jsonl").slice(0, 3), { done: false }));
      setTimeout(() => res.socket?.destroy(), 20);
    });
    try {
      const adapter = deepseekAdapter({ apiKey: "sk", baseURL: server.url });
      const finish = finishOf(await collect(adapter.stream(request())));
      assert.equal(finish.reason.kind, "error");
      assert.equal((finish.reason as { failure: { code: string } }).failure.code, "TRANSPORT");
    } finally {
      await server.close();
    }
  });

  it("a provider that stalls mid-stream ends with TIMEOUT from the idle watchdog", async () => {
    const payloads = fixturePayloads("deepseek-text.chunks.jsonl").slice(0, 3);
    const server = await startWireServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.write(sseText(payloads, { done: false })); // then nothing, never ending
    });
    try {
      const adapter = deepseekAdapter({ apiKey: "sk", baseURL: server.url, streamIdleTimeoutMs: 50 });
      const chunks = await collect(adapter.stream(request()));
      assert.deepEqual(chunks.slice(0, 3).map((c) => c.type), ["block-start", "text-delta", "text-delta"]);
      assert.deepEqual(finishOf(chunks).reason, {
        kind: "error",
        failure: { code: "TIMEOUT", message: 'Provider "deepseek" sent nothing for 50 ms' },
      });
    } finally {
      await server.close();
    }
  });

  it("keep-alive comments keep the idle watchdog from firing", async () => {
    const server = await startWireServer(async (_req, res) => {
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      for (let i = 0; i < 12; i++) {
        res.write(": keep-alive\n\n");
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      res.end(sseText(fixturePayloads("deepseek-reasoning.chunks.jsonl")));
    });
    try {
      const adapter = deepseekAdapter({ apiKey: "sk", baseURL: server.url, streamIdleTimeoutMs: 200 });
      const chunks = await collect(adapter.stream(request()));
      assert.deepEqual(finishOf(chunks).reason, { kind: "stop" });
    } finally {
      await server.close();
    }
  });

  it("a provider that never answers the request ends with TIMEOUT", async () => {
    const server = await startWireServer(() => {});
    try {
      const adapter = deepseekAdapter({ apiKey: "sk", baseURL: server.url, streamIdleTimeoutMs: 50 });
      const finish = finishOf(await collect(adapter.stream(request())));
      assert.equal((finish.reason as { failure: { code: string } }).failure.code, "TIMEOUT");
    } finally {
      await server.close();
    }
  });

  it("aborting mid-stream ends with an aborted finish", async () => {
    const payloads = fixturePayloads("deepseek-text.chunks.jsonl").slice(0, 3);
    const server = await startWireServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.write(sseText(payloads, { done: false }));
    });
    try {
      const controller = new AbortController();
      const adapter = deepseekAdapter({ apiKey: "sk", baseURL: server.url });
      const chunks: StreamChunk[] = [];
      for await (const chunk of adapter.stream({ ...request(), signal: controller.signal })) {
        chunks.push(chunk);
        if (chunk.type === "text-delta") controller.abort();
      }
      assert.deepEqual(finishOf(chunks).reason, {
        kind: "aborted",
        failure: { code: "ABORTED", message: 'Call to "deepseek" was aborted' },
      });
      assert.equal(assemble(chunks).interruptedBlocks().length, 1);
    } finally {
      await server.close();
    }
  });

  it("an already-aborted signal sends nothing", async () => {
    const server = await startWireServer((_req, res) => void res.end());
    try {
      const controller = new AbortController();
      controller.abort();
      const adapter = deepseekAdapter({ apiKey: "sk", baseURL: server.url });
      const finish = finishOf(await collect(adapter.stream({ ...request(), signal: controller.signal })));
      assert.equal(finish.reason.kind, "aborted");
      assert.equal(server.requests.length, 0);
    } finally {
      await server.close();
    }
  });

  it("rejects malformed options at once", () => {
    assert.throws(() => deepseekAdapter({ apiKey: "sk", baseURL: "ftp://x" }), /baseURL/);
    assert.throws(() => deepseekAdapter({ apiKey: "sk", streamIdleTimeoutMs: 0 }), /streamIdleTimeoutMs/);
  });
});
