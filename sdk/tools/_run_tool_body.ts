/**
 * Internal: running a tool body with its time budget and signals.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import { onAbort } from "../kernel/_on_abort.ts";
import type { UserMessage } from "../llm/messages.ts";
import { failure, failureFrom, snapshotContext, success } from "./_tool_outcome.ts";
import { syncBodies } from "./_sync_body.ts";
import type { AnyToolDefinition, ToolExecution, ToolOutcome, ToolRunContext } from "./tool_definition.ts";

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null &&
    typeof (value as { then?: unknown }).then === "function";
}

/**
 * Run the body once. The body's signal combines the caller's signal, the one
 * a `tools/execute` wrapper set, and the `timeoutMs` budget; when it aborts
 * the outcome is `TIMEOUT`, the code of a `HarnessError` abort reason, or
 * `ABORTED`, at once: the body is signalled and its late outcome discarded.
 *
 * A body that returns or throws synchronously gives its outcome at once (not
 * a promise); the pipeline awaits only a promise.
 */
/** What the pipeline and the body share: the call's marks, and its subject check when one applies. */
export interface BodyState {
  concluded: boolean;
  finished: boolean;
  permits?: (subject: string) => boolean;
}

export function runBody(
  definition: AnyToolDefinition,
  exec: ToolExecution,
  dispatchSignal: AbortSignal,
  contexts: UserMessage[],
  state: BodyState,
): ToolOutcome | Promise<ToolOutcome> {
  const timeout = definition.timeoutMs !== undefined ? new AbortController() : undefined;
  let signal = exec.signal;
  if (dispatchSignal !== exec.signal || timeout) {
    const signals = [exec.signal];
    if (dispatchSignal !== exec.signal) signals.push(dispatchSignal);
    if (timeout) signals.push(timeout.signal);
    signal = AbortSignal.any(signals);
  }
  const stopped = (): ToolOutcome => {
    if (timeout?.signal.aborted) {
      return failure(
        "TIMEOUT",
        "ToolTimeoutError",
        `Tool call ${exec.name} timed out after ${definition.timeoutMs} ms`,
      );
    }
    const reason = signal.reason;
    if (HarnessError.isInstance(reason)) return failure(reason.code, reason.name, reason.message);
    return failure("ABORTED", "AbortError", `Tool call ${exec.name} was aborted`);
  };
  if (signal.aborted) return stopped();

  const run: ToolRunContext = Object.freeze({
    ...exec,
    signal,
    deferContext(message: UserMessage): void {
      if (state.finished) return;
      contexts.push(snapshotContext(message));
    },
    concludeTurn(): void {
      state.concluded = true;
    },
    ...(state.permits !== undefined ? { permits: state.permits } : {}),
  });
  // The body runs now. A synchronous one (a value or a throw, not a promise) is
  // over at once: no abort listener, timer or race is needed for it, and an
  // abort it caused still wins, as in the race below.
  let returned: unknown;
  try {
    const sync = syncBodies.get(definition);
    returned = sync !== undefined && sync.execute === definition.execute
      ? sync.run(exec.args, run)
      : definition.execute(exec.args, run);
  } catch (error) {
    return signal.aborted ? stopped() : failureFrom(error, "TOOL_FAILED");
  }
  if (!isThenable(returned)) {
    if (signal.aborted) return stopped();
    return success(definition, exec.args, returned);
  }
  return race(definition, exec, returned, signal, timeout, stopped);
}

// The body's promise against the signal (and the time budget).
async function race(
  definition: AnyToolDefinition,
  exec: ToolExecution,
  returned: PromiseLike<unknown>,
  signal: AbortSignal,
  timeout: AbortController | undefined,
  stopped: () => ToolOutcome,
): Promise<ToolOutcome> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const interrupted = whenStopped(signal);
  if (timeout) {
    timer = setTimeout(
      () =>
        timeout.abort(new HarnessError("TIMEOUT", `Tool call ${exec.name} timed out after ${definition.timeoutMs} ms`)),
      definition.timeoutMs,
    );
  }
  try {
    const body = Promise.resolve(returned)
      .then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }));
    const settled = await Promise.race([body, interrupted]);
    // The body was signalled; its late outcome is discarded.
    if (settled === "stopped") return stopped();
    if (!settled.ok) return failureFrom(settled.error, "TOOL_FAILED");
    return success(definition, exec.args, settled.value);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

const stoppedBySignal = new WeakMap<AbortSignal, Promise<"stopped">>();

// One promise per signal, however many calls race it (the parallel calls of a step share the turn's signal), heard
// through the signal's shared abort listener.
function whenStopped(signal: AbortSignal): Promise<"stopped"> {
  let stopped = stoppedBySignal.get(signal);
  if (stopped === undefined) {
    stopped = new Promise((resolve) => void onAbort(signal, () => resolve("stopped"), true));
    stoppedBySignal.set(signal, stopped);
  }
  return stopped;
}
