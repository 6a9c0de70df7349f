/**
 * The LLM layer: messages and content blocks, the stream protocol and its
 * grammar, the block assembler, failures and the retry policy, the adapter
 * contract, and the model-call runtime (`ctx.llm`).
 *
 * @module
 */

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
} from "./messages.ts";
export type { BlockType, FinishReason, FinishReasonMap, StreamChunk, TokenUsage } from "./stream_chunk.ts";
export { LlmFailure, type LlmFailureCode, type LlmFailureData, type LlmFailureOptions } from "./llm_failure.ts";
export {
  callConfigOf,
  type GenerateOptions,
  type LlmAdapter,
  type LlmCallConfig,
  type LlmCallPurpose,
  type ModelInfo,
  type ReasoningEffort,
} from "./llm_adapter.ts";
export { BlockAssembler } from "./block_assembler.ts";
export { checkStreamGrammar, type GrammarRule, type GrammarViolation, StreamGrammarChecker } from "./stream_grammar.ts";
export {
  DEFAULT_RETRY_POLICY,
  isRetryableFailure,
  RETRYABLE_FAILURE_CODES,
  retryDelayMs,
  type RetryPolicy,
} from "./retry_policy.ts";
export type { LlmEvents, LlmServices } from "./llm_events.ts";
export {
  LlmRuntime,
  type LlmRuntimeOptions,
  llmRuntimePlugin,
  type LlmStreamDispatcher,
  type LlmStreamOptions,
  type PreparedCall,
  type ProviderModelInfo,
} from "./llm_runtime.ts";
