// Internal: run one hook (a command through ctx.subprocess, or a function) and
// read its answer by Claude Code's protocol into a verdict. Nothing throws:
// every failure is a verdict with a code.

import type { SubprocessService } from "../capabilities/subprocess/subprocess_service.ts";
import type { HookHandler, HookInput, HookOutput, HookVerdict } from "./hook_definition.ts";
import { assertLosslessJson } from "../session/lossless_json.ts";

const DEFAULT_TIMEOUT_S = 60;
/** The most of a command hook's stdout (and stderr) that is read. */
const MAX_OUTPUT_BYTES = 256 * 1024;

/** The verdict of a hook stopped by its signal: the turn was cancelled, or the agent disposed. */
const ABORTED: HookVerdict = {
  outcome: "error",
  code: "HOOK_ABORTED",
  reason: "The hook was stopped: its turn was cancelled or its agent disposed",
};

/** The name a hook has in `hook/invoked`. */
export function hookLabel(handler: HookHandler): string {
  return handler.type === "command" ? handler.command : `function:${handler.name}`;
}

/** Run one hook. */
export async function runHook(
  handler: HookHandler,
  input: HookInput,
  options: {
    subprocess: SubprocessService | undefined;
    signal: AbortSignal;
    cwd?: string;
    /** A command's environment: the provider's own under `env` (`true`), or `env` exactly (`false`). */
    inheritEnv: boolean;
    env: Readonly<Record<string, string>>;
  },
): Promise<HookVerdict> {
  const timeoutMs = Math.round((handler.timeout ?? DEFAULT_TIMEOUT_S) * 1000);
  if (handler.type === "function") return await runFunction(handler, input, timeoutMs, options.signal);
  if (options.subprocess === undefined) {
    return { outcome: "error", code: "HOOK_NO_SUBPROCESS", reason: "No ctx.subprocess is provided to run hooks" };
  }
  let result;
  try {
    result = await options.subprocess.run(["sh", "-c", handler.command], {
      stdin: JSON.stringify(input),
      inheritEnv: options.inheritEnv,
      env: options.env,
      timeoutMs,
      signal: options.signal,
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      maxOutputBytes: MAX_OUTPUT_BYTES,
    });
  } catch (error) {
    return { outcome: "error", code: "HOOK_SPAWN_FAILED", reason: messageOf(error) };
  }
  if (result.timedOut) {
    return { outcome: "error", code: "HOOK_TIMEOUT", reason: `The hook did not finish within ${timeoutMs} ms` };
  }
  if (result.aborted) return ABORTED;
  const exitCode = result.exitCode ?? undefined;
  if (result.exitCode === 2) {
    return { outcome: "block", exitCode: 2, reason: result.stderr.trim() || "blocked by a hook" };
  }
  if (result.exitCode !== 0) {
    const how = result.exitCode === null ? `was killed by ${result.signal}` : `exited with ${result.exitCode}`;
    return {
      outcome: "error",
      code: "HOOK_FAILED",
      ...(exitCode !== undefined ? { exitCode } : {}),
      reason: `The hook ${how}${result.stderr.trim() ? `: ${result.stderr.trim()}` : ""}`,
    };
  }
  // Cut output is not read: a decision in it might be cut off, and what was read is not the hook's answer.
  if (result.stdoutTruncated) {
    return {
      outcome: "error",
      code: "HOOK_OUTPUT_TOO_LARGE",
      exitCode: 0,
      reason: `The hook printed ${result.stdoutBytes} bytes on stdout, more than the ${MAX_OUTPUT_BYTES} that are read`,
    };
  }
  const stdout = result.stdout.trim();
  if (stdout === "") return { outcome: "continue", exitCode: 0 };
  if (!stdout.startsWith("{")) {
    // Plain text: context for the events that take it (Claude Code does the same). Elsewhere Claude Code only shows
    // it in its transcript; here it is an answer that cannot be read (text before a JSON decision, a JSON array),
    // which decides nothing as an error (fail open) and denies under preToolUseErrors: "deny".
    return input.hook_event_name === "UserPromptSubmit" || input.hook_event_name === "SessionStart"
      ? { outcome: "context", exitCode: 0, additionalContext: stdout }
      : {
        outcome: "error",
        code: "HOOK_BAD_OUTPUT",
        exitCode: 0,
        reason: `A ${input.hook_event_name} hook's stdout is read as one JSON object, not ${show(stdout)}`,
      };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdout);
  } catch (error) {
    return { outcome: "error", code: "HOOK_BAD_OUTPUT", exitCode: 0, reason: `Malformed JSON: ${messageOf(error)}` };
  }
  return { ...readOutput(parsed, input), exitCode: 0 };
}

