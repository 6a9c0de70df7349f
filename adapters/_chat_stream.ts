/**
 * Mapping the SSE payloads of an OpenAI-style chat completions stream to
 * {@linkcode StreamChunk}s.
 *
 * Blocks are numbered in first-seen order: one reasoning block, one text block
 * and one block per provider tool-call index. Deltas stream as they arrive;
 * block ends, usage and finish are held until `[DONE]`, so that a usage-only
 * chunk after `finish_reason` cannot break the order.
 *
 * @module
 */

import { type ContentBlock, type FinishReason, LlmFailure, type StreamChunk, type TokenUsage } from "../sdk/llm/mod.ts";
import { errorNames, isContextOverflow, namedCode, statusCode } from "./_http_failure.ts";
import type { ReasoningTokenAccounting } from "./openai_compatible_adapter.ts";

/** How a dialect differs on the response side. */
export interface ChatStreamDialect {
  readonly provider: string;
  /** Whether `completion_tokens_details.reasoning_tokens` is part of `completion_tokens`. */
  readonly reasoningTokens: ReasoningTokenAccounting;
}

interface OpenBlock {
  readonly index: number;
  readonly type: "text" | "reasoning" | "tool-call";
  text: string;
  id: string;
  /** A tool call's id as the server sent it (`id` differs when another call of the response had it already). */
  wire: string;
  /** Whether `wire` came from the server (else it is a synthesised `call_<index>`, the server having sent none yet). */
  fromWire: boolean;
  name: string;
}

/** The fold of one stream's payloads; create one per call. */
export class ChatStreamMapper {
  readonly #dialect: ChatStreamDialect;
  readonly #blocks: OpenBlock[] = [];
  #reasoning: OpenBlock | undefined;
  #text: OpenBlock | undefined;
  readonly #tools = new Map<number, OpenBlock>();
  /** The tool-call block opened last: where a delta with neither index nor id goes. */
  #lastTool: OpenBlock | undefined;
  #finishReason: string | undefined;
  #usage: TokenUsage | undefined;

  constructor(dialect: ChatStreamDialect) {
    this.#dialect = dialect;
  }

