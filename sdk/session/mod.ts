/**
 * The session log: the only source of truth of an agent. `Session` (the
 * append-only log), the surface (`SurfaceManager`, `foldSurface`), derived
 * history (`deriveEventMessage`), the request header (`headerEquals`), the
 * lossless-JSON rule, and `SessionStore` (`ctx.sessions`) with fork.
 *
 * @module
 */

export type {
  DerivedMessage,
  EpochHeader,
  HookEventName,
  HookOutcome,
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
  TurnEndReasonMap,
} from "./session_events.ts";
export {
  type LogOnlyAppendOptions,
  Session,
  SESSION_FORMAT_VERSION,
  type SessionAppendArgs,
  type SessionHeader,
  type SessionHeaderInit,
  type SessionObserver,
  type SessionOptions,
  type SessionProfile,
} from "./session.ts";
export {
  isSurfaceEventType,
  type SessionSurface,
  SURFACE_EVENT_TYPES,
  type SurfaceFoldReplacement,
  SurfaceManager,
} from "./surface_manager.ts";
export { foldSurface, type SurfaceFoldResult } from "./fold_surface.ts";
export { deriveEventMessage } from "./derive_event_message.ts";
export { canonicalHeader, headerEquals } from "./header_equals.ts";
export { assertLosslessJson, copyLosslessJson, type CopyLosslessJsonOptions } from "./lossless_json.ts";
export { deepFreeze } from "./deep_freeze.ts";
export { renderTranscript, type TranscriptOptions } from "./transcript.ts";
export {
  forkBoundary,
  type SessionCreateOptions,
  type SessionDispatchContext,
  type SessionEvents,
  type SessionForkSource,
  type SessionServices,
  SessionStore,
  type SessionStoreOptions,
  sessionStorePlugin,
} from "./session_store.ts";
