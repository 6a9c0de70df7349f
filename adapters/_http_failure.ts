/**
 * Mapping a provider's HTTP error response to an `LlmFailure`.
 *
 * @module
 */

import { LlmFailure } from "../sdk/llm/mod.ts";

const OVERFLOW =
  /context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long|reduce the length|exceeds? the (model'?s? )?(maximum|limit)/i;
const QUOTA = /quota|insufficient[ _]balance|billing|credit/i;

/** Whether a provider's error text says the request overflowed the context window. */
export function isContextOverflow(text: string): boolean {
  return OVERFLOW.test(text);
}

/** The request id a provider put on a response, if any. */
export function requestIdOf(headers: Headers): string | undefined {
  return headers.get("x-request-id") ?? headers.get("request-id") ?? headers.get("x-ds-trace-id") ?? undefined;
}

/**
 * The provider's Retry-After in milliseconds: `retry-after-ms`, or
 * `retry-after` as seconds or as an HTTP date. Invalid or non-positive values
 * are ignored.
 */
export function retryAfterMsOf(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = Number(headers.get("retry-after-ms") ?? Number.NaN);
  if (Number.isFinite(ms) && ms > 0) return Math.round(ms);
  const value = headers.get("retry-after");
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds > 0 ? Math.round(seconds * 1000) : undefined;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return date > now ? date - now : undefined;
}

/** The human-readable message of an error body (`{error: {message}}`, `{message}`, or the text). */
function bodyMessage(text: string): string {
  try {
    const parsed = JSON.parse(text);
    const message = parsed?.error?.message ?? parsed?.message ?? parsed?.error;
    if (typeof message === "string" && message !== "") return message;
  } catch { /* not JSON: use the text */ }
  const trimmed = text.trim();
  return trimmed.length > 500 ? `${trimmed.slice(0, 500)}…` : trimmed;
}

/** The failure code of an HTTP error status, given the provider's message. */
export function statusCode(status: number, detail: string): string {
  if (status === 401 || status === 403) return "AUTH";
  if (status === 402 || (status === 429 && QUOTA.test(detail))) return "QUOTA";
  if (status === 429) return "RATE_LIMIT";
  if (status === 400) return isContextOverflow(detail) ? "CONTEXT_WINDOW_EXCEEDED" : "INVALID_REQUEST";
  if (status === 413) return "INVALID_REQUEST";
  if (status >= 500 && status <= 599) return "SERVER";
  return `HTTP_${status}`;
}

/** The failure for a non-2xx response, from its status, headers and body text. */
export function httpFailure(provider: string, status: number, headers: Headers, bodyText: string): LlmFailure {
  const detail = bodyMessage(bodyText);
  const code = statusCode(status, detail);
  return new LlmFailure(code, `Provider "${provider}" answered HTTP ${status}${detail ? `: ${detail}` : ""}`, {
    status,
    providerRetryAfterMs: retryAfterMsOf(headers),
    requestId: requestIdOf(headers),
  });
}
