/**
 * Internal: the guarded execution pipeline behind `ToolRuntime.execute()`.
 *
 * pre-execute waterfall (a listener may rewrite the input) → the definition's
 * `checkArgs` on the input as it will run (invalid arguments are `INVALID_ARGS`
 * at once) → guards → approval (for `ask`) → execute waterfall
 * around the body → post-execute waterfall → finalizeContent (once) →
 * tools/result. Every failure becomes a normalised outcome; nothing throws out
 * once the input has been accepted.
 *
 * @module
 */

import type { ScopeInfo } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { UserMessage } from "../llm/messages.ts";
import { deepFreeze, frozenJson } from "./_json.ts";
import { jsonSchemaValidatorPending } from "./_json_schema.ts";
import { type BodyState, runBody } from "./_run_tool_body.ts";
import {
  failure,
  failureFrom,
  messageOf,
  nameOf,
  normalizeContent,
  snapshotContext,
  success,
} from "./_tool_outcome.ts";
import { admittedListeners, emitContained, reportListenerError, runWaterfall } from "../prompt/_scoped_dispatch.ts";
import type { ApprovalService } from "./approval_service.ts";
import type { AnyToolDefinition, ToolExecution, ToolFailure, ToolOutcome } from "./tool_definition.ts";
import type { PostToolDecision, PreToolDecision, ToolDispatchExecution } from "./tool_events.ts";
import type { ToolExecutionInput, ToolExecutionResult } from "./tool_execution_result.ts";
import type { ServiceHost } from "../prompt/registration_owner.ts";
import type { ToolGuard, ToolSubjectGuard } from "./tool_runtime.ts";
import { defaultDecision } from "./_default_decision.ts";
import { copyPlainJson, EMPTY_ARRAY, isVetted, vouch } from "../session/_copy_event_data.ts";
import { ABORTED, untilAborted } from "../kernel/_until_aborted.ts";

/** What the pipeline needs from the runtime (made once per runtime). */
export interface PipelineDeps {
  readonly host: ServiceHost;
  lookup(name: string, scope: ScopeInfo | undefined): AnyToolDefinition | undefined;
  guards(scope: ScopeInfo | undefined): ToolGuard[];
  subjectGuards(scope: ScopeInfo | undefined): ToolSubjectGuard[];
  approvals(): ApprovalService | undefined;
  newId(): string;
}

function isDecision(value: unknown, kinds: readonly string[]): boolean {
  return typeof value === "object" && value !== null && kinds.includes((value as { kind?: string }).kind ?? "");
}

function isOutcome(value: unknown): value is ToolOutcome {
  if (typeof value !== "object" || value === null) return false;
  const o = value as ToolOutcome;
  if (!Array.isArray(o.content)) return false;
  if (o.isError === false) return "value" in o;
  return o.isError === true && typeof o.error?.code === "string" && typeof o.error?.name === "string";
}

function checkInput(input: ToolExecutionInput): void {
  const bad = (field: string) => {
    throw new HarnessError("INVALID_ARGS", `Cannot execute a tool call: ${field}`);
  };
  if (typeof input !== "object" || input === null) bad("the input is not an object");
  if (typeof input.callId !== "string" || input.callId === "") bad("callId must be a non-empty string");
  if (typeof input.name !== "string") bad("name must be a string");
  if (typeof input.arguments !== "string") bad("arguments must be the raw JSON string");
  if (!(input.signal instanceof AbortSignal)) bad("signal must be an AbortSignal");
}

