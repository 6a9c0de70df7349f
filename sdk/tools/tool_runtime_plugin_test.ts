import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createKernel, createScope, type HarnessContext, type KernelEvents } from "../kernel/mod.ts";
import type { SystemPromptEvents } from "../prompt/system_prompt_events.ts";
import { systemPromptPlugin, type SystemPromptServices } from "../prompt/system_prompt_plugin.ts";
import { approveAll } from "./approval_service.ts";
import type { ToolEvents } from "./tool_events.ts";
import { toolRuntimePlugin, type ToolServices } from "./tool_runtime_plugin.ts";
import { echoTool, settle, signal } from "./_test_util.ts";

type Events = ToolEvents & SystemPromptEvents & KernelEvents;
type Ctx = HarnessContext<Events, ToolServices & SystemPromptServices>;

describe("toolRuntimePlugin", () => {
  it("provides tools and approvals; an ask is denied until an approver is registered", async () => {
    const ctx: Ctx = createKernel<Events, ToolServices & SystemPromptServices>();
    await ctx.plugin(toolRuntimePlugin, { newId: () => "fixed" }).ready;
    const tools = ctx.service("tools");
    tools.register(echoTool());
    ctx.on("tools/pre-execute", () => ({ kind: "ask" }));
    const call = { callId: "c", name: "echo", arguments: '{"text":"x"}', signal };
    const denied = await tools.execute(call);
    assert.equal(denied.error?.code, "DENIED");
    assert.equal(denied.message.id, "fixed");
    ctx.service("approvals").register(approveAll());
    assert.equal((await tools.execute(call)).value, "x");
  });

  it("feeds schemas(scope) to the system prompt whichever plugin starts first, and stops with the plugin", async () => {
    for (const order of ["prompt-first", "tools-first"]) {
      const ctx: Ctx = createKernel<Events, ToolServices & SystemPromptServices>();
      const start = [systemPromptPlugin, toolRuntimePlugin] as const;
      const handles = order === "prompt-first"
        ? [ctx.plugin(start[0]), ctx.plugin(start[1])]
        : [ctx.plugin(start[1]), ctx.plugin(start[0])];
      await Promise.all(handles.map((h) => h.ready));
      await settle();
      const tools = ctx.service("tools");
      tools.register(echoTool("global_tool"));
      const agent = createScope(ctx, "agent");
      tools.register(echoTool("agent_tool"), agent.ctx);
      tools.restrict({ deny: ["global_tool"] }, agent.ctx);
      const prompt = ctx.service("systemPrompt");
      assert.deepEqual((await prompt.assemble()).tools?.map((t) => t.name), ["global_tool"], order);
      assert.deepEqual((await prompt.assemble({ scope: agent.info })).tools?.map((t) => t.name), ["agent_tool"], order);
      await handles[order === "prompt-first" ? 1 : 0].dispose();
      await settle();
      assert.deepEqual(await prompt.assemble(), {}, order);
    }
  });
});
