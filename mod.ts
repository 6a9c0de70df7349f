/**
 * `@dsh/harness`: an agent harness whose only source of truth is an
 * append-only, typed session log, built as plugins on the Cordis 4 kernel.
 *
 * @example Creating a kernel and a scope
 * ```ts
 * import { createKernel, createScope } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const ctx = createKernel();
 * const scope = createScope(ctx, "agent-1");
 * assert.equal(scope.ctx.scope?.key, "agent-1");
 * await scope.dispose();
 * ```
 *
 * @module
 */

// The names of each room's listing (`sdk/<room>/mod.ts`), repeated here with paths to the files that define them:
// from TypeScript source every module costs load time (≈ 0.25 ms on Deno and Bun), and importing the ten listings
// would load ten modules that hold nothing. `mod_test.ts` checks that each listing's values are exported here.

// kernel: the listing of sdk/kernel/mod.ts
export {
  admits,
  type ContextCore,
  createKernel,
  type EventArgs,
  type EventName,
  type EventResult,
  type HarnessContext,
  type HarnessPlugin,
  type KernelEvents,
  type ListenerOptions,
  type PluginFunction,
  type PluginHandle,
  type PluginObject,
  type ScopeInfo,
  wrapContext,
} from "./sdk/kernel/harness_context.ts";
export { createScope, type Scope, scopeOf } from "./sdk/kernel/scope.ts";
export { HarnessError, type HarnessErrorOptions } from "./sdk/kernel/harness_error.ts";

// llm: the listing of sdk/llm/mod.ts
export type {
  AssistantMessage,
  ContentBlock,
  ContentBlockMap,
  ImageBlock,
  Message,
  MessageSource,
  ReasoningBlock,
  SystemMessage,
  TextBlock,
  ToolCallBlock,
  ToolResultBlock,
  ToolSchema,
  UserMessage,
} from "./sdk/llm/messages.ts";
export type { BlockType, FinishReason, FinishReasonMap, StreamChunk, TokenUsage } from "./sdk/llm/stream_chunk.ts";
export { LlmFailure, type LlmFailureCode, type LlmFailureData, type LlmFailureOptions } from "./sdk/llm/llm_failure.ts";
export {
  callConfigOf,
  type GenerateOptions,
  type LlmAdapter,
  type LlmCallConfig,
  type LlmCallPurpose,
  type ModelInfo,
  type ReasoningEffort,
} from "./sdk/llm/llm_adapter.ts";
export { BlockAssembler } from "./sdk/llm/block_assembler.ts";
export {
  checkStreamGrammar,
  type GrammarRule,
  type GrammarViolation,
  StreamGrammarChecker,
} from "./sdk/llm/stream_grammar.ts";
export {
  DEFAULT_RETRY_POLICY,
  isRetryableFailure,
  RETRYABLE_FAILURE_CODES,
  retryDelayMs,
  type RetryPolicy,
} from "./sdk/llm/retry_policy.ts";
export type { LlmEvents, LlmServices } from "./sdk/llm/llm_events.ts";
export {
  LlmRuntime,
  llmRuntimePlugin,
  type LlmStreamDispatcher,
  type LlmStreamOptions,
  type PreparedCall,
  type ProviderModelInfo,
} from "./sdk/llm/llm_runtime.ts";

