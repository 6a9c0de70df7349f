// The first agent of the README, as a consumer project runs it from the packed
// tarball (read by scripts/pack_check.mjs; valid as JavaScript and TypeScript).
import { createHarness, defineTool } from "@dsh/harness";
import { scriptedAdapter, textResponse, toolCallResponse } from "@dsh/harness/testing";
import { createHarnessApp } from "@dsh/harness/http";
import { Hono } from "hono";
import { z } from "zod";

const add = defineTool({
  name: "add",
  description: "Add two numbers",
  parameters: z.object({ a: z.number(), b: z.number() }),
  output: { schema: z.number(), render: (args, sum) => `${args.a} + ${args.b} = ${sum}` },
  execute: ({ a, b }) => a + b,
});

const harness = await createHarness({
  adapters: [
    scriptedAdapter([
      toolCallResponse([{ id: "call_1", name: "add", arguments: '{"a":2,"b":3}' }]),
      textResponse("2 + 3 is 5."),
    ]),
  ],
  model: { provider: "scripted", model: "scripted-model" },
  tools: [add],
});
const agent = await harness.createAgent();
const result = await agent.run("What is 2 + 3?");
console.log(`first agent: ${result.text}`);

// The HTTP app mounted under a sub-path of the user's own Hono app (one hono copy: a peer dependency).
const api = new Hono().route("/api", createHarnessApp(harness, { auth: false, log: false }));
const created = await api.request("/api/sessions", {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: "{}",
});
console.log(`http: ${created.status} ${created.headers.get("content-type")}`);
await harness.dispose();
