import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { isValidSessionId } from "./_session_id.ts";

describe("isValidSessionId()", () => {
  it("accepts ids made of letters, digits, _, - and inner dots (subagent children), and nothing a path can be built from", () => {
    for (
      const id of ["s1", "0f8fad5b-d9cb-469f-a165-70867728950e", "a_b-c", "x".repeat(128), "a.b", "parent.call_0.2"]
    ) {
      assert.equal(isValidSessionId(id), true, id);
    }
    for (
      const id of [
        "",
        ".",
        "..",
        "../a",
        ".a",
        "a.",
        "a/b",
        "a\\b",
        "-a",
        "_a",
        "a b",
        "a\0",
        "%2e",
        "x".repeat(129),
        1,
      ]
    ) {
      assert.equal(isValidSessionId(id), false, String(id));
    }
  });
});
