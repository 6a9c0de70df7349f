/**
 * A fast-check arbitrary of surface operations, valid and invalid, each with
 * the outcome the surface rules demand.
 *
 * @module
 */

import fc from "fast-check";
import type { Arbitrary } from "fast-check";
import { Session, type SessionEventMap, type SurfaceEventType, type SurfaceIntent, type SurfaceOp } from "../mod.ts";
import { assistantMessage, pick, systemMessage, toolResultMessage, userMessage } from "./_log_builder.ts";

/** The kinds of operation {@linkcode arbSurfaceOps} generates. */
export const SURFACE_OP_KINDS: readonly string[] = Object.freeze([
  "append-user",
  "append-system",
  "append-assistant",
  "append-tool",
  "noise",
  "replace",
  "replace-tool",
  "range-off-surface",
  "start-after-end",
  "sources-incomplete",
  "sources-duplicate",
  "sources-later",
  "sources-empty",
  "bad-op",
  "missing-op",
  "tool-span",
  "tool-target",
  "tool-changed",
]);

/** One candidate `append()` of a surface script. */
export interface SurfaceOpCase {
  /** What the candidate exercises, one of {@linkcode SURFACE_OP_KINDS}. */
  readonly kind: string;
  /** The event type. */
  readonly type: keyof SessionEventMap & string;
  /** The payload. */
  readonly data: unknown;
  /** The surface intent (`undefined` for non-surface types). */
  readonly intent: SurfaceIntent | undefined;
  /** `"ok"` when the append must succeed, otherwise the rejection code it must fail with. */
  readonly expected: string;
}

/** A script of candidate appends, in order; rejected candidates leave the log unchanged. */
export interface SurfaceOpsScript {
  readonly ops: readonly SurfaceOpCase[];
}

/** Options of {@linkcode arbSurfaceOps}. */
export interface ArbSurfaceOpsOptions {
  /**
   * The most operations in a script.
   *
   * @default {30}
   */
  maxOps?: number;
}

/**
 * Append a case to a session as `Session.append` would be called by a producer.
 *
 * @param session The session.
 * @param op The case.
 * @returns The committed event's seq.
 * @throws Whatever `append` throws.
 */
export function applySurfaceOp(session: Session, op: SurfaceOpCase): number {
  const append = session.append as unknown as (type: string, data: unknown, ...intent: unknown[]) => { seq: number };
  return (op.intent === undefined
    ? append.call(session, op.type, op.data)
    : append.call(session, op.type, op.data, op.intent)).seq;
}

interface Descriptor {
  kind: number;
  a: number;
  b: number;
}

