import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { SessionEvent } from "./session_events.ts";
import { renderTranscript } from "./transcript.ts";

const model = { kind: "model", provider: "deepseek", model: "deepseek-chat" } as const;

function toolSession(resultText: string): SessionEvent[] {
  const events: Omit<SessionEvent, "seq">[] = [
    { type: "turn/start", time: 100, data: { turn: 1 } },
    { type: "step/start", time: 100, data: { turn: 1, step: 1 } },
    {
      type: "user/message",
      time: 100,
      data: {
        id: "u-1",
        role: "user",
        content: [{ type: "text", text: "Weather in Paris?" }],
        source: { kind: "user" },
      },
      surfaceOp: "append",
    },
    {
      type: "request/header",
      time: 100,
      data: {
        header: {
          config: { provider: "deepseek", model: "deepseek-chat", maxTokens: 8000 },
          system: "Be brief.",
          tools: [{ name: "weather", description: "Weather", parameters: { type: "object" } }],
        },
        reason: "initial",
      },
    },
    {
      type: "assistant/chunk",
      time: 101,
      data: { turn: 1, step: 1, chunk: { type: "finish", reason: { kind: "tool-calls" } } },
    },
    {
      type: "assistant/message",
      time: 102,
      data: {
        turn: 1,
        step: 1,
        message: {
          id: "a-1",
          role: "assistant",
          content: [
            { type: "reasoning", text: "I should call the tool.\n\nThen answer." },
            { type: "tool-call", id: "call_1", name: "weather", arguments: '{"location":"Paris"}' },
          ],
          source: model,
        },
        usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 20, reasoningTokens: 3 },
      },
      surfaceOp: "append",
      sourceEventSeqs: [4],
    },
    { type: "tool/call", time: 103, data: { turn: 1, step: 1, callId: "call_1", name: "weather", arguments: "{}" } },
    {
      type: "tool/result",
      time: 104,
      data: {
        turn: 1,
        step: 1,
        message: {
          id: "r-1",
          role: "user",
          content: [{ type: "tool-result", toolCallId: "call_1", content: [{ type: "text", text: resultText }] }],
          source: { kind: "tool", callId: "call_1" },
        },
      },
      surfaceOp: "append",
      sourceEventSeqs: [6],
    },
    { type: "step/end", time: 105, data: { turn: 1, step: 1 } },
    {
      type: "llm/retry",
      time: 106,
      data: { turn: 1, step: 2, attempt: 1, delayMs: 500, failure: { code: "SERVER", message: "Bad gateway" } },
    },
    {
      type: "assistant/message",
      time: 107,
      data: {
        turn: 1,
        step: 2,
        message: { id: "a-2", role: "assistant", content: [{ type: "text", text: "Sunny, 21 °C." }], source: model },
        usage: { inputTokens: 4, outputTokens: 6 },
      },
      surfaceOp: "append",
      sourceEventSeqs: [],
    },
    { type: "turn/end", time: 108, data: { turn: 1, reason: { kind: "completed" } } },
  ];
  return events.map((e, seq) => ({ ...e, seq }) as SessionEvent);
}

