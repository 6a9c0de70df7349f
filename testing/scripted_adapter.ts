/**
 * A scripted model for unit tests: it plays chunk sequences given in advance
 * and records every request it receives.
 *
 * @module
 */

import type { GenerateOptions, LlmAdapter, LlmFailure, ModelInfo, StreamChunk, TokenUsage } from "../sdk/llm/mod.ts";
import { HarnessError } from "../sdk/kernel/mod.ts";

/**
 * What the scripted model does for one call.
 *
 * - `{ chunks }` plays the chunks, then ends;
 * - `{ throw }` plays `chunks` (if any), then throws the error from the stream;
 * - `{ hang: true }` plays `chunks` (if any), then waits until the call is
 *   aborted and ends with an `aborted` finish.
 */
export type ScriptEntry =
  | { readonly chunks: readonly StreamChunk[] }
  | { readonly throw: LlmFailure | Error; readonly chunks?: readonly StreamChunk[] }
  | { readonly hang: true; readonly chunks?: readonly StreamChunk[] };

/**
 * A script: one entry for every call, one entry per call (in order), or a
 * function of the request and the call's index (from 0).
 */
export type Script =
  | ScriptEntry
  | readonly ScriptEntry[]
  | ((request: GenerateOptions, callIndex: number) => ScriptEntry | Promise<ScriptEntry>);

/** Options of {@linkcode scriptedAdapter}. */
export interface ScriptedAdapterOptions {
  /**
   * The provider route the adapter serves.
   *
   * @default {"scripted"}
   */
  readonly provider?: string;
  /**
   * The models it serves.
   *
   * @default {[{ id: "scripted-model" }]}
   */
  readonly models?: readonly ModelInfo[];
  /**
   * How many of the latest requests `requests` keeps. Each request holds the
   * whole history as it stood, so keeping every request of a long run costs
   * O(turns²) message slots (554 MB at 4000 turns of a tool call and an
   * answer each); a benchmark or soak test that reads none of them can pass
   * a small number or 0. Unbounded by default, because unit tests read
   * `requests` whole. `calls` and `lastRequest()` count every request
   * whatever this keeps.
   *
   * @default {Infinity}
   */
  readonly keepRequests?: number;
}

/** The adapter returned by {@linkcode scriptedAdapter}. */
export interface ScriptedAdapter extends LlmAdapter {
  /** Every request received, in call order (only the latest `keepRequests` of them when that is set). */
  readonly requests: GenerateOptions[];
  /** How many calls were made (all of them, however many `requests` keeps). */
  readonly calls: number;
  /** The last request received, if any (kept even with `keepRequests: 0`). */
  lastRequest(): GenerateOptions | undefined;
  /**
   * Check that an array script was played to the end.
   *
   * @throws {HarnessError} `SCRIPT_NOT_CONSUMED` when entries are left.
   */
  assertConsumed(): void;
}

/**
 * Create a scripted model.
 *
 * Past the end of an array script, a call fails with the code
 * `SCRIPT_EXHAUSTED` (thrown from the stream, so `ctx.llm` turns it into an
 * `error` finish).
 *
 * @param script What to answer.
 * @param options The provider, models and how many requests to keep.
 * @returns An adapter that records its requests.
 * @throws {HarnessError} `INVALID_ARGS` when the script is not an entry, an array of entries or a function (an
 *   entry is `{ chunks }`, `{ throw, chunks? }` or `{ hang: true, chunks? }`; a function's entries are checked when
 *   it gives them, failing that call), or `keepRequests` is not a non-negative integer or `Infinity`.
 *
 * @example One entry per call
 * ```ts
 * import { LlmRuntime } from "@dsh/harness";
 * import { scriptedAdapter, textResponse, toolCallResponse } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * const model = scriptedAdapter([
 *   toolCallResponse([{ id: "c1", name: "read", arguments: '{"path":"a.txt"}' }]),
 *   textResponse("Done"),
 * ]);
 * const llm = new LlmRuntime();
 * llm.registerAdapter(model);
 * const request = { provider: "scripted", model: "scripted-model", messages: [] };
 * const kinds: string[] = [];
 * for (let i = 0; i < 2; i++) {
 *   for await (const chunk of llm.stream(request)) {
 *     if (chunk.type === "finish") kinds.push(chunk.reason.kind);
 *   }
 * }
 * assert.deepEqual(kinds, ["tool-calls", "stop"]);
 * assert.equal(model.requests.length, 2);
 * model.assertConsumed();
 * ```
 *
 * @example Keeping only the latest requests of a long run
 * ```ts
 * import { LlmRuntime } from "@dsh/harness";
 * import { scriptedAdapter, textResponse } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * const model = scriptedAdapter(textResponse("ok"), { keepRequests: 2 });
 * const llm = new LlmRuntime();
 * llm.registerAdapter(model);
 * for (let i = 0; i < 5; i++) {
 *   const request = { provider: "scripted", model: "scripted-model", messages: [], sessionId: `s${i}` };
 *   for await (const _ of llm.stream(request));
 * }
 * assert.equal(model.calls, 5);
 * assert.deepEqual(model.requests.map((r) => r.sessionId), ["s3", "s4"]);
 * ```
 */
