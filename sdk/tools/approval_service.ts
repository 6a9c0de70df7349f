/**
 * The approval seam: who answers a tool call's `ask` decision.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { ScopeInfo } from "../kernel/harness_context.ts";
import { appliesTo } from "../prompt/_scoped_dispatch.ts";
import type { RegistrationOwner } from "../prompt/registration_owner.ts";

/**
 * The closed outcomes of an approval request. Only `allowed-once` runs the
 * call; every other outcome denies it (fail closed).
 */
export type ApprovalOutcome = "allowed-once" | "rejected" | "cancelled" | "unavailable";

/** One question: may this tool call run? */
export interface ApprovalRequest {
  /** The call being decided (lets a UI attach the question to the call it already shows). */
  readonly callId: string;
  /** The tool being called. */
  readonly toolName: string;
  /** The parsed, frozen arguments. */
  readonly args: unknown;
  /** Why the policy asks. */
  readonly reason?: string;
  /** The scope (agent) the call runs for. */
  readonly scope?: ScopeInfo;
  /** The session the call belongs to. */
  readonly sessionId?: string;
  /** Aborted when the question is withdrawn; the request then settles `cancelled`. */
  readonly signal: AbortSignal;
}

/**
 * Answers approval requests. Return an outcome to decide, or `undefined` to
 * leave the request to the next approver.
 */
export type Approver = (
  request: ApprovalRequest,
) => ApprovalOutcome | undefined | Promise<ApprovalOutcome | undefined>;

const OUTCOMES: ReadonlySet<string> = new Set(["allowed-once", "rejected", "cancelled", "unavailable"]);

interface Entry {
  readonly approver: Approver;
  readonly scope: ScopeInfo | undefined;
  readonly seq: number;
  /** Told when the approver is removed: the questions it holds go on to the next approver. */
  readonly holding: Set<() => void>;
}

const REMOVED: unique symbol = Symbol("approver removed");

function depth(scope: ScopeInfo | undefined): number {
  let n = 0;
  for (let s = scope; s !== undefined; s = s.parent) n++;
  return n;
}

/**
 * The approval service (`ctx.approvals`). An approver registered through a
 * scoped context answers requests of that scope and its descendants only;
 * approvers are consulted from the nearest scope outwards, the most recently
 * registered first within a scope;
 * the first that returns an outcome decides. With no approver, or none that
 * answers, the outcome is `unavailable`, which denies the call. An approver
 * that throws or returns something else also yields `unavailable`.
 *
 * @example Denied by default, allowed by a programmatic approver
 * ```ts
 * import { ApprovalService, programmaticApprover } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const approvals = new ApprovalService();
 * const request = { callId: "c1", toolName: "rm", args: {}, signal: new AbortController().signal };
 * assert.equal(await approvals.request(request), "unavailable");
 * approvals.register(programmaticApprover((req) => req.toolName !== "rm"));
 * assert.equal(await approvals.request(request), "rejected");
 * ```
 */
export class ApprovalService {
  #entries: Entry[] = [];
  #seq = 0;

  /**
   * Register an approver.
   *
   * @param approver The approver.
   * @param owner The registering context: the approver answers only for its
   *   scope and descendants, and goes away with it. Omitted: global, until disposed.
   * @returns A disposer that removes the approver.
   */
  register(approver: Approver, owner?: RegistrationOwner): () => void {
    const entry: Entry = { approver, scope: owner?.scope, seq: this.#seq++, holding: new Set() };
    const add = () => {
      this.#entries.push(entry);
      return () => {
        this.#entries = this.#entries.filter((e) => e !== entry);
        for (const release of [...entry.holding]) release();
      };
    };
    if (owner === undefined) return add();
    const dispose = owner.effect(add, "approver");
    return () => void dispose();
  }

  /**
   * Ask the approvers.
   *
   * @param request The question.
   * @returns The outcome; `allowed-once` is the only grant.
   */
  async request(request: ApprovalRequest): Promise<ApprovalOutcome> {
    const { signal } = request;
    if (signal.aborted) return "cancelled";
    const chain = this.#entries
      .filter((e) => appliesTo(e.scope, request.scope))
      .sort((a, b) => depth(b.scope) - depth(a.scope) || b.seq - a.seq);
    let onAbort!: () => void;
    const cancelled = new Promise<"cancelled">((resolve) => {
      onAbort = () => resolve("cancelled");
      signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      for (const { approver, holding } of chain) {
        // The approver's own signal also fires when it is removed, so that it withdraws the question (a queue's UI).
        const own = new AbortController();
        const relay = () => own.abort(signal.reason);
        signal.addEventListener("abort", relay, { once: true });
        let release!: () => void;
        const removed = new Promise<typeof REMOVED>((resolve) => {
          release = () => {
            own.abort(new HarnessError("ABORTED", "The approver was removed"));
            resolve(REMOVED);
          };
        });
        holding.add(release);
        let answer: unknown;
        try {
          const asked = { ...request, signal: own.signal };
          answer = await Promise.race([Promise.resolve().then(() => approver(asked)), cancelled, removed]);
        } catch {
          return "unavailable";
        } finally {
          signal.removeEventListener("abort", relay);
          holding.delete(release);
        }
        // An approver removed while it held the question (its plugin disposed) has no say: the next one is asked.
        if (answer === undefined || answer === REMOVED) continue;
        return typeof answer === "string" && OUTCOMES.has(answer) ? answer as ApprovalOutcome : "unavailable";
      }
      return "unavailable";
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }
}

/**
 * An approver backed by a function: `true` grants once, `false` rejects, an
 * outcome string is used as is, `undefined` passes to the next approver.
 *
 * @param decide The decision function.
 * @returns The approver.
 *
 * @example
 * ```ts
 * import { programmaticApprover } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const approver = programmaticApprover((req) => req.toolName === "read_file");
 * const signal = new AbortController().signal;
 * assert.equal(await approver({ callId: "c1", toolName: "read_file", args: {}, signal }), "allowed-once");
 * assert.equal(await approver({ callId: "c2", toolName: "rm", args: {}, signal }), "rejected");
 * ```
 */
export function programmaticApprover(
  decide: (
    request: ApprovalRequest,
  ) => boolean | ApprovalOutcome | undefined | Promise<boolean | ApprovalOutcome | undefined>,
): Approver {
  return async (request) => {
    const answer = await decide(request);
    if (answer === true) return "allowed-once";
    if (answer === false) return "rejected";
    return answer;
  };
}

/**
 * An approver that grants every request once (for scripts and tests).
 *
 * @returns The approver.
 *
 * @example
 * ```ts
 * import { approveAll } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const signal = new AbortController().signal;
 * assert.equal(await approveAll()({ callId: "c1", toolName: "rm", args: {}, signal }), "allowed-once");
 * ```
 */
export function approveAll(): Approver {
  return () => "allowed-once";
}
