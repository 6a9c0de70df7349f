/**
 * The session log's event vocabulary: envelopes, payloads, surface intents,
 * turn-end reasons and the request header.
 *
 * `SessionEventMap` is an interface so that applications can add their own
 * (log-only) event types to it.
 *
 * @module
 */

import type { AssistantMessage, Message, SystemMessage, ToolSchema, UserMessage } from "../llm/messages.ts";
import type { LlmCallConfig } from "../llm/llm_adapter.ts";
import type { LlmFailureData } from "../llm/llm_failure.ts";
import type { StreamChunk, TokenUsage } from "../llm/stream_chunk.ts";

/** Why a cancelled turn was cancelled. */
export type TurnEndCancelCause = "user" | "parent" | "hook" | "disposed";

/**
 * The turn-end vocabulary: kind → reason. An interface, so a plugin adds its
 * own kind with declaration merging in its own code; {@linkcode TurnEndReason}
 * is the union of its values.
 */
export interface TurnEndReasonMap {
  /** The model answered without further tool calls. */
  completed: { readonly kind: "completed" };
  /** The turn was cancelled. */
  aborted: { readonly kind: "aborted"; readonly reason: TurnEndCancelCause };
  /** A pre-step listener refused the input. */
  blocked: { readonly kind: "blocked" };
  /** The model call failed for good. */
  error: { readonly kind: "error"; readonly error: LlmFailureData };
  /** The output hit `maxTokens`. */
  "max-tokens": { readonly kind: "max-tokens" };
  /** The process stopped mid-turn; crash repair closed it. */
  interrupted: { readonly kind: "interrupted" };
}

/** Why a turn ended: the values of {@linkcode TurnEndReasonMap}. */
export type TurnEndReason = TurnEndReasonMap[keyof TurnEndReasonMap];

/** Fields the exact adapter filled in rather than the caller. */
export interface LlmCallConfigAdapterDefaults {
  readonly reasoningEffort?: true;
  readonly maxTokens?: true;
}

/** The request envelope: everything of a request that is not the history. */
export interface EpochHeader {
  readonly config: LlmCallConfig;
  readonly adapterDefaults?: LlmCallConfigAdapterDefaults;
  /** The rendered system prompt; absent when empty. */
  readonly system?: string;
  /** The tool schemas; absent when empty. */
  readonly tools?: readonly ToolSchema[];
}

/** The route's capacity, recorded apart from the header. */
export interface RequestContext {
  readonly provider: string;
  readonly model: string;
  readonly contextWindow?: number;
}

/** A tool error recorded on a tool result. */
export interface ToolResultError {
  readonly name: string;
  readonly code: string;
}

/** A todo list item. */
export interface TodoItem {
  /** A stable id the model gives the item, so that a UI can follow it across writes. */
  readonly id?: string;
  /** One imperative line. */
  readonly content: string;
  readonly status: "pending" | "in_progress" | "completed";
}

/** Which inbox an inbox splice changes. */
export type InboxTarget = "next-turn" | "next-step";

/** One queued piece of input. */
export interface InboxEntry {
  /** Unique within the session. */
  readonly id: string;
  /** The input; a system message is context for the model (entered as `system/message`). */
  readonly message: UserMessage | SystemMessage;
}

/** The hook events of the hook bridge (Claude Code's names). */
export type HookEventName = "PreToolUse" | "PostToolUse" | "UserPromptSubmit" | "Stop" | "SessionStart";

/**
 * How a hook invocation ended: `continue` (nothing to do), `block` (exit 2 or
 * a blocking decision), `allow` / `deny` / `ask` (a tool decision), `context`
 * (context added), `rewrite` (tool input rewritten), `continue-turn` (a Stop
 * hook asked the agent to go on), or `error` with a code (`HOOK_TIMEOUT`,
 * `HOOK_FAILED`, `HOOK_BAD_OUTPUT`, `HOOK_OUTPUT_TOO_LARGE`, `HOOK_SPAWN_FAILED`,
 * `HOOK_ABORTED`).
 */
export type HookOutcome =
  | "continue"
  | "block"
  | "allow"
  | "deny"
  | "ask"
  | "context"
  | "rewrite"
  | "continue-turn"
  | "error";

/**
 * The event vocabulary: event type → payload. An interface, so a plugin adds
 * its own log-only event types with declaration merging in its own code:
 *
 * ```ts ignore
 * declare module "@dsh/harness" {
 *   interface SessionEventMap {
 *     "acme/note": { readonly text: string };
 *   }
 * }
 * ```
 *
 * Plugin events are never surface events: they carry no `surfaceOp` and add
 * nothing to the derived history. Storage persists every well-formed event,
 * whatever its type; mark an event `ignorable: true` when readers that do not
 * know its type may skip it.
 */
