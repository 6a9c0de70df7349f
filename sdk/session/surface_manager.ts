/**
 * The surface: the ordered seqs of the events the model sees, maintained
 * incrementally, with every validation rule of surface operations.
 *
 * Rejections (all `HarnessError`s, thrown before anything changes):
 *
 * | code | when |
 * | --- | --- |
 * | `SEQ_NOT_CONTIGUOUS` | the event's seq is not the next position |
 * | `SURFACE_OP_MISSING` | a surface event type without `surfaceOp` |
 * | `SURFACE_OP_FORBIDDEN` | `surfaceOp` or `sourceEventSeqs` on any other type |
 * | `SURFACE_OP_INVALID` | a `surfaceOp` that is neither `"append"` nor `{op: "replace", start, end}` with integer seqs |
 * | `SOURCE_SEQS_INVALID` | `sourceEventSeqs` not an array, empty (except on `assistant/message`), with duplicates, non-integers, or seqs not strictly earlier |
 * | `REPLACE_RANGE_INVALID` | `start` or `end` not on the surface, or `start` after `end` |
 * | `TOOL_RESULT_REPLACE_INVALID` | a `tool/result` replace spanning more than one node, targeting a node that is not a `tool/result`, or changing anything but the inner result content |
 * | `REPLACE_SOURCES_INCOMPLETE` | `sourceEventSeqs` missing a shadowed node |
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionEvent, SessionEventMap, SurfaceEventType } from "./session_events.ts";
import { increasingSeqsEnd } from "./_copy_event_data.ts";
import { jsonEqual } from "./_json_equal.ts";

/** The live, read-only view of a session's surface. */
export interface SessionSurface {
  /** The seqs of the current surface nodes, in model-visible order. */
  readonly nodes: readonly number[];
  /** How many replacements have been committed (monotonic). */
  readonly replaceGeneration: number;
}

/** One replacement observed while folding a surface. */
export interface SurfaceFoldReplacement {
  /** Seq of the replacing event. */
  readonly seq: number;
  /** Declared inclusive start seq of the replaced range. */
  readonly start: number;
  /** Declared inclusive end seq of the replaced range. */
  readonly end: number;
  /** The surface nodes the replacement removed, in surface order. */
  readonly shadowedSeqs: readonly number[];
}

/** The surface event types, in a fixed order. */
export const SURFACE_EVENT_TYPES: readonly SurfaceEventType[] = Object.freeze(
  [
    "user/message",
    "system/message",
    "assistant/message",
    "tool/result",
  ] as const,
);

/**
 * Whether `type` is a surface event type.
 *
 * @param type An event type.
 * @returns `true` for `user/message`, `system/message`, `assistant/message` and `tool/result`.
 */
export function isSurfaceEventType(type: string): type is SurfaceEventType {
  return type === "user/message" || type === "assistant/message" || type === "tool/result" ||
    type === "system/message";
}

/** What a non-shadowing event shadows: nothing (one shared frozen list). */
const NONE: readonly number[] = Object.freeze([]);

function fail(code: string, event: SessionEvent, message: string): never {
  throw new HarnessError(code, message, { details: { seq: event.seq, type: event.type } });
}

