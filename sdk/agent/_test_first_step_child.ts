// Test child (agent_loop_test.ts): two calls of a concurrency-safe tool with a raw JSON Schema in the first step of a
// fresh process, where the schema validator has not loaded yet. Prints the most calls that ran at once.

import { createHarness } from "../harness.ts";
import { defineTool } from "../tools/define_tool.ts";
import { scriptedAdapter, textResponse, toolCallResponse } from "../../testing/scripted_adapter.ts";

let active = 0, most = 0;
const wait = defineTool({
  name: "wait",
  description: "Wait a moment",
  parameters: { type: "object", properties: { ms: { type: "number" } }, required: ["ms"] },
  output: { schema: { type: "string" }, render: (_a, v) => String(v) },
  isConcurrencySafe: () => true,
  execute: async (args) => {
    most = Math.max(most, ++active);
    await new Promise((resolve) => setTimeout(resolve, (args as { ms: number }).ms));
    active--;
    return "waited";
  },
});
const harness = await createHarness({
  adapters: [scriptedAdapter([
    toolCallResponse([
      { id: "a", name: "wait", arguments: '{"ms":100}' },
      { id: "b", name: "wait", arguments: '{"ms":100}' },
    ]),
    textResponse("done"),
  ])],
  model: { provider: "scripted", model: "scripted-model" },
  tools: [wait],
});
const agent = await harness.createAgent();
await agent.run("Wait twice");
await harness.dispose();
console.log(JSON.stringify({ most }));
