/**
 * Subagents (`@dsh/harness/subagents`): `ctx.subagents` runs a delegation as
 * a child agent over a child session — fresh (`in-process`) or from the
 * parent's completed prefix (`fork`) — in its own scope, with its own system
 * prompt and a restricted tool set; the `task` tool is its model-facing
 * consumer.
 *
 * @module
 */

export type { SubagentDefinition, SubagentMode, SubagentRequest, SubagentResult } from "./subagent_definition.ts";
export { SubagentService, type SubagentServiceOptions } from "./subagent_service.ts";
export { type TaskArgs, taskTool, type TaskToolOptions } from "./task_tool.ts";
export { inProcessSubagents, type InProcessSubagentsOptions, type SubagentServices } from "./in_process_subagents.ts";
