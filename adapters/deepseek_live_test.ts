// A live call to DeepSeek. It runs only when DEEPSEEK_API_KEY is set; otherwise
// it is reported as skipped (the only skipped test the house allows).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import { BlockAssembler, checkStreamGrammar, LlmRuntime, type StreamChunk } from "../sdk/llm/mod.ts";
import { deepseekAdapter } from "./mod.ts";

const apiKey = process.env.DEEPSEEK_API_KEY;
const skip = apiKey ? false : "DEEPSEEK_API_KEY is not set: live DeepSeek test skipped";

describe("deepseekAdapter() against the live API", () => {
  it("streams a short answer that assembles and obeys the grammar", { skip }, async () => {
    const llm = new LlmRuntime();
    llm.registerAdapter(deepseekAdapter({ apiKey, baseURL: process.env.DEEPSEEK_BASE_URL }));
    const chunks: StreamChunk[] = [];
    const options = {
      provider: "deepseek",
      model: "deepseek-chat",
      maxTokens: 16,
      messages: [{
        id: "u1",
        role: "user" as const,
        content: [{ type: "text" as const, text: "Reply with the single word: pong" }],
        source: { kind: "user" as const },
      }],
      signal: AbortSignal.timeout(60_000),
    };
    for await (const chunk of llm.stream(options)) chunks.push(chunk);
    assert.deepEqual(checkStreamGrammar(chunks), []);
    const assembler = new BlockAssembler();
    for (const chunk of chunks) assembler.push(chunk);
    assert.ok(["stop", "max-tokens"].includes(assembler.finish.kind), JSON.stringify(assembler.finish));
    assert.match(JSON.stringify(assembler.blocks()), /pong/i);
    assert.ok((assembler.usage?.outputTokens ?? 0) > 0);
  });
});
