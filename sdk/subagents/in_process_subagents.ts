/**
 * `inProcessSubagents()`: the plugin that provides `ctx.subagents` with
 * in-process and fork children, and registers the `task` tool.
 *
 * @module
 */

import type { HarnessContext, HarnessPlugin } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { ToolRuntime } from "../tools/tool_runtime.ts";
import type { AgentEvents } from "../agent/agent_events.ts";
import type { SubagentDefinition } from "./subagent_definition.ts";
import { SubagentService, type SubagentServiceOptions } from "./subagent_service.ts";
import { taskTool } from "./task_tool.ts";

/** Options of {@linkcode inProcessSubagents}. */
export interface InProcessSubagentsOptions extends SubagentServiceOptions {
  /** The definitions the model may delegate to. */
  readonly agents: readonly SubagentDefinition[];
  /**
   * Register the `task` tool globally (never with `maxDepth: 0`, where no
   * session may delegate).
   *
   * @default {true}
   */
  readonly tool?: boolean;
}

/** The services the subagents plugin provides. */
export interface SubagentServices {
  /** The subagent service. */
  subagents: SubagentService;
}

/**
 * The subagents plugin: provides `ctx.subagents` (a {@linkcode SubagentService})
 * with `agents` defined, and registers the `task` tool (named `toolName`).
 * Children run in this process, each over its own child session; with
 * storage they are persisted like any session and can be resumed.
 *
 * @param options Definitions, depth limit and tool switch.
 * @returns The plugin, for `createHarness({ plugins })`.
 *
 * @example
 * ```ts
 * import { createHarness } from "@dsh/harness";
 * import { inProcessSubagents } from "@dsh/harness/subagents";
 * import assert from "node:assert/strict";
 *
 * const harness = await createHarness({
 *   plugins: [inProcessSubagents({ agents: [{ name: "worker", description: "Does one thing", system: "Be brief." }] })],
 * });
 * assert.deepEqual(harness.ctx.service("tools").schemas().map((s) => s.name), ["task"]);
 * await harness.dispose();
 * ```
 */
export function inProcessSubagents(options: InProcessSubagentsOptions): HarnessPlugin<void> {
  const plugin = (ctx: HarnessContext) => {
    const service = new SubagentService(ctx, options);
    if (!Array.isArray(options?.agents)) {
      throw new HarnessError("INVALID_ARGS", "inProcessSubagents needs agents: an array of subagent definitions");
    }
    for (const definition of options.agents) service.define(definition);
    (ctx as unknown as HarnessContext<object, SubagentServices>).provide("subagents", service);
    // A child session resumed by other means (harness.resumeAgent) gets its definition back.
    (ctx as unknown as HarnessContext<AgentEvents>).on("agent/session-start", (agent, reason) => {
      if (reason === "resume") service.adopt(agent);
    });
    // With maxDepth 0 no session may delegate: a tool every call of which fails SUBAGENT_DEPTH is not offered.
    if (options.tool !== false && options.maxDepth !== 0) {
      const tools = (ctx as unknown as HarnessContext<object, { tools: ToolRuntime }>).service("tools");
      // The tool's description lists the subagents: registered again when a definition is added or removed, so
      // the next request tells the model (a header change).
      let remove = tools.register(taskTool(service, { name: options.toolName }), ctx as never);
      service.onChange(() => {
        remove();
        remove = tools.register(taskTool(service, { name: options.toolName }), ctx as never);
      });
    }
  };
  plugin.pluginName = "in-process-subagents";
  return plugin;
}
