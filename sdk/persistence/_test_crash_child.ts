// Child process of the crash test (not published): runs an agent against
// fileStorage whose second model call hangs, flushes, reports, and waits to
// be killed with SIGKILL.

import { z } from "zod";
import { createHarness } from "../harness.ts";
import { defineTool } from "../tools/mod.ts";
import { fileStorage } from "./file_storage.ts";
import { scriptedAdapter, textResponse, toolCallResponse } from "../../testing/scripted_adapter.ts";

const dir = process.argv[process.argv.length - 1];
const add = defineTool({
  name: "add",
  description: "Add two numbers",
  parameters: z.object({ a: z.number(), b: z.number() }),
  output: { schema: z.number(), render: (_a, v) => String(v) },
  execute: ({ a, b }) => a + b,
});
const model = scriptedAdapter([
  textResponse("First answer"),
  toolCallResponse([{ id: "call_1", name: "add", arguments: '{"a":1,"b":2}' }]),
  {
    hang: true,
    chunks: [
      { type: "block-start", index: 0, blockType: "text" },
      { type: "text-delta", index: 0, text: "The sum is" },
    ],
  },
]);
let t = 1000;
let n = 0;
const harness = await createHarness({
  adapters: [model],
  model: { provider: "scripted", model: "scripted-model" },
  tools: [add],
  storage: fileStorage(dir),
  now: () => t++,
  newId: () => `id-${++n}`,
});
const agent = await harness.createAgent({ id: "crash" });
await agent.run("Hello");
agent.followup("Add 1 and 2");
// Wait until the hanging call has streamed its text delta.
await new Promise<void>((resolve) => {
  const check = () => {
    const last = agent.session.events.at(-1);
    if (last?.type === "assistant/chunk" && last.data.chunk.type === "text-delta") resolve();
    else setTimeout(check, 2);
  };
  check();
});
await harness.sessions.flush(agent.session);
process.stdout.write(`FLUSHED ${agent.session.seq}\n`);
setInterval(() => {}, 1000);
