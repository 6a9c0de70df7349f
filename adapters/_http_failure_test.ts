import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { httpFailure, isContextOverflow, requestIdOf, retryAfterMsOf, statusCode } from "./_http_failure.ts";

describe("HTTP failure mapping", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");

  it("retryAfterMsOf() reads retry-after-ms, seconds and HTTP dates, and ignores nonsense", () => {
    assert.equal(retryAfterMsOf(new Headers({ "retry-after-ms": "250" }), now), 250);
    assert.equal(retryAfterMsOf(new Headers({ "retry-after": "2.5" }), now), 2500);
    assert.equal(retryAfterMsOf(new Headers({ "retry-after": "Thu, 01 Jan 2026 00:00:07 GMT" }), now), 7000);
    assert.equal(retryAfterMsOf(new Headers({ "retry-after": "Wed, 31 Dec 2025 23:59:00 GMT" }), now), undefined);
    assert.equal(retryAfterMsOf(new Headers({ "retry-after": "0" }), now), undefined);
    assert.equal(retryAfterMsOf(new Headers({ "retry-after": "soon" }), now), undefined);
    assert.equal(retryAfterMsOf(new Headers(), now), undefined);
  });

  it("requestIdOf() reads the common request id headers", () => {
    assert.equal(requestIdOf(new Headers({ "x-request-id": "a" })), "a");
    assert.equal(requestIdOf(new Headers({ "request-id": "b" })), "b");
    assert.equal(requestIdOf(new Headers()), undefined);
  });

  it("isContextOverflow() recognises the usual provider wordings", () => {
    assert.equal(isContextOverflow("This model's maximum context length is 65536 tokens"), true);
    assert.equal(isContextOverflow("prompt is too long: 210000 tokens > 200000 maximum"), true);
    assert.equal(isContextOverflow("Invalid value for temperature"), false);
  });

  it("statusCode() classifies a 429 by its error code or type first, by its message only without one", () => {
    const billingLink = "Rate limit reached. Add a payment method at https://platform.openai.com/account/billing";
    assert.equal(statusCode(429, billingLink, "rate_limit_exceeded requests"), "RATE_LIMIT");
    assert.equal(statusCode(429, "Rate limit reached", "insufficient_quota insufficient_quota"), "QUOTA");
    assert.equal(statusCode(429, "Slow down", "rate_limit_error"), "RATE_LIMIT");
    assert.equal(statusCode(429, billingLink), "RATE_LIMIT");
    assert.equal(statusCode(429, "Out of credit"), "RATE_LIMIT");
    assert.equal(statusCode(429, "You exceeded your current quota"), "QUOTA");
    assert.equal(statusCode(429, "Insufficient Balance"), "QUOTA");
    assert.equal(statusCode(400, "Bad", "context_length_exceeded"), "CONTEXT_WINDOW_EXCEEDED");
  });

  it("httpFailure() keeps the status, the provider message and the request id", () => {
    const failure = httpFailure(
      "p",
      429,
      new Headers({ "x-request-id": "r1", "retry-after": "1" }),
      '{"message":"Slow"}',
    );
    assert.deepEqual(failure.toData(), {
      code: "RATE_LIMIT",
      message: 'Provider "p" answered HTTP 429: Slow',
      status: 429,
      providerRetryAfterMs: 1000,
      requestId: "r1",
    });
  });
});