/** Run one call through the pipeline. */
export async function executeToolCall(deps: PipelineDeps, input: ToolExecutionInput): Promise<ToolExecutionResult> {
  const { host } = deps;
  checkInput(input);
  let args: unknown;
  let argsProblem: string | undefined;
  try {
    const raw = input.arguments.trim();
    args = frozenJson(raw === "" ? {} : JSON.parse(raw));
  } catch (error) {
    argsProblem = messageOf(error);
  }
  let exec: ToolExecution = Object.freeze({
    callId: input.callId,
    name: input.name,
    arguments: input.arguments,
    args,
    signal: input.signal,
    ...(input.scope !== undefined ? { scope: input.scope } : {}),
    ...(input.sessionId !== undefined ? { sessionId: input.sessionId } : {}),
    ...(input.turn !== undefined ? { turn: input.turn } : {}),
    ...(input.step !== undefined ? { step: input.step } : {}),
  });
  const contexts: UserMessage[] = [];
  const state: BodyState = { concluded: false, finished: false };
  const definition = deps.lookup(exec.name, exec.scope);
  // A raw JSON Schema's validator is imported on first use: let it load before anything validates.
  const validatorLoad = jsonSchemaValidatorPending();
  if (validatorLoad !== undefined) await validatorLoad;

  const finish = (outcome: ToolOutcome): ToolExecutionResult => {
    state.finished = true;
    let final = outcome;
    if (definition?.finalizeContent) {
      try {
        const replaced = definition.finalizeContent(exec, final);
        if (replaced !== undefined) final = { ...final, content: normalizeContent(replaced) } as ToolOutcome;
      } catch (error) {
        final = failure("FINALIZE_FAILED", nameOf(error), messageOf(error));
      }
    }
    const result = buildResult(exec, final, contexts, state.concluded, deps.newId());
    emitContained(
      admittedListeners(host, exec.scope, "tools/result"),
      "tools/result",
      [exec, result],
      (name, error) => reportListenerError(host, name, error, exec.scope),
    );
    return result;
  };
  const aborted = () => failure("ABORTED", "AbortError", `Tool call ${exec.name} was aborted`);

  if (definition === undefined) {
    return finish(failure("UNKNOWN_TOOL", "ToolNotFoundError", `Unknown tool "${exec.name}"`));
  }
  if (argsProblem !== undefined) {
    // Not the JSON parser's own text: it differs between engines, and the model sees (and a fixture records) this one.
    return finish(failure("INVALID_ARGS", "ToolArgsError", `Invalid JSON arguments for ${exec.name}: not valid JSON`));
  }
  if (exec.signal.aborted) return finish(aborted());

  // 1. tools/pre-execute
  let decision: PreToolDecision;
  try {
    // Without listeners, the default at once (no promise to wait for).
    const listeners = admittedListeners(host, exec.scope, "tools/pre-execute");
    // Listener chains are waited for until the call is cancelled, not longer: one may ignore the signal.
    const decided = listeners.length === 0 ? defaultDecision(definition) : await untilAborted(
      runWaterfall(listeners, [exec], () => Promise.resolve<PreToolDecision>(defaultDecision(definition))),
      exec.signal,
    );
    if (decided === ABORTED) return finish(aborted());
    decision = decided;
  } catch (error) {
    if (exec.signal.aborted) return finish(aborted());
    // A listener that failed on arguments that do not fit the parameters (it was written for valid ones): the model
    // is told what is wrong with its call, which it can correct, not the listener's own error.
    return finish(argsFailure(definition, exec) ?? failureFrom(error, "HOOK_FAILED"));
  }
  if (!isDecision(decision, ["allow", "deny", "ask"])) {
    return finish(
      failure("HOOK_FAILED", "HarnessError", `A tools/pre-execute listener returned no decision for ${exec.name}`),
    );
  }
  if (decision.kind === "deny") {
    return finish(denied(exec, typeof decision.reason === "string" ? decision.reason : "no reason given"));
  }
  if (decision.input !== undefined) {
    try {
      exec = Object.freeze({ ...exec, args: frozenJson(decision.input), arguments: JSON.stringify(decision.input) });
    } catch (error) {
      return finish(
        failure("HOOK_FAILED", "HarnessError", `A rewritten input of ${exec.name} is not JSON: ${messageOf(error)}`),
      );
    }
  }

  // The arguments as they will run (a listener may have repaired or rewritten them) against the tool's parameters:
  // nobody is asked to approve a call that cannot run.
  const invalid = argsFailure(definition, exec);
  if (invalid !== undefined) return finish(invalid);

  // 2. monotonic guards
  for (const guard of deps.guards(exec.scope)) {
    let reason: string | undefined | void | typeof ABORTED;
    try {
      reason = await untilAborted(guard(exec), exec.signal);
    } catch (error) {
      reason = `a guard failed (${messageOf(error)})`;
    }
    if (reason === ABORTED) return finish(aborted());
    if (typeof reason === "string") return finish(denied(exec, reason));
  }

  // 3. approval
  if (decision.kind === "ask") {
    const approvals = deps.approvals();
    const outcome = approvals === undefined ? "unavailable" : await approvals.request({
      callId: exec.callId,
      toolName: exec.name,
      args: exec.args,
      ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
      ...(exec.scope !== undefined ? { scope: exec.scope } : {}),
      ...(exec.sessionId !== undefined ? { sessionId: exec.sessionId } : {}),
      signal: exec.signal,
    }).catch(() => "unavailable" as const);
    if (exec.signal.aborted) return finish(aborted());
    if (outcome !== "allowed-once") return finish(denied(exec, `approval ${outcome}`));
  }
  if (exec.signal.aborted) return finish(aborted());

  // What the body may reach beyond its own subject: every subject guard must let it (one that throws does not).
  const subjectGuards = deps.subjectGuards(exec.scope);
  if (subjectGuards.length > 0) {
    const judged = exec;
    state.permits = (subject: string): boolean => {
      if (typeof subject !== "string") return false;
      for (const guard of subjectGuards) {
        try {
          if (typeof guard(judged, subject) === "string") return false;
        } catch {
          return false;
        }
      }
      return true;
    };
  }

  // 4. tools/execute around the body
  let outcome: ToolOutcome;
  const wrappers = admittedListeners(host, exec.scope, "tools/execute");
  if (wrappers.length === 0) {
    // No wrapper: the body's outcome as runBody built it (frozen, vouched-for content), awaited only when the
    // body is asynchronous. Copied as the wrapped path copies it when it holds anything runBody did not make.
    try {
      const ran = runBody(definition, exec, exec.signal, contexts, state);
      outcome = ran instanceof Promise ? await ran : ran;
      if (!isVetted(outcome.content) || (outcome.meta !== undefined && !isVetted(outcome.meta))) {
        outcome = normalizedOutcome(outcome);
      }
    } catch (error) {
      outcome = failureFrom(error, "HOOK_FAILED");
    }
  } else {
    const wrapped = await untilAborted(wrappedBody(wrappers, definition, exec, contexts, state), exec.signal);
    outcome = wrapped === ABORTED ? aborted() : wrapped;
  }

  // 5. tools/post-execute
  try {
    const listeners = admittedListeners(host, exec.scope, "tools/post-execute");
    const post = listeners.length === 0 ? { kind: "accept" as const } : await untilAborted(
      runWaterfall(listeners, [exec, outcome], () => Promise.resolve<PostToolDecision>({ kind: "accept" })),
      exec.signal,
    );
    outcome = post === ABORTED ? aborted() : applyPost(definition, exec, outcome, post, contexts);
  } catch (error) {
    outcome = failureFrom(error, "HOOK_FAILED");
  }
  return finish(outcome);
}

