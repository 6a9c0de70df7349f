/**
 * `taskTool()`: the model-facing consumer of `ctx.subagents`.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import { defineTool } from "../tools/define_tool.ts";
import type { ToolDefinition } from "../tools/tool_definition.ts";
import type { TurnEndReason } from "../session/session_events.ts";
import type { SubagentResult } from "./subagent_definition.ts";
import type { SubagentService } from "./subagent_service.ts";

/** The arguments of the `task` tool. */
export interface TaskArgs {
  /** The subagent to delegate to. */
  readonly agent: string;
  /** A short label for the task (3–8 words). */
  readonly description: string;
  /** The full task for the subagent. */
  readonly prompt: string;
}

/** Options of {@linkcode taskTool}. */
export interface TaskToolOptions {
  /**
   * The tool name.
   *
   * @default {"task"}
   */
  readonly name?: string;
}

/**
 * The `task` tool: delegate a task to a subagent and wait for its final
 * answer, which becomes the call's result. Calls are concurrency-safe when
 * the named definition is (the default), so several delegations of one step
 * run in parallel and their results come back in model order. A child that
 * does not complete (cancelled, failed, blocked) makes the call fail with
 * `SUBAGENT_FAILED` (or `ABORTED` when it was cancelled); the error's text
 * tells the model why (for a failed model call, the child's error code and
 * message). Its permission subject is the subagent's name, so `{ tool:
 * "task(admin)", action: "deny" }` refuses delegating to `admin`.
 *
 * @param subagents The service that runs the delegations.
 * @param options The tool name.
 * @returns The tool definition.
 *
 * @example
 * ```ts
 * import { createKernel } from "@dsh/harness";
 * import { SubagentService, taskTool } from "@dsh/harness/subagents";
 * import assert from "node:assert/strict";
 *
 * const service = new SubagentService(createKernel());
 * service.define({ name: "worker", description: "Does one thing well" });
 * const tool = taskTool(service);
 * assert.equal(tool.name, "task");
 * assert.match(tool.description, /worker: Does one thing well/);
 * ```
 */
export function taskTool(subagents: SubagentService, options: TaskToolOptions = {}): ToolDefinition<TaskArgs> {
  const listing = subagents.list().map((d) => `- ${d.name}: ${d.description}`).join("\n");
  return defineTool({
    name: options.name ?? "task",
    description: "Delegate a task to a subagent, which works on it on its own and answers with its result. " +
      "Give it everything it needs in the prompt: it does not see this conversation (unless it is a fork). " +
      "Several tasks in one step run in parallel.\n\nAvailable subagents:\n" + listing,
    parameters: {
      type: "object",
      properties: {
        agent: { type: "string", description: "The subagent to delegate to" },
        description: { type: "string", description: "A short label for the task (3-8 words)" },
        prompt: { type: "string", minLength: 1, description: "The full task" },
      },
      required: ["agent", "description", "prompt"],
      additionalProperties: false,
    },
    output: {
      schema: {
        type: "object",
        properties: { session: { type: "string" }, text: { type: "string" }, reason: { type: "object" } },
        required: ["session", "text", "reason"],
      },
      render: (_args, value) => (value as SubagentResult).text || "(the subagent gave no answer)",
      meta: (_args, value) => ({ childSession: (value as SubagentResult).session }),
    },
    isConcurrencySafe: (args) => subagents.get((args as TaskArgs).agent)?.concurrencySafe !== false,
    // The subagent named: what a `task(name)` permission rule matches.
    permissionSubject: (args) => {
      const agent = (args as Partial<TaskArgs> | undefined)?.agent;
      return typeof agent === "string" ? agent : undefined;
    },
    async execute(args, exec) {
      const { agent, prompt } = args as TaskArgs;
      if (exec.sessionId === undefined) {
        throw new HarnessError("SESSION_NOT_FOUND", "The task tool runs only inside an agent's session");
      }
      const result = await subagents.run({
        agent,
        prompt,
        parent: exec.sessionId,
        callId: exec.callId,
        turn: exec.turn ?? 0,
        step: exec.step ?? 0,
        signal: exec.signal,
      });
      if (result.reason.kind === "aborted") {
        throw new HarnessError("ABORTED", `Subagent ${result.session} was cancelled (${result.reason.reason})`);
      }
      if (result.reason.kind !== "completed") {
        throw new HarnessError("SUBAGENT_FAILED", `Subagent ${result.session} ended: ${why(result.reason)}`, {
          details: { session: result.session, reason: result.reason },
        });
      }
      return { session: result.session, text: result.text, reason: result.reason };
    },
  }) as unknown as ToolDefinition<TaskArgs>;
}

/** The longest provider message the parent's model is shown (an error body can be a whole HTML page). */
const MAX_MESSAGE = 500;

// Why a child's turn did not complete, for the parent's model: the kind, and for a failed model call its code and
// message (the parent's model can act on CONTEXT_WINDOW_EXCEEDED or AUTH, not on "error").
function why(reason: TurnEndReason): string {
  switch (reason.kind) {
    case "error": {
      const points = Array.from(reason.error.message); // cut between characters, never inside a surrogate pair
      const message = points.length > MAX_MESSAGE ? `${points.slice(0, MAX_MESSAGE).join("")}…` : points.join("");
      return `error, its model call failed with ${reason.error.code}: ${message}`;
    }
    case "max-tokens":
      return "max-tokens, its answer hit the output token limit";
    case "blocked":
      return "blocked, its task was refused before its model was asked";
    case "interrupted":
      return "interrupted, its process stopped mid-turn";
    default:
      return reason.kind;
  }
}
