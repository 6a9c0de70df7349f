/**
 * One streaming call to an OpenAI-style chat completions endpoint: request,
 * HTTP errors, SSE reading, idle watchdog and abort, mapped to chunks.
 *
 * @module
 */

import { type GenerateOptions, LlmFailure, type StreamChunk } from "../sdk/llm/mod.ts";
import { HarnessError } from "../sdk/kernel/mod.ts";
import type { EventSourceMessage } from "eventsource-parser";
import { chatRequestBody, type ChatRequestDialect } from "./_chat_request.ts";
import { type ChatStreamDialect, ChatStreamMapper, inBandFailure } from "./_chat_stream.ts";
import { httpFailure } from "./_http_failure.ts";
import { readSse } from "./_sse_reader.ts";
import { USER_AGENT } from "./_version.ts";

/** Everything a call needs to know about its endpoint. */
export interface ChatEndpoint {
  readonly provider: string;
  /** The base URL; `/chat/completions` is appended. */
  readonly baseURL: string;
  /** The bearer token; absent when the endpoint takes none. */
  readonly apiKey: string | undefined;
  /** Fail with `MISSING_CREDENTIAL` when there is no API key. */
  readonly requireApiKey: boolean;
  readonly fetch: typeof fetch;
  readonly headers: Readonly<Record<string, string>>;
  readonly idleTimeoutMs: number;
  readonly request: ChatRequestDialect;
  readonly response: ChatStreamDialect;
}

/** Check a positive, finite timeout option. */
export function checkTimeout(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new HarnessError("INVALID_ARGS", `Option ${name} must be a positive finite number of milliseconds`);
  }
  return value;
}

/**
 * Check a headers option: a record of valid header names and values. Names
 * match whatever their case when the request is made.
 */
export function checkHeaders(value: unknown): Readonly<Record<string, string>> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new HarnessError("INVALID_ARGS", "Option headers must be a record of header names to values");
  }
  const headers: Record<string, string> = {};
  for (const [name, v] of Object.entries(value)) {
    if (typeof v !== "string") throw new HarnessError("INVALID_ARGS", `Header ${name} must be a string`);
    try {
      new Headers([[name, v]]);
    } catch {
      throw new HarnessError("INVALID_ARGS", `Header ${JSON.stringify(name)} is not a valid header name and value`);
    }
    headers[name] = v;
  }
  return Object.freeze(headers);
}

/** Check and normalise a base URL option. */
export function checkBaseURL(value: unknown): string {
  if (typeof value !== "string" || !/^https?:\/\//i.test(value)) {
    throw new HarnessError("INVALID_ARGS", "Option baseURL must be an http(s) URL");
  }
  return value.replace(/\/+$/, "");
}

/**
 * The failure of a 200 whose body is not an event stream (`what` says what it
 * was: a content type, or "a JSON body"): its `error` object's, else
 * `MALFORMED_RESPONSE`.
 */
/**
 * The first bytes of a body, enough to tell what it is (eight characters after leading white space, or all of a
 * shorter body), and the whole body again as a stream: those bytes, then the rest as it arrives.
 */
async function peekBody(
  body: ReadableStream<Uint8Array>,
): Promise<{ head: string; stream: ReadableStream<Uint8Array> }> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  const decoder = new TextDecoder();
  let head = "";
  while (head.trimStart().length < 8) {
    const { value, done } = await reader.read();
    if (done) break;
    chunks.push(value);
    head += decoder.decode(value, { stream: true });
  }
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
    },
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return { head, stream };
}

function unexpectedBody(provider: string, what: string, text: string): LlmFailure {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const error = (parsed as { error?: unknown } | null)?.error;
  if (error !== undefined && error !== null) return inBandFailure(provider, error, "instead of a stream");
  const shown = text.trim().replace(/\s+/g, " ");
  return new LlmFailure(
    "MALFORMED_RESPONSE",
    `Provider "${provider}" answered ${what} instead of an event stream: ${
      shown.length > 300 ? `${shown.slice(0, 300)}…` : shown
    }`,
  );
}

/**
 * The failure of an `event: error` in the stream: its JSON's `error` object (or
 * the JSON itself) classified like any in-band error, else — text such as
 * `Internal Server Error` — a `SERVER` failure carrying the text.
 */
function errorEvent(provider: string, data: string): LlmFailure {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
    const error = (parsed as { error?: unknown }).error;
    return inBandFailure(provider, error !== undefined && error !== null ? error : parsed, "mid-stream");
  }
  const shown = data.replace(/\s+/g, " ");
  return new LlmFailure(
    "SERVER",
    `Provider "${provider}" sent an error event mid-stream: ${
      shown === "" ? "(no data)" : shown.length > 300 ? `${shown.slice(0, 300)}…` : shown
    }`,
  );
}

function failure(code: string, message: string): StreamChunk {
  return { type: "finish", reason: { kind: "error", failure: { code, message } } };
}

