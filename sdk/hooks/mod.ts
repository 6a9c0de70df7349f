/**
 * The hook bridge (`@dsh/harness/hooks`): hooks written for Claude Code's
 * protocol (commands with the event as JSON on stdin, or functions) run at
 * the harness's extension points — PreToolUse, PostToolUse, UserPromptSubmit,
 * Stop and SessionStart — and every invocation inside a turn logs
 * `hook/invoked`, then `hook/result` when it answers (a hook stopped by the
 * turn's cancellation has no `hook/result`).
 *
 * @module
 */

export type {
  HookFunction,
  HookHandler,
  HookInput,
  HookMatcher,
  HookOutput,
  HookTable,
  HookVerdict,
} from "./hook_definition.ts";
export {
  hookBridge,
  type HookBridgeOptions,
  type HookBridgeService,
  type HookEvents,
  type HookResultInfo,
} from "./hook_bridge.ts";
