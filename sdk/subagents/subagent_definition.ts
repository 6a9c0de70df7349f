/**
 * What a subagent is: its definition, the request to run one, its result, and
 * the provider seam that runs it.
 *
 * @module
 */

import type { HarnessContext } from "../kernel/harness_context.ts";
import type { TokenUsage } from "../llm/stream_chunk.ts";
import type { TurnEndReason } from "../session/session_events.ts";
import type { ToolRestriction } from "../tools/tool_runtime.ts";
import type { Agent, AgentOptions } from "../agent/agent.ts";

/**
 * A kind of child agent the parent may delegate to. A child runs in a scope
 * inside its parent agent's: listeners, prompt contexts and guards registered
 * on the parent's `ctx` apply to the child too (its `system` replaces the
 * parent's sections, not its contexts: see `system`); register on the harness's `ctx` for
 * what should reach every agent, and on a child's `ctx` (in `setup`) for what
 * is the child's own.
 */
export interface SubagentDefinition {
  /** The name the model picks it by (letters, digits, `_` and `-`). */
  readonly name: string;
  /** What it is good at, for the model (listed in the `task` tool's description). */
  readonly description: string;
  /**
   * The child's own system prompt: a complete section in the child's scope,
   * so that none of the parent's sections apply — nor any section the
   * child's `setup` registers (a complete section is the whole prompt); prompt
   * contexts still reach the child. Without it the child assembles the prompt
   * its scope inherits (a fork keeps the parent's), with its own sections.
   */
  readonly system?: string;
  /** Which inherited tools the child sees (`restrict({ allow, deny })`); its own registrations stay. */
  readonly tools?: ToolRestriction;
  /**
   * `in-process`: a fresh child session; `fork`: the child starts from the
   * parent's completed prefix (everything before the open turn).
   *
   * @default {"in-process"}
   */
  readonly mode?: SubagentMode;
  /** Route overrides; by default the child uses the parent's route. */
  readonly model?: Partial<AgentOptions>;
  /**
   * Whether two delegations may run at once (the `task` tool's concurrency classification).
   *
   * @default {true}
   */
  readonly concurrencySafe?: boolean;
  /**
   * Register the child's own tools, prompt sections and listeners (in its
   * scope). Run when the child is made, and again before the first turn of a
   * child resumed by `harness.resumeAgent`. Its sections apply only to a
   * definition without `system`.
   */
  readonly setup?: (ctx: HarnessContext, agent: Agent) => void | Promise<void>;
}

/** How a child session starts. */
export type SubagentMode = "in-process" | "fork";

/** One delegation. */
export interface SubagentRequest {
  /** The definition's name. */
  readonly agent: string;
  /** The task, as the child's first user message. */
  readonly prompt: string;
  /** The parent session (and agent) id. */
  readonly parent: string;
  /**
   * The delegating tool call; names the child (`<parent>.<callId>` unless `childId`; when that is no valid session id,
   * as for a call id with `/` or an id over 128 characters, the call id and if need be the parent part are shortened
   * with a stable hash).
   */
  readonly callId: string;
  /** The parent's turn and step, recorded on `subagent/spawned`. */
  readonly turn: number;
  readonly step: number;
  /** Cancelling it cancels the child with cause `parent`. */
  readonly signal?: AbortSignal;
  /** The child session id (used as given: an invalid one fails the delegation). @default {`<parent>.<callId>`} */
  readonly childId?: string;
}

/** What a finished child reports. */
export interface SubagentResult {
  /** The child session id. */
  readonly session: string;
  /** The child's final answer (the text of its last assistant message with text). */
  readonly text: string;
  /** Why the child's turn ended. */
  readonly reason: TurnEndReason;
  /** The child turn's usage. */
  readonly usage: TokenUsage;
}
