/**
 * `todos`: the projection of the current todo list (the last `todo/write`).
 *
 * @module
 */

import type { TodoItem } from "../session/session_events.ts";
import { defineProjection, type ProjectionUnit } from "./projection_unit.ts";

const EMPTY: readonly TodoItem[] = Object.freeze([]);

/**
 * The current todo list: each `todo/write` replaces the whole list (last write
 * wins); an empty log has an empty list.
 *
 * @example
 * ```ts
 * import { foldProjection, todos } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const list = foldProjection(todos, [
 *   { type: "todo/write", seq: 0, time: 0, data: { todos: [{ content: "a", status: "pending" }] } },
 *   { type: "todo/write", seq: 1, time: 0, data: { todos: [{ content: "a", status: "completed" }] } },
 * ]);
 * assert.deepEqual(list, [{ content: "a", status: "completed" }]);
 * ```
 */
export const todos: ProjectionUnit<readonly TodoItem[]> = defineProjection<readonly TodoItem[]>({
  name: "todos",
  initial: () => EMPTY,
  fold: (state, event) => (event.type === "todo/write" ? event.data.todos : state),
});

/**
 * Render a todo list as Markdown checkboxes (`[x]` completed, `[~]` in progress).
 *
 * @param todos The list.
 * @returns One line per item, or `(no todos)`.
 *
 * @example
 * ```ts
 * import { renderTodoList } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * assert.equal(renderTodoList([{ content: "a", status: "completed" }, { content: "b", status: "in_progress" }]), "- [x] a\n- [~] b");
 * ```
 */
export function renderTodoList(todos: readonly TodoItem[]): string {
  if (todos.length === 0) return "(no todos)";
  const mark: Readonly<Record<string, string>> = { completed: "x", in_progress: "~", pending: " " };
  // A stored log may hold items of other shapes (written before appends checked them): shown, not thrown on.
  return todos.map((t: unknown) => {
    const item = typeof t === "object" && t !== null ? t as Partial<Record<string, unknown>> : { content: t };
    const status = typeof item.status === "string" && Object.hasOwn(mark, item.status) ? mark[item.status] : "?";
    const content = typeof item.content === "string" ? item.content : JSON.stringify(item.content ?? null);
    return `- [${status}] ${content}`;
  }).join("\n");
}