export function scriptedAdapter(script: Script, options: ScriptedAdapterOptions = {}): ScriptedAdapter {
  if (typeof script !== "function" && (typeof script !== "object" || script === null)) {
    throw new HarnessError("INVALID_ARGS", "A script must be an entry, an array of entries or a function");
  }
  if (Array.isArray(script)) script.forEach((entry, i) => checkEntry(entry, `Script entry ${i}`));
  else if (typeof script !== "function") checkEntry(script, "The script");
  const provider = options.provider ?? "scripted";
  const models = Object.freeze([...(options.models ?? [{ id: "scripted-model" }])]);
  const keep = options.keepRequests ?? Infinity;
  if (!(keep >= 0) || (keep !== Infinity && !Number.isSafeInteger(keep))) {
    throw new HarnessError("INVALID_ARGS", `keepRequests must be a non-negative integer or Infinity, got ${keep}`);
  }
  const requests: GenerateOptions[] = [];
  let calls = 0;
  let last: GenerateOptions | undefined;
  const entryFor = (request: GenerateOptions, callIndex: number): ScriptEntry | Promise<ScriptEntry> => {
    if (typeof script === "function") return script(request, callIndex);
    if (!Array.isArray(script)) return script as ScriptEntry;
    if (callIndex >= script.length) {
      throw new HarnessError(
        "SCRIPT_EXHAUSTED",
        `Scripted adapter received call ${callIndex + 1} but its script has ${script.length} entries`,
        { details: { callIndex, entries: script.length } },
      );
    }
    return script[callIndex];
  };
  return {
    provider,
    models,
    requests,
    get calls() {
      return calls;
    },
    lastRequest() {
      return last;
    },
    assertConsumed() {
      if (Array.isArray(script) && calls < script.length) {
        throw new HarnessError(
          "SCRIPT_NOT_CONSUMED",
          `Scripted adapter played ${calls} of ${script.length} entries`,
          { details: { calls, entries: script.length } },
        );
      }
    },
    stream(request: GenerateOptions): AsyncIterable<StreamChunk> {
      const callIndex = calls++;
      last = request;
      if (keep > 0) {
        requests.push(request);
        if (requests.length > keep) requests.splice(0, requests.length - keep);
      }
      return play(() => entryFor(request, callIndex), request.signal ?? new AbortController().signal);
    },
  };
}

/**
 * Refuse what is not a script entry (`{ chunks }`, `{ throw, chunks? }`, `{ hang: true, chunks? }`) where it is
 * given: played, it would end the call without a finish, which names the stream, not the script.
 */
function checkEntry(entry: unknown, where: string): asserts entry is ScriptEntry {
  const ok = typeof entry === "object" && entry !== null && !Array.isArray(entry) && (
    "throw" in entry
      ? typeof entry.throw === "object" && entry.throw !== null
      : "hang" in entry
      ? entry.hang === true
      : "chunks" in entry
  );
  const chunks = ok ? (entry as { chunks?: unknown }).chunks : undefined;
  if (!ok || (chunks !== undefined && !Array.isArray(chunks))) {
    const shown = typeof entry === "function" ? 'a function (call it: textResponse("…"))' : JSON.stringify(entry);
    throw new HarnessError(
      "INVALID_ARGS",
      `${where} is not a script entry ({ chunks }, { throw, chunks? } or { hang: true, chunks? }): ${shown}`,
    );
  }
}

async function* play(
  entryOf: () => ScriptEntry | Promise<ScriptEntry>,
  signal: AbortSignal,
): AsyncGenerator<StreamChunk, void, undefined> {
  const entry = await entryOf();
  checkEntry(entry, "The script function's entry");
  for (const chunk of entry.chunks ?? []) {
    if (signal.aborted) break;
    yield chunk;
  }
  if ("throw" in entry) throw entry.throw;
  if ("hang" in entry && entry.hang === true || signal.aborted) {
    if (!signal.aborted) {
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    }
    yield {
      type: "finish",
      reason: { kind: "aborted", failure: { code: "ABORTED", message: "Scripted model call was aborted" } },
    };
  }
}

