// Test support (not published): the parent-and-two-children scenario of the
// subagent tests, shared by the test file and the child process that resumes
// the tree in a new process.

import { createHarness, type Harness, type LlmAdapter, type SessionStorage } from "../../mod.ts";
import { defineTool } from "../tools/mod.ts";
import { inProcessSubagents } from "./mod.ts";
import type { SubagentMode } from "./subagent_definition.ts";

export const lookup = defineTool({
  name: "lookup",
  description: "Look a word up",
  parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
  output: { schema: { type: "string" }, render: (_a, v) => String(v) },
  execute: (args) => `definition of ${(args as { word: string }).word}`,
});

export const secret = defineTool({
  name: "secret",
  description: "Read the secret",
  parameters: { type: "object", properties: {} },
  output: { schema: { type: "string" }, render: (_a, v) => String(v) },
  execute: () => "42",
});

export async function scenarioHarness(
  model: LlmAdapter,
  options: { storage?: SessionStorage; mode?: SubagentMode; idPrefix?: string; maxDepth?: number } = {},
): Promise<Harness> {
  let t = 1000;
  let n = 0;
  return await createHarness({
    adapters: [model],
    model: { provider: "scripted", model: "scripted-model" },
    system: "You are the lead.",
    tools: [lookup, secret],
    storage: options.storage,
    now: () => t++,
    newId: () => `${options.idPrefix ?? "id"}-${++n}`,
    plugins: [
      inProcessSubagents({
        ...(options.maxDepth !== undefined ? { maxDepth: options.maxDepth } : {}),
        agents: [{
          name: "worker",
          description: "Works on one task",
          system: "You are a worker. Answer in one line.",
          tools: { deny: ["secret"] },
          mode: options.mode,
        }],
      }),
    ],
  });
}
