import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../sdk/kernel/mod.ts";
import {
  BlockAssembler,
  checkStreamGrammar,
  type GenerateOptions,
  LlmFailure,
  LlmRuntime,
  type StreamChunk,
} from "../sdk/llm/mod.ts";
import { scriptedAdapter, textResponse, toolCallResponse } from "./scripted_adapter.ts";

const request = (text = "hi"): GenerateOptions => ({
  provider: "scripted",
  model: "scripted-model",
  messages: [{ id: text, role: "user", content: [{ type: "text", text }], source: { kind: "user" } }],
});

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

describe("scriptedAdapter()", () => {
  it("plays one entry per call, records every request, and fails clearly past the end", async () => {
    const model = scriptedAdapter([textResponse("one"), textResponse("two")]);
    const llm = new LlmRuntime();
    llm.registerAdapter(model);
    const texts: string[] = [];
    for (const prompt of ["a", "b", "c"]) {
      const assembler = new BlockAssembler();
      for await (const chunk of llm.stream(request(prompt))) assembler.push(chunk);
      texts.push(
        assembler.finish.kind === "error" ? assembler.finish.failure.code : JSON.stringify(assembler.blocks()),
      );
    }
    assert.deepEqual(texts, ['[{"type":"text","text":"one"}]', '[{"type":"text","text":"two"}]', "SCRIPT_EXHAUSTED"]);
    assert.deepEqual(model.requests.map((r) => r.messages[0].id), ["a", "b", "c"]);
    assert.equal(model.calls, 3);
    assert.equal(model.lastRequest()?.messages[0].id, "c");
  });

  it("keeps only the latest keepRequests requests, and still counts and plays every call", async () => {
    const model = scriptedAdapter([textResponse("one"), textResponse("two"), textResponse("three")], {
      keepRequests: 2,
    });
    const texts: string[] = [];
    for (const prompt of ["a", "b", "c"]) {
      const assembler = new BlockAssembler();
      for await (const chunk of model.stream(request(prompt))) assembler.push(chunk);
      texts.push(JSON.stringify(assembler.blocks()));
    }
    assert.deepEqual(texts.map((t) => JSON.parse(t)[0].text), ["one", "two", "three"]);
    assert.deepEqual(model.requests.map((r) => r.messages[0].id), ["b", "c"]);
    assert.equal(model.calls, 3);
    assert.equal(model.lastRequest()?.messages[0].id, "c");
    model.assertConsumed();

    const none = scriptedAdapter(textResponse("x"), { keepRequests: 0 });
    for (let i = 0; i < 100; i++) await collect(none.stream(request(`m${i}`)));
    assert.equal(none.requests.length, 0);
    assert.equal(none.calls, 100);
    assert.equal(none.lastRequest()?.messages[0].id, "m99");

    const all = scriptedAdapter(textResponse("x"));
    for (let i = 0; i < 100; i++) await collect(all.stream(request(`m${i}`)));
    assert.equal(all.requests.length, 100, "unbounded by default");
    for (const bad of [-1, 1.5, Number.NaN]) {
      assert.throws(
        () => scriptedAdapter(textResponse("x"), { keepRequests: bad }),
        (e) => HarnessError.isInstance(e, "INVALID_ARGS"),
      );
    }
  });

  it("throws SCRIPT_EXHAUSTED from the stream itself when used without the runtime", async () => {
    const model = scriptedAdapter([]);
    await assert.rejects(
      collect(model.stream(request())),
      (e) => HarnessError.isInstance(e, "SCRIPT_EXHAUSTED"),
    );
  });

  it("assertConsumed() fails while array entries are left", async () => {
    const model = scriptedAdapter([textResponse("one"), textResponse("two")]);
    await collect(model.stream(request()));
    assert.throws(() => model.assertConsumed(), (e) => HarnessError.isInstance(e, "SCRIPT_NOT_CONSUMED"));
    await collect(model.stream(request()));
    model.assertConsumed();
  });

  it("uses a single value for every call", async () => {
    const model = scriptedAdapter(textResponse("same"));
    const a = await collect(model.stream(request()));
    const b = await collect(model.stream(request()));
    assert.deepEqual(a, b);
    model.assertConsumed();
  });

  it("calls a function with the request and the call index", async () => {
    const model = scriptedAdapter((req, i) => textResponse(`${i}:${req.messages[0].id}`));
    await collect(model.stream(request("x")));
    const chunks = await collect(model.stream(request("y")));
    assert.deepEqual(chunks[1], { type: "text-delta", index: 0, text: "1:y" });
  });

  it("a throw entry plays its chunks, then throws; the runtime keeps the failure's code", async () => {
    const model = scriptedAdapter({
      chunks: [{ type: "text-delta", index: 0, text: "par" }],
      throw: new LlmFailure("SERVER", "Bad gateway", { status: 502 }),
    });
    const llm = new LlmRuntime();
    llm.registerAdapter(model);
    const chunks = await collect(llm.stream(request()));
    assert.deepEqual(chunks, [
      { type: "text-delta", index: 0, text: "par" },
      { type: "finish", reason: { kind: "error", failure: { code: "SERVER", message: "Bad gateway", status: 502 } } },
    ]);
  });

  it("a hang entry waits for the abort, then ends with an aborted finish", async () => {
    const model = scriptedAdapter({ hang: true, chunks: [{ type: "reasoning-delta", index: 0, text: "hmm" }] });
    const controller = new AbortController();
    const chunks: StreamChunk[] = [];
    for await (const chunk of model.stream({ ...request(), signal: controller.signal })) {
      chunks.push(chunk);
      if (chunk.type === "reasoning-delta") controller.abort();
    }
    assert.deepEqual(chunks, [
      { type: "reasoning-delta", index: 0, text: "hmm" },
      {
        type: "finish",
        reason: { kind: "aborted", failure: { code: "ABORTED", message: "Scripted model call was aborted" } },
      },
    ]);
  });

  it("takes a provider and models", () => {
    const model = scriptedAdapter(textResponse("x"), { provider: "fake", models: [{ id: "a" }, { id: "b" }] });
    assert.equal(model.provider, "fake");
    assert.deepEqual(model.models.map((m) => m.id), ["a", "b"]);
    const fallback = scriptedAdapter(textResponse("x"));
    assert.equal(fallback.provider, "scripted");
    assert.deepEqual(fallback.models, [{ id: "scripted-model" }]);
  });

  it("rejects a script that is neither entry, array nor function", () => {
    assert.throws(() => scriptedAdapter(42 as never), (e) => HarnessError.isInstance(e, "INVALID_ARGS"));
  });

  it("rejects what is not an entry where it is given, not at the model call", async () => {
    const bad: [unknown, RegExp][] = [
      [{}, /The script is not a script entry/],
      [{ text: "hi" }, /The script is not a script entry/],
      [[textResponse], /Script entry 0 is not a script entry.*a function \(call it/],
      [[textResponse("ok"), null], /Script entry 1/],
      [[{ chunks: "x" }], /Script entry 0/],
      [[{ hang: false }], /Script entry 0/],
    ];
    for (const [script, message] of bad) {
      assert.throws(
        () => scriptedAdapter(script as never),
        (e) => HarnessError.isInstance(e, "INVALID_ARGS") && message.test(e.message),
        String(message),
      );
    }
    // An entry a script function gives is checked when it is played: the call fails naming the script.
    const llm = new LlmRuntime();
    llm.registerAdapter(scriptedAdapter(() => ({ text: "hi" }) as never));
    const chunks = [];
    for await (const chunk of llm.stream({ provider: "scripted", model: "scripted-model", messages: [] })) {
      chunks.push(chunk);
    }
    const finish = chunks.at(-1);
    assert.equal(finish?.type, "finish");
    assert.match(JSON.stringify(finish), /script function's entry is not a script entry/);
    // Every documented form is accepted.
    scriptedAdapter([
      textResponse("a"),
      { throw: new Error("boom") },
      { throw: new Error("boom"), chunks: [] },
      { hang: true },
      { hang: true, chunks: textResponse("x").chunks.slice(0, 1) },
    ]);
  });
});

describe("textResponse() and toolCallResponse()", () => {
  it("textResponse() builds a valid stream with reasoning and usage", () => {
    const { chunks } = textResponse("Answer", { reasoning: "Think", usage: { inputTokens: 7, outputTokens: 3 } });
    assert.deepEqual(checkStreamGrammar(chunks), []);
    assert.deepEqual(chunks, [
      { type: "block-start", index: 0, blockType: "reasoning" },
      { type: "reasoning-delta", index: 0, text: "Think" },
      { type: "block-end", index: 0, block: { type: "reasoning", text: "Think" } },
      { type: "block-start", index: 1, blockType: "text" },
      { type: "text-delta", index: 1, text: "Answer" },
      { type: "block-end", index: 1, block: { type: "text", text: "Answer" } },
      { type: "usage", usage: { inputTokens: 7, outputTokens: 3 } },
      { type: "finish", reason: { kind: "stop" } },
    ]);
  });

  it("toolCallResponse() builds a valid stream whose assembly is the calls", () => {
    const calls = [
      { id: "c1", name: "read", arguments: '{"path":"a"}' },
      { id: "c2", name: "ls", arguments: "{}" },
    ];
    const { chunks } = toolCallResponse(calls, { text: "Looking", reasoning: "Plan" });
    assert.deepEqual(checkStreamGrammar(chunks), []);
    const assembler = new BlockAssembler();
    for (const chunk of chunks) assembler.push(chunk);
    assert.deepEqual(assembler.blocks().map((b) => b.type), ["reasoning", "text", "tool-call", "tool-call"]);
    assert.deepEqual(assembler.toolCalls(), calls.map((c) => ({ type: "tool-call", ...c })));
    assert.deepEqual(assembler.finish, { kind: "tool-calls" });
    assert.deepEqual(assembler.usage, { inputTokens: 1, outputTokens: 1 });
  });
});
