/**
 * Ready-made property suites over the session log: the surface fold, derived
 * history and the invariant checker. Each suite runs `fc.assert` and throws
 * on the first counterexample, so it can be called from any test runner.
 *
 * @module
 */

import fc from "fast-check";
import assert from "node:assert/strict";
import {
  checkInvariants,
  deriveEventMessage,
  foldSurface,
  HarnessError,
  type Message,
  Session,
  type SessionEvent,
  SurfaceManager,
} from "../mod.ts";
import { arbSessionLog, type ArbSessionLogOptions } from "./arb_session_log.ts";
import { applySurfaceOp, arbSurfaceOps } from "./arb_surface_ops.ts";
import { arbMutatedLog } from "./mutate_log.ts";

/** Options of every property suite. */
export interface PropertyOptions extends ArbSessionLogOptions {
  /**
   * How many cases to run.
   *
   * @default {propertyRuns()}
   */
  numRuns?: number;
  /** A fast-check seed, to replay a failure. */
  seed?: number;
}

/**
 * The default number of cases per property: 500, or more when the
 * `DSH_PROPERTY_RUNS` environment variable asks for more.
 *
 * @returns The number of runs.
 */
export function propertyRuns(): number {
  let raw: string | undefined;
  try {
    const g = globalThis as {
      process?: { env?: Record<string, string | undefined> };
      Deno?: { env?: { get(name: string): string | undefined } };
    };
    raw = g.process?.env?.DSH_PROPERTY_RUNS ?? g.Deno?.env?.get("DSH_PROPERTY_RUNS");
  } catch {
    raw = undefined; // no permission to read the environment
  }
  const asked = Number(raw);
  return Number.isSafeInteger(asked) && asked > 500 ? asked : 500;
}

function params(options: PropertyOptions): fc.Parameters<unknown> {
  return { numRuns: options.numRuns ?? propertyRuns(), ...(options.seed !== undefined ? { seed: options.seed } : {}) };
}

function logs(options: PropertyOptions) {
  return arbSessionLog({ maxTurns: options.maxTurns, maxSteps: options.maxSteps });
}

/**
 * Append the events of a log to a session the way a producer would (the
 * end-seed marker, which only a constructor writes, is skipped).
 *
 * @param session The session to append to.
 * @param events The events to replay.
 * @param each Called after each appended event.
 */
export function replayLog(
  session: Session,
  events: readonly SessionEvent[],
  each?: (event: SessionEvent) => void,
): void {
  const append = session.append as unknown as (type: string, data: unknown, ...intent: unknown[]) => SessionEvent;
  for (const event of events) {
    if (event.type === "session/end-seed") continue;
    const committed = event.surfaceOp === undefined ? append.call(session, event.type, event.data) : append.call(
      session,
      event.type,
      event.data,
      event.sourceEventSeqs === undefined
        ? { surfaceOp: event.surfaceOp }
        : { surfaceOp: event.surfaceOp, sourceEventSeqs: event.sourceEventSeqs },
    );
    each?.(committed);
  }
}

/**
 * The surface of a valid log by the contract's words, as the oracle the
 * properties check `SurfaceManager`, `foldSurface` and `deriveMessages()`
 * against: a plain array of node seqs, where `append` adds the event at the
 * end and `{ op: "replace", start, end }` takes the nodes from `start` to
 * `end` (inclusive) out and puts the event in their place. It shares no code
 * with the implementation (and checks nothing: give it valid logs).
 *
 * @param events A valid log.
 * @returns The seqs of the surface nodes, in order.
 *
 * @example
 * ```ts
 * import { referenceSurface } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * const message = (seq: number, surfaceOp: unknown) => ({ type: "user/message", seq, time: 0, data: {}, surfaceOp });
 * const log = [message(0, "append"), message(1, "append"), message(2, { op: "replace", start: 0, end: 0 })];
 * assert.deepEqual(referenceSurface(log as never), [2, 1]);
 * ```
 */
