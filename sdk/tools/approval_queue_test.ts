import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../kernel/mod.ts";
import { ApprovalQueue, type PendingApproval } from "./approval_queue.ts";
import type { ApprovalRequest } from "./approval_service.ts";

const request = (callId: string, signal = new AbortController().signal): ApprovalRequest => ({
  callId,
  toolName: "write_file",
  args: { path: "a.txt" },
  reason: "writes a file",
  signal,
});

describe("ApprovalQueue", () => {
  it("holds each question until it is answered by call id, and reports changes", async () => {
    const changes: string[][] = [];
    const queue = new ApprovalQueue({
      onChange: (p: readonly PendingApproval[]) => changes.push(p.map((x) => x.callId)),
    });
    const first = queue.approver(request("c1"));
    const second = queue.approver(request("c2"));
    assert.deepEqual(queue.pending().map((p) => p.callId), ["c1", "c2"]);
    assert.deepEqual(queue.pending()[0].args, { path: "a.txt" });
    assert.equal(queue.answer("c2", false), true);
    assert.equal(await second, "rejected");
    assert.equal(queue.answer("c2", true), false);
    assert.equal(queue.answer("c1", true), true);
    assert.equal(await first, "allowed-once");
    assert.deepEqual(changes, [["c1"], ["c1", "c2"], ["c1"], []]);
  });

  it("keeps the questions of two sessions on one call id apart", async () => {
    const queue = new ApprovalQueue();
    const a = queue.approver({ ...request("call_1"), sessionId: "a" });
    const b = queue.approver({ ...request("call_1"), sessionId: "b" });
    assert.deepEqual(queue.pending().map((p) => `${p.sessionId}/${p.callId}`), ["a/call_1", "b/call_1"]);
    assert.throws(() => queue.answer("call_1", true), (e) => HarnessError.isInstance(e, "APPROVAL_AMBIGUOUS"));
    assert.equal(queue.answer(queue.pending()[0], true), true);
    assert.equal(await a, "allowed-once");
    // One left on that call id: the call id alone names it.
    assert.equal(queue.answer("call_1", false), true);
    assert.equal(await b, "rejected");
    // A second ask of the same session's call replaces the first.
    const first = queue.approver({ ...request("call_2"), sessionId: "a" });
    const again = queue.approver({ ...request("call_2"), sessionId: "a" });
    assert.equal(await first, "cancelled");
    assert.equal(queue.answer({ callId: "call_2", sessionId: "a" }, true), true);
    assert.equal(await again, "allowed-once");
  });

  it("a withdrawn question leaves the queue as cancelled", async () => {
    const queue = new ApprovalQueue();
    const controller = new AbortController();
    const outcome = queue.approver(request("c1", controller.signal));
    controller.abort();
    assert.equal(await outcome, "cancelled");
    assert.deepEqual(queue.pending(), []);
  });

  it("refuses an answer outside the vocabulary", () => {
    const queue = new ApprovalQueue();
    void queue.approver(request("c1"));
    assert.throws(() => queue.answer("c1", "maybe" as never), (e) => HarnessError.isInstance(e, "INVALID_ARGS"));
    assert.equal(queue.pending().length, 1);
  });
});
