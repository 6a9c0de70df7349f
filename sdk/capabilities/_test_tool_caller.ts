// Test support (not published): call capability tools through a real
// ToolRuntime, every call approved, and read back the result's first text.

import { createKernel } from "../kernel/harness_context.ts";
import type { AnyToolDefinition } from "../tools/tool_definition.ts";
import type { ToolEvents } from "../tools/tool_events.ts";
import { ToolRuntime, type ToolSubjectGuard } from "../tools/tool_runtime.ts";

/** What a call gave: the result's first text, its meta and its error code. */
export interface CalledTool {
  readonly text: string;
  readonly meta: unknown;
  readonly code: string | undefined;
}

/** Options of {@linkcode toolCaller}. */
export interface ToolCallerOptions {
  /** The signal of every call (a fresh one each call by default). */
  readonly signal?: AbortSignal;
  /** The session id the calls carry. */
  readonly sessionId?: string;
  /** A subject guard on the runtime, so that the calls' `exec.permits` asks it (as permission rules would). */
  readonly subjectGuard?: ToolSubjectGuard;
}

/** Register `tools` on a runtime that approves every call; call them by name with ids c1, c2, … */
export function toolCaller(
  tools: readonly AnyToolDefinition[],
  options: ToolCallerOptions = {},
): (name: string, args: object) => Promise<CalledTool> {
  const ctx = createKernel<ToolEvents, object>();
  ctx.on("tools/pre-execute", () => ({ kind: "allow" }));
  const runtime = new ToolRuntime(ctx);
  for (const tool of tools) runtime.register(tool);
  if (options.subjectGuard !== undefined) runtime.subjectGuard(options.subjectGuard);
  let n = 0;
  return async (name, args) => {
    const result = await runtime.execute({
      callId: `c${++n}`,
      name,
      arguments: JSON.stringify(args),
      signal: options.signal ?? new AbortController().signal,
      ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
    });
    const block = result.message.content[0];
    const text = block.type === "tool-result" && block.content[0]?.type === "text" ? block.content[0].text : "";
    return { text, meta: result.meta, code: result.error?.code };
  };
}
