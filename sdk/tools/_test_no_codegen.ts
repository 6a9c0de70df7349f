// Run by json_schema_no_codegen_test.ts under
// `deno run --v8-flags=--disallow-code-generation-from-strings`: a raw JSON
// Schema tool validates good and bad arguments (and its output) where
// `new Function` and `eval` throw, as on Workers-style platforms. Prints one
// JSON line.

import { z } from "zod";
import { createKernel } from "../kernel/mod.ts";
import { jsonSchemaValidatorPending } from "./_json_schema.ts";
import { defineTool } from "./define_tool.ts";
import { ToolRuntime } from "./tool_runtime.ts";

let codegen = "allowed";
try {
  new Function("return 1")();
} catch (error) {
  codegen = `forbidden (${(error as Error).name})`;
}

// A zod tool first: it never needs the JSON Schema validator, which stays unloaded.
const zodTool = defineTool({
  name: "echo",
  description: "Echo",
  parameters: z.object({ text: z.string() }),
  output: { schema: z.string(), render: (_args, text) => text },
  execute: ({ text }) => text,
});
const zodResult = await zodTool.execute({ text: "hi" } as never, {} as never);
const pendingAfterZod = jsonSchemaValidatorPending() !== undefined;

const double = defineTool({
  name: "double",
  description: "Double a count",
  parameters: {
    type: "object",
    properties: { n: { type: "integer", minimum: 0 }, unit: { $ref: "#/$defs/unit" } },
    required: ["n"],
    additionalProperties: false,
    $defs: { unit: { enum: ["apples", "pears"] } },
  },
  output: { schema: { type: "integer", maximum: 100 }, render: (_args, value) => String(value) },
  execute: (args) => (args as { n: number }).n * 2,
  isConcurrencySafe: () => true,
});
// Defined, not yet loaded: a synchronous check cannot validate, says so, and does not cache the answer.
const pendingAfterRaw = jsonSchemaValidatorPending() !== undefined;
const args = { n: 1 };
const safeBeforeLoad = double.isConcurrencySafe!(args);
await jsonSchemaValidatorPending();
const safeAfterLoad = double.isConcurrencySafe!(args);
const tools = new ToolRuntime(createKernel());
tools.register(double);
const signal = new AbortController().signal;
const call = async (id: string, args: string) => {
  const result = await tools.execute({ callId: id, name: "double", arguments: args, signal });
  const block = result.message.content[0] as { content?: { text?: string }[] };
  const text = block.content?.[0]?.text;
  return { value: result.value, error: result.error, text };
};
console.log(JSON.stringify({
  codegen,
  zodResult,
  pendingAfterZod,
  pendingAfterRaw,
  safeBeforeLoad,
  safeAfterLoad,
  good: await call("c1", '{"n":4,"unit":"pears"}'),
  wrongType: await call("c2", '{"n":"four"}'),
  wrongRef: await call("c3", '{"n":1,"unit":"plums"}'),
  extra: await call("c4", '{"n":1,"x":true}'),
  badOutput: await call("c5", '{"n":60}'),
}));
