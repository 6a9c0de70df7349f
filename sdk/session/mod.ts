/**
 * The session log: the only source of truth of an agent.
 *
 * @module
 */

export type {
  DerivedMessage,
  EpochHeader,
  InboxEntry,
  InboxTarget,
  LlmCallConfigAdapterDefaults,
  RequestContext,
  SessionEvent,
  SessionEventMap,
  SessionEventType,
  SurfaceEventType,
  SurfaceIntent,
  SurfaceOp,
  TodoItem,
  ToolResultError,
  TurnEndCancelCause,
  TurnEndReason,
} from "./session_events.ts";
