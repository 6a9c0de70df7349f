/**
 * The DeepSeek adapter: chat completions over HTTP with SSE streaming.
 *
 * @module
 */

import { type LlmAdapter, LlmFailure, type ModelInfo, type ReasoningEffort } from "../sdk/llm/mod.ts";
import { HarnessError } from "../sdk/kernel/mod.ts";
import {
  type ChatEndpoint,
  checkBaseURL,
  checkHeaders,
  checkTimeout,
  streamChatCompletion,
} from "./_chat_completions.ts";

/** Options of {@linkcode deepseekAdapter}. */
export interface DeepSeekAdapterOptions {
  /** The API key. Without one, every call ends with a `MISSING_CREDENTIAL` error. */
  readonly apiKey: string | undefined;
  /**
   * The API's base URL; `/chat/completions` is appended.
   *
   * @default {"https://api.deepseek.com"}
   */
  readonly baseURL?: string;
  /**
   * The fetch function, e.g. one that goes through a proxy.
   *
   * @default {globalThis.fetch}
   */
  readonly fetch?: typeof fetch;
  /**
   * The provider route the adapter serves.
   *
   * @default {"deepseek"}
   */
  readonly provider?: string;
  /**
   * The model catalogue.
   *
   * @default {DEEPSEEK_MODELS}
   */
  readonly models?: readonly ModelInfo[];
  /**
   * Extra request headers. Names match whatever their case: these replace the
   * adapter's own `Content-Type`, `Accept` and `User-Agent`, but an
   * `Authorization` here is sent only when there is no `apiKey` (the key's
   * `Bearer` header wins).
   */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * How long the provider may stay silent (waiting for headers or for the
   * next bytes) before the call ends with `TIMEOUT`.
   *
   * @default {300000}
   */
  readonly streamIdleTimeoutMs?: number;
}

/**
 * The reasoning efforts the DeepSeek request mapping sends (as
 * `thinking: {type: "enabled"}` with `reasoning_effort`); the default
 * catalogue offers exactly these on every model, and the mapping refuses any
 * other with `UNSUPPORTED_FEATURE`.
 */
export const DEEPSEEK_REASONING_EFFORTS: readonly ReasoningEffort[] = Object.freeze(["high", "max"] as const);

/** The default DeepSeek catalogue. */
export const DEEPSEEK_MODELS: readonly ModelInfo[] = Object.freeze([
  Object.freeze({ id: "deepseek-chat", contextWindow: 131_072, reasoningEfforts: DEEPSEEK_REASONING_EFFORTS }),
  Object.freeze({ id: "deepseek-reasoner", contextWindow: 131_072, reasoningEfforts: DEEPSEEK_REASONING_EFFORTS }),
]);

/**
 * An adapter for the DeepSeek API.
 *
 * The request carries the model, the history (assistant content always a
 * string, `reasoning_content` sent back on every turn that had reasoning, tool
 * calls — with `{}` for a call streamed without arguments —, and tool results
 * as `tool` messages; an assistant message with nothing of these is sent with
 * empty content, which keeps the roles alternating),
 * `stream_options.include_usage`, the tools, sampling, `max_tokens` and `stop`,
 * and — when a reasoning effort is set — `thinking: {type: "enabled"}` with
 * `reasoning_effort`. Usage is made disjoint: cache hits are subtracted from
 * the input count.
 *
 * Contract: one `stream()` is one attempt; failures are the final `finish`
 * chunk (`AUTH`, `QUOTA`, `RATE_LIMIT`, `INVALID_REQUEST`,
 * `CONTEXT_WINDOW_EXCEEDED`, `SERVER` (also an `event: error` whose data is
 * not JSON), `HTTP_<n>`, `TRANSPORT`, `TIMEOUT` (the idle watchdog, or HTTP
 * 408), `STREAM_CLOSED`, `MALFORMED_RESPONSE`, `EMPTY_RESPONSE`, or `aborted`
 * with `ABORTED`; a body that is one JSON error object, whatever its content
 * type, is classified by that object). Finish reasons: `stop` → `stop`, `tool_calls` → `tool-calls`,
 * `length` → `max-tokens`, `insufficient_system_resource` (the service cut the
 * answer short) → the retryable `SERVER`, any other → an error whose code is
 * the reason in upper case (`content_filter` → `CONTENT_FILTER`).
 *
 * @param options The key and connection options.
 * @returns The adapter.
 * @throws {HarnessError} `INVALID_ARGS` for a malformed option.
 *
 * @example Registering DeepSeek
 * ```ts
 * import { LlmRuntime } from "@dsh/harness";
 * import { deepseekAdapter } from "@dsh/harness/adapters";
 * import assert from "node:assert/strict";
 *
 * const llm = new LlmRuntime();
 * llm.registerAdapter(deepseekAdapter({ apiKey: "sk-test" }));
 * assert.equal(llm.resolveModelInfo("deepseek", "deepseek-chat").contextWindow, 131072);
 * ```
 */
export function deepseekAdapter(options: DeepSeekAdapterOptions): LlmAdapter {
  if (typeof options !== "object" || options === null) {
    throw new HarnessError("INVALID_ARGS", "deepseekAdapter() needs an options object");
  }
  if (options.apiKey !== undefined && typeof options.apiKey !== "string") {
    throw new HarnessError("INVALID_ARGS", "Option apiKey must be a string");
  }
  const provider = options.provider ?? "deepseek";
  const endpoint: ChatEndpoint = {
    provider,
    baseURL: checkBaseURL(options.baseURL ?? "https://api.deepseek.com"),
    apiKey: options.apiKey,
    requireApiKey: true,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    headers: checkHeaders(options.headers),
    idleTimeoutMs: checkTimeout("streamIdleTimeoutMs", options.streamIdleTimeoutMs, 300_000),
    request: {
      provider,
      sendReasoningContent: true,
      images: false,
      reasoning: (body, effort) => {
        if (!(DEEPSEEK_REASONING_EFFORTS as readonly string[]).includes(effort)) {
          throw new LlmFailure(
            "UNSUPPORTED_FEATURE",
            `Provider "${provider}" does not accept reasoning effort "${effort}"`,
          );
        }
        body.thinking = { type: "enabled" };
        body.reasoning_effort = effort;
      },
    },
    response: { provider, reasoningTokens: "inside" },
  };
  return {
    provider,
    models: Object.freeze([...(options.models ?? DEEPSEEK_MODELS)]),
    stream: (request) => streamChatCompletion(endpoint, request),
  };
}
