import { describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import {
  checkDeriveFrozenProperty,
  checkDeriveMatchesSurfaceProperty,
  checkIncrementalSurfaceProperty,
  checkMutationProperty,
  checkNonSurfaceNeutralProperty,
  checkReseedProperty,
  checkSurfaceRejectionProperty,
  checkValidLogInvariantsProperty,
  checkWindowedSurfaceProperty,
  propertyRuns,
  sessionPropertySuites,
} from "./mod.ts";

// Each suite runs propertyRuns() cases: 500 by default, more with DSH_PROPERTY_RUNS.
describe("session property suites", () => {
  it("run at least 500 cases each by default", () => {
    assert.ok(propertyRuns() >= 500);
    assert.equal(Object.keys(sessionPropertySuites).length, 9);
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
});
