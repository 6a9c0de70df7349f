/**
 * The hook bridge's vocabulary: what a hook receives (Claude Code's hook
 * input), what it may answer (its JSON output), and the in-process form of a
 * hook.
 *
 * @module
 */

import type { HookCommandConfig } from "../config/harness_config.ts";
import type { HookEventName, HookOutcome } from "../session/session_events.ts";

/**
 * What a hook gets on stdin (a function hook gets it as its argument):
 * Claude Code's field names, so existing hook scripts work unchanged.
 */
export interface HookInput {
  readonly session_id: string;
  readonly hook_event_name: HookEventName;
  /** The session's working directory, when it has one. */
  readonly cwd?: string;
  /** PreToolUse, PostToolUse: the tool name. */
  readonly tool_name?: string;
  /** PreToolUse, PostToolUse: the parsed arguments. */
  readonly tool_input?: unknown;
  /** PreToolUse, PostToolUse: the call id. */
  readonly tool_use_id?: string;
  /** PostToolUse: the outcome (`content`, `isError`, and `error` for failures). */
  readonly tool_response?: unknown;
  /** UserPromptSubmit: the prompt text. */
  readonly prompt?: string;
  /** Stop: whether the turn already goes on because a Stop hook asked for it. */
  readonly stop_hook_active?: boolean;
  /** SessionStart: `startup` for a new session, `resume` for a loaded one. */
  readonly source?: "startup" | "resume";
}

/**
 * What a hook may print on stdout (as JSON) or a function hook may return.
 * Unknown fields are ignored; a known field with a value it cannot have (an
 * unknown `decision` or `permissionDecision`, a `continue` that is not a
 * boolean) makes the answer `HOOK_BAD_OUTPUT`, as does stdout that is not one
 * JSON object for PreToolUse, PostToolUse and Stop.
 */
export interface HookOutput {
  /**
   * `false` stops the agent; what it does, by event (it overrides `decision` and `permissionDecision`):
   *
   * - PreToolUse: the call is denied with `stopReason`, and the turn is cancelled with cause `hook` (`aborted`).
   * - PostToolUse: the result is blocked with `stopReason`, and the turn is cancelled with cause `hook`.
   * - UserPromptSubmit: the prompt is erased unanswered, and the turn is cancelled with cause `hook`.
   * - Stop: the turn ends as it was about to, `completed` (it is not kept going, nor cancelled).
   * - SessionStart: ignored, as no turn runs yet (`additionalContext` still waits for the first turn).
   */
  readonly continue?: boolean;
  /** Why, when `continue` is `false` (PreToolUse's deny reason, PostToolUse's block feedback). */
  readonly stopReason?: string;
  /** `block`: block the prompt (UserPromptSubmit), the result (PostToolUse) or the stop (Stop). `approve` allows a tool call. */
  readonly decision?: "block" | "approve";
  /** The reason for `decision`. */
  readonly reason?: string;
  /** Event-specific answers. */
  readonly hookSpecificOutput?: {
    readonly hookEventName?: HookEventName;
    /** PreToolUse: allow, deny or ask. */
    readonly permissionDecision?: "allow" | "deny" | "ask";
    readonly permissionDecisionReason?: string;
    /** PreToolUse: the arguments to run the tool with instead. */
    readonly updatedInput?: unknown;
    /** UserPromptSubmit, PostToolUse, SessionStart: context for the model. */
    readonly additionalContext?: string;
  };
}

/** A hook written as a function, run in this process. */
export interface HookFunction {
  /** Discriminator. */
  readonly type: "function";
  /** Names the hook in `hook/invoked`. */
  readonly name: string;
  /**
   * Answer one invocation; throwing gives the outcome `HOOK_FAILED`. Return
   * nothing to go on.
   */
  run(input: HookInput, options: { readonly signal: AbortSignal }): HookOutput | void | Promise<HookOutput | void>;
  /**
   * Seconds before the answer is given up (`HOOK_TIMEOUT`): at least 0.001 (1 ms), at most 3600.
   *
   * @default {60}
   */
  readonly timeout?: number;
}

/** A configured hook: a command or a function. */
export type HookHandler = HookCommandConfig | HookFunction;

/** The hooks of one event whose matcher matches. */
export interface HookMatcher {
  /** See `HookMatcherConfig.matcher`. */
  readonly matcher?: string;
  readonly hooks: readonly HookHandler[];
}

/** Hooks by event, as the hook bridge takes them: the config's `hooks`, plus functions. */
export type HookTable = { readonly [K in HookEventName]?: readonly HookMatcher[] };

/** What one hook decided, normalised from its exit code and output. */
export interface HookVerdict {
  /** The outcome, as `hook/result` records it. */
  readonly outcome: HookOutcome;
  /** The error code when `outcome` is `error`. */
  readonly code?: string;
  /** The exit code of a command hook. */
  readonly exitCode?: number;
  /** Why it blocked or denied, or the error message. */
  readonly reason?: string;
  /** Context for the model. */
  readonly additionalContext?: string;
  /** The rewritten tool input (PreToolUse). */
  readonly updatedInput?: unknown;
  /** `continue: false`: stop the agent (see `HookOutput.continue`). */
  readonly stop?: boolean;
}