async function runFunction(
  handler: Extract<HookHandler, { type: "function" }>,
  input: HookInput,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<HookVerdict> {
  if (signal.aborted) return ABORTED;
  const controller = new AbortController();
  // A hook that ignores its signal is not waited for once the signal aborts (as a command is killed then).
  let aborted!: () => void;
  const stopped = new Promise<"aborted">((resolve) => (aborted = () => resolve("aborted")));
  const abort = () => {
    controller.abort(signal.reason);
    aborted();
  };
  signal.addEventListener("abort", abort, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), timeoutMs)));
  try {
    const answer = await Promise.race([
      (async () => await handler.run(input, { signal: controller.signal }))(),
      timeout,
      stopped,
    ]);
    if (answer === "timeout") {
      controller.abort();
      return { outcome: "error", code: "HOOK_TIMEOUT", reason: `The hook did not answer within ${timeoutMs} ms` };
    }
    if (answer === "aborted") return ABORTED;
    if (answer === undefined || answer === null) return { outcome: "continue" };
    return readOutput(answer, input);
  } catch (error) {
    return { outcome: "error", code: "HOOK_FAILED", reason: messageOf(error) };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", abort);
  }
}

/** Read a JSON answer; anything that is not an object is `HOOK_BAD_OUTPUT`. */
function readOutput(value: unknown, input: HookInput): HookVerdict {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { outcome: "error", code: "HOOK_BAD_OUTPUT", reason: "The hook's output is not a JSON object" };
  }
  const out = value as HookOutput;
  const specific = typeof out.hookSpecificOutput === "object" && out.hookSpecificOutput !== null
    ? out.hookSpecificOutput
    : {};
  const context = typeof specific.additionalContext === "string" && specific.additionalContext !== ""
    ? specific.additionalContext
    : undefined;
  const withContext = context !== undefined ? { additionalContext: context } : {};
  // A field that means something, with a value that does not: the answer is not read (a deny mistyped as
  // `"decision": "deny"` or `"BLOCK"` must not pass for no decision).
  if (out.continue !== undefined && out.continue !== null && typeof out.continue !== "boolean") {
    return {
      outcome: "error",
      code: "HOOK_BAD_OUTPUT",
      reason: `"continue" is true or false, not ${show(out.continue)}`,
    };
  }
  if (out.decision !== undefined && out.decision !== null && out.decision !== "block" && out.decision !== "approve") {
    return {
      outcome: "error",
      code: "HOOK_BAD_OUTPUT",
      reason: `Unknown decision ${show(out.decision)} ("block" or "approve")`,
    };
  }
  if (out.continue === false) {
    return { outcome: "block", stop: true, reason: str(out.stopReason) ?? "stopped by a hook", ...withContext };
  }
  if (input.hook_event_name === "PreToolUse") {
    const decision = specific.permissionDecision ??
      (out.decision === "approve" ? "allow" : out.decision === "block" ? "deny" : undefined);
    const reason = str(specific.permissionDecisionReason) ?? str(out.reason);
    const rewrite = specific.updatedInput !== undefined ? { updatedInput: specific.updatedInput } : {};
    // A function hook answers with objects, not text: what it rewrites must be JSON to be logged and run.
    if (specific.updatedInput !== undefined) {
      try {
        assertLosslessJson(specific.updatedInput, "updatedInput");
      } catch (error) {
        return {
          outcome: "error",
          code: "HOOK_BAD_OUTPUT",
          reason: `The hook's updatedInput is not JSON: ${messageOf(error)}`,
        };
      }
    }
    if (decision === "deny") return { outcome: "deny", reason: reason ?? "denied by a hook" };
    if (decision === "allow" || decision === "ask") {
      return { outcome: decision, ...(reason !== undefined ? { reason } : {}), ...rewrite };
    }
    if (decision !== undefined) {
      return { outcome: "error", code: "HOOK_BAD_OUTPUT", reason: `Unknown permissionDecision "${String(decision)}"` };
    }
    return specific.updatedInput !== undefined ? { outcome: "rewrite", ...rewrite } : { outcome: "continue" };
  }
  if (out.decision === "block") {
    return { outcome: "block", reason: str(out.reason) ?? "blocked by a hook", ...withContext };
  }
  return context !== undefined ? { outcome: "context", additionalContext: context } : { outcome: "continue" };
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
