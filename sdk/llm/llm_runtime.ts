/**
 * The model-call runtime (`ctx.llm`): the adapter registry, exact-model
 * resolution, call preparation, and the one streaming entry point wrapped in
 * the `llm/stream` waterfall.
 *
 * Longer than the house limit on purpose: `PreparedCall` and `LlmRuntime` share the registration
 * and dispatch state (a prepared call streams through the runtime's private dispatch), so they
 * stay in one file; the stream guard, events and retry policy live apart.
 *
 * @module
 */

import type { HarnessContext } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { LlmCallConfigAdapterDefaults } from "../session/session_events.ts";
import { checkCallConfig } from "./_check_call_config.ts";
import { guardStream } from "./_guard_stream.ts";
import { withoutForeignReplayState } from "./_replay_state.ts";
import {
  callConfigOf,
  type GenerateOptions,
  type LlmAdapter,
  type LlmCallConfig,
  type ModelInfo,
} from "./llm_adapter.ts";
import type { LlmEvents, LlmServices } from "./llm_events.ts";
import { LlmFailure } from "./llm_failure.ts";
import type { Message } from "./messages.ts";
import { checkRetryPolicy, DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry_policy.ts";
import type { StreamChunk } from "./stream_chunk.ts";

/**
 * Options of {@linkcode LlmRuntime}: how its callers that retry a failed call
 * retry it. The runtime itself makes one attempt per `stream()`; `createHarness`
 * passes its own `retryPolicy` and `sleep` here, so that plugins (compaction)
 * retry as the agent loop does.
 */
export interface LlmRuntimeOptions {
  /** The retry policy of callers that retry. @default {DEFAULT_RETRY_POLICY} */
  readonly retryPolicy?: RetryPolicy;
  /** Their sleep between retries. @default {undefined: each caller's own timer that honours the signal} */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** A model of the catalogue, with the provider route that serves it. */
export interface ProviderModelInfo extends ModelInfo {
  /** The provider route. */
  readonly provider: string;
}

/** The context the `llm/stream` waterfall is dispatched from. */
export type LlmStreamDispatcher = Pick<HarnessContext<LlmEvents, LlmServices>, "waterfall">;

/** Options of {@linkcode LlmRuntime.stream} and {@linkcode PreparedCall.stream}. */
export interface LlmStreamOptions {
  /**
   * The context to dispatch the `llm/stream` waterfall from, so that an
   * agent's scoped listeners hear its calls and no other agent's.
   *
   * @default {the runtime's own context}
   */
  readonly context?: LlmStreamDispatcher;
}

interface Registration {
  readonly adapter: LlmAdapter;
}

/**
 * One call resolved against one adapter registration. The registration is
 * held from resolution to dispatch: if the adapter is released or replaced in
 * between, this call still goes to the adapter it was resolved against, so a
 * header is never recorded for one adapter and sent to another.
 */
export interface PreparedCall {
  /** The effective config: the caller's, with the adapter's defaults filled in. Frozen. */
  readonly config: LlmCallConfig;
  /** The fields of `config` the adapter filled in rather than the caller. */
  readonly adapterDefaults: LlmCallConfigAdapterDefaults;
  /** The exact model's metadata. */
  readonly modelInfo: ModelInfo;
  /** The route's context window in tokens, when the adapter publishes it. */
  readonly contextWindow: number | undefined;
  /** The adapter the call is bound to. */
  readonly adapter: LlmAdapter;
  /**
   * Stream the call through the `llm/stream` waterfall to the bound adapter.
   * The adapter receives the request with the effective `config` (defaults
   * filled in) in place of the request's own call fields.
   *
   * The stream never throws: an adapter or listener throw becomes a final
   * `finish` chunk (`aborted` with `ABORTED` when `options.signal` fired, else
   * `error` with the failure's code, `UNKNOWN` for anything but an
   * `LlmFailure`), and a stream that ends without `finish` gets one (`error`,
   * `STREAM_CLOSED`). It may be called again, e.g. to retry.
   *
   * @param options The request; it must name this call's provider and model.
   * @param streamOptions Where to dispatch the waterfall from.
   * @returns The chunks, ending with exactly one `finish`.
   * @throws {HarnessError} `INVALID_ARGS` when `options` names another provider or model.
   */
  stream(options: GenerateOptions, streamOptions?: LlmStreamOptions): AsyncIterable<StreamChunk>;
}

/**
 * The model-call runtime, provided as `ctx.llm` by {@linkcode llmRuntimePlugin}.
 *
 * @example Registering a scripted adapter and streaming a call
 * ```ts
 * import { BlockAssembler, LlmRuntime } from "@dsh/harness";
 * import { scriptedAdapter, textResponse } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * const llm = new LlmRuntime();
 * const release = llm.registerAdapter(scriptedAdapter(textResponse("Hello")));
 * const assembler = new BlockAssembler();
 * const options = { provider: "scripted", model: "scripted-model", messages: [] };
 * for await (const chunk of llm.stream(options)) assembler.push(chunk);
 * assert.deepEqual(assembler.blocks(), [{ type: "text", text: "Hello" }]);
 * release();
 * assert.deepEqual(llm.listProviders(), []);
 * ```
 */
export class LlmRuntime {
  readonly #routes = new Map<string, Registration>();
  #routesVersion = 0;
  readonly #cleanPrefix = new WeakMap<
    LlmAdapter,
    { routes: number; index: number; first: Message; message: Message }
  >();
  readonly #ctx: HarnessContext<LlmEvents, LlmServices> | undefined;
  /**
   * The retry policy of callers that retry a failed call (the harness's
   * `retryPolicy`, which the compaction plugin uses by default); `stream()`
   * itself does not retry.
   */
  readonly retryPolicy: RetryPolicy;
  /** The sleep between those retries (the harness's `sleep`), when one was given. */
  readonly sleep: ((ms: number, signal: AbortSignal) => Promise<void>) | undefined;

  /**
   * Create a runtime.
   *
   * @param ctx The context whose `llm/stream` listeners wrap every call and on
   *   which `llm/adapters-changed` is emitted; without one, calls go straight to
   *   the adapter.
   * @param options How callers that retry retry.
   * @throws {HarnessError} `INVALID_ARGS` naming the field of `options.retryPolicy` that is not a valid number.
   */
  constructor(ctx?: HarnessContext<LlmEvents, LlmServices>, options: LlmRuntimeOptions = {}) {
    if (options.retryPolicy !== undefined) checkRetryPolicy(options.retryPolicy);
    this.#ctx = ctx;
    this.retryPolicy = options.retryPolicy === undefined
      ? DEFAULT_RETRY_POLICY
      : Object.freeze({ ...options.retryPolicy });
    this.sleep = options.sleep;
  }

  /**
   * Register one adapter, or several at once: all are registered, or none.
   *
   * @param adapters The adapter or adapters; each serves the route named by its `provider`.
   * @returns A function that releases these routes (idempotent).
   * @throws {HarnessError} `INVALID_ARGS` when an adapter is malformed;
   *   `DUPLICATE_ADAPTER` when a provider route is already taken or named twice.
   */
  registerAdapter(adapters: LlmAdapter | readonly LlmAdapter[]): () => void {
    const list: readonly LlmAdapter[] = Array.isArray(adapters) ? adapters : [adapters as LlmAdapter];
    if (list.length === 0) throw new HarnessError("INVALID_ARGS", "Cannot register an empty list of adapters");
    const seen = new Set<string>();
    for (const adapter of list) {
      if (
        typeof adapter !== "object" || adapter === null || typeof adapter.provider !== "string" ||
        adapter.provider === "" || !Array.isArray(adapter.models) || typeof adapter.stream !== "function"
      ) {
        throw new HarnessError("INVALID_ARGS", "Adapter must have a provider name, a models array and a stream method");
      }
      if (this.#routes.has(adapter.provider) || seen.has(adapter.provider)) {
        throw new HarnessError("DUPLICATE_ADAPTER", `Provider "${adapter.provider}" already has an adapter`, {
          details: { provider: adapter.provider },
        });
      }
      seen.add(adapter.provider);
    }
    const registrations = list.map((adapter) => [adapter.provider, { adapter }] as const);
    for (const [provider, registration] of registrations) this.#routes.set(provider, registration);
    this.#routesVersion++;
    this.#changed();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const [provider, registration] of registrations) {
        if (this.#routes.get(provider) === registration) this.#routes.delete(provider);
        this.#routesVersion++;
      }
      this.#changed();
    };
  }

  /**
   * The registered provider routes.
   *
   * @returns The provider names, in registration order.
   */
  listProviders(): string[] {
    return [...this.#routes.keys()];
  }

  /**
   * The model catalogue: informative, not a list of what may be requested elsewhere.
   *
   * @param provider Only this provider's models; all providers' when absent.
   * @returns The models, with their provider; empty for an unknown provider.
   */
  listModels(provider?: string): ProviderModelInfo[] {
    const out: ProviderModelInfo[] = [];
    for (const [route, { adapter }] of this.#routes) {
      if (provider !== undefined && route !== provider) continue;
      for (const model of adapter.models) out.push({ ...model, provider: route });
    }
    return out;
  }

  /**
   * The metadata of one exact model route.
   *
   * @param provider The provider route.
   * @param model The model id.
   * @returns The model's metadata (context window, reasoning efforts, default max tokens).
   * @throws {LlmFailure} `NO_ADAPTER` when no adapter serves `provider`;
   *   `UNSUPPORTED_MODEL` when the adapter does not list `model`.
   */
  resolveModelInfo(provider: string, model: string): ModelInfo {
    return this.#resolve(provider, model).modelInfo;
  }

  /**
   * Resolve a call against the current registration and fill in the adapter's
   * defaults (reasoning effort, max tokens) for the fields the caller left out.
   *
   * @param config The caller's config.
   * @returns The prepared call, bound to the adapter registered now.
   * @throws {HarnessError} `INVALID_ARGS` when `provider` or `model` is not a non-empty string, or a sampling setting
   *   is out of bounds (`temperature` 0–2, `maxTokens` a positive integer, `stop` strings).
   * @throws {LlmFailure} `NO_ADAPTER`, `UNSUPPORTED_MODEL`, or `UNSUPPORTED_FEATURE`
   *   when the model does not accept the reasoning effort asked for.
   */
  prepareCall(config: LlmCallConfig): PreparedCall {
    checkCallConfig(config);
    const { adapter, modelInfo } = this.#resolve(config.provider, config.model);
    const effective: { -readonly [K in keyof LlmCallConfig]: LlmCallConfig[K] } = { ...config };
    const defaults: { reasoningEffort?: true; maxTokens?: true } = {};
    if (config.reasoningEffort !== undefined) {
      if (!modelInfo.reasoningEfforts?.includes(config.reasoningEffort)) {
        throw new LlmFailure(
          "UNSUPPORTED_FEATURE",
          `Model ${config.provider}/${config.model} does not accept reasoning effort "${config.reasoningEffort}"`,
        );
      }
    } else if (modelInfo.defaultReasoningEffort !== undefined) {
      effective.reasoningEffort = modelInfo.defaultReasoningEffort;
      defaults.reasoningEffort = true;
    }
    if (config.maxTokens === undefined && modelInfo.defaultMaxTokens !== undefined) {
      effective.maxTokens = modelInfo.defaultMaxTokens;
      defaults.maxTokens = true;
    }
    if (effective.stop !== undefined) effective.stop = Object.freeze([...effective.stop]);
    const prepared = Object.freeze(effective);
    return Object.freeze({
      config: prepared,
      adapterDefaults: Object.freeze(defaults),
      modelInfo,
      contextWindow: modelInfo.contextWindow,
      adapter,
      stream: (options: GenerateOptions, streamOptions: LlmStreamOptions = {}) => {
        checkOptions(options);
        if (options.provider !== prepared.provider || options.model !== prepared.model) {
          throw new HarnessError(
            "INVALID_ARGS",
            `Cannot stream a call prepared for ${prepared.provider}/${prepared.model} with ${options.provider}/${options.model}`,
          );
        }
        return this.#dispatch(options, streamOptions, () => ({ adapter, config: prepared }));
      },
    });
  }

  /**
   * Stream one model call: {@linkcode LlmRuntime.prepareCall} then
   * {@linkcode PreparedCall.stream}. Resolution failures (`NO_ADAPTER`, …)
   * arrive as the stream's `error` finish, like every other failure.
   *
   * @param options The request; `options.signal` aborts the call.
   * @param streamOptions Where to dispatch the waterfall from.
   * @returns The chunks, ending with exactly one `finish`; the stream never throws.
   * @throws {HarnessError} `INVALID_ARGS` at once when `options` (its signal included) is malformed.
   */
  stream(options: GenerateOptions, streamOptions: LlmStreamOptions = {}): AsyncIterable<StreamChunk> {
    checkOptions(options);
    // Lookup happens at the waterfall's terminal continuation, so a listener
    // may short-circuit the call (replay) or reroute a one-shot request first.
    return this.#dispatch(options, streamOptions, (current) => {
      const { adapter, config } = this.prepareCall(callConfigOf(current));
      return { adapter, config };
    });
  }

  /** Run the waterfall around the adapter (and effective config) chosen by `route`. */
  #dispatch(
    options: GenerateOptions,
    streamOptions: LlmStreamOptions,
    route: (options: GenerateOptions) => { adapter: LlmAdapter; config: LlmCallConfig },
  ): AsyncIterable<StreamChunk> {
    const signal = options.signal ?? neverAborted();
    const terminal = () =>
      guardStream(() => {
        const { adapter, config } = route(options);
        const effective = sameConfig(options, config) ? options : withConfig(options, config);
        return adapter.stream(this.#withReplayState(effective, adapter));
      }, signal);
    const dispatcher = streamOptions.context ?? this.#ctx;
    if (dispatcher === undefined) return terminal();
    // The waterfall runs now (the caller iterates at once). When its result is
    // the terminal's own guarded stream (no listener, or listeners that pass it
    // through), it already keeps the contract and needs no second guard: each
    // guard layer costs an async-generator hop and a race per chunk.
    let inner: AsyncIterable<StreamChunk> | undefined;
    let result: AsyncIterable<StreamChunk>;
    try {
      result = dispatcher.waterfall("llm/stream", options, () => (inner = terminal()));
    } catch (error) {
      return guardStream(() => {
        throw error;
      }, signal);
    }
    if (inner !== undefined && result === inner) return result;
    if (!isAsyncIterable(result)) {
      const given = result === null ? "null" : typeof result;
      return guardStream(() => {
        throw new HarnessError(
          "INVALID_ARGS",
          `An llm/stream listener returned ${given}, not an async iterable of chunks`,
        );
      }, signal);
    }
    return guardStream(() => result, signal);
  }

  #resolve(provider: string, model: string): { adapter: LlmAdapter; modelInfo: ModelInfo } {
    const registration = this.#routes.get(provider);
    if (registration === undefined) {
      throw new LlmFailure("NO_ADAPTER", `No adapter is registered for provider "${provider}"`);
    }
    const modelInfo = registration.adapter.models.find((m) => m.id === model);
    if (modelInfo === undefined) {
      throw new LlmFailure("UNSUPPORTED_MODEL", `Provider "${provider}" does not serve model "${model}"`);
    }
    return { adapter: registration.adapter, modelInfo };
  }

  /**
   * Replay state is adapter-private: it reaches the adapter only for messages
   * whose provider is currently served by that same adapter object.
   */
  #withReplayState(options: GenerateOptions, adapter: LlmAdapter): GenerateOptions {
    const serves = (provider: string) => this.#routes.get(provider)?.adapter === adapter;
    // Requests of one conversation share their message objects in order, so the
    // prefix found clean for this adapter last time (same routes) is not scanned
    // again: O(new messages) per call instead of O(history).
    const messages = options.messages;
    const clean = this.#cleanPrefix.get(adapter);
    let from = 0;
    if (
      clean !== undefined && clean.routes === this.#routesVersion && messages[0] === clean.first &&
      messages[clean.index] === clean.message
    ) {
      from = clean.index + 1;
    }
    const sent = withoutForeignReplayState(messages, serves, from);
    if (sent === messages) {
      if (messages.length > 0) {
        this.#cleanPrefix.set(adapter, {
          routes: this.#routesVersion,
          index: messages.length - 1,
          first: messages[0],
          message: messages[messages.length - 1],
        });
      }
      return options;
    }
    return { ...options, messages: sent };
  }

  #changed(): void {
    this.#ctx?.emit("llm/adapters-changed");
  }
}