function buildScript(descriptors: readonly Descriptor[]): SurfaceOpsScript {
  const session = Session.create("surface-ops", undefined, { now: () => 0 });
  const ops: SurfaceOpCase[] = [];
  let id = 0;
  const next = (p: string): string => `${p}${++id}`;
  const at = { turn: 1, step: 1 };
  const nodesOf = (type?: SurfaceEventType): number[] =>
    session.surface.nodes.filter((s) => type === undefined || session.events[s].type === type);
  const userData = (): SessionEventMap["user/message"] => userMessage(next("m"), "text");
  const replaceOp = (start: number, end: number): SurfaceOp => ({ op: "replace", start, end });

  const emit = (
    kind: string,
    type: SurfaceOpCase["type"],
    data: unknown,
    intent: SurfaceIntent | undefined,
    expected: string,
  ) => {
    const op: SurfaceOpCase = { kind, type, data, intent, expected };
    ops.push(op);
    if (expected === "ok") applySurfaceOp(session, op);
  };
  const appendUser = (kind: string) => emit(kind, "user/message", userData(), { surfaceOp: "append" }, "ok");

  for (const d of descriptors) {
    const kind = SURFACE_OP_KINDS[d.kind % SURFACE_OP_KINDS.length];
    const nodes = nodesOf();
    const n = nodes.length;
    const i = pick(d.a, n);
    const j = i === undefined ? undefined : i + pick(d.b, n - i)!;
    switch (kind) {
      case "append-user":
        appendUser(kind);
        break;
      case "append-system":
        emit(kind, "system/message", systemMessage(next("m"), "context"), { surfaceOp: "append" }, "ok");
        break;
      case "append-assistant": {
        const content = d.a % 3 === 0 ? [] : [{ type: "text" as const, text: "reply" }];
        const sources = d.b % 2 === 0 ? [] : undefined;
        emit(kind, "assistant/message", { ...at, message: assistantMessage(next("m"), content) }, {
          surfaceOp: "append",
          ...(sources ? { sourceEventSeqs: sources } : {}),
        }, "ok");
        break;
      }
      case "append-tool":
        emit(kind, "tool/result", { ...at, message: toolResultMessage(next("m"), next("call_"), "42") }, {
          surfaceOp: "append",
        }, "ok");
        break;
      case "noise":
        emit(kind, "todo/write", { todos: [] }, undefined, "ok");
        break;
      case "replace":
        if (i === undefined) appendUser(kind);
        else {
          emit(kind, "user/message", userData(), {
            surfaceOp: replaceOp(nodes[i], nodes[j!]),
            sourceEventSeqs: nodes.slice(i, j! + 1),
          }, "ok");
        }
        break;
      case "replace-tool":
      case "tool-changed": {
        const results = nodesOf("tool/result");
        const target = results[pick(d.a, results.length) ?? -1];
        if (target === undefined) {
          appendUser(kind);
          break;
        }
        const old = session.events[target].data as SessionEventMap["tool/result"];
        const block = old.message.content[0];
        const message = kind === "replace-tool"
          ? { ...old.message, content: [{ ...block, content: [{ type: "text", text: `pruned ${d.b}` }] }] }
          : { ...old.message, id: next("changed") };
        emit(kind, "tool/result", { ...old, message }, {
          surfaceOp: replaceOp(target, target),
          sourceEventSeqs: [target],
        }, kind === "replace-tool" ? "ok" : "TOOL_RESULT_REPLACE_INVALID");
        break;
      }
      case "range-off-surface": {
        const seq = session.seq;
        const offSurface = [...Array(seq).keys()].filter((s) => !session.surface.nodes.includes(s));
        const start = offSurface[pick(d.a, offSurface.length) ?? -1] ?? seq + 1 + (d.a % 5);
        emit(kind, "user/message", userData(), {
          surfaceOp: replaceOp(start, start),
          ...(seq > 0 ? { sourceEventSeqs: [seq - 1] } : {}),
        }, "REPLACE_RANGE_INVALID");
        break;
      }
      case "start-after-end":
        if (n < 2) appendUser(kind);
        else {
          const lo = d.a % (n - 1);
          const hi = lo + 1 + (d.b % (n - 1 - lo));
          emit(kind, "user/message", userData(), {
            surfaceOp: replaceOp(nodes[hi], nodes[lo]),
            sourceEventSeqs: nodes.slice(lo, hi + 1),
          }, "REPLACE_RANGE_INVALID");
        }
        break;
      case "sources-incomplete":
        if (i === undefined) appendUser(kind);
        else {
          const shadowed = nodes.slice(i, j! + 1);
          const sources = shadowed.filter((_, k) => k !== d.b % shadowed.length);
          emit(kind, "user/message", userData(), {
            surfaceOp: replaceOp(nodes[i], nodes[j!]),
            ...(sources.length > 0 ? { sourceEventSeqs: sources } : {}),
          }, "REPLACE_SOURCES_INCOMPLETE");
        }
        break;
      case "sources-duplicate":
        if (i === undefined) appendUser(kind);
        else {
          emit(kind, "user/message", userData(), {
            surfaceOp: "append",
            sourceEventSeqs: [nodes[i], nodes[i]],
          }, "SOURCE_SEQS_INVALID");
        }
        break;
      case "sources-later":
        emit(kind, "user/message", userData(), {
          surfaceOp: "append",
          sourceEventSeqs: [session.seq + (d.a % 3)],
        }, "SOURCE_SEQS_INVALID");
        break;
      case "sources-empty":
        emit(
          kind,
          d.a % 2 === 0 ? "user/message" : "tool/result",
          d.a % 2 === 0 ? userData() : {
            ...at,
            message: toolResultMessage(next("m"), next("call_"), "x"),
          },
          { surfaceOp: "append", sourceEventSeqs: [] },
          "SOURCE_SEQS_INVALID",
        );
        break;
      case "bad-op": {
        const bad = [{ op: "swap", start: 0, end: 0 }, { op: "replace", start: -1, end: 0 }, "prepend", {
          op: "replace",
          start: 0.5,
          end: 1,
        }][d.a % 4];
        emit(kind, "user/message", userData(), { surfaceOp: bad as SurfaceOp }, "SURFACE_OP_INVALID");
        break;
      }
      case "missing-op":
        emit(kind, "user/message", userData(), {} as SurfaceIntent, "SURFACE_OP_MISSING");
        break;
      case "tool-span":
      case "tool-target": {
        const results = nodesOf("tool/result");
        const target = results[pick(d.a, results.length) ?? -1];
        if (target === undefined) {
          appendUser(kind);
          break;
        }
        const old = session.events[target].data as SessionEventMap["tool/result"];
        if (kind === "tool-span") {
          const k = nodes.indexOf(target);
          // Two adjacent nodes in surface order (not seq order: replaced nodes move).
          const [start, end] = k + 1 < nodes.length ? [target, nodes[k + 1]] : [nodes[k - 1], target];
          if (start === undefined) {
            appendUser(kind);
            break;
          }
          emit(kind, "tool/result", old, {
            surfaceOp: replaceOp(start, end),
            sourceEventSeqs: [start, end],
          }, "TOOL_RESULT_REPLACE_INVALID");
        } else {
          const others = nodes.filter((s) => session.events[s].type !== "tool/result");
          const victim = others[pick(d.b, others.length) ?? -1];
          if (victim === undefined) {
            appendUser(kind);
            break;
          }
          emit(kind, "tool/result", old, {
            surfaceOp: replaceOp(victim, victim),
            sourceEventSeqs: [victim],
          }, "TOOL_RESULT_REPLACE_INVALID");
        }
        break;
      }
    }
  }
  return { ops };
}

