/**
 * The LLM layer: messages and content blocks, the stream protocol, failures,
 * and the adapter contract.
 *
 * @module
 */

export type {
  AssistantMessage,
  ContentBlock,
  ImageBlock,
  Message,
  MessageSource,
  ReasoningBlock,
  TextBlock,
  ToolCallBlock,
  ToolResultBlock,
  ToolSchema,
  UserMessage,
} from "./messages.ts";
export type { BlockType, FinishReason, StreamChunk, TokenUsage } from "./stream_chunk.ts";
export { LlmFailure, type LlmFailureCode, type LlmFailureData, type LlmFailureOptions } from "./llm_failure.ts";
export type {
  GenerateOptions,
  LlmAdapter,
  LlmCallConfig,
  LlmCallPurpose,
  ModelInfo,
  ReasoningEffort,
} from "./llm_adapter.ts";