// session: the listing of sdk/session/mod.ts
export type {
  DerivedMessage,
  EpochHeader,
  HookEventName,
  HookOutcome,
  InboxEntry,
  InboxTarget,
  LlmCallConfigAdapterDefaults,
  RequestContext,
  SessionEvent,
  SessionEventMap,
  SessionEventType,
  SurfaceEventType,
  SurfaceIntent,
  SurfaceOp,
  TodoItem,
  ToolResultError,
  TurnEndCancelCause,
  TurnEndReason,
  TurnEndReasonMap,
} from "./sdk/session/session_events.ts";
export {
  type LogOnlyAppendOptions,
  Session,
  SESSION_FORMAT_VERSION,
  type SessionAppendArgs,
  type SessionHeader,
  type SessionHeaderInit,
  type SessionObserver,
  type SessionOptions,
  type SessionProfile,
} from "./sdk/session/session.ts";
export {
  isSurfaceEventType,
  type SessionSurface,
  SURFACE_EVENT_TYPES,
  type SurfaceFoldReplacement,
  SurfaceManager,
} from "./sdk/session/surface_manager.ts";
export { foldSurface, type SurfaceFoldResult } from "./sdk/session/fold_surface.ts";
export { deriveEventMessage } from "./sdk/session/derive_event_message.ts";
export { canonicalHeader, headerEquals } from "./sdk/session/header_equals.ts";
export { assertLosslessJson, copyLosslessJson, type CopyLosslessJsonOptions } from "./sdk/session/lossless_json.ts";
export { deepFreeze } from "./sdk/session/deep_freeze.ts";
export { renderTranscript, type TranscriptOptions } from "./sdk/session/transcript.ts";
export {
  forkBoundary,
  type SessionCreateOptions,
  type SessionDispatchContext,
  type SessionEvents,
  type SessionForkSource,
  type SessionServices,
  SessionStore,
  type SessionStoreOptions,
  sessionStorePlugin,
} from "./sdk/session/session_store.ts";

// invariants: the listing of sdk/invariants/mod.ts
export {
  assertInvariants,
  checkInvariants,
  type InvariantViolation,
  SESSION_INVARIANT_CODES,
} from "./sdk/invariants/check_invariants.ts";

// persistence: the listing of sdk/persistence/mod.ts
export type {
  LoadedSession,
  NewSessionHeader,
  RepairReport,
  SessionStat,
  SessionStorage,
  SessionWriter,
  StorageAccessOptions,
  StorageAppendOptions,
  StorageAppendResult,
  StorageCreateOptions,
  StorageFollowOptions,
} from "./sdk/persistence/session_storage.ts";
export { fileStorage, fileStorageKind } from "./sdk/persistence/file_storage.ts";
export type { FileStorageOptions } from "./sdk/persistence/file_storage.ts";
export { memoryStorage } from "./sdk/persistence/memory_storage.ts";
export type { MemoryStorageOptions } from "./sdk/persistence/memory_storage.ts";
export { repairSessionLog } from "./sdk/persistence/repair_session_log.ts";
export { type PersistenceOptions, persistencePlugin } from "./sdk/persistence/persistence_plugin.ts";
export type { RepairSessionLogOptions, RepairSessionLogResult } from "./sdk/persistence/repair_session_log.ts";
export {
  expandChunkRow,
  isChunkRow,
  MIN_CHUNK_RUN,
  packChunkRows,
  unpackChunkRows,
} from "./sdk/persistence/chunk_rows.ts";
export type { ChunkRow, ChunkRowType, PackChunkRowsOptions, StoredRecord } from "./sdk/persistence/chunk_rows.ts";

// tools: the listing of sdk/tools/mod.ts
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
} from "./sdk/tools/tool_definition.ts";
export {
  defineTool,
  type DefineToolOptions,
  type InferToolArgs,
  type InferToolValue,
  type ToolSchemaInput,
  type ZodSchemaLike,
} from "./sdk/tools/define_tool.ts";
export { jsonSchema, type JsonSchemaType, type TypedJsonSchema } from "./sdk/tools/json_schema.ts";
export { ToolArgsError, ToolOutputError } from "./sdk/tools/tool_errors.ts";
export type { PostToolDecision, PreToolDecision, ToolDispatchExecution, ToolEvents } from "./sdk/tools/tool_events.ts";
export type {
  ToolExecutionInput,
  ToolExecutionResult,
  ToolResultErrorInfo,
} from "./sdk/tools/tool_execution_result.ts";
export {
  type ToolExecutionMode,
  type ToolGuard,
  type ToolRestriction,
  ToolRuntime,
  type ToolRuntimeOptions,
} from "./sdk/tools/tool_runtime.ts";
export {
  toolRuntimePlugin,
  type ToolRuntimePluginOptions,
  type ToolServices,
} from "./sdk/tools/tool_runtime_plugin.ts";
export {
  type ApprovalOutcome,
  type ApprovalRequest,
  ApprovalService,
  approveAll,
  type Approver,
  programmaticApprover,
} from "./sdk/tools/approval_service.ts";
export { ApprovalQueue, type ApprovalQueueOptions, type PendingApproval } from "./sdk/tools/approval_queue.ts";
export {
  type ScheduledResult,
  scheduleToolCalls,
  type ScheduleToolCallsOptions,
} from "./sdk/tools/schedule_tool_calls.ts";
export {
  type TodoWriteArgs,
  todoWritePlugin,
  todoWriteTool,
  type TodoWriteToolOptions,
} from "./sdk/tools/todo_write_tool.ts";