export function referenceSurface(events: readonly SessionEvent[]): number[] {
  const nodes: number[] = [];
  for (const event of events) {
    const op = event.surfaceOp;
    if (op === undefined) continue;
    if (op === "append") {
      nodes.push(event.seq);
      continue;
    }
    const from = nodes.indexOf(op.start);
    nodes.splice(from, nodes.indexOf(op.end) - from + 1, event.seq);
  }
  return nodes;
}

function expectedMessages(events: readonly SessionEvent[]): Message[] {
  return referenceSurface(events).map((seq) => deriveEventMessage(events[seq])).filter((m): m is Message => m !== null);
}

/**
 * Property: `foldSurface` gives the surface {@linkcode referenceSurface}
 * gives, for generated session logs (compactions, replaced tool results) and
 * for generated runs of surface operations.
 *
 * @param options Runs, seed and log size.
 */
export function checkReferenceSurfaceProperty(options: PropertyOptions = {}): void {
  fc.assert(
    fc.property(logs(options), (events) => {
      assert.deepEqual(foldSurface(events).nodes, referenceSurface(events));
    }),
    params(options),
  );
  fc.assert(
    fc.property(arbSurfaceOps(), ({ ops }) => {
      const session = Session.create("s", undefined, { now: () => 0 });
      for (const op of ops) if (op.expected === "ok") applySurfaceOp(session, op);
      const events = session.events;
      assert.deepEqual(foldSurface(events).nodes, referenceSurface(events));
      assert.deepEqual([...session.surface.nodes], referenceSurface(events));
    }),
    params(options),
  );
}

function assertDeepFrozen(value: unknown, path = "message"): void {
  if (typeof value !== "object" || value === null) return;
  assert.ok(Object.isFrozen(value), `${path} is not frozen`);
  for (const [key, child] of Object.entries(value)) assertDeepFrozen(child, `${path}.${key}`);
}

/**
 * Property: feeding a `SurfaceManager` one event at a time gives, after every
 * prefix, the nodes and replace count of `foldSurface(prefix)`.
 *
 * @param options Runs, seed and log size.
 */
export function checkIncrementalSurfaceProperty(options: PropertyOptions = {}): void {
  fc.assert(
    fc.property(logs(options), (events) => {
      const manager = new SurfaceManager();
      for (let k = 0; k < events.length; k++) {
        manager.commit(events[k]);
        const fold = foldSurface(events.slice(0, k + 1));
        assert.deepEqual(manager.nodes, fold.nodes);
        assert.equal(manager.replaceGeneration, fold.replacements.length);
      }
    }),
    params(options),
  );
}

/**
 * Property: folding a window `events.slice(k)` with `baseSeq = k` gives the
 * full fold's nodes from seq `k` on, and fails (with `REPLACE_RANGE_INVALID`)
 * exactly when a replacement inside the window reaches before it.
 *
 * @param options Runs, seed and log size.
 */
export function checkWindowedSurfaceProperty(options: PropertyOptions = {}): void {
  fc.assert(
    fc.property(logs(options), fc.nat(), (events, at) => {
      const k = at % (events.length + 1);
      const full = foldSurface(events);
      const reachesBack = full.replacements.some((r) => r.seq >= k && r.start < k);
      let window: SurfaceManager | undefined;
      try {
        window = new SurfaceManager(events.slice(k), k);
      } catch (error) {
        assert.ok(HarnessError.isInstance(error, "REPLACE_RANGE_INVALID"), String(error));
      }
      assert.equal(window === undefined, reachesBack);
      if (window) assert.deepEqual(window.nodes, full.nodes.filter((seq) => seq >= k));
    }),
    params(options),
  );
}

/**
 * Property: `deriveMessages()` equals the surface nodes of `foldSurface`
 * mapped by `deriveEventMessage` (nulls dropped) — on a seeded session, and on
 * a live session after each replace and at random points while it grows (so
 * the incremental cache and its rebuild are both exercised).
 *
 * @param options Runs, seed and log size.
 */
