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

/**
 * Why an auxiliary model call is made; absent on an ordinary turn's request.
 * `compaction` is the summary call of compaction, `session-title` a title
 * generated for a session.
 */
export type LlmCallPurpose = "compaction" | "session-title";

/**
 * Everything one model call needs, flat (seed 000 §4.4.4): the route and
 * sampling settings, the history, the system prompt and tools, the abort
 * signal, the session identity and the purpose of an auxiliary call. Requests
 * built by the loop arrive frozen, with the log's own deep-frozen messages.
 *
 * The recorded `request/header` keeps its own shape ({@linkcode LlmCallConfig}
 * plus system prompt and tools); {@linkcode callConfigOf} extracts the config.
 *
 * @example A request, as an adapter receives it
 * ```ts
 * import { callConfigOf, type GenerateOptions } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const options: GenerateOptions = {
 *   provider: "deepseek",
 *   model: "deepseek-chat",
 *   maxTokens: 1024,
 *   system: "Be brief.",
 *   messages: [{ id: "m1", role: "user", content: [{ type: "text", text: "Hi" }], source: { kind: "user" } }],
 *   signal: new AbortController().signal,
 * };
 * assert.deepEqual(callConfigOf(options), { provider: "deepseek", model: "deepseek-chat", maxTokens: 1024 });
 * ```
 */
export interface GenerateOptions {
  /** The provider route, which selects the registered adapter. */
  readonly provider: string;
  /** The model id, passed to the adapter. */
  readonly model: string;
  /** The reasoning effort; the model must accept it. */
  readonly reasoningEffort?: ReasoningEffort;
  /**
   * The history, as derived from the session log. Every message is the log's
   * own deep-frozen object. The array is a fresh copy made for this request
   * (each attempt of a retried call gets its own) and is not frozen (freezing
   * an array is O(length) on JavaScriptCore, and a copy per request keeps the
   * log out of reach): an adapter may treat it as its own, but should not
   * rely on changes to it being seen by anyone, a later attempt included.
   */
  readonly messages: readonly Message[];
  /** The rendered system prompt; absent when there is none. */
  readonly system?: string;
  /** The tools the model may call; absent when there are none. */
  readonly tools?: readonly ToolSchema[];
  /** The sampling temperature. */
  readonly temperature?: number;
  /** The most output tokens to generate. */
  readonly maxTokens?: number;
  /** Sequences that end generation. */
  readonly stop?: readonly string[];
  /** Aborts the call; a call without one cannot be aborted. */
  readonly signal?: AbortSignal;
  /** The session the call is made for, for adapters that route or record per session. */
  readonly sessionId?: string;
  /** What an auxiliary call is for; absent on an ordinary turn. */
  readonly purpose?: LlmCallPurpose;
}

/**
 * The call configuration of a request: its route and sampling fields, in the
 * shape the `request/header` records.
 *
 * @param options The request.
 * @returns A new config with the fields that are set (`stop` copied).
 *
 * @example
 * ```ts
 * import { callConfigOf } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const config = callConfigOf({ provider: "p", model: "m", temperature: 0, messages: [] });
 * assert.deepEqual(config, { provider: "p", model: "m", temperature: 0 });
 * ```
 */
export function callConfigOf(options: GenerateOptions | LlmCallConfig): LlmCallConfig {
  const config: { -readonly [K in keyof LlmCallConfig]: LlmCallConfig[K] } = {
    provider: options.provider,
    model: options.model,
  };
  if (options.reasoningEffort !== undefined) config.reasoningEffort = options.reasoningEffort;
  if (options.temperature !== undefined) config.temperature = options.temperature;
  if (options.maxTokens !== undefined) config.maxTokens = options.maxTokens;
  if (options.stop !== undefined) config.stop = [...options.stop];
  return config;
}

/**
 * A provider adapter: a plain object.
 *
 * Contract: one `stream()` call is one attempt (no retries inside); it honours
 * `options.signal`; once it has returned an iterable, failures are terminal
 * `finish` chunks. The runtime also converts a throw into such a chunk.
 *
 * @example An adapter that echoes the last user text
 * ```ts
 * import { BlockAssembler, type GenerateOptions, type LlmAdapter, LlmRuntime, type StreamChunk } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const echo: LlmAdapter = {
 *   provider: "echo",
 *   models: [{ id: "echo-1" }],
 *   async *stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
 *     if (options.signal?.aborted) {
 *       yield { type: "finish", reason: { kind: "aborted", failure: { code: "ABORTED", message: "Aborted" } } };
 *       return;
 *     }
 *     const last = options.messages.at(-1)?.content.find((b) => b.type === "text");
 *     const text = `${options.model}: ${last?.type === "text" ? last.text : ""}`;
 *     yield { type: "block-start", index: 0, blockType: "text" };
 *     yield { type: "text-delta", index: 0, text };
 *     yield { type: "block-end", index: 0, block: { type: "text", text } };
 *     yield { type: "finish", reason: { kind: "stop" } };
 *   },
 * };
 * const llm = new LlmRuntime();
 * llm.registerAdapter(echo);
 * const assembler = new BlockAssembler();
 * const messages = [{ id: "u1", role: "user" as const, content: [{ type: "text" as const, text: "hi" }], source: { kind: "user" as const } }];
 * for await (const chunk of llm.stream({ provider: "echo", model: "echo-1", messages })) assembler.push(chunk);
 * assert.deepEqual(assembler.blocks(), [{ type: "text", text: "echo-1: hi" }]);
 * ```
 */
export interface LlmAdapter {
  /** The provider name requests route by, e.g. `deepseek`. */
  readonly provider: string;
  /** The models this adapter serves. */
  readonly models: readonly ModelInfo[];
  /** Stream one model call. */
  stream(options: GenerateOptions): AsyncIterable<StreamChunk>;
}