const DEFAULT_USAGE: TokenUsage = Object.freeze({ inputTokens: 1, outputTokens: 1 });

/** Options of {@linkcode textResponse}. */
export interface TextResponseOptions {
  /**
   * The usage to report.
   *
   * @default {{ inputTokens: 1, outputTokens: 1 }}
   */
  readonly usage?: TokenUsage;
  /** Reasoning to stream before the text, as its own block. */
  readonly reasoning?: string;
}

/**
 * A script entry that answers with text: (a reasoning block,) a text block,
 * usage, and a `stop` finish.
 *
 * @param text The answer.
 * @param options Usage and reasoning.
 * @returns A valid chunk sequence.
 *
 * @example
 * ```ts
 * import { checkStreamGrammar } from "@dsh/harness";
 * import { textResponse } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * const { chunks } = textResponse("Hi", { usage: { inputTokens: 4, outputTokens: 1 } });
 * assert.deepEqual(checkStreamGrammar(chunks), []);
 * assert.deepEqual(chunks.at(-1), { type: "finish", reason: { kind: "stop" } });
 * ```
 */
export function textResponse(text: string, options: TextResponseOptions = {}): { readonly chunks: StreamChunk[] } {
  const chunks: StreamChunk[] = [];
  let index = 0;
  if (options.reasoning !== undefined) pushTextBlock(chunks, index++, "reasoning", options.reasoning);
  pushTextBlock(chunks, index, "text", text);
  chunks.push({ type: "usage", usage: options.usage ?? DEFAULT_USAGE });
  chunks.push({ type: "finish", reason: { kind: "stop" } });
  return { chunks };
}

/** A tool call for {@linkcode toolCallResponse}; `arguments` is the raw JSON string. */
export interface ScriptedToolCall {
  /** The call id. */
  readonly id: string;
  /** The tool's name. */
  readonly name: string;
  /** The raw JSON argument string. */
  readonly arguments: string;
}

/** Options of {@linkcode toolCallResponse}. */
export interface ToolCallResponseOptions extends TextResponseOptions {
  /** Text to stream before the calls. */
  readonly text?: string;
}

/**
 * A script entry that calls tools: (a reasoning block, a text block,) one
 * block per call, usage, and a `tool-calls` finish.
 *
 * @param calls The calls, in order.
 * @param options Text, reasoning and usage.
 * @returns A valid chunk sequence.
 *
 * @example
 * ```ts
 * import { BlockAssembler } from "@dsh/harness";
 * import { toolCallResponse } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * const assembler = new BlockAssembler();
 * const entry = toolCallResponse([{ id: "c1", name: "ls", arguments: "{}" }], { text: "Listing" });
 * for (const chunk of entry.chunks) assembler.push(chunk);
 * assert.deepEqual(assembler.toolCalls(), [{ type: "tool-call", id: "c1", name: "ls", arguments: "{}" }]);
 * assert.deepEqual(assembler.finish, { kind: "tool-calls" });
 * ```
 */
export function toolCallResponse(
  calls: readonly ScriptedToolCall[],
  options: ToolCallResponseOptions = {},
): { readonly chunks: StreamChunk[] } {
  const chunks: StreamChunk[] = [];
  let index = 0;
  if (options.reasoning !== undefined) pushTextBlock(chunks, index++, "reasoning", options.reasoning);
  if (options.text !== undefined) pushTextBlock(chunks, index++, "text", options.text);
  for (const call of calls) {
    const i = index++;
    chunks.push({ type: "block-start", index: i, blockType: "tool-call" });
    chunks.push({ type: "tool-call-delta", index: i, id: call.id, name: call.name, argumentsDelta: call.arguments });
    chunks.push({
      type: "block-end",
      index: i,
      block: { type: "tool-call", id: call.id, name: call.name, arguments: call.arguments },
    });
  }
  chunks.push({ type: "usage", usage: options.usage ?? DEFAULT_USAGE });
  chunks.push({ type: "finish", reason: { kind: "tool-calls" } });
  return { chunks };
}

function pushTextBlock(chunks: StreamChunk[], index: number, type: "text" | "reasoning", text: string): void {
  chunks.push({ type: "block-start", index, blockType: type });
  chunks.push(
    type === "text" ? { type: "text-delta", index, text } : { type: "reasoning-delta", index, text },
  );
  chunks.push({ type: "block-end", index, block: { type, text } });
}
