/**
 * Agents: the `Agent` handle, the inbox, the registry and factory seam, the
 * agent events, and the one loop that drives a session.
 *
 * @module
 */

export type {
  Agent,
  AgentHandle,
  AgentInput,
  AgentOptions,
  AgentStatus,
  AgentUpdate,
  CancelOptions,
  RunResult,
  SubscribeOptions,
} from "./agent.ts";
export type {
  AgentEvents,
  AgentRequestDraft,
  PreStepDecision,
  PreStepProposal,
  RequestErrorAction,
  RequestErrorInfo,
} from "./agent_events.ts";
export { type FailedRunResult, TurnFailedError } from "./turn_failed_error.ts";
export { Inbox, type InboxSplice } from "./inbox.ts";
export {
  type AgentFactory,
  AgentRegistry,
  type CreateAgentOptions,
  type ResumeAgentOptions,
} from "./agent_registry.ts";
export { type AgentLoopOptions, agentLoopPlugin, createLoopFactory } from "./agent_loop_plugin.ts";
export { LoopAgent, type LoopAgentInit, type LoopContext, type LoopServices } from "./agent_loop.ts";