export function checkDeriveMatchesSurfaceProperty(options: PropertyOptions = {}): void {
  fc.assert(
    fc.property(logs(options), fc.array(fc.nat(), { maxLength: 6 }), (events, points) => {
      const seeded = Session.create("seeded", events, { now: () => 0 });
      assert.deepEqual(seeded.deriveMessages(), expectedMessages(events));
      const live = Session.create("live", undefined, { now: () => 0 });
      const checkAt = new Set(points.map((p) => p % (events.length + 1)));
      replayLog(live, events, (event) => {
        const replace = event.surfaceOp !== undefined && event.surfaceOp !== "append";
        if (replace || checkAt.has(event.seq)) {
          assert.deepEqual(live.deriveMessages(), expectedMessages(live.events));
        }
      });
      assert.deepEqual(live.deriveMessages(), expectedMessages(events));
    }),
    params(options),
  );
}

/**
 * Property: derivation is deterministic, returns a fresh array per call whose
 * messages are shared between calls and deep-frozen, and mutating a returned
 * array does not change the next result.
 *
 * @param options Runs, seed and log size.
 */
export function checkDeriveFrozenProperty(options: PropertyOptions = {}): void {
  fc.assert(
    fc.property(logs(options), (events) => {
      const session = Session.create("s", events, { now: () => 0 });
      const a = session.deriveMessages();
      const b = session.deriveMessages();
      assert.notEqual(a, b);
      assert.deepEqual(a, b);
      a.forEach((message, i) => {
        assert.equal(message, b[i]);
        assertDeepFrozen(message);
      });
      a.length = 0;
      assert.deepEqual(session.deriveMessages(), b);
    }),
    params(options),
  );
}

/**
 * Property: seeding a new session with a log reproduces its derived messages
 * and adds exactly one `session/end-seed`, at `firstLiveSeq`; seeding with a
 * log that already ends with one adds none.
 *
 * @param options Runs, seed and log size.
 */
export function checkReseedProperty(options: PropertyOptions = {}): void {
  fc.assert(
    fc.property(logs(options), (events) => {
      const count = (log: readonly SessionEvent[]) => log.filter((e) => e.type === "session/end-seed").length;
      const live = Session.create("live", undefined, { now: () => 0 });
      replayLog(live, events);
      const seeded = Session.create("seeded", live.events, { now: () => 0 });
      assert.deepEqual(seeded.deriveMessages(), live.deriveMessages());
      assert.equal(count(seeded.events), count(live.events) + 1);
      assert.equal(seeded.firstLiveSeq, live.seq);
      assert.equal(seeded.events[seeded.firstLiveSeq].type, "session/end-seed");
      assert.deepEqual(seeded.events.slice(0, live.seq), live.events);
      const again = Session.create("again", seeded.events, { now: () => 0 });
      assert.equal(again.seq, seeded.seq);
      assert.deepEqual(again.deriveMessages(), live.deriveMessages());
    }),
    params(options),
  );
}

const NOISE: readonly ((session: Session) => void)[] = [
  (s) => s.append("todo/write", { todos: [{ content: "x", status: "pending" }] }),
  (s) => s.append("compaction/start", { reason: "threshold" }),
  (s) => s.append("compaction/end", { outcome: "failed", error: "No budget" }),
  (s) => s.append("assistant/chunk", { turn: 9, step: 9, chunk: { type: "text-delta", index: 0, text: "x" } }),
  (s) => s.append("request/context", { provider: "p", model: "m" }),
  (s) => s.append("agent/inbox/spliced", { target: "next-step", start: 0, removedCount: 1, inserted: [] }),
  (s) => s.append("turn/start", { turn: 99 }),
  (s) => s.append("tool/call", { turn: 1, step: 1, callId: "c", name: "n", arguments: "" }),
];

/**
 * Property: appending events that are not surface events never changes the
 * derived messages (not even their identity) nor the surface.
 *
 * @param options Runs, seed and log size.
 */
export function checkNonSurfaceNeutralProperty(options: PropertyOptions = {}): void {
  fc.assert(
    fc.property(
      logs(options),
      fc.array(fc.nat({ max: NOISE.length - 1 }), { minLength: 1, maxLength: 8 }),
      (events, noise) => {
        const session = Session.create("s", events, { now: () => 0 });
        const before = session.deriveMessages();
        const nodes = session.surface.nodes;
        const generation = session.surface.replaceGeneration;
        for (const n of noise) NOISE[n](session);
        const after = session.deriveMessages();
        assert.equal(after.length, before.length);
        after.forEach((message, i) => assert.equal(message, before[i]));
        assert.deepEqual(session.surface.nodes, nodes);
        assert.equal(session.surface.replaceGeneration, generation);
      },
    ),
    params(options),
  );
}