describe("renderTranscript()", () => {
  it("renders user input, reasoning, tool calls, results, retries and the turn's summed usage", () => {
    const text = renderTranscript(toolSession("Sunny"), { title: "Weather" });
    assert.equal(
      text,
      [
        "# Weather",
        "## Turn 1",
        "**User**",
        "Weather in Paris?",
        "_Request header (initial): deepseek/deepseek-chat (max 8000 tokens); tools: weather_",
        "**Assistant**",
        "> _Reasoning:_ I should call the tool.\n>\n> Then answer.",
        "**Tool call** `weather` (`call_1`)",
        '```json\n{\n  "location": "Paris"\n}\n```',
        "**Tool result** `weather` (`call_1`)",
        "```\nSunny\n```",
        "_Attempt 1 failed (SERVER: Bad gateway); retrying after 500 ms_",
        "**Assistant**",
        "Sunny, 21 °C.",
        "_Turn 1 ended: completed · usage: 14 input (+20 cache read), 11 output (3 reasoning)_",
      ].join("\n\n") + "\n",
    );
  });

  it("contains no times or message ids, so clock and id changes do not change it", () => {
    const a = toolSession("Sunny");
    const b = a.map((e) => ({ ...e, time: e.time * 7 + 3 }) as SessionEvent);
    assert.equal(renderTranscript(a), renderTranscript(b));
    assert.doesNotMatch(renderTranscript(a), /u-1|a-1|r-1/);
  });

  it("changes when a tool's output changes", () => {
    assert.notEqual(renderTranscript(toolSession("Sunny")), renderTranscript(toolSession("Rain")));
  });

  it("can leave out reasoning and request headers, and can show the system prompt", () => {
    const plain = renderTranscript(toolSession("Sunny"), { reasoning: false, requests: false });
    assert.doesNotMatch(plain, /Reasoning|Request header/);
    const withSystem = renderTranscript(toolSession("Sunny"), { system: true });
    assert.match(withSystem, /tools: weather_\n\n```\nBe brief\.\n```/);
  });

  it("fences tool output that itself contains a code fence with a longer fence", () => {
    const text = renderTranscript(toolSession("```js\nx\n```"));
    assert.match(text, /````\n```js\nx\n```\n````/);
  });

  it("fences output of a hundred thousand and more backtick runs (a longest run, not a RangeError)", () => {
    const text = renderTranscript(toolSession("`a".repeat(300_000) + "``````"));
    assert.match(text, /\n```````\n`a`a/);
  });

  it("renders request headers as stored before append checked them: system and tools of any shape", () => {
    const header = (extra: Record<string, unknown>): SessionEvent => ({
      type: "request/header",
      seq: 0,
      time: 0,
      data: { header: { config: { provider: "p", model: "m" }, ...extra }, reason: "initial" },
    } as unknown as SessionEvent);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ tools: null }, /; no tools_/],
      [{ tools: "abc" }, /tools: not a list \("abc"\)_/],
      [{ tools: { name: "t" } }, /tools: not a list \(\{"name":"t"\}\)_/],
      [{ tools: [1, null, { name: 2 }, { name: "ok" }] }, /tools: \(no name\), \(no name\), \(no name\), ok_/],
      [{ system: 42 }, /```json\n42\n```/],
      [{ system: null }, /```json\nnull\n```/],
    ];
    for (const [extra, pattern] of cases) {
      for (const options of [{}, { system: true, toolSchemas: true }, { system: "changes", toolSchemas: "changes" }]) {
        const text = renderTranscript([header(extra), header(extra)], options as never);
        if (Object.keys(options).length > 0 || !("system" in extra)) assert.match(text, pattern, JSON.stringify(extra));
      }
    }
    const schemas = renderTranscript([header({ tools: "abc" })], { toolSchemas: true });
    assert.match(schemas, /```json\n"abc"\n```/);
  });

  it("renders error turn ends, failed tool results and interrupted answers", () => {
    const events: SessionEvent[] = [
      {
        type: "tool/result",
        seq: 0,
        time: 0,
        data: {
          turn: 1,
          step: 1,
          message: {
            id: "r",
            role: "user",
            content: [{ type: "tool-result", toolCallId: "c9", content: [], isError: true }],
            source: { kind: "tool", callId: "c9" },
          },
          error: { name: "ToolAborted", code: "ABORTED_BEFORE_DISPATCH" },
        },
        surfaceOp: "append",
        sourceEventSeqs: [],
      },
      {
        type: "assistant/message",
        seq: 1,
        time: 0,
        data: {
          turn: 1,
          step: 1,
          message: { id: "a", role: "assistant", content: [{ type: "text", text: "Partial" }], source: model },
          interrupted: true,
        },
        surfaceOp: "append",
        sourceEventSeqs: [],
      },
      {
        type: "turn/end",
        seq: 2,
        time: 0,
        data: { turn: 1, reason: { kind: "error", error: { code: "AUTH", message: "Bad key" } } },
      },
    ];
    const text = renderTranscript(events);
    assert.match(
      text,
      /\*\*Tool result\*\* `tool` \(`c9`\) failed \(ABORTED_BEFORE_DISPATCH\)\n\n```\n\(no output\)\n```/,
    );
    assert.match(text, /\*\*Assistant\*\* \(interrupted\)\n\nPartial/);
    assert.match(text, /_Turn 1 ended: error \(AUTH: Bad key\)_\n$/);
  });
});
