/**
 * Tools: definitions with validated arguments and outputs, the scope-aware
 * registry, the guarded execution pipeline, approvals, and the scheduling of
 * one step's calls.
 *
 * @module
 */

export {
  type AnyToolDefinition,
  type JsonSchema,
  type ToolAccess,
  type ToolCallView,
  type ToolContentInput,
  type ToolDefinition,
  type ToolExecution,
  type ToolFailure,
  type ToolFailureInfo,
  type ToolOutcome,
  type ToolOutputDefinition,
  type ToolResultContent,
  type ToolResultProjection,
  type ToolResultView,
  type ToolRunContext,
  type ToolSuccess,
} from "./tool_definition.ts";
export {
  defineTool,
  type DefineToolOptions,
  type InferToolArgs,
  type InferToolValue,
  type ToolSchemaInput,
  type ZodSchemaLike,
} from "./define_tool.ts";
export { jsonSchema, type JsonSchemaType, type TypedJsonSchema } from "./json_schema.ts";
export { ToolArgsError, ToolOutputError } from "./tool_errors.ts";
export type { PostToolDecision, PreToolDecision, ToolDispatchExecution, ToolEvents } from "./tool_events.ts";
export type { ToolExecutionInput, ToolExecutionResult, ToolResultErrorInfo } from "./tool_execution_result.ts";
export {
  type ToolExecutionMode,
  type ToolGuard,
  type ToolRestriction,
  ToolRuntime,
  type ToolRuntimeOptions,
  type ToolSubjectGuard,
} from "./tool_runtime.ts";
export { toolRuntimePlugin, type ToolRuntimePluginOptions, type ToolServices } from "./tool_runtime_plugin.ts";
export {
  type ApprovalOutcome,
  type ApprovalRequest,
  ApprovalService,
  approveAll,
  type Approver,
  programmaticApprover,
} from "./approval_service.ts";
export { ApprovalQueue, type ApprovalQueueOptions, type PendingApproval } from "./approval_queue.ts";
export { type ScheduledResult, scheduleToolCalls, type ScheduleToolCallsOptions } from "./schedule_tool_calls.ts";
export { type TodoWriteArgs, todoWritePlugin, todoWriteTool, type TodoWriteToolOptions } from "./todo_write_tool.ts";