/** The signal of a call made without one: it never fires (made on first use, not at import). */
let NEVER_ABORTED: AbortSignal | undefined;
const neverAborted = (): AbortSignal => (NEVER_ABORTED ??= new AbortController().signal);

/** The request with its call fields replaced by `config`'s. */
function withConfig(options: GenerateOptions, config: LlmCallConfig): GenerateOptions {
  const {
    provider: _provider,
    model: _model,
    reasoningEffort: _reasoningEffort,
    temperature: _temperature,
    maxTokens: _maxTokens,
    stop: _stop,
    ...rest
  } = options;
  return { ...rest, ...config };
}

function sameConfig(a: LlmCallConfig, b: LlmCallConfig): boolean {
  if (a === b) return true;
  const stopA = a.stop ?? [];
  const stopB = b.stop ?? [];
  return a.provider === b.provider && a.model === b.model && a.reasoningEffort === b.reasoningEffort &&
    a.temperature === b.temperature && a.maxTokens === b.maxTokens &&
    (a.stop === undefined) === (b.stop === undefined) &&
    stopA.length === stopB.length && stopA.every((s, i) => s === stopB[i]);
}

function checkOptions(options: GenerateOptions): void {
  if (typeof options !== "object" || options === null || !Array.isArray(options.messages)) {
    throw new HarnessError("INVALID_ARGS", "Generate options must carry a messages array");
  }
  checkCallConfig(options, "Generate options");
  const signal = options.signal;
  if (signal !== undefined && (typeof signal !== "object" || signal === null || typeof signal.aborted !== "boolean")) {
    throw new HarnessError("INVALID_ARGS", "Option signal must be an AbortSignal");
  }
}

/**
 * The plugin that provides {@linkcode LlmRuntime} as `ctx.llm`.
 *
 * @param ctx The plugin's context.
 * @param options How callers that retry retry (`createHarness` passes its `retryPolicy` and `sleep`).
 *
 * @example
 * ```ts
 * import { createKernel, type LlmEvents, llmRuntimePlugin, type LlmServices } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const ctx = createKernel<LlmEvents, LlmServices>();
 * await ctx.plugin(llmRuntimePlugin).ready;
 * assert.deepEqual(ctx.llm?.listProviders(), []);
 * ```
 */
export function llmRuntimePlugin<E extends object, S extends object>(
  ctx: HarnessContext<E, S>,
  options: LlmRuntimeOptions = {},
): void {
  const typed = ctx as unknown as HarnessContext<LlmEvents, LlmServices>;
  typed.provide("llm", new LlmRuntime(typed, options));
}

function isAsyncIterable(value: unknown): value is AsyncIterable<StreamChunk> {
  return (typeof value === "object" || typeof value === "function") && value !== null &&
    typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === "function";
}
