/**
 * The contract every provider adapter implements.
 *
 * @module
 */

import type { Message, ToolSchema } from "./messages.ts";
import type { StreamChunk } from "./stream_chunk.ts";

/** Reasoning effort levels a model may accept. */
export type ReasoningEffort = "minimal" | "low" | "medium" | "high" | "max";

/** What a model offers. */
export interface ModelInfo {
  /** The model id the provider expects. */
  readonly id: string;
  /** Request + response capacity in tokens, when the provider publishes it. */
  readonly contextWindow?: number;
  /** Reasoning efforts the model accepts; absent when it does not reason on request. */
  readonly reasoningEfforts?: readonly ReasoningEffort[];
  /** The effort used when the caller names none. */
  readonly defaultReasoningEffort?: ReasoningEffort;
  /** The `max_tokens` used when the caller names none. */
  readonly defaultMaxTokens?: number;
}

/** The call configuration recorded in the request header. */
export interface LlmCallConfig {
  /** The provider route, which selects the adapter. */
  readonly provider: string;
  /** The model id, passed to the adapter. */
  readonly model: string;
  /** The reasoning effort; the model must accept it. */
  readonly reasoningEffort?: ReasoningEffort;
  /** The sampling temperature. */
  readonly temperature?: number;
  /** The most output tokens to generate. */
  readonly maxTokens?: number;
  /** Sequences that end generation. */
  readonly stop?: readonly string[];
}

/** Why a model is being called. */
export type LlmCallPurpose = "turn" | "compaction" | (string & Record<never, never>);

/** Everything one model call needs. Requests built by the loop arrive deep-frozen. */
export interface GenerateOptions {
  /** The provider, model and sampling settings. */
  readonly config: LlmCallConfig;
  /** The rendered system prompt; absent when there is none. */
  readonly system?: string;
  /** The history, as derived from the session log. */
  readonly messages: readonly Message[];
  /** The tools the model may call; absent when there are none. */
  readonly tools?: readonly ToolSchema[];
  /** What the call is for. @default {"turn"} */
  readonly purpose?: LlmCallPurpose;
  /** The session the call is made for, for adapters that route or record per session. */
  readonly sessionId?: string;
}

/**
 * A provider adapter: a plain object.
 *
 * Contract: one `stream()` call is one attempt (no retries inside); it honours
 * `signal`; once it has returned an iterable, failures are terminal `finish`
 * chunks. The runtime also converts a throw into such a chunk.
 */
export interface LlmAdapter {
  /** The provider name requests route by, e.g. `deepseek`. */
  readonly provider: string;
  /** The models this adapter serves. */
  readonly models: readonly ModelInfo[];
  /** Stream one model call. */
  stream(options: GenerateOptions, signal: AbortSignal): AsyncIterable<StreamChunk>;
}
