/**
 * Internal: running a tool body with its time budget and signals.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { UserMessage } from "../llm/messages.ts";
import { failure, failureFrom, snapshotContext, success } from "./_tool_outcome.ts";
import { syncBodies } from "./_sync_body.ts";
import { type AbortSource, boundTurnAbort, type TurnAbort } from "../llm/_turn_abort.ts";
import type { AnyToolDefinition, ToolExecution, ToolOutcome, ToolRunContext } from "./tool_definition.ts";

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null &&
    typeof (value as { then?: unknown }).then === "function";
}

/**
 * Run the body once. The body's signal combines the caller's signal, the one
 * a `tools/execute` wrapper set (`dispatchSignal`, undefined without a
 * wrapper), and the `timeoutMs` budget; when it aborts the outcome is
 * `TIMEOUT`, the code of a `HarnessError` abort reason, or `ABORTED`, at
 * once: the body is signalled and its late outcome discarded. When the
 * caller's signal is the turn's (made on first read) and nothing else
 * combines with it, the body gets it as a getter and the turn's abort is read
 * and watched without making it.
 */
export async function runBody(
  definition: AnyToolDefinition,
  exec: ToolExecution,
  dispatchSignal: AbortSignal | undefined,
  contexts: UserMessage[],
  state: { concluded: boolean; finished: boolean },
): Promise<ToolOutcome> {
  const timeout = definition.timeoutMs !== undefined ? new AbortController() : undefined;
  const lazy = dispatchSignal === undefined && timeout === undefined ? boundTurnAbort(exec) : undefined;
  let signal: AbortSignal | TurnAbort;
  if (lazy !== undefined) signal = lazy;
  else {
    const signals = [exec.signal];
    if (dispatchSignal !== undefined && dispatchSignal !== exec.signal) signals.push(dispatchSignal);
    if (timeout) signals.push(timeout.signal);
    signal = signals.length === 1 ? exec.signal : AbortSignal.any(signals);
  }
  const source: AbortSource = signal;
  const stopped = (): ToolOutcome => {
    if (timeout?.signal.aborted) {
      return failure(
        "TIMEOUT",
        "ToolTimeoutError",
        `Tool call ${exec.name} timed out after ${definition.timeoutMs} ms`,
      );
    }
    const reason = source.reason;
    if (HarnessError.isInstance(reason)) return failure(reason.code, reason.name, reason.message);
    return failure("ABORTED", "AbortError", `Tool call ${exec.name} was aborted`);
  };
  if (source.aborted) return stopped();

  const deferContext = (message: UserMessage): void => {
    if (state.finished) return;
    contexts.push(snapshotContext(message));
  };
  const concludeTurn = (): void => {
    state.concluded = true;
  };
  const run: ToolRunContext = Object.freeze(
    lazy === undefined
      ? { ...exec, signal: signal as AbortSignal, deferContext, concludeTurn }
      : lazyRunContext(exec, lazy, deferContext, concludeTurn),
  );
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
    return source.aborted ? stopped() : failureFrom(error, "TOOL_FAILED");
  }
  if (!isThenable(returned)) {
    if (source.aborted) return stopped();
    return success(definition, exec.args, returned);
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const interrupted = new Promise<"stopped">((resolve) => {
    onAbort = () => resolve("stopped");
    if (lazy !== undefined) lazy.watch(onAbort);
    else (signal as AbortSignal).addEventListener("abort", onAbort, { once: true });
  });
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
    if (lazy !== undefined) lazy.unwatch(onAbort!);
    else (signal as AbortSignal).removeEventListener("abort", onAbort!);
  }
}

/** The body's context of a call on a turn's signal: the call's fields, the signal as a getter (made when read). */
function lazyRunContext(
  exec: ToolExecution,
  lazy: TurnAbort,
  deferContext: (message: UserMessage) => void,
  concludeTurn: () => void,
): ToolRunContext {
  const run: Record<string, unknown> = {};
  for (const key of Object.keys(exec)) {
    if (key === "signal") {
      Object.defineProperty(run, "signal", { get: () => lazy.signal, enumerable: true, configurable: true });
    } else run[key] = (exec as unknown as Record<string, unknown>)[key];
  }
  run.deferContext = deferContext;
  run.concludeTurn = concludeTurn;
  return run as unknown as ToolRunContext;
}