/** Stream one call. Never throws: every failure is the final `finish` chunk. */
export async function* streamChatCompletion(
  endpoint: ChatEndpoint,
  options: GenerateOptions,
): AsyncGenerator<StreamChunk, void, undefined> {
  const signal = options.signal ?? new AbortController().signal;
  const aborted = (): StreamChunk => ({
    type: "finish",
    reason: { kind: "aborted", failure: { code: "ABORTED", message: `Call to "${endpoint.provider}" was aborted` } },
  });
  if (signal.aborted) {
    yield aborted();
    return;
  }
  if (endpoint.requireApiKey && (endpoint.apiKey === undefined || endpoint.apiKey === "")) {
    yield failure("MISSING_CREDENTIAL", `No API key is configured for provider "${endpoint.provider}"`);
    return;
  }
  let body: string;
  try {
    body = JSON.stringify(chatRequestBody(options, endpoint.request));
  } catch (error) {
    const data = error instanceof LlmFailure ? error.toData() : {
      code: "INVALID_REQUEST",
      message: `Cannot serialise the request: ${error instanceof Error ? error.message : String(error)}`,
    };
    yield { type: "finish", reason: { kind: "error", failure: data } };
    return;
  }

  // The request and the body reads stop on the caller's signal or on the idle watchdog, whichever comes first.
  // (The watchdog is re-armed whenever bytes arrive, so it is a timer of its own, not `AbortSignal.timeout`.)
  const watchdog = new AbortController();
  const requestSignal = AbortSignal.any([signal, watchdog.signal]);
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const disarm = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  // The watchdog runs only while the adapter waits for the provider.
  const arm = () => {
    disarm();
    timer = setTimeout(() => {
      timedOut = true;
      watchdog.abort(new LlmFailure("TIMEOUT", "Provider stalled"));
    }, endpoint.idleTimeoutMs);
  };
  let events: AsyncGenerator<EventSourceMessage, void, undefined> | undefined;
  try {
    arm();
    const response = await endpoint.fetch(`${endpoint.baseURL}/chat/completions`, {
      method: "POST",
      headers: requestHeaders(endpoint),
      body,
      signal: requestSignal,
    });
    if (!response.ok) {
      arm();
      const text = await response.text().catch(() => "");
      disarm();
      throw httpFailure(endpoint.provider, response.status, response.headers, text);
    }
    if (response.body === null) {
      throw new LlmFailure("MALFORMED_RESPONSE", `Provider "${endpoint.provider}" answered without a body`);
    }
    let stream: ReadableStream<Uint8Array> = response.body;
    const type = response.headers.get("content-type") ?? "";
    if (type !== "" && !/^text\/event-stream\b/i.test(type)) {
      // A 200 that is not labelled a stream: an error object, a proxy's page, a completion that was not streamed —
      // or events under another content type, which are read all the same, as they arrive (the watchdog re-armed by
      // each read): only the body's first bytes are read to tell.
      arm();
      const peeked = await peekBody(stream);
      disarm();
      stream = peeked.stream;
      if (!/^\s*(?:data|event|id|retry)?:/.test(peeked.head)) {
        arm();
        const text = await new Response(stream).text().catch(() => peeked.head);
        disarm();
        throw unexpectedBody(endpoint.provider, type, text);
      }
    }
    // Any bytes (keep-alive comments included) prove the provider is alive.
    const head = { text: "" };
    events = readSse(stream, requestSignal, () => {
      if (timer !== undefined) arm();
    }, head);
    const mapper = new ChatStreamMapper(endpoint.response);
    let seen = false;
    while (true) {
      arm();
      const step = await events.next();
      disarm();
      if (step.done) {
        // A body with no event that is JSON (an error object sent without a content type, or as text/event-stream):
        // what it says, not a torn stream.
        if (!seen && /^\s*[{[]/.test(head.text)) throw unexpectedBody(endpoint.provider, "a JSON body", head.text);
        // Text that held no event at all (a page sent without a content type): not a stream that was cut.
        if (!seen && head.text.trim() !== "" && !/^\s*(?:data|event|id|retry)?:/.test(head.text)) {
          throw unexpectedBody(endpoint.provider, "a body", head.text);
        }
        throw new LlmFailure("STREAM_CLOSED", `Stream from provider "${endpoint.provider}" ended before [DONE]`);
      }
      seen = true;
      const data = step.value.data.trim();
      if (step.value.event === "error") throw errorEvent(endpoint.provider, data);
      if (data === "[DONE]") {
        yield* mapper.done();
        return;
      }
      if (data === "") continue;
      let payload: unknown;
      try {
        payload = JSON.parse(data);
      } catch {
        throw new LlmFailure(
          "MALFORMED_RESPONSE",
          `Provider "${endpoint.provider}" sent a stream event that is not JSON: ${data.slice(0, 200)}`,
        );
      }
      yield* mapper.push(payload);
    }
  } catch (error) {
    disarm();
    if (timedOut) {
      yield failure(
        "TIMEOUT",
        `Provider "${endpoint.provider}" sent nothing for ${endpoint.idleTimeoutMs} ms`,
      );
    } else if (signal.aborted) {
      yield aborted();
    } else if (error instanceof LlmFailure) {
      yield { type: "finish", reason: { kind: "error", failure: error.toData() } };
    } else {
      const message = error instanceof Error ? error.message : String(error);
      yield failure("TRANSPORT", `Connection to provider "${endpoint.provider}" failed: ${message}`);
    }
  } finally {
    disarm();
    await events?.return().catch(() => {});
  }
}

/**
 * The request's headers, as a plain record (a custom `fetch` may spread it):
 * names match whatever their case — the caller's headers replace the defaults,
 * and the API key's `Authorization` replaces the caller's (see `headers` of the
 * adapters' options) — and each keeps the case of the one that set it.
 */
function requestHeaders(endpoint: ChatEndpoint): Record<string, string> {
  const merged = new Map<string, [string, string]>();
  const set = (name: string, value: string) => merged.set(name.toLowerCase(), [name, value]);
  set("Content-Type", "application/json");
  set("Accept", "text/event-stream");
  set("User-Agent", USER_AGENT);
  for (const [name, value] of Object.entries(endpoint.headers)) set(name, value);
  if (endpoint.apiKey !== undefined && endpoint.apiKey !== "") set("Authorization", `Bearer ${endpoint.apiKey}`);
  return Object.fromEntries(merged.values());
}
