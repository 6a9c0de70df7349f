/**
 * `ApprovalQueue`: an approver whose questions wait for an answer given later
 * (by an HTTP layer, a UI, a test).
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { ApprovalOutcome, ApprovalRequest, Approver } from "./approval_service.ts";

/** A question waiting in an {@linkcode ApprovalQueue}: the request without its signal; answer with its `callId`. */
export type PendingApproval = Omit<ApprovalRequest, "signal">;

/** Options of {@linkcode ApprovalQueue}. */
export interface ApprovalQueueOptions {
  /** Called whenever a question is queued or leaves the queue (answered or withdrawn). */
  onChange?: (pending: readonly PendingApproval[]) => void;
}

interface Waiting {
  readonly pending: PendingApproval;
  readonly resolve: (outcome: ApprovalOutcome) => void;
}

/**
 * Queues every approval request until {@linkcode ApprovalQueue.answer} is
 * called with its call id. A withdrawn request (its signal aborts) leaves the
 * queue as `cancelled`. Register `queue.approver` with the approval service.
 *
 * @example Answering a pending ask later
 * ```ts
 * import { ApprovalQueue, ApprovalService } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const queue = new ApprovalQueue();
 * const approvals = new ApprovalService();
 * approvals.register(queue.approver);
 * const outcome = approvals.request({ callId: "c1", toolName: "rm", args: {}, signal: new AbortController().signal });
 * await Promise.resolve();
 * assert.deepEqual(queue.pending().map((p) => p.callId), ["c1"]);
 * assert.equal(queue.answer("c1", true), true);
 * assert.equal(await outcome, "allowed-once");
 * assert.equal(queue.pending().length, 0);
 * ```
 */
export class ApprovalQueue {
  #waiting = new Map<string, Waiting>();
  #onChange: ApprovalQueueOptions["onChange"];

  /**
   * Create an empty queue.
   *
   * @param options Change notification.
   */
  constructor(options: ApprovalQueueOptions = {}) {
    this.#onChange = options.onChange;
  }

  /** The approver to register with an `ApprovalService`; it answers every request it sees. */
  readonly approver: Approver = (request: ApprovalRequest): Promise<ApprovalOutcome> => {
    if (request.signal.aborted) return Promise.resolve("cancelled");
    return new Promise<ApprovalOutcome>((resolve) => {
      const { callId, toolName, args, reason, scope, sessionId } = request;
      const pending: PendingApproval = Object.freeze({
        callId,
        toolName,
        args,
        ...(reason !== undefined ? { reason } : {}),
        ...(scope !== undefined ? { scope } : {}),
        ...(sessionId !== undefined ? { sessionId } : {}),
      });
      // A second ask for the same call id replaces the first, which is withdrawn.
      this.#settle(callId, "cancelled", false);
      const onAbort = () => this.#settle(callId, "cancelled");
      request.signal.addEventListener("abort", onAbort, { once: true });
      this.#waiting.set(callId, {
        pending,
        resolve: (outcome) => {
          request.signal.removeEventListener("abort", onAbort);
          resolve(outcome);
        },
      });
      this.#changed();
    });
  };

  /**
   * The questions waiting for an answer, oldest first.
   *
   * @returns A snapshot of the queue.
   */
  pending(): readonly PendingApproval[] {
    return [...this.#waiting.values()].map((w) => w.pending);
  }

  /**
   * Answer a waiting question.
   *
   * @param callId The call the question is about.
   * @param decision `true` grants once, `false` rejects, or an outcome.
   * @returns `false` when no question waits for that call id.
   * @throws {HarnessError} `INVALID_ARGS` when `decision` is not a boolean or an outcome.
   */
  answer(callId: string, decision: boolean | ApprovalOutcome): boolean {
    const outcome = decision === true ? "allowed-once" : decision === false ? "rejected" : decision;
    if (!["allowed-once", "rejected", "cancelled", "unavailable"].includes(outcome)) {
      throw new HarnessError("INVALID_ARGS", `Cannot answer an approval with ${JSON.stringify(decision)}`);
    }
    return this.#settle(callId, outcome);
  }

  #settle(callId: string, outcome: ApprovalOutcome, notify = true): boolean {
    const waiting = this.#waiting.get(callId);
    if (waiting === undefined) return false;
    this.#waiting.delete(callId);
    waiting.resolve(outcome);
    if (notify) this.#changed();
    return true;
  }

  #changed(): void {
    try {
      this.#onChange?.(this.pending());
    } catch { /* a failing observer does not break the queue */ }
  }
}
