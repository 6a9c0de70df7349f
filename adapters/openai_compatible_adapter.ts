/**
 * An adapter for any OpenAI-style chat completions endpoint.
 *
 * @module
 */

import type { LlmAdapter, ModelInfo } from "../sdk/llm/mod.ts";
import { HarnessError } from "../sdk/kernel/mod.ts";
import {
  type ChatEndpoint,
  checkBaseURL,
  checkHeaders,
  checkTimeout,
  streamChatCompletion,
} from "./_chat_completions.ts";

/**
 * Where a provider counts reasoning tokens: `inside` `completion_tokens`,
 * `outside` it, or `auto` (decided per response from `total_tokens`).
 */
export type ReasoningTokenAccounting = "inside" | "outside" | "auto";

/** Options of {@linkcode openaiCompatibleAdapter}. */
export interface OpenAiCompatibleAdapterOptions {
  /** The endpoint's base URL (e.g. `https://api.x.ai/v1`); `/chat/completions` is appended. */
  readonly baseURL: string;
  /** The bearer token; absent for endpoints that take none. */
  readonly apiKey?: string;
  /** The provider route the adapter serves, e.g. `xai`. */
  readonly provider: string;
  /** The models it serves. */
  readonly models: readonly ModelInfo[];
  /**
   * The fetch function.
   *
   * @default {globalThis.fetch}
   */
  readonly fetch?: typeof fetch;
  /**
   * Extra request headers. Names match whatever their case: these replace the
   * adapter's own `Content-Type`, `Accept` and `User-Agent`, but an
   * `Authorization` here is sent only when there is no `apiKey` (the key's
   * `Bearer` header wins).
   */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * How long the provider may stay silent before the call ends with `TIMEOUT`.
   *
   * @default {300000}
   */
  readonly streamIdleTimeoutMs?: number;
  /**
   * Where the provider counts `completion_tokens_details.reasoning_tokens`:
   * `inside` `completion_tokens` (OpenAI), `outside` it (xAI), or `auto` —
   * outside when `total_tokens` equals prompt + completion + reasoning.
   *
   * @default {"auto"}
   */
  readonly reasoningTokens?: ReasoningTokenAccounting;
  /**
   * Send earlier reasoning back as `reasoning_content` on assistant turns.
   *
   * @default {false}
   */
  readonly sendReasoningContent?: boolean;
}

/**
 * An adapter for an OpenAI-compatible chat completions endpoint (xAI, vLLM,
 * OpenRouter, Ollama, …).
 *
 * It reads `reasoning_content` or `reasoning` deltas as reasoning, accepts
 * tool calls streamed in pieces or whole in one delta, takes usage from
 * whichever chunk carries it (often a last chunk with empty `choices`), and
 * normalises it to the disjoint {@linkcode TokenUsage}. A reasoning effort is
 * sent as `reasoning_effort`. Failures and finish reasons are mapped like
 * DeepSeek's, with the synonyms other servers send: `eos_token`,
 * `stop_sequence` and `end_turn` are `stop`, `model_length` is `max-tokens`.
 *
 * @param options The endpoint, route and catalogue.
 * @returns The adapter.
 * @throws {HarnessError} `INVALID_ARGS` for a malformed option.
 *
 * @example
 * ```ts
 * import { openaiCompatibleAdapter } from "@dsh/harness/adapters";
 * import assert from "node:assert/strict";
 *
 * const xai = openaiCompatibleAdapter({
 *   baseURL: "https://api.x.ai/v1",
 *   apiKey: "xai-test",
 *   provider: "xai",
 *   models: [{ id: "grok-3-mini", contextWindow: 131072, reasoningEfforts: ["low", "high"] }],
 * });
 * assert.equal(xai.provider, "xai");
 * assert.deepEqual(xai.models.map((m) => m.id), ["grok-3-mini"]);
 * ```
 */
export function openaiCompatibleAdapter(options: OpenAiCompatibleAdapterOptions): LlmAdapter {
  if (typeof options !== "object" || options === null) {
    throw new HarnessError("INVALID_ARGS", "openaiCompatibleAdapter() needs an options object");
  }
  if (typeof options.provider !== "string" || options.provider === "") {
    throw new HarnessError("INVALID_ARGS", "Option provider must be a non-empty string");
  }
  if (!Array.isArray(options.models)) throw new HarnessError("INVALID_ARGS", "Option models must be an array");
  if (options.apiKey !== undefined && typeof options.apiKey !== "string") {
    throw new HarnessError("INVALID_ARGS", "Option apiKey must be a string");
  }
  const reasoningTokens = options.reasoningTokens ?? "auto";
  if (!["inside", "outside", "auto"].includes(reasoningTokens)) {
    throw new HarnessError("INVALID_ARGS", 'Option reasoningTokens must be "inside", "outside" or "auto"');
  }
  const provider = options.provider;
  const endpoint: ChatEndpoint = {
    provider,
    baseURL: checkBaseURL(options.baseURL),
    apiKey: options.apiKey,
    requireApiKey: false,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    headers: checkHeaders(options.headers),
    idleTimeoutMs: checkTimeout("streamIdleTimeoutMs", options.streamIdleTimeoutMs, 300_000),
    request: {
      provider,
      sendReasoningContent: options.sendReasoningContent ?? false,
      images: true,
      reasoning: (body, effort) => {
        body.reasoning_effort = effort;
      },
    },
    response: { provider, reasoningTokens },
  };
  return {
    provider,
    models: Object.freeze([...options.models]),
    stream: (request) => streamChatCompletion(endpoint, request),
  };
}