// The outcome with its content normalised and its meta snapshotted as JSON.
function normalizedOutcome(outcome: ToolOutcome): ToolOutcome {
  const meta = outcome.meta === undefined ? undefined : frozenJson(outcome.meta);
  return { ...outcome, content: normalizeContent(outcome.content), ...(meta ? { meta } : {}) } as ToolOutcome;
}

// The body inside the tools/execute wrappers; each may call `next()` (a promise) again.
async function wrappedBody(
  wrappers: ReturnType<typeof admittedListeners>,
  definition: AnyToolDefinition,
  exec: ToolExecution,
  contexts: UserMessage[],
  state: BodyState,
): Promise<ToolOutcome> {
  const dispatch: ToolDispatchExecution = { ...exec, signal: exec.signal };
  let outcome: ToolOutcome;
  try {
    outcome = await runWaterfall(
      wrappers,
      [dispatch],
      async () => await runBody(definition, exec, dispatch.signal, contexts, state),
    );
    if (!isOutcome(outcome)) {
      outcome = failure("HOOK_FAILED", "HarnessError", `A tools/execute listener returned no outcome for ${exec.name}`);
    } else {
      // A wrapper may have built the outcome itself: snapshot it as JSON.
      outcome = normalizedOutcome(outcome);
    }
  } catch (error) {
    outcome = failureFrom(error, "HOOK_FAILED");
  }
  return outcome;
}

