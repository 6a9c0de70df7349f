import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../kernel/harness_error.ts";
import { flushWithRetries } from "./_retry_flush.ts";

const flushFailed = (cause: unknown) =>
  new HarnessError("SESSION_FLUSH_FAILED", "Cannot flush session s", { cause, details: { sessionId: "s" } });

describe("flushWithRetries()", () => {
  it("tries a failed flush again after each delay, and resolves once one passes", async () => {
    let calls = 0;
    await flushWithRetries(
      () => ++calls < 3 ? Promise.reject(flushFailed(new Error("reset"))) : Promise.resolve(true),
      [
        0,
        0,
      ],
    );
    assert.equal(calls, 3);
  });

  it("reports the last failure once the delays are spent", async () => {
    let calls = 0;
    const failing = () => Promise.reject(flushFailed(new Error(`reset ${++calls}`)));
    await assert.rejects(flushWithRetries(failing, [0, 0]), (error: Error) => {
      assert.equal((error as HarnessError).code, "SESSION_FLUSH_FAILED");
      assert.equal((error.cause as Error).message, "reset 3");
      return true;
    });
  });

  it("reports the failure when the session was let go of while a try waited (the flush then answers false)", async () => {
    let calls = 0;
    const flush = () => ++calls === 1 ? Promise.reject(flushFailed(new Error("reset"))) : Promise.resolve(false);
    await assert.rejects(flushWithRetries(flush, [0, 0]), { code: "SESSION_FLUSH_FAILED" });
    assert.equal(calls, 2);
    // A session that was not live from the start has nothing to report.
    await flushWithRetries(() => Promise.resolve(false), [0, 0]);
  });

  it("does not ask again when storage refused the write for good, or for another failure than a flush's", async () => {
    const final = [
      "SESSION_LEASE_LOST",
      "SESSION_WRITER_BUSY",
      "SESSION_SEQ_MISMATCH",
      "INVALID_EVENT",
      "INVALID_SESSION_ID",
    ];
    for (const code of final) {
      let calls = 0;
      const refused = () => (calls++, Promise.reject(flushFailed(new HarnessError(code, code))));
      await assert.rejects(flushWithRetries(refused, [0, 0]), { code: "SESSION_FLUSH_FAILED" });
      assert.equal(calls, 1, code);
    }
    let calls = 0;
    await assert.rejects(
      flushWithRetries(() => (calls++, Promise.reject(new HarnessError("AGENT_DISPOSED", "gone"))), [0, 0]),
      { code: "AGENT_DISPOSED" },
    );
    assert.equal(calls, 1);
  });
});
