/**
 * `HttpSessionSummary`: what the HTTP app reports about a session.
 *
 * @module
 */

import type { TokenUsage } from "../llm/stream_chunk.ts";
import type { Session } from "../session/session.ts";
import { type ProjectionSource, type SessionProjections, turnBoundary, usageTotals } from "../projections/mod.ts";

/** A tool call waiting for an answer at `POST /sessions/:id/approvals/:callId`. */
export interface HttpPendingApproval {
  /**
   * The session that asks: the listed session's own id, or a subagent's below it (the parent lists its
   * subagents' questions too); the question is answered at this session's approval route.
   */
  readonly sessionId: string;
  /** The call being decided. */
  readonly callId: string;
  /** The tool being called. */
  readonly toolName: string;
  /** The parsed arguments. */
  readonly args: unknown;
  /** Why the policy asks. */
  readonly reason?: string;
}

/** The body of `GET /sessions/:id` (and of the creation and fork responses). */
export interface HttpSessionSummary {
  /** The session (and agent) id. */
  readonly id: string;
  /** `true` when an agent drives the session in this process; `false` for a session only in storage. */
  readonly live: boolean;
  /** `idle` or `running` for a live session, `stored` otherwise. */
  readonly status: "idle" | "running" | "stored";
  /** The provider route, when known. */
  readonly provider?: string;
  /** The model id, when known. */
  readonly model?: string;
  /** How many turns have started. */
  readonly turns: number;
  /** The seq the next event will get: the length of the log. */
  readonly seq: number;
  /**
   * Token usage summed over every model call of the session; a fork's counts the calls after the seed it copied from
   * its parent only (the parent's are the parent's: see `usageTotals`).
   */
  readonly usage: TokenUsage;
  /** Creation time, Unix epoch milliseconds, when known. */
  readonly createdAt?: number;
  /** The session this one was forked from. */
  readonly parentSession?: string;
  /** Tool calls waiting for approval. */
  readonly pendingApprovals: readonly HttpPendingApproval[];
}

/**
 * The counters of a summary, from the log's projections (`turnBoundary`, `usageTotals`). A stored session is given
 * with its header, as a live one has its own: a fork's usage leaves out its seed's only when the header says where
 * the seed ends.
 */
export function summarizeLog(
  source: ProjectionSource,
  projections: SessionProjections,
  upTo?: number,
): { turns: number; seq: number; usage: TokenUsage } {
  // A live session folds incrementally, up to `upTo` when given (the part on storage); a log as it is.
  const options = upTo === undefined ? {} : { upTo };
  const boundary = projections.stateOf(source, turnBoundary, options);
  const usage = projections.stateOf(source, usageTotals, options).total;
  const seq = Array.isArray(source)
    ? source.length
    : typeof (source as Partial<Session>).slice === "function"
    ? Math.min(upTo ?? Infinity, (source as Session).seq)
    : (source as { readonly events: readonly unknown[] }).events.length;
  return { turns: boundary.turns, seq, usage };
}
