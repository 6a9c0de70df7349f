/**
 * Session projections: named, pure folds of the log (`ProjectionUnit`), the
 * `ctx.sessionProjections` service that folds them incrementally per session,
 * and the shipped units `turnBoundary`, `todos`, `usageTotals` and
 * `childSessions`.
 *
 * @module
 */

export {
  type AnyProjectionUnit,
  defineProjection,
  foldProjection,
  type ProjectionState,
  type ProjectionUnit,
} from "./projection_unit.ts";
export {
  type ProjectionSource,
  SessionProjections,
  type SessionProjectionsOptions,
  sessionProjectionsPlugin,
  SHIPPED_PROJECTIONS,
  type SnapshotOptions,
  type StateOptions,
} from "./session_projections.ts";
export { turnBoundary, type TurnBoundaryState } from "./turn_boundary.ts";
export { renderTodoList, todos } from "./todos.ts";
export { usageTotals, type UsageTotalsState } from "./usage_totals.ts";
export { type ChildSessionEntry, childSessions } from "./child_sessions.ts";
