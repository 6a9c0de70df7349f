/**
 * The retry policy of model calls: which failures are worth another attempt,
 * and how long to wait before it.
 *
 * An adapter never retries (one `stream()` is one attempt); the agent loop
 * consults this policy when a call ends with an `error` finish.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { LlmFailureData } from "./llm_failure.ts";

/**
 * How failed model calls are retried. `createHarness` and `LlmRuntime` refuse
 * a policy whose numbers are not valid (`INVALID_ARGS` naming the field): a
 * NaN anywhere, a negative delay, a count that is not a non-negative integer,
 * a jitter outside 0–1. Infinity is a valid count, ceiling or cap.
 */
export interface RetryPolicy {
  /** Retries after the first attempt; `0` disables retrying. */
  readonly maxRetries: number;
  /** The delay before the first retry, in milliseconds; it doubles on each retry. */
  readonly baseDelayMs: number;
  /** The ceiling of the exponential delay, in milliseconds. */
  readonly maxDelayMs: number;
  /** The random spread applied to the exponential delay, as a ratio (`0.1` = ±10 %). */
  readonly jitter: number;
  /** The longest provider Retry-After honoured, in milliseconds; longer requests are capped to it. */
  readonly retryAfterCapMs: number;
}

/**
 * The default policy: 5 retries, 500 ms doubling up to 10 s, 10 % jitter, and a
 * provider Retry-After honoured up to 60 s.
 */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  maxRetries: 5,
  baseDelayMs: 500,
  maxDelayMs: 10_000,
  jitter: 0.1,
  retryAfterCapMs: 60_000,
});

/**
 * Internal: refuse a retry policy whose numbers would not retry as written (a NaN delay, a NaN count that turns
 * retrying off). `maxRetries` is a non-negative integer (or Infinity), the delays and the cap non-negative numbers
 * (Infinity for no bound), `jitter` a ratio from 0 to 1.
 *
 * @param policy The policy given.
 * @param name What it is called where it was given.
 * @throws {HarnessError} `INVALID_ARGS` naming the first field that is wrong.
 */
export function checkRetryPolicy(policy: unknown, name = "retryPolicy"): void {
  if (typeof policy !== "object" || policy === null) {
    throw new HarnessError(
      "INVALID_ARGS",
      `${name} must be an object, not ${policy === null ? "null" : typeof policy}`,
    );
  }
  const p = policy as Record<string, unknown>;
  const refuse = (field: string, what: string): never => {
    throw new HarnessError("INVALID_ARGS", `${name}.${field} must be ${what}, not ${String(p[field])}`, {
      details: { field: `${name}.${field}` },
    });
  };
  const isNumber = (v: unknown): v is number => typeof v === "number" && !Number.isNaN(v);
  const retries = p.maxRetries;
  if (!isNumber(retries) || retries < 0 || !(Number.isInteger(retries) || retries === Infinity)) {
    refuse("maxRetries", "a non-negative integer");
  }
  for (const field of ["baseDelayMs", "maxDelayMs", "retryAfterCapMs"]) {
    const value = p[field];
    if (!isNumber(value) || value < 0) refuse(field, "a non-negative number of milliseconds");
  }
  const jitter = p.jitter;
  if (!isNumber(jitter) || jitter < 0 || jitter > 1) refuse("jitter", "a ratio from 0 to 1");
}

/** The failure codes the policy retries; every other code is final. */
export const RETRYABLE_FAILURE_CODES: readonly string[] = Object.freeze([
  "EMPTY_RESPONSE",
  "RATE_LIMIT",
  "SERVER",
  "TIMEOUT",
  "TRANSPORT",
]);

/**
 * Whether a failure is worth another attempt.
 *
 * @param failure The failure, as data or as an `LlmFailure`.
 * @returns `true` for `EMPTY_RESPONSE`, `RATE_LIMIT`, `SERVER`, `TIMEOUT` and `TRANSPORT`.
 *
 * @example
 * ```ts
 * import { isRetryableFailure } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * assert.equal(isRetryableFailure({ code: "RATE_LIMIT", message: "Too many requests" }), true);
 * assert.equal(isRetryableFailure({ code: "AUTH", message: "Invalid API key" }), false);
 * ```
 */
export function isRetryableFailure(failure: LlmFailureData): boolean {
  return RETRYABLE_FAILURE_CODES.includes(failure.code);
}

/**
 * The delay before retry number `attempt` (1 for the first retry).
 *
 * The exponential delay is `baseDelayMs * 2^(attempt-1)`, capped at
 * `maxDelayMs`, then spread by `±jitter`. A provider Retry-After longer than
 * that is honoured instead, up to `retryAfterCapMs`.
 *
 * @param policy The retry policy.
 * @param attempt The retry number, from 1.
 * @param failure The failure being retried; its `providerRetryAfterMs` is honoured.
 * @param random A source of numbers in `[0, 1)`, for deterministic tests.
 * @returns The delay in whole milliseconds, never negative.
 * @throws {RangeError} When `attempt` is not a positive integer.
 *
 * @example Backoff doubles, and Retry-After wins when longer
 * ```ts
 * import { DEFAULT_RETRY_POLICY, retryDelayMs } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const failure = { code: "SERVER", message: "Bad gateway" };
 * const middle = () => 0.5; // no jitter
 * assert.equal(retryDelayMs(DEFAULT_RETRY_POLICY, 1, failure, middle), 500);
 * assert.equal(retryDelayMs(DEFAULT_RETRY_POLICY, 3, failure, middle), 2000);
 * assert.equal(retryDelayMs(DEFAULT_RETRY_POLICY, 9, failure, middle), 10000);
 * const limited = { code: "RATE_LIMIT", message: "Slow down", providerRetryAfterMs: 7000 };
 * assert.equal(retryDelayMs(DEFAULT_RETRY_POLICY, 1, limited, middle), 7000);
 * ```
 */
export function retryDelayMs(
  policy: RetryPolicy,
  attempt: number,
  failure?: LlmFailureData,
  random: () => number = Math.random,
): number {
  if (!Number.isInteger(attempt) || attempt < 1) {
    throw new RangeError(`Retry attempt must be a positive integer, got ${attempt}`);
  }
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  const spread = 1 + policy.jitter * (2 * random() - 1);
  let delay = Math.max(0, exponential * spread);
  const retryAfter = failure?.providerRetryAfterMs;
  if (typeof retryAfter === "number" && Number.isFinite(retryAfter) && retryAfter > delay) {
    delay = Math.max(delay, Math.min(retryAfter, policy.retryAfterCapMs));
  }
  return Math.round(delay);
}