export interface SessionEventMap {
  "turn/start": { readonly turn: number };
  "turn/end": { readonly turn: number; readonly reason: TurnEndReason };
  "step/start": { readonly turn: number; readonly step: number };
  "step/end": { readonly turn: number; readonly step: number };
  "user/message": UserMessage;
  /** Model-visible context (prompt contexts, hook context, tool contexts), logged where the model sees it. */
  "system/message": SystemMessage;
  "assistant/chunk": { readonly turn: number; readonly step: number; readonly chunk: StreamChunk };
  "assistant/message": {
    readonly turn: number;
    readonly step: number;
    readonly message: AssistantMessage;
    readonly usage?: TokenUsage;
    readonly interrupted?: true;
  };
  "tool/call": {
    readonly turn: number;
    readonly step: number;
    readonly callId: string;
    readonly name: string;
    /** The raw argument string as the model produced it. */
    readonly arguments: string;
  };
  "tool/result": {
    readonly turn: number;
    readonly step: number;
    readonly message: UserMessage;
    readonly error?: ToolResultError;
    readonly meta?: Readonly<Record<string, unknown>>;
  };
  "todo/write": { readonly todos: readonly TodoItem[] };
  /** A hook of the hook bridge was started (log-only; inside the open turn). */
  "hook/invoked": {
    /** Joins the invocation to its `hook/result`. */
    readonly handlerId: string;
    readonly event: HookEventName;
    /** The configured hook: its command, or the name of an in-process function. */
    readonly hook: string;
    /** The tool the hook runs for (tool events). */
    readonly toolName?: string;
    /** The tool call the hook runs for (tool events). */
    readonly callId?: string;
  };
  /** A hook of the hook bridge ended (log-only; inside the open turn). */
  "hook/result": {
    readonly handlerId: string;
    readonly outcome: HookOutcome;
    /** The error code when `outcome` is `error`. */
    readonly code?: string;
    /** The process's exit code, for command hooks. */
    readonly exitCode?: number;
    /** The block or deny reason, or the error message. */
    readonly reason?: string;
    /** Context the hook added. */
    readonly additionalContext?: string;
    /** The rewritten tool input, as JSON. */
    readonly updatedInput?: unknown;
    readonly durationMs?: number;
  };
  /** A subagent started over a child session (log-only; inside the open turn). */
  "subagent/spawned": {
    readonly turn: number;
    readonly step: number;
    /** The tool call that delegates to the child. */
    readonly callId: string;
    /** The child session's id. */
    readonly session: string;
    /** `in-process`: a fresh child; `fork`: the child starts from the parent's completed prefix. */
    readonly mode: "in-process" | "fork";
    /** The subagent definition's name. */
    readonly agent: string;
  };
  "request/header": { readonly header: EpochHeader; readonly reason: "initial" | "resume" | "change" };
  "request/context": RequestContext;
  "session/end-seed": Record<string, never>;
  "agent/inbox/spliced": {
    readonly target: InboxTarget;
    readonly start: number;
    readonly removedCount?: number;
    readonly inserted: readonly InboxEntry[];
    /** Why entries were removed: `claimed` by a step, `canceled` by cancel. */
    readonly outcome?: "claimed" | "canceled";
  };
  "llm/retry": {
    readonly turn: number;
    readonly step: number;
    readonly attempt: number;
    readonly delayMs: number;
    readonly failure: LlmFailureData;
  };
  "compaction/start": { readonly reason: "manual" | "threshold" | "overflow" };
  "compaction/summary": { readonly summary: string; readonly start: number; readonly end: number };
  "compaction/prune": { readonly seqs: readonly number[] };
  "compaction/end": {
    readonly outcome: "completed" | "failed" | "skipped";
    /** Why it failed, for people: `<code>: <message>` of the summary call's failure, or the compaction's own text. */
    readonly error?: string;
    /**
     * How many summary calls the compaction made (retries included), 0 when it failed before its first; absent in
     * logs written before it was recorded, and when no summary call was due (a `skipped` compaction).
     */
    readonly attempts?: number;
    /**
     * The failure of the last summary call, as data, when that call failed (the text in `error` may carry more);
     * `cancelled` when the call itself was cancelled (its stream ended `aborted`). Absent in older logs.
     */
    readonly failure?: { readonly code: string; readonly message: string; readonly cancelled?: boolean };
    /**
     * The token usage the summary calls reported, summed over every attempt (failed ones too); absent when none
     * reported any, and in older logs. `usageTotals` counts it.
     */
    readonly usage?: TokenUsage;
  };
}

/** Every event type. */
export type SessionEventType = keyof SessionEventMap & string;

/** The event types that produce messages and carry surface metadata. */
export type SurfaceEventType = "user/message" | "system/message" | "assistant/message" | "tool/result";

/** How an event joins the surface. `replace` shadows the nodes `start..end` (inclusive seqs). */
export type SurfaceOp = "append" | { readonly op: "replace"; readonly start: number; readonly end: number };

/** The surface argument of `append()` for surface event types. */
export interface SurfaceIntent {
  readonly surfaceOp: SurfaceOp;
  /** Every earlier event this one is derived from. */
  readonly sourceEventSeqs?: readonly number[];
}

/** One entry of the log. */
export type SessionEvent<T extends SessionEventType = SessionEventType> = {
  [K in T]: {
    readonly type: K;
    /** Position in the log, from 0. */
    readonly seq: number;
    /** Unix epoch milliseconds. */
    readonly time: number;
    readonly data: SessionEventMap[K];
    /** Readers that do not know the type may skip it. */
    readonly ignorable?: true;
    readonly surfaceOp?: K extends SurfaceEventType ? SurfaceOp : never;
    readonly sourceEventSeqs?: K extends SurfaceEventType ? readonly number[] : never;
  };
}[T];

/** A message derived from a surface node. */
export type DerivedMessage = Message;
