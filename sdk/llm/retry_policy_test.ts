import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { DEFAULT_RETRY_POLICY, isRetryableFailure, LlmFailure, LlmRuntime, retryDelayMs } from "./mod.ts";
import { createHarness } from "../harness.ts";
import { HarnessError } from "../kernel/harness_error.ts";

describe("retry policy", () => {
  it("DEFAULT_RETRY_POLICY is 5 retries, 500 ms to 10 s, 10 % jitter", () => {
    assert.equal(DEFAULT_RETRY_POLICY.maxRetries, 5);
    assert.equal(DEFAULT_RETRY_POLICY.baseDelayMs, 500);
    assert.equal(DEFAULT_RETRY_POLICY.maxDelayMs, 10_000);
    assert.equal(DEFAULT_RETRY_POLICY.jitter, 0.1);
    assert.ok(Object.isFrozen(DEFAULT_RETRY_POLICY));
  });

  it("isRetryableFailure() retries transient codes only", () => {
    for (const code of ["EMPTY_RESPONSE", "RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT"]) {
      assert.equal(isRetryableFailure({ code, message: "m" }), true, code);
    }
    for (
      const code of [
        "AUTH",
        "QUOTA",
        "INVALID_REQUEST",
        "CONTEXT_WINDOW_EXCEEDED",
        "MISSING_CREDENTIAL",
        "UNSUPPORTED_MODEL",
        "UNSUPPORTED_FEATURE",
        "STREAM_CLOSED",
        "MALFORMED_RESPONSE",
        "ABORTED",
        "NO_ADAPTER",
        "HTTP_418",
        "UNKNOWN",
      ]
    ) {
      assert.equal(isRetryableFailure({ code, message: "m" }), false, code);
    }
    assert.equal(isRetryableFailure(new LlmFailure("SERVER", "Bad gateway").toData()), true);
  });

  it("retryDelayMs() doubles from the base up to the ceiling", () => {
    const mid = () => 0.5;
    const delays = [1, 2, 3, 4, 5, 6, 7].map((n) => retryDelayMs(DEFAULT_RETRY_POLICY, n, undefined, mid));
    assert.deepEqual(delays, [500, 1000, 2000, 4000, 8000, 10000, 10000]);
  });

  it("retryDelayMs() spreads by the jitter ratio at both extremes", () => {
    assert.equal(retryDelayMs(DEFAULT_RETRY_POLICY, 2, undefined, () => 0), 900);
    assert.equal(retryDelayMs(DEFAULT_RETRY_POLICY, 2, undefined, () => 0.999999), 1100);
  });

  it("retryDelayMs() honours a longer Retry-After up to the cap, and ignores a shorter one", () => {
    const mid = () => 0.5;
    const policy = { ...DEFAULT_RETRY_POLICY, retryAfterCapMs: 20_000 };
    const failure = (ms: number) => ({ code: "RATE_LIMIT", message: "m", providerRetryAfterMs: ms });
    assert.equal(retryDelayMs(policy, 1, failure(3000), mid), 3000);
    assert.equal(retryDelayMs(policy, 1, failure(90_000), mid), 20_000);
    assert.equal(retryDelayMs(policy, 4, failure(100), mid), 4000);
  });

  it("retryDelayMs() rejects an attempt that is not a positive integer", () => {
    assert.throws(() => retryDelayMs(DEFAULT_RETRY_POLICY, 0), RangeError);
    assert.throws(() => retryDelayMs(DEFAULT_RETRY_POLICY, 1.5), RangeError);
  });

  it("createHarness and LlmRuntime refuse a policy whose numbers are not valid, naming the field (INVALID_ARGS)", async () => {
    const bad: [Partial<Record<keyof typeof DEFAULT_RETRY_POLICY, unknown>>, string][] = [
      [{ baseDelayMs: NaN }, "retryPolicy.baseDelayMs"],
      [{ maxRetries: NaN }, "retryPolicy.maxRetries"],
      [{ maxRetries: -1 }, "retryPolicy.maxRetries"],
      [{ maxRetries: 1.5 }, "retryPolicy.maxRetries"],
      [{ maxDelayMs: -5 }, "retryPolicy.maxDelayMs"],
      [{ retryAfterCapMs: "60000" }, "retryPolicy.retryAfterCapMs"],
      [{ jitter: 2 }, "retryPolicy.jitter"],
      [{ jitter: undefined }, "retryPolicy.jitter"],
    ];
    const refused = (field: string) => (error: unknown) =>
      HarnessError.isInstance(error, "INVALID_ARGS") && error.message.startsWith(`${field} must be`);
    for (const [change, field] of bad) {
      const retryPolicy = { ...DEFAULT_RETRY_POLICY, ...change } as typeof DEFAULT_RETRY_POLICY;
      await assert.rejects(createHarness({ retryPolicy }), refused(field), field);
      assert.throws(() => new LlmRuntime(undefined, { retryPolicy }), refused(field), field);
    }
    // Unbounded numbers are policies too.
    const unbounded = {
      ...DEFAULT_RETRY_POLICY,
      maxRetries: Infinity,
      maxDelayMs: Infinity,
      retryAfterCapMs: Infinity,
    };
    assert.equal(new LlmRuntime(undefined, { retryPolicy: unbounded }).retryPolicy.maxRetries, Infinity);
    await (await createHarness({ retryPolicy: { ...DEFAULT_RETRY_POLICY, maxRetries: 0, jitter: 0 } })).dispose();
  });
});