/**
 * An arbitrary of surface scripts: sequences of candidate appends of the four
 * surface types and of non-surface events, among them valid replaces and
 * invalid candidates of every rejection kind (range off the surface, start
 * after end, incomplete/duplicate/later/empty sources, malformed or missing
 * ops, tool-result replaces spanning several nodes, targeting a non-result or
 * changing more than the result content), each labelled with the outcome the
 * rules demand. Replay it with {@linkcode applySurfaceOp}.
 *
 * @param options Size limit.
 * @returns The arbitrary.
 *
 * @example
 * ```ts
 * import fc from "fast-check";
 * import { Session } from "@dsh/harness";
 * import { applySurfaceOp, arbSurfaceOps } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * fc.assert(fc.property(arbSurfaceOps(), ({ ops }) => {
 *   const session = Session.create("s", undefined, { now: () => 0 });
 *   for (const op of ops) {
 *     if (op.expected === "ok") applySurfaceOp(session, op);
 *     else assert.throws(() => applySurfaceOp(session, op), { code: op.expected });
 *   }
 * }), { numRuns: 20 });
 * ```
 */
export function arbSurfaceOps(options: ArbSurfaceOpsOptions = {}): Arbitrary<SurfaceOpsScript> {
  return fc.array(
    fc.record({ kind: fc.nat({ max: SURFACE_OP_KINDS.length * 2 }), a: fc.nat(), b: fc.nat() }),
    { maxLength: options.maxOps ?? 30 },
  ).map(buildScript);
}