/**
 * Property: for scripts of valid and invalid surface operations, each valid
 * one is accepted, each invalid one is rejected by `Session.append` and by
 * `foldSurface` with the same expected code, and a rejection leaves the log
 * unchanged; the accepted log folds to the session's surface.
 *
 * @param options Runs and seed.
 */
export function checkSurfaceRejectionProperty(options: PropertyOptions = {}): void {
  fc.assert(
    fc.property(arbSurfaceOps(), ({ ops }) => {
      const session = Session.create("s", undefined, { now: () => 0 });
      for (const op of ops) {
        if (op.expected === "ok") {
          applySurfaceOp(session, op);
          continue;
        }
        const events = session.events;
        assert.throws(() => applySurfaceOp(session, op), (e) => HarnessError.isInstance(e, op.expected), op.kind);
        assert.equal(session.events, events);
        assert.equal(session.seq, events.length);
        const envelope = {
          type: op.type,
          seq: session.seq,
          time: 0,
          data: op.data,
          ...(op.intent?.surfaceOp !== undefined ? { surfaceOp: op.intent.surfaceOp } : {}),
          ...(op.intent?.sourceEventSeqs !== undefined ? { sourceEventSeqs: op.intent.sourceEventSeqs } : {}),
        } as SessionEvent;
        assert.throws(
          () => foldSurface([...events, envelope]),
          (e) => HarnessError.isInstance(e, op.expected),
          op.kind,
        );
      }
      assert.deepEqual(session.surface.nodes, foldSurface(session.events).nodes);
    }),
    params(options),
  );
}

/**
 * Property: generated valid logs, and the sessions seeded from them, have no
 * invariant violations.
 *
 * @param options Runs, seed and log size.
 */
export function checkValidLogInvariantsProperty(options: PropertyOptions = {}): void {
  fc.assert(
    fc.property(logs(options), (events) => {
      assert.deepEqual(checkInvariants(events), []);
      assert.deepEqual(checkInvariants(Session.create("s", events, { now: () => 0 }).events), []);
    }),
    params(options),
  );
}

/**
 * Property: each kind of mutation of a valid log is reported, first, with its
 * own violation code, at or after the mutated position.
 *
 * @param options Runs, seed and log size.
 */
export function checkMutationProperty(options: PropertyOptions = {}): void {
  fc.assert(
    fc.property(arbMutatedLog({ maxTurns: options.maxTurns, maxSteps: options.maxSteps }), (mutated) => {
      const violations = checkInvariants(mutated.events);
      assert.ok(violations.length > 0, `${mutated.kind} was not reported`);
      assert.equal(violations[0].code, mutated.code, mutated.kind);
      assert.ok(violations[0].seq >= mutated.fromSeq, mutated.kind);
    }),
    params(options),
  );
}

/**
 * Every property suite of this module by name, for users who run them all:
 * `for (const run of Object.values(sessionPropertySuites)) run()`.
 *
 * @example
 * ```ts
 * import { sessionPropertySuites } from "@dsh/harness/testing";
 *
 * for (const run of Object.values(sessionPropertySuites)) run({ numRuns: 10 });
 * ```
 */
export const sessionPropertySuites: Readonly<Record<string, (options?: PropertyOptions) => void>> = Object.freeze({
  referenceSurface: checkReferenceSurfaceProperty,
  incrementalSurface: checkIncrementalSurfaceProperty,
  windowedSurface: checkWindowedSurfaceProperty,
  deriveMatchesSurface: checkDeriveMatchesSurfaceProperty,
  deriveFrozen: checkDeriveFrozenProperty,
  reseed: checkReseedProperty,
  nonSurfaceNeutral: checkNonSurfaceNeutralProperty,
  surfaceRejection: checkSurfaceRejectionProperty,
  validLogInvariants: checkValidLogInvariantsProperty,
  mutations: checkMutationProperty,
});
