/**
 * The input and the result of `ToolRuntime.execute()`.
 *
 * @module
 */

import type { ScopeInfo } from "../kernel/harness_context.ts";
import type { UserMessage } from "../llm/messages.ts";

/** One call to execute, as the loop gives it. */
export interface ToolExecutionInput {
  /** The call id the model gave. */
  readonly callId: string;
  /** The tool name the model asked for. */
  readonly name: string;
  /** The raw JSON argument string from the model; `""` means `{}`; invalid JSON fails with `INVALID_ARGS`. */
  readonly arguments: string;
  /** The caller's cancellation signal (required). */
  readonly signal: AbortSignal;
  /** The scope (agent) the call runs for: it decides which tools and hooks apply. */
  readonly scope?: ScopeInfo;
  /** The session the call belongs to. */
  readonly sessionId?: string;
  /** The turn the call belongs to. */
  readonly turn?: number;
  /** The step the call belongs to. */
  readonly step?: number;
}

/** The error recorded on a failed result. */
export interface ToolResultErrorInfo {
  /** The error class name, e.g. `ToolArgsError`. */
  readonly name: string;
  /** The stable code, e.g. `UNKNOWN_TOOL`. */
  readonly code: string;
}

/**
 * The deep-frozen result of one call. `message` is what the loop appends as
 * `tool/result` (with `error` and `meta`); `value` lives only in memory.
 */
export interface ToolExecutionResult {
  /** Role `user`, source `{ kind: "tool", callId }`, exactly one `tool-result` block for the call. */
  readonly message: UserMessage;
  /** Present when the call failed. */
  readonly error?: ToolResultErrorInfo;
  /** Presentation metadata, JSON. */
  readonly meta?: Readonly<Record<string, unknown>>;
  /** The canonical value of a successful call (never on failures). */
  readonly value?: unknown;
  /** `true` when a successful call ended the turn. */
  readonly concludeTurn?: boolean;
  /** Messages deferred by the call, for the next step (in call order). */
  readonly contexts: readonly UserMessage[];
}