function denied(exec: ToolExecution, reason: string): ToolFailure {
  return failure("DENIED", "ToolDeniedError", `Tool call ${exec.name} was denied: ${reason}`);
}

function applyPost(
  definition: AnyToolDefinition,
  exec: ToolExecution,
  outcome: ToolOutcome,
  post: PostToolDecision,
  contexts: UserMessage[],
): ToolOutcome {
  if (!isDecision(post, ["accept", "block"])) {
    return failure(
      "HOOK_FAILED",
      "HarnessError",
      `A tools/post-execute listener returned no decision for ${exec.name}`,
    );
  }
  for (const context of post.contexts ?? []) contexts.push(snapshotContext(context));
  if (post.kind === "block") {
    const content = normalizeContent(post.feedback);
    const text = content.map((b) => (b.type === "text" ? b.text : "")).join("\n");
    return { isError: true, error: { name: "ToolBlockedError", code: "BLOCKED", message: text }, content };
  }
  const hasContent = post.content !== undefined;
  const hasValue = "value" in post && post.value !== undefined;
  if (hasContent && hasValue) {
    return failure(
      "HOOK_FAILED",
      "HarnessError",
      `A tools/post-execute listener replaced both content and value of ${exec.name}`,
    );
  }
  if (hasValue) {
    if (outcome.isError) {
      return failure(
        "HOOK_FAILED",
        "HarnessError",
        `A tools/post-execute listener gave a value to the failed call ${exec.name}`,
      );
    }
    return success(definition, exec.args, post.value);
  }
  if (hasContent) return { ...outcome, content: normalizeContent(post.content!) };
  return outcome;
}

function buildResult(
  exec: ToolExecution,
  outcome: ToolOutcome,
  contexts: readonly UserMessage[],
  concluded: boolean,
  id: string,
): ToolExecutionResult {
  const block = {
    type: "tool-result" as const,
    toolCallId: exec.callId,
    content: outcome.content,
    ...(outcome.isError ? { isError: true } : {}),
  };
  const raw: UserMessage = { id, role: "user", content: [block], source: { kind: "tool", callId: exec.callId } };
  // As the session log copies it (so that the tool/result append shares it), or frozen in place.
  const copy = copyPlainJson(raw);
  const message = (typeof copy === "object" && copy !== null ? vouch(copy) : deepFreeze(raw)) as UserMessage;
  // Deep-frozen: the message, value, meta and contexts made by the pipeline's copies are frozen already
  // (vetted); anything else (a wrapper's own value) is frozen in place.
  const result: Record<string, unknown> = { message };
  if (outcome.isError) result.error = Object.freeze({ name: outcome.error.name, code: outcome.error.code });
  if (outcome.meta !== undefined) result.meta = frozen(outcome.meta);
  if (!outcome.isError) result.value = frozen(outcome.value);
  if (!outcome.isError && concluded) result.concludeTurn = true;
  result.contexts = contexts.length === 0 ? EMPTY_ARRAY : deepFreeze([...contexts]);
  return Object.freeze(result) as unknown as ToolExecutionResult;
}

function frozen<T>(value: T): T {
  return isVetted(value) ? value : deepFreeze(value);
}

/** `INVALID_ARGS` when the call's arguments do not fit the definition's `checkArgs`, else `undefined`. */
function argsFailure(definition: AnyToolDefinition, exec: ToolExecution): ToolOutcome | undefined {
  if (definition.checkArgs === undefined) return undefined;
  let problems: readonly string[] | undefined;
  try {
    problems = definition.checkArgs(exec.args);
  } catch (error) {
    problems = [messageOf(error)];
  }
  if (problems === undefined) return undefined;
  const listed = Array.isArray(problems) ? problems.map(messageOf).join("; ") : messageOf(problems);
  return failure("INVALID_ARGS", "ToolArgsError", `Invalid arguments for ${exec.name}: ${listed}`);
}
