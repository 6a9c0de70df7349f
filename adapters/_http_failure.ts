/**
 * Mapping a provider's HTTP error response to an `LlmFailure`.
 *
 * @module
 */

import { LlmFailure } from "../sdk/llm/mod.ts";

const OVERFLOW =
  /context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long|reduce the length|exceeds? the (model'?s? )?(maximum|limit)/i;
/**
 * Words of a 429's message that mean the account is out of quota, when its
 * error object names no class. Not `billing` or `credit`: an ordinary rate
 * limit message often links the billing page ("…by adding a payment method…
 * /account/billing").
 */
const QUOTA_WORDS = /quota|insufficient[ _]balance/i;
/** Structured error codes and types that mean the account is out of quota (`insufficient_quota`…). */
const QUOTA_NAMES = /quota|insufficient_balance|billing/i;
/** Structured error codes and types of a rate limit (`rate_limit_exceeded`, `rate_limit_error`…). */
const RATE_LIMIT_NAMES = /rate_limit|too_many_requests/i;

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

/**
 * The structured names of a provider's error object: its `code`, `type` and
 * `status` strings, space-separated (`"rate_limit_exceeded requests"`).
 */
export function errorNames(error: unknown): string {
  if (typeof error !== "object" || error === null) return "";
  const record = error as Record<string, unknown>;
  return [record.code, record.type, record.status].filter((v): v is string => typeof v === "string").join(" ");
}

/**
 * The failure code an error's structured names give, or `undefined` when they
 * name no known class: `context_length…` → `CONTEXT_WINDOW_EXCEEDED`,
 * `…auth…`/`…api_key…`/`…permission…` → `AUTH`, `…quota…`/`insufficient_balance`/
 * `…billing…` → `QUOTA`, `…rate_limit…` → `RATE_LIMIT`,
 * `invalid_request…`/`bad_request` → `INVALID_REQUEST`.
 */
export function namedCode(names: string): string | undefined {
  if (/context_length/i.test(names)) return "CONTEXT_WINDOW_EXCEEDED";
  if (/auth|api_key|permission/i.test(names)) return "AUTH";
  if (QUOTA_NAMES.test(names)) return "QUOTA";
  if (RATE_LIMIT_NAMES.test(names)) return "RATE_LIMIT";
  if (/invalid_request|bad_request/i.test(names)) return "INVALID_REQUEST";
  return undefined;
}

/**
 * The human-readable message of an error body (`{error: {message}}`,
 * `{message}`, or the text) and the structured names of its error object.
 */
function bodyError(text: string): { message: string; names: string } {
  try {
    const parsed = JSON.parse(text);
    const message = parsed?.error?.message ?? parsed?.message ?? parsed?.error;
    const record = typeof parsed?.error === "object" && parsed.error !== null ? parsed.error : parsed;
    if (typeof message === "string" && message !== "") return { message, names: errorNames(record) };
  } catch { /* not JSON: use the text */ }
  const trimmed = text.trim();
  return { message: trimmed.length > 500 ? `${trimmed.slice(0, 500)}…` : trimmed, names: "" };
}

/**
 * The failure code of an HTTP error status, given the provider's message and
 * the structured names of its error object ({@linkcode errorNames}). A 429 is
 * classified by its names first (`rate_limit_exceeded` → `RATE_LIMIT`,
 * `insufficient_quota` → `QUOTA`), by its message only when they say neither.
 */
export function statusCode(status: number, detail: string, names = ""): string {
  if (status === 401 || status === 403) return "AUTH";
  if (status === 402) return "QUOTA";
  if (status === 429) {
    if (RATE_LIMIT_NAMES.test(names)) return "RATE_LIMIT";
    if (QUOTA_NAMES.test(names)) return "QUOTA";
    return QUOTA_WORDS.test(detail) ? "QUOTA" : "RATE_LIMIT";
  }
  if (status === 400) {
    return namedCode(names) === "CONTEXT_WINDOW_EXCEEDED" || isContextOverflow(detail)
      ? "CONTEXT_WINDOW_EXCEEDED"
      : "INVALID_REQUEST";
  }
  if (status === 413) return "INVALID_REQUEST";
  if (status === 408) return "TIMEOUT"; // the server gave up waiting for the request: retried, like an idle timeout
  if (status >= 500 && status <= 599) return "SERVER";
  return `HTTP_${status}`;
}

/** The failure for a non-2xx response, from its status, headers and body text. */
export function httpFailure(provider: string, status: number, headers: Headers, bodyText: string): LlmFailure {
  const { message: detail, names } = bodyError(bodyText);
  const code = statusCode(status, detail, names);
  return new LlmFailure(code, `Provider "${provider}" answered HTTP ${status}${detail ? `: ${detail}` : ""}`, {
    status,
    providerRetryAfterMs: retryAfterMsOf(headers),
    requestId: requestIdOf(headers),
  });
}
