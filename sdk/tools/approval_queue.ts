/**
 * `ApprovalQueue`: an approver whose questions wait for an answer given later
 * (by an HTTP layer, a UI, a test).
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { ApprovalOutcome, ApprovalRequest, Approver } from "./approval_service.ts";

/**
 * A question waiting in an {@linkcode ApprovalQueue}: the request without its
 * signal; answer with it, or with its `callId`.
 */
export type PendingApproval = Omit<ApprovalRequest, "signal">;

/** Options of {@linkcode ApprovalQueue}. */
export interface ApprovalQueueOptions {
  /** Called whenever a question is queued or leaves the queue (answered or withdrawn). */
  onChange?: (pending: readonly PendingApproval[]) => void;
}

/** Where a question waits: its session and call id. */
function keyOf(question: Pick<PendingApproval, "callId" | "sessionId">): string {
  return question.sessionId === undefined ? question.callId : `${question.sessionId}\u0000${question.callId}`;
}

interface Waiting {
  readonly pending: PendingApproval;
  readonly resolve: (outcome: ApprovalOutcome) => void;
}

/**
 * Queues every approval request until {@linkcode ApprovalQueue.answer} is
 * called for it. Questions are told apart by session and call id: call ids
 * come from the model and repeat across sessions (`call_0`), so agents sharing
 * one queue keep their questions apart. A withdrawn request (its signal
 * aborts) leaves the queue as `cancelled`. Register `queue.approver` with the
 * approval service.
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
      // A second ask for the same call of the same session replaces the first, which is withdrawn.
      const key = keyOf(pending);
      this.#settle(key, "cancelled", false);
      const onAbort = () => this.#settle(key, "cancelled");
      request.signal.addEventListener("abort", onAbort, { once: true });
      this.#waiting.set(key, {
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
   * @param question The question (an item of {@linkcode ApprovalQueue.pending}), or its call id when only one
   *   session waits on that call id.
   * @param decision `true` grants once, `false` rejects, or an outcome.
   * @returns `false` when no such question waits.
   * @throws {HarnessError} `INVALID_ARGS` when `decision` is not a boolean or an outcome;
   *   `APPROVAL_AMBIGUOUS` when questions of several sessions wait on that call id (answer with the question).
   */
  answer(
    question: string | Pick<PendingApproval, "callId" | "sessionId">,
    decision: boolean | ApprovalOutcome,
  ): boolean {
    const outcome = decision === true ? "allowed-once" : decision === false ? "rejected" : decision;
    if (!["allowed-once", "rejected", "cancelled", "unavailable"].includes(outcome)) {
      throw new HarnessError("INVALID_ARGS", `Cannot answer an approval with ${JSON.stringify(decision)}`);
    }
    if (typeof question === "object" && question !== null && typeof question.callId === "string") {
      return this.#settle(keyOf(question), outcome);
    }
    if (typeof question !== "string") {
      throw new HarnessError("INVALID_ARGS", "answer() takes a pending question or its call id");
    }
    const keys = [...this.#waiting].flatMap(([key, w]) => w.pending.callId === question ? [key] : []);
    if (keys.length > 1) {
      throw new HarnessError(
        "APPROVAL_AMBIGUOUS",
        `Questions of ${keys.length} sessions wait on call id ${JSON.stringify(question)}: answer with the question`,
        { details: { callId: question } },
      );
    }
    return keys.length === 1 && this.#settle(keys[0], outcome);
  }

  #settle(key: string, outcome: ApprovalOutcome, notify = true): boolean {
    const waiting = this.#waiting.get(key);
    if (waiting === undefined) return false;
    this.#waiting.delete(key);
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