// prompt: the listing of sdk/prompt/mod.ts
export type {
  AssembleContext,
  AssembledPrompt,
  PromptAssembly,
  PromptContext,
  PromptPart,
  PromptSection,
  PromptText,
  PromptToolProvider,
  PromptVariable,
} from "./sdk/prompt/prompt_contributions.ts";
export { SystemPrompt } from "./sdk/prompt/system_prompt.ts";
export type { SystemPromptEvents } from "./sdk/prompt/system_prompt_events.ts";
export { systemPromptPlugin, type SystemPromptServices } from "./sdk/prompt/system_prompt_plugin.ts";
export { PROMPT_VARIABLE_NAME, renderPrompt } from "./sdk/prompt/render_prompt.ts";
export type { RegistrationOwner, ServiceHost } from "./sdk/prompt/registration_owner.ts";

// agent: the listing of sdk/agent/mod.ts
export type {
  Agent,
  AgentHandle,
  AgentInput,
  AgentOptions,
  AgentStatus,
  AgentUpdate,
  CancelOptions,
  RunResult,
  SubscribeOptions,
} from "./sdk/agent/agent.ts";
export type {
  AgentEvents,
  AgentRequestDraft,
  PreStepDecision,
  PreStepProposal,
  RequestErrorAction,
  RequestErrorInfo,
} from "./sdk/agent/agent_events.ts";
export { type FailedRunResult, TurnFailedError } from "./sdk/agent/turn_failed_error.ts";
export { Inbox, type InboxSplice } from "./sdk/agent/inbox.ts";
export {
  type AgentFactory,
  AgentRegistry,
  type CreateAgentOptions,
  type ResumeAgentOptions,
} from "./sdk/agent/agent_registry.ts";
export { type AgentLoopOptions, agentLoopPlugin, createLoopFactory } from "./sdk/agent/agent_loop_plugin.ts";
export { LoopAgent, type LoopAgentInit, type LoopContext, type LoopServices } from "./sdk/agent/agent_loop.ts";

// compaction: the listing of sdk/compaction/mod.ts
export {
  type CompactionOutcome,
  compactionRange,
  compactSession,
  type CompactSessionOptions,
  DEFAULT_COMPACTION_INSTRUCTIONS,
} from "./sdk/compaction/compact_session.ts";
export {
  type CompactionOptions,
  compactionPlugin,
  type CompactionService,
  type CompactionServices,
  estimateTokens,
} from "./sdk/compaction/compaction_plugin.ts";

// projections: the listing of sdk/projections/mod.ts
export {
  type AnyProjectionUnit,
  defineProjection,
  foldProjection,
  type ProjectionState,
  type ProjectionUnit,
} from "./sdk/projections/projection_unit.ts";
export {
  type ProjectionSource,
  SessionProjections,
  type SessionProjectionsOptions,
  sessionProjectionsPlugin,
  SHIPPED_PROJECTIONS,
  type SnapshotOptions,
} from "./sdk/projections/session_projections.ts";
export { turnBoundary, type TurnBoundaryState } from "./sdk/projections/turn_boundary.ts";
export { renderTodoList, todos } from "./sdk/projections/todos.ts";
export { usageTotals, type UsageTotalsState } from "./sdk/projections/usage_totals.ts";
export { type ChildSessionEntry, childSessions } from "./sdk/projections/child_sessions.ts";

// createHarness() and the plugin context
export * from "./sdk/harness.ts";
export { type PluginCtx, pluginCtx } from "./sdk/plugin_ctx.ts";
