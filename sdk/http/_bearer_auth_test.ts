import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { bearerVerifier, timingSafeEqual } from "./_bearer_auth.ts";
import { isValidSessionId } from "./_session_id.ts";

describe("timingSafeEqual()", () => {
  it("compares byte arrays of equal and unequal lengths", () => {
    assert.equal(timingSafeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3])), true);
    assert.equal(timingSafeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 4])), false);
    assert.equal(timingSafeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 0])), false);
    assert.equal(timingSafeEqual(new Uint8Array([]), new Uint8Array([])), true);
  });
});

describe("bearerVerifier()", () => {
  const verify = bearerVerifier("s3cret");

  it("accepts the token with any casing of the scheme", async () => {
    await verify("Bearer s3cret");
    await verify("bearer s3cret");
  });

  it("rejects a missing or malformed header with AUTH_REQUIRED and a wrong token with INVALID_TOKEN", async () => {
    for (const header of [undefined, "", "s3cret", "Basic s3cret", "Bearer", "Bearer a b"]) {
      await assert.rejects(verify(header), { code: "AUTH_REQUIRED", status: 401 }, String(header));
    }
    for (const header of ["Bearer s3cre", "Bearer s3cret!", "Bearer S3CRET", "Bearer x"]) {
      await assert.rejects(verify(header), { code: "INVALID_TOKEN", status: 401 }, header);
    }
  });
});

describe("isValidSessionId()", () => {
  it("accepts ids made of letters, digits, _ and - and nothing a path can be built from", () => {
    for (const id of ["s1", "0f8fad5b-d9cb-469f-a165-70867728950e", "a_b-c", "x".repeat(128)]) {
      assert.equal(isValidSessionId(id), true, id);
    }
    for (const id of ["", "..", "../a", "a/b", "a\\b", "a.b", "-a", "_a", "a b", "a\0", "%2e", "x".repeat(129), 1]) {
      assert.equal(isValidSessionId(id), false, String(id));
    }
  });
});