function isSeq(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

type ToolResultData = SessionEventMap["tool/result"];

// The tool/result data with the inner content of its tool-result blocks blanked out.
function withoutResultContent(data: ToolResultData): unknown {
  const content = Array.isArray(data?.message?.content) ? data.message.content : [];
  return {
    ...data,
    message: {
      ...data.message,
      content: content.map((block) => block?.type === "tool-result" ? { ...block, content: null } : block),
    },
  };
}

let commitPlainTo: (manager: SurfaceManager, event: SessionEvent) => void;

/**
 * Internal (not exported by the package): `manager.commit(event)` for an event
 * its caller built itself as a non-surface event with no surface metadata
 * (the loop's `assistant/chunk`): the same seq check and advance, without the
 * generic reads of `surfaceOp` and `sourceEventSeqs` (megamorphic on the
 * log's many event shapes, and a miss for both on a chunk).
 *
 * @param manager The manager.
 * @param event A non-surface event without `surfaceOp` or `sourceEventSeqs`.
 * @throws {HarnessError} `SEQ_NOT_CONTIGUOUS`, as `commit()`.
 */
export function commitPlain(manager: SurfaceManager, event: SessionEvent): void {
  commitPlainTo(manager, event);
}

/**
 * The incremental surface fold: validates each candidate event before commit
 * and advances the surface from committed events.
 *
 * A manager may fold a contiguous window of a log whose first event has the
 * absolute seq `baseSeq`; a replacement reaching before the window then fails
 * with `REPLACE_RANGE_INVALID`, since the declared range is not on the
 * window's surface. The manager keeps no replacement history
 * ({@linkcode foldSurface} does).
 *
 * @example
 * ```ts
 * import { SurfaceManager, type SessionEvent } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const user = (seq: number, text: string): SessionEvent<"user/message"> => ({
 *   type: "user/message",
 *   seq,
 *   time: 0,
 *   data: { id: `m${seq}`, role: "user", content: [{ type: "text", text }], source: { kind: "user" } },
 *   surfaceOp: "append",
 * });
 * const manager = new SurfaceManager([user(0, "a"), user(1, "b")]);
 * manager.commit({ ...user(2, "summary"), surfaceOp: { op: "replace", start: 0, end: 1 }, sourceEventSeqs: [0, 1] });
 * assert.deepEqual(manager.nodes, [2]);
 * assert.equal(manager.replaceGeneration, 1);
 * ```
 */
export class SurfaceManager {
  readonly #baseSeq: number;
  #nextSeq: number;
  readonly #nodes: number[] = [];
  readonly #position = new Map<number, number>();
  readonly #events = new Map<number, SessionEvent>();
  #generation = 0;
  #snapshot: readonly number[] | undefined;
  readonly #view: SessionSurface;

  /**
   * Fold `log`, a contiguous window starting at absolute seq `baseSeq`.
   *
   * @param log The events to fold first.
   * @param baseSeq The absolute seq of the window's first event.
   * @throws {HarnessError} Any surface rejection (see the module doc), or `INVALID_ARGS` for a bad `baseSeq`.
   */
  constructor(log: readonly SessionEvent[] = [], baseSeq: number = 0) {
    if (!isSeq(baseSeq)) {
      throw new HarnessError("INVALID_ARGS", `Base seq must be a non-negative integer, got ${baseSeq}`);
    }
    this.#baseSeq = baseSeq;
    this.#nextSeq = baseSeq;
    const nodes = (): readonly number[] => this.nodes;
    const generation = (): number => this.#generation;
    this.#view = Object.freeze({
      get nodes() {
        return nodes();
      },
      get replaceGeneration() {
        return generation();
      },
    });
    for (const event of log) this.commit(event);
  }

  /** The absolute seq of the window's first event. */
  get baseSeq(): number {
    return this.#baseSeq;
  }

  /** The seq the next event must have. */
  get nextSeq(): number {
    return this.#nextSeq;
  }

  /** A frozen snapshot of the current nodes (reused until the surface changes). */
  get nodes(): readonly number[] {
    return this.#snapshot ??= Object.freeze(this.#nodes.slice());
  }

  /** How many nodes the surface has. */
  get size(): number {
    return this.#nodes.length;
  }

  /**
   * The seq of the node at `index` of the surface, without taking a snapshot.
   *
   * @param index A position on the surface.
   * @returns The node's seq, or `undefined` past the end.
   */
  nodeAt(index: number): number | undefined {
    return this.#nodes[index];
  }

  /** The number of committed replacements. */
  get replaceGeneration(): number {
    return this.#generation;
  }

  /** A stable, read-only view that follows the manager. */
  get surface(): SessionSurface {
    return this.#view;
  }

  /**
   * Whether `seq` is a node of the current surface.
   *
   * @param seq An absolute seq.
   * @returns `true` when the node is on the surface.
   */
  has(seq: number): boolean {
    return this.#position.has(seq);
  }

  /**
   * Check a candidate event without committing it.
   *
   * @param event The candidate envelope.
   * @returns The nodes it would shadow (empty for an append or a non-surface event).
   * @throws {HarnessError} Any surface rejection listed in the module doc.
   */
  validate(event: SessionEvent): readonly number[] {
    if (event.seq !== this.#nextSeq) {
      fail("SEQ_NOT_CONTIGUOUS", event, `Event seq ${event.seq} is not the next seq ${this.#nextSeq}`);
    }
    const op = event.surfaceOp as unknown;
    const sources = event.sourceEventSeqs as unknown;
    if (!isSurfaceEventType(event.type)) {
      if (op !== undefined || sources !== undefined) {
        fail("SURFACE_OP_FORBIDDEN", event, `Event ${event.seq} of type ${event.type} cannot carry surface metadata`);
      }
      return NONE;
    }
    if (op === undefined) {
      fail("SURFACE_OP_MISSING", event, `Surface event ${event.seq} (${event.type}) has no surfaceOp`);
    }
    let replace: { start: number; end: number } | undefined;
    if (op !== "append") {
      const r = op as { op?: unknown; start?: unknown; end?: unknown };
      if (
        typeof r !== "object" || r === null || Array.isArray(r) || r.op !== "replace" || !isSeq(r.start) ||
        !isSeq(r.end) || Object.keys(r).some((k) => k !== "op" && k !== "start" && k !== "end")
      ) {
        fail("SURFACE_OP_INVALID", event, `Surface event ${event.seq} has a malformed surfaceOp`);
      }
      replace = { start: r.start, end: r.end };
    }
    if (sources !== undefined) this.#checkSources(event, sources);
    if (replace === undefined) return NONE;
    const i = this.#position.get(replace.start);
    const j = this.#position.get(replace.end);
    if (i === undefined || j === undefined) {
      const missing = i === undefined ? replace.start : replace.end;
      fail("REPLACE_RANGE_INVALID", event, `Cannot replace: seq ${missing} is not on the surface`);
    }
    if (i > j) {
      fail("REPLACE_RANGE_INVALID", event, `Cannot replace: start ${replace.start} comes after end ${replace.end}`);
    }
    if (event.type === "tool/result") {
      if (i !== j) {
        fail(
          "TOOL_RESULT_REPLACE_INVALID",
          event,
          `Cannot replace: a tool result replaces ${j - i + 1} nodes, not one`,
        );
      }
      const target = this.#events.get(replace.start)!;
      if (target.type !== "tool/result") {
        fail("TOOL_RESULT_REPLACE_INVALID", event, `Cannot replace: node ${replace.start} is a ${target.type}`);
      }
      const before = withoutResultContent(target.data as ToolResultData);
      const after = withoutResultContent(event.data as ToolResultData);
      if (!jsonEqual(before, after)) {
        fail(
          "TOOL_RESULT_REPLACE_INVALID",
          event,
          `Cannot replace tool result ${replace.start}: only the inner result content may change`,
        );
      }
    }
    const shadowed = this.#nodes.slice(i, j + 1);
    const cited = new Set(Array.isArray(sources) ? sources as number[] : []);
    const uncovered = shadowed.find((seq) => !cited.has(seq));
    if (uncovered !== undefined) {
      fail(
        "REPLACE_SOURCES_INCOMPLETE",
        event,
        `Cannot replace: sourceEventSeqs of event ${event.seq} omit the shadowed node ${uncovered}`,
      );
    }
    return shadowed;
  }

  #checkSources(event: SessionEvent, sources: unknown): void {
    // The session's own chunk-seq list, found in strictly increasing order
    // before it was frozen: only its last seq can be too late. Anything else
    // (and that list when it is) takes the walk below, with its own errors.
    const end = increasingSeqsEnd(sources);
    if (end !== undefined && end < event.seq) return;
    if (!Array.isArray(sources)) {
      fail("SOURCE_SEQS_INVALID", event, `sourceEventSeqs of event ${event.seq} is not an array`);
    }
    if (sources.length === 0 && event.type !== "assistant/message") {
      fail("SOURCE_SEQS_INVALID", event, `sourceEventSeqs of event ${event.seq} is empty`);
    }
    // Sources in increasing order (the loop's own: chunk seqs) cannot repeat:
    // the set of seen seqs is built only once the order breaks.
    let seen: Set<number> | undefined;
    let last = -1;
    for (let i = 0; i < sources.length; i++) {
      const seq: unknown = sources[i];
      if (!isSeq(seq)) fail("SOURCE_SEQS_INVALID", event, `sourceEventSeqs of event ${event.seq} has a non-seq ${seq}`);
      if (seq >= event.seq) {
        fail("SOURCE_SEQS_INVALID", event, `sourceEventSeqs of event ${event.seq} cites the later seq ${seq}`);
      }
      if (seen === undefined && seq <= last) seen = new Set(sources.slice(0, i) as number[]);
      if (seen !== undefined) {
        if (seen.has(seq)) fail("SOURCE_SEQS_INVALID", event, `sourceEventSeqs of event ${event.seq} repeats ${seq}`);
        seen.add(seq);
      }
      last = seq;
    }
  }

  static {
    commitPlainTo = (manager, event) => {
      if (event.seq !== manager.#nextSeq) {
        fail("SEQ_NOT_CONTIGUOUS", event, `Event seq ${event.seq} is not the next seq ${manager.#nextSeq}`);
      }
      manager.#nextSeq++;
    };
  }

  /**
   * Validate `event` and advance the surface.
   *
   * @param event The next event of the log.
   * @returns The replacement the event made, or `undefined` when it made none.
   * @throws {HarnessError} Any surface rejection; the manager is then unchanged.
   */
  commit(event: SessionEvent): SurfaceFoldReplacement | undefined {
    const shadowed = this.validate(event);
    this.#nextSeq++;
    if (!isSurfaceEventType(event.type)) return undefined;
    const op = event.surfaceOp!;
    this.#events.set(event.seq, event);
    if (op === "append") {
      this.#position.set(event.seq, this.#nodes.length);
      this.#nodes.push(event.seq);
      this.#snapshot = undefined;
      return undefined;
    }
    const i = this.#position.get(op.start)!;
    for (const seq of shadowed) {
      this.#position.delete(seq);
      this.#events.delete(seq);
    }
    this.#nodes.splice(i, shadowed.length, event.seq);
    for (let k = i; k < this.#nodes.length; k++) this.#position.set(this.#nodes[k], k);
    this.#generation++;
    this.#snapshot = undefined;
    return Object.freeze({ seq: event.seq, start: op.start, end: op.end, shadowedSeqs: Object.freeze(shadowed) });
  }
}
