/**
 * The agent domain's events: lifecycle announcements (emit), the loop's
 * extension points (waterfalls) and the terminal checkpoint (serial).
 *
 * @module
 */

import type { SystemMessage, UserMessage } from "../llm/messages.ts";
import type { LlmCallConfig } from "../llm/llm_adapter.ts";
import type { LlmFailureData } from "../llm/llm_failure.ts";
import type { InboxEntry, InboxTarget } from "../session/mod.ts";
import type { Agent, AgentStatus } from "./agent.ts";

/** What the loop proposes to enter into a step. */
export interface PreStepProposal {
  readonly turn: number;
  /** The step about to open (1 for the first step of the turn). */
  readonly step: number;
  /** The claimed input, in claim order (system messages are context, entered as `system/message`). */
  readonly messages: readonly (UserMessage | SystemMessage)[];
  /** The turn's signal: work a listener starts (a model call, say) stops with the turn (`cancel()`, dispose). */
  readonly signal: AbortSignal;
}

/**
 * The decision of `agent/pre-step`: enter (possibly rewritten) messages, or
 * reject the step. A rejected step's followup is spent; its steering and
 * injected context go back to the inbox until the next wake, except the
 * messages `discard` names by id (a prompt a hook blocked must not come back).
 */
export type PreStepDecision =
  | { readonly kind: "enter"; readonly messages: readonly (UserMessage | SystemMessage)[] }
  | { readonly kind: "reject"; readonly reason?: string; readonly discard?: readonly string[] };

/** The request about to be prepared; `agent/request` listeners may change its config. */
export interface AgentRequestDraft {
  readonly turn: number;
  readonly step: number;
  readonly config: LlmCallConfig;
}

/** A failed model call, offered to `agent/request-error`. */
export interface RequestErrorInfo {
  readonly turn: number;
  readonly step: number;
  /** 1 for the first attempt of the step. */
  readonly attempt: number;
  readonly failure: LlmFailureData;
  /** The turn's signal: work a listener starts stops with the turn (`cancel()`, dispose). */
  readonly signal: AbortSignal;
}

/** What to do about a failed model call. */
export type RequestErrorAction =
  | {
    readonly kind: "retry";
    readonly delayMs: number;
    /** Derive the request from the log again (after a listener changed the surface, e.g. compaction). */
    readonly rebuild?: boolean;
  }
  | { readonly kind: "fail" };

/** The agent domain's events. */
export interface AgentEvents {
  /** An agent was created (after its session was announced). */
  "agent/created": (agent: Agent) => void;
  /** An agent was disposed. */
  "agent/disposed": (agent: Agent) => void;
  /** The agent's status changed. */
  "agent/status": (agent: Agent, status: AgentStatus) => void;
  /** The agent's driver started over a fresh (`create`) or loaded (`resume`) session. */
  "agent/session-start": (agent: Agent, reason: "create" | "resume") => void;
  /** The loop failed outside a model call (a listener or tool runtime defect). */
  "agent/error": (agent: Agent, error: unknown) => void;
  /** Input was queued. */
  "agent/inbox/inserted": (agent: Agent, entry: InboxEntry, target: InboxTarget) => void;
  /** Queued input was claimed by a step of `turn`. */
  "agent/inbox/claimed": (agent: Agent, entry: InboxEntry, turn: number) => void;
  /** Queued input was discarded by `cancel`. */
  "agent/inbox/discarded": (agent: Agent, entry: InboxEntry) => void;
  /** Decide what enters the next step; the returned decision is authoritative. */
  "agent/pre-step": (
    agent: Agent,
    proposal: PreStepProposal,
    next: () => Promise<PreStepDecision>,
  ) => Promise<PreStepDecision>;
  /** Shape the call configuration before the call is prepared. */
  "agent/request": (
    agent: Agent,
    draft: AgentRequestDraft,
    next: () => Promise<LlmCallConfig>,
  ) => Promise<LlmCallConfig>;
  /** Decide whether a failed model call is retried; the default applies the retry policy. */
  "agent/request-error": (
    agent: Agent,
    info: RequestErrorInfo,
    next: () => Promise<RequestErrorAction>,
  ) => Promise<RequestErrorAction>;
  /**
   * The turn is about to end naturally; listeners may `steer()` to keep it going. Every listener runs, one after
   * another (what one returns is ignored: `(agent) => agent.steer(…)` does not end the round). `signal` is the
   * turn's: work a listener starts stops with the turn (`cancel()`, dispose).
   */
  "agent/turn-stopping": (agent: Agent, turn: number, signal: AbortSignal) => void | Promise<void>;
}
