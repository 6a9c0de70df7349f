import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createKernel, createScope } from "../kernel/mod.ts";
import { type ApprovalRequest, ApprovalService, approveAll, programmaticApprover } from "./approval_service.ts";
import { settle } from "./_test_util.ts";
import { HarnessError } from "../kernel/harness_error.ts";

const request = (extra: Partial<ApprovalRequest> = {}): ApprovalRequest => ({
  callId: "c1",
  toolName: "rm",
  args: {},
  signal: new AbortController().signal,
  ...extra,
});

describe("ApprovalService", () => {
  it("is unavailable with no approver, or when every approver passes", async () => {
    const approvals = new ApprovalService();
    assert.equal(await approvals.request(request()), "unavailable");
    approvals.register(() => undefined);
    assert.equal(await approvals.request(request()), "unavailable");
  });

  it("fails closed on a throwing approver or a value outside the vocabulary", async () => {
    const approvals = new ApprovalService();
    const off = approvals.register(() => {
      throw new Error("ui crashed");
    });
    assert.equal(await approvals.request(request()), "unavailable");
    off();
    approvals.register(() => "yes please" as never);
    assert.equal(await approvals.request(request()), "unavailable");
  });

  it("the most recent approver is asked first; passing falls through to the older one", async () => {
    const approvals = new ApprovalService();
    approvals.register(approveAll());
    approvals.register(programmaticApprover((req) => (req.toolName === "rm" ? false : undefined)));
    assert.equal(await approvals.request(request()), "rejected");
    assert.equal(await approvals.request(request({ toolName: "ls" })), "allowed-once");
  });

  it("a scoped approver answers only for its scope and descendants, before global ones, and goes with its scope", async () => {
    const ctx = createKernel();
    const a = createScope(ctx, "a");
    const child = createScope(a.ctx, "child");
    const b = createScope(ctx, "b");
    const approvals = new ApprovalService();
    approvals.register(programmaticApprover(() => false));
    approvals.register(approveAll(), a.ctx);
    assert.equal(await approvals.request(request({ scope: child.info })), "allowed-once");
    assert.equal(await approvals.request(request({ scope: b.info })), "rejected");
    await a.dispose();
    assert.equal(await approvals.request(request({ scope: child.info })), "rejected");
  });

  it("a withdrawn request settles cancelled, even while an approver is still thinking", async () => {
    const approvals = new ApprovalService();
    approvals.register(() => new Promise(() => {}));
    const controller = new AbortController();
    const outcome = approvals.request(request({ signal: controller.signal }));
    await settle();
    controller.abort();
    assert.equal(await outcome, "cancelled");
    assert.equal(await approvals.request(request({ signal: controller.signal })), "cancelled");
  });

  it("an approver removed while it holds a question (its plugin disposed) lets it go: its signal fires, the next one answers", async () => {
    const approvals = new ApprovalService();
    approvals.register(() => "allowed-once");
    let heard: unknown;
    const remove = approvals.register((req) =>
      new Promise(() => {
        req.signal.addEventListener("abort", () => heard = req.signal.reason);
      })
    );
    const controller = new AbortController();
    const outcome = approvals.request(request({ signal: controller.signal }));
    await settle();
    remove();
    assert.equal(await outcome, "allowed-once");
    assert.ok(HarnessError.isInstance(heard, "ABORTED"), String(heard));
    assert.equal(controller.signal.aborted, false);
  });
});
