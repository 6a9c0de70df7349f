import { describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import {
  arbSessionLog,
  checkDeriveFrozenProperty,
  checkDeriveMatchesSurfaceProperty,
  checkIncrementalSurfaceProperty,
  checkMutationProperty,
  checkNonSurfaceNeutralProperty,
  checkReferenceSurfaceProperty,
  checkReseedProperty,
  checkSurfaceRejectionProperty,
  checkValidLogInvariantsProperty,
  checkWindowedSurfaceProperty,
  LOG_MUTATIONS,
  mutateLog,
  propertyRuns,
  referenceSurface,
  sessionPropertySuites,
} from "./mod.ts";
import { checkInvariants, Session, type SessionEvent } from "../mod.ts";
import fc from "fast-check";

// Each suite runs propertyRuns() cases: 500 by default, more with DSH_PROPERTY_RUNS.
describe("session property suites", () => {
  it("run at least 500 cases each by default", () => {
    assert.ok(propertyRuns() >= 500);
    assert.equal(Object.keys(sessionPropertySuites).length, 10);
  });
  it("DSH_PROPERTY_RUNS raises the number of runs, never lowers it", () => {
    const saved = process.env.DSH_PROPERTY_RUNS;
    try {
      process.env.DSH_PROPERTY_RUNS = "2000";
      assert.equal(propertyRuns(), 2000);
      process.env.DSH_PROPERTY_RUNS = "10";
      assert.equal(propertyRuns(), 500);
    } finally {
      if (saved === undefined) delete process.env.DSH_PROPERTY_RUNS;
      else process.env.DSH_PROPERTY_RUNS = saved;
    }
  });
  it("foldSurface equals the reference surface (a plain spliced array)", () => checkReferenceSurfaceProperty());
  it("incremental SurfaceManager equals foldSurface on every prefix", () => checkIncrementalSurfaceProperty());
  it("a windowed fold equals the full fold where it is defined", () => checkWindowedSurfaceProperty());
  it("deriveMessages() equals the surface mapped by deriveEventMessage", () => checkDeriveMatchesSurfaceProperty());
  it("derivation is deterministic, frozen and returns a fresh array", () => checkDeriveFrozenProperty());
  it("re-seeding reproduces the derived messages and adds exactly one end-seed", () => checkReseedProperty());
  it("non-surface events never change derived messages", () => checkNonSurfaceNeutralProperty());
  it("an invalid surface op is rejected with the same code by append and foldSurface", () =>
    checkSurfaceRejectionProperty());
  it("valid generated logs have no invariant violations", () => checkValidLogInvariantsProperty());
  it("each mutation kind is reported with its code", () => checkMutationProperty());

  it("draw logs whose surface and derived history hold interrupted messages and compaction summaries", () => {
    // The suites draw from arbSessionLog() at this size: some of their logs must carry the loop's rarer shapes onto
    // the surface they fold and derive (and hook events beside it), or the properties would not cover them.
    const seen = { interrupted: 0, summary: 0, hooks: 0 };
    for (const events of fc.sample(arbSessionLog(), { numRuns: 300, seed: 9 })) {
      const derived = new Set(Session.create("s", events, { now: () => 0 }).deriveMessages().map((m) => m.id));
      for (const seq of referenceSurface(events)) {
        const event = events[seq];
        if (event.type === "assistant/message" && event.data.interrupted) {
          assert.ok(derived.has(event.data.message.id));
          seen.interrupted++;
        }
        if (
          event.type === "user/message" && event.data.source.kind === "plugin" && event.data.source.form === "summary"
        ) {
          assert.ok(derived.has(event.data.id));
          assert.equal(events[seq + 1].type, "compaction/end");
          seen.summary++;
        }
      }
      if (events.some((e) => e.type === "hook/invoked")) seen.hooks++;
    }
    assert.ok(seen.interrupted > 0 && seen.summary > 0 && seen.hooks > 0, JSON.stringify(seen));
  });

  it("mutateLog() of a log that ends inside a compaction reports each kind with its own code", () => {
    // Valid: a log may end inside a compaction (a snapshot taken while a manual one runs).
    const open = [{ type: "compaction/start", seq: 0, time: 0, data: { reason: "manual" } }] as SessionEvent[];
    assert.deepEqual(checkInvariants(open), []);
    for (const [kind, code] of Object.entries(LOG_MUTATIONS)) {
      const mutated = mutateLog(open, kind);
      const first = checkInvariants(mutated.events)[0];
      assert.equal(first?.code, code, kind);
      assert.ok(first.seq >= mutated.fromSeq, `${kind}: seq ${first.seq} before ${mutated.fromSeq}`);
    }
  });
});
