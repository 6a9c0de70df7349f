/**
 * The complete, non-incremental surface replay.
 *
 * @module
 */

import type { SessionEvent } from "./session_events.ts";
import { type SurfaceFoldReplacement, SurfaceManager } from "./surface_manager.ts";

/** The result of {@linkcode foldSurface}. */
export interface SurfaceFoldResult {
  /** The current surface nodes, in model-visible order. */
  readonly nodes: readonly number[];
  /** Every replacement, in event order, with the nodes it actually shadowed. */
  readonly replacements: readonly SurfaceFoldReplacement[];
}

/**
 * Replay the surface operations of a whole log (or of a contiguous window
 * starting at absolute seq `baseSeq`), with the same transitions and
 * rejections as the live {@linkcode SurfaceManager}.
 *
 * @param events The log.
 * @param baseSeq The absolute seq of `events[0]`.
 * @returns The surface nodes and the replacement history.
 * @throws {HarnessError} The first surface rejection (see {@linkcode SurfaceManager}).
 *
 * @example
 * ```ts
 * import { foldSurface, type SessionEvent } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const user = (seq: number, text: string): SessionEvent<"user/message"> => ({
 *   type: "user/message",
 *   seq,
 *   time: 0,
 *   data: { id: `m${seq}`, role: "user", content: [{ type: "text", text }], source: { kind: "user" } },
 *   surfaceOp: "append",
 * });
 * const log: SessionEvent[] = [
 *   user(0, "a"),
 *   { type: "todo/write", seq: 1, time: 0, data: { todos: [] } },
 *   user(2, "b"),
 *   { ...user(3, "summary"), surfaceOp: { op: "replace", start: 0, end: 2 }, sourceEventSeqs: [0, 2] },
 * ];
 * const { nodes, replacements } = foldSurface(log);
 * assert.deepEqual(nodes, [3]);
 * assert.deepEqual(replacements, [{ seq: 3, start: 0, end: 2, shadowedSeqs: [0, 2] }]);
 * ```
 */
export function foldSurface(events: readonly SessionEvent[], baseSeq: number = 0): SurfaceFoldResult {
  const manager = new SurfaceManager([], baseSeq);
  const replacements: SurfaceFoldReplacement[] = [];
  for (const event of events) {
    const replacement = manager.commit(event);
    if (replacement) replacements.push(replacement);
  }
  return { nodes: manager.nodes.slice(), replacements };
}
