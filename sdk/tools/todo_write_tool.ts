/**
 * `todoWriteTool()`: the `todo_write` tool, which replaces the session's todo
 * list; the current list is the `todos` projection of the log.
 *
 * @module
 */

import type { HarnessContext } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { Session } from "../session/session.ts";
import type { TodoItem } from "../session/session_events.ts";
import type { SessionStore } from "../session/session_store.ts";
import { defineTool } from "./define_tool.ts";
import type { ToolDefinition } from "./tool_definition.ts";
import type { ToolRuntime } from "./tool_runtime.ts";
import { renderTodoList } from "../projections/todos.ts";

const STATUS = ["pending", "in_progress", "completed"] as const;

const ITEM_SCHEMA = {
  type: "object",
  properties: {
    id: { type: "string", minLength: 1, description: "A stable id for the item" },
    content: { type: "string", minLength: 1, description: "One imperative line" },
    status: { type: "string", enum: STATUS },
  },
  required: ["id", "content", "status"],
  additionalProperties: false,
};

/** The arguments of `todo_write`. */
export interface TodoWriteArgs {
  /** The whole list, replacing the previous one. */
  readonly todos: readonly Required<TodoItem>[];
}

/** Options of {@linkcode todoWriteTool}. */
export interface TodoWriteToolOptions {
  /** Finds the live session of a call (the loop gives each call its session id). */
  readonly session: (sessionId: string) => Session | undefined;
}

/**
 * The `todo_write` tool: the model sends the whole list (id, content, status
 * `pending` / `in_progress` / `completed`); the tool appends one `todo/write`
 * to the calling session (inside its open turn) and answers with the list.
 * Ids must be unique and at most one item may be `in_progress`.
 *
 * @param options How to find a call's session.
 * @returns The tool definition (exclusive: it never overlaps sibling calls).
 *
 * @example
 * ```ts
 * import { createKernel, Session, todoWriteTool, ToolRuntime } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const session = Session.create("s1");
 * session.append("turn/start", { turn: 1 });
 * const tools = new ToolRuntime(createKernel());
 * tools.register(todoWriteTool({ session: (id) => (id === "s1" ? session : undefined) }));
 * const result = await tools.execute({
 *   callId: "c1",
 *   name: "todo_write",
 *   arguments: JSON.stringify({ todos: [{ id: "1", content: "Write tests", status: "in_progress" }] }),
 *   signal: new AbortController().signal,
 *   sessionId: "s1",
 * });
 * assert.equal(result.error, undefined);
 * assert.equal(session.events.at(-1)?.type, "todo/write");
 * ```
 */
export function todoWriteTool(options: TodoWriteToolOptions): ToolDefinition<TodoWriteArgs, TodoWriteArgs> {
  return defineTool({
    name: "todo_write",
    description: "Replace the whole todo list of this session. Send every item each time (id, content, status: " +
      "pending, in_progress or completed); keep at most one item in_progress and mark items completed as soon as " +
      "they are done.",
    parameters: {
      type: "object",
      properties: { todos: { type: "array", items: ITEM_SCHEMA } },
      required: ["todos"],
      additionalProperties: false,
    },
    output: {
      schema: { type: "object", properties: { todos: { type: "array", items: ITEM_SCHEMA } }, required: ["todos"] },
      render: (_args, value) => renderTodoList((value as TodoWriteArgs).todos),
    },
    execute(args, exec) {
      const { todos } = args as TodoWriteArgs;
      const ids = new Set<string>();
      for (const item of todos) {
        if (ids.has(item.id)) {
          throw new HarnessError("INVALID_ARGS", `Todo id "${item.id}" appears more than once`);
        }
        ids.add(item.id);
      }
      if (todos.filter((t) => t.status === "in_progress").length > 1) {
        throw new HarnessError("INVALID_ARGS", "At most one todo may be in_progress");
      }
      const session = exec.sessionId === undefined ? undefined : options.session(exec.sessionId);
      if (session === undefined) {
        throw new HarnessError("SESSION_NOT_FOUND", "todo_write needs the live session of the call");
      }
      const list = todos.map(({ id, content, status }) => ({ id, content, status }));
      session.append("todo/write", { todos: list });
      return { todos: list };
    },
  }) as unknown as ToolDefinition<TodoWriteArgs, TodoWriteArgs>;
}

/**
 * A plugin that registers `todo_write` globally for every agent of a harness.
 *
 * @param ctx The plugin context (needs `tools` and `sessions`).
 */
export function todoWritePlugin(ctx: HarnessContext): void {
  const services = ctx as unknown as HarnessContext<object, { tools: ToolRuntime; sessions: SessionStore }>;
  const sessions = services.service("sessions");
  services.service("tools").register(todoWriteTool({ session: (id) => sessions.get(id) }), ctx as never);
}