  /**
   * Map one parsed payload.
   *
   * @throws {LlmFailure} `MALFORMED_RESPONSE` for a payload of the wrong shape,
   *   or the mapped code of an in-band `error` object.
   */
  push(payload: unknown): StreamChunk[] {
    if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
      throw new LlmFailure(
        "MALFORMED_RESPONSE",
        `Provider "${this.#dialect.provider}" sent a non-object stream payload`,
      );
    }
    const data = payload as Record<string, unknown>;
    if (data.error !== undefined && data.error !== null) throw this.#inBandError(data.error);
    const out: StreamChunk[] = [];
    if (isRecord(data.usage)) this.#usage = this.#mapUsage(data.usage);
    if (data.choices === undefined || data.choices === null) return out;
    if (!Array.isArray(data.choices)) {
      throw new LlmFailure(
        "MALFORMED_RESPONSE",
        `Provider "${this.#dialect.provider}" sent "choices" that is not an array`,
      );
    }
    for (const choice of data.choices) {
      if (!isRecord(choice) || (choice.index !== undefined && choice.index !== 0)) continue;
      const delta = choice.delta;
      if (isRecord(delta)) this.#delta(delta, out);
      if (typeof choice.finish_reason === "string" && choice.finish_reason !== "") {
        this.#finishReason = choice.finish_reason;
      }
    }
    return out;
  }

  /** The closing chunks, once `[DONE]` arrived: block ends, usage, finish. */
  done(): StreamChunk[] {
    const out: StreamChunk[] = [];
    for (const block of this.#blocks) out.push({ type: "block-end", index: block.index, block: blockOf(block) });
    if (this.#usage !== undefined) out.push({ type: "usage", usage: this.#usage });
    out.push({ type: "finish", reason: this.#finish() });
    return out;
  }

  /**
   * The finish reason of the response, from the provider's `finish_reason`:
   *
   * - `stop` (and no `finish_reason` at all), and the synonyms other servers
   *   send: `eos_token` (TGI), `stop_sequence` (TGI, Anthropic-style), `end_turn`
   *   (Anthropic-style) → `stop`; an `EMPTY_RESPONSE` error when no block came;
   * - `tool_calls`, `function_call` (the legacy form), `tool_use` (Anthropic-style) → `tool-calls`;
   * - `length`, `model_length` (Mistral: the model's context ran out), `max_tokens` (Anthropic-style) →
   *   `max-tokens`;
   * - the reason is compared in lower case (`STOP` is `stop`);
   * - `insufficient_system_resource` (DeepSeek: the request was cut short because
   *   the service is overloaded) → an error with the retryable `SERVER` code;
   * - anything else (`content_filter`, …) → an error whose code is the reason in
   *   upper case (`CONTENT_FILTER`), which the retry policy treats as final.
   */
  #finish(): FinishReason {
    const reason = this.#finishReason ?? "stop";
    switch (reason.toLowerCase()) {
      case "stop":
      case "eos_token":
      case "stop_sequence":
      case "end_turn":
        if (this.#blocks.length === 0) {
          return {
            kind: "error",
            failure: {
              code: "EMPTY_RESPONSE",
              message: `Provider "${this.#dialect.provider}" returned an empty response`,
            },
          };
        }
        return { kind: "stop" };
      case "tool_calls":
      case "function_call":
      case "tool_use":
        return { kind: "tool-calls" };
      case "length":
      case "model_length":
      case "max_tokens":
        return { kind: "max-tokens" };
      case "insufficient_system_resource":
        return {
          kind: "error",
          failure: {
            code: "SERVER",
            message: `Provider "${this.#dialect.provider}" cut the response short for lack of resources ` +
              `(finish reason "${reason}")`,
          },
        };
      default:
        return {
          kind: "error",
          failure: {
            code: reason.replace(/[^A-Za-z0-9]+/g, "_").toUpperCase(),
            message: `Provider "${this.#dialect.provider}" ended the response with finish reason "${reason}"`,
          },
        };
    }
  }

  #delta(delta: Record<string, unknown>, out: StreamChunk[]): void {
    const reasoning = typeof delta.reasoning_content === "string"
      ? delta.reasoning_content
      : typeof delta.reasoning === "string"
      ? delta.reasoning
      : "";
    if (reasoning !== "") {
      this.#reasoning ??= this.#open("reasoning", out);
      this.#reasoning.text += reasoning;
      out.push({ type: "reasoning-delta", index: this.#reasoning.index, text: reasoning });
    }
    if (typeof delta.content === "string" && delta.content !== "") {
      this.#text ??= this.#open("text", out);
      this.#text.text += delta.content;
      out.push({ type: "text-delta", index: this.#text.index, text: delta.content });
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const call of delta.tool_calls) if (isRecord(call)) this.#toolCall(call, out);
    }
  }

  /**
   * One tool-call delta. The provider's `index` names the call; a delta without
   * one continues the call opened last when it has that call's id, or no id and
   * no function name that would be the call's second (else it is a call of its
   * own). A new id at an open index starts another
   * call (a provider that numbers every whole call 0) only when the open call's
   * id came from the server: a call whose id arrives after its first delta
   * keeps the `call_<n>` it was given, unless the delta names a function again.
   */
  #toolCall(call: Record<string, unknown>, out: StreamChunk[]): void {
    const fn = isRecord(call.function) ? call.function : {};
    const args = typeof fn.arguments === "string"
      ? fn.arguments
      : fn.arguments !== undefined && fn.arguments !== null
      ? JSON.stringify(fn.arguments) // a provider that sends parsed arguments: back to a raw string
      : "";
    const id = typeof call.id === "string" && call.id !== "" ? call.id : undefined;
    const name = typeof fn.name === "string" ? fn.name : "";
    let key: number;
    let block: OpenBlock | undefined;
    if (typeof call.index === "number") {
      key = call.index;
      block = this.#tools.get(key);
    } else {
      key = this.#tools.size;
      const last = this.#lastTool;
      // Without an id, a delta that names a function while the last call already has a name is a whole call of
      // its own (older Ollama, Mistral stream each call whole, with neither index nor id).
      block = last !== undefined && (id === undefined ? name === "" || last.name === "" : id === last.wire)
        ? last
        : undefined;
    }
    if (block !== undefined && id !== undefined && id !== block.wire) {
      if (block.fromWire || (name !== "" && block.name !== "")) block = undefined; // another call
      else {
        block.wire = id; // the id of the call opened without one: its blocks keep the id they were given
        block.fromWire = true;
      }
    }
    if (block === undefined) {
      block = this.#open("tool-call", out);
      block.wire = id ?? `call_${block.index}`;
      block.fromWire = id !== undefined;
      // A server that gives two calls of one response the same id: the second gets an id of its own, or one result
      // would answer both (and the loop refuses such a response as MALFORMED_RESPONSE).
      const taken = this.#blocks.some((b) => b !== block && b.type === "tool-call" && b.id === block!.wire);
      block.id = taken ? `${block.wire}_${block.index}` : block.wire;
      block.name = name;
      this.#tools.set(key, block);
      this.#lastTool = block;
      block.text += args;
      out.push({ type: "tool-call-delta", index: block.index, id: block.id, name: block.name, argumentsDelta: args });
      return;
    }
    if (block.name === "" && name !== "") block.name = name;
    if (args === "") return;
    block.text += args;
    out.push({ type: "tool-call-delta", index: block.index, id: block.id, argumentsDelta: args });
  }

  #open(type: OpenBlock["type"], out: StreamChunk[]): OpenBlock {
    const block: OpenBlock = {
      index: this.#blocks.length,
      type,
      text: "",
      id: "",
      wire: "",
      fromWire: false,
      name: "",
    };
    this.#blocks.push(block);
    out.push({ type: "block-start", index: block.index, blockType: type });
    return block;
  }

  #mapUsage(raw: Record<string, unknown>): TokenUsage {
    const prompt = count(raw.prompt_tokens);
    const completion = count(raw.completion_tokens);
    const promptDetails = isRecord(raw.prompt_tokens_details) ? raw.prompt_tokens_details : {};
    const completionDetails = isRecord(raw.completion_tokens_details) ? raw.completion_tokens_details : {};
    const cacheRead = Math.min(prompt, count(raw.prompt_cache_hit_tokens ?? promptDetails.cached_tokens));
    const reasoning = count(completionDetails.reasoning_tokens);
    let outside = this.#dialect.reasoningTokens === "outside";
    if (this.#dialect.reasoningTokens === "auto") {
      // Some providers (xAI) count reasoning apart: total = prompt + completion + reasoning.
      outside = reasoning > 0 && count(raw.total_tokens) === prompt + completion + reasoning;
    }
    const usage: { -readonly [K in keyof TokenUsage]: TokenUsage[K] } = {
      inputTokens: prompt - cacheRead,
      outputTokens: outside ? completion + reasoning : completion,
    };
    if (cacheRead > 0) usage.cacheReadTokens = cacheRead;
    if (reasoning > 0) usage.reasoningTokens = reasoning;
    return usage;
  }

  #inBandError(error: unknown): LlmFailure {
    return inBandFailure(this.#dialect.provider, error, "mid-stream");
  }
}

/**
 * The failure of an `error` object a provider sent with a 200 (in the stream,
 * or as the whole body): classified by its status or code when it has one
 * (`401`, `"invalid_api_key"`, `"rate_limit_exceeded"`…), else a `SERVER`
 * failure (or `CONTEXT_WINDOW_EXCEEDED` by its message).
 */
export function inBandFailure(provider: string, error: unknown, where: string): LlmFailure {
  const record = isRecord(error) ? error : {};
  const message = typeof record.message === "string" ? record.message : JSON.stringify(error);
  // An HTTP status, as a number or a string: an integer in 100–599 (a provider's own numeric code, such as 1302,
  // or a number JSON.parse made Infinity, is no status).
  const status = [record.status, record.code, record.status_code].find((v): v is number | string =>
    typeof v === "number"
      ? Number.isInteger(v) && v >= 100 && v <= 599
      : typeof v === "string" && /^[1-5][0-9][0-9]$/.test(v)
  );
  const names = errorNames(record);
  const code = status !== undefined && Number(status) >= 400
    ? statusCode(Number(status), message, names)
    : isContextOverflow(message)
    ? "CONTEXT_WINDOW_EXCEEDED"
    : namedCode(names) ?? "SERVER";
  return new LlmFailure(code, `Provider "${provider}" reported an error ${where}: ${message}`, {
    ...(status !== undefined ? { status: Number(status) } : {}),
  });
}

function blockOf(block: OpenBlock): ContentBlock {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text };
    case "reasoning":
      return { type: "reasoning", text: block.text };
    case "tool-call":
      return { type: "tool-call", id: block.id, name: block.name, arguments: block.text };
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}
