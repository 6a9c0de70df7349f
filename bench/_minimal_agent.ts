/**
 * The minimal one-agent program whose bundle bench/bundle_size.ts measures
 * (the peers' one-turn programs do the same): one agent with a zod `add` tool
 * and an in-line model that calls it once, then answers. Prints `ok`.
 *
 * @module
 */

import { createHarness, defineTool, type StreamChunk } from "../mod.ts";
import { z } from "zod";

const add = defineTool({
  name: "add",
  description: "Add two numbers",
  parameters: z.object({ a: z.number(), b: z.number() }),
  output: { schema: z.number(), render: (_args, sum) => String(sum) },
  execute: ({ a, b }) => a + b,
});

let calls = 0;
async function* reply(): AsyncGenerator<StreamChunk> {
  await Promise.resolve();
  if (calls++ === 0) {
    const args = '{"a":2,"b":3}';
    yield { type: "block-start", index: 0, blockType: "tool-call" };
    yield { type: "tool-call-delta", index: 0, id: "call_1", name: "add", argumentsDelta: args };
    yield { type: "block-end", index: 0, block: { type: "tool-call", id: "call_1", name: "add", arguments: args } };
    yield { type: "finish", reason: { kind: "tool-calls" } };
  } else {
    yield { type: "block-start", index: 0, blockType: "text" };
    yield { type: "text-delta", index: 0, text: "5" };
    yield { type: "block-end", index: 0, block: { type: "text", text: "5" } };
    yield { type: "finish", reason: { kind: "stop" } };
  }
}

const harness = await createHarness({
  adapters: [{ provider: "inline", models: [{ id: "m" }], stream: reply }],
  model: { provider: "inline", model: "m" },
  tools: [add],
});
const agent = await harness.createAgent();
const result = await agent.run("What is 2 + 3?");
await harness.dispose();
if (result.text !== "5" || calls !== 2) throw new Error(`unexpected turn: ${JSON.stringify(result)}`);
console.log("ok");
