/**
 * The events of the tool pipeline and the decisions its hooks return.
 *
 * @module
 */

import type { UserMessage } from "../llm/messages.ts";
import type { ToolContentInput, ToolExecution, ToolOutcome } from "./tool_definition.ts";
import type { ToolExecutionResult } from "./tool_execution_result.ts";

/**
 * A `tools/pre-execute` decision. `allow` runs the call; `deny` turns it into
 * an error result (`DENIED`); `ask` runs it only when the approval service
 * answers `allowed-once`. `allow` and `ask` may carry a rewritten `input`
 * (the arguments as JSON): the guards, the approval and the body then see it,
 * while the logged `tool/call` keeps what the model produced, so whoever
 * rewrites records the rewrite (the hook bridge does, on `hook/result`).
 */
export type PreToolDecision =
  | { readonly kind: "allow"; readonly input?: unknown }
  | { readonly kind: "deny"; readonly reason: string }
  | { readonly kind: "ask"; readonly reason?: string; readonly input?: unknown };

/**
 * A `tools/post-execute` decision. `accept` keeps the outcome, optionally
 * replacing its content (presentation only) or its value (revalidated and
 * re-rendered), never both; `block` turns it into an error result (`BLOCKED`)
 * whose content is the feedback. Any decision may attach contexts for the
 * next step.
 */
export type PostToolDecision =
  | {
    readonly kind: "accept";
    readonly content?: ToolContentInput;
    readonly value?: undefined;
    readonly contexts?: readonly UserMessage[];
  }
  | {
    readonly kind: "accept";
    readonly value: unknown;
    readonly content?: undefined;
    readonly contexts?: readonly UserMessage[];
  }
  | { readonly kind: "block"; readonly feedback: ToolContentInput; readonly contexts?: readonly UserMessage[] };

/**
 * The call as a `tools/execute` wrapper sees it: a copy whose `signal` the
 * wrapper may replace for what it wraps. The caller's signal still applies.
 */
export interface ToolDispatchExecution extends Omit<ToolExecution, "signal"> {
  /** The signal the next wrapper and the body observe (combined with the caller's). */
  signal: AbortSignal;
}

/**
 * The events of the tool pipeline, for the kernel's typed context.
 *
 * Dispatch: the three waterfalls and `tools/result` are filtered by the
 * call's scope: listeners outside every scope, and those of the call's scope
 * and its ancestors (a call without a scope reaches unscoped listeners only);
 * `tools/change` is an unfiltered announcement heard by every listener.
 */
export interface ToolEvents {
  /** Allow, deny or ask before the call runs; `next()` allows. */
  "tools/pre-execute": (
    exec: ToolExecution,
    next: () => Promise<PreToolDecision>,
  ) => PreToolDecision | Promise<PreToolDecision>;
  /**
   * Wrap the body (timeouts, retries, metrics); `next()` runs the rest of the
   * chain and the body and may be called again to retry.
   */
  "tools/execute": (
    exec: ToolDispatchExecution,
    next: () => Promise<ToolOutcome>,
  ) => ToolOutcome | Promise<ToolOutcome>;
  /** Accept, replace or block an outcome; `next()` accepts it unchanged. Failures reach it too. */
  "tools/post-execute": (
    exec: ToolExecution,
    outcome: ToolOutcome,
    next: () => Promise<PostToolDecision>,
  ) => PostToolDecision | Promise<PostToolDecision>;
  /** The final, deep-frozen result of a call. */
  "tools/result": (exec: ToolExecution, result: ToolExecutionResult) => void;
  /** A tool was registered or removed, or a restriction changed. */
  "tools/change": () => void;
}
