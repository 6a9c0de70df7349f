import { describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import {
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
  sessionPropertySuites,
} from "./mod.ts";
import { checkInvariants, type SessionEvent } from "../mod.ts";

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
