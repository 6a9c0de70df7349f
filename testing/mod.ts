/**
 * `@dsh/harness/testing`: what tests of the harness and of its users need —
 * the session invariant checker, fast-check arbitraries of session logs,
 * surface operations and grammar-valid model streams, log mutations of known kinds, and ready property
 * suites over `deriveMessages` and `foldSurface`.
 *
 * @example Running the property suites in your own tests
 * ```ts
 * import { checkInvariants, sessionPropertySuites } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * sessionPropertySuites.incrementalSurface({ numRuns: 10 });
 * assert.deepEqual(checkInvariants([]), []);
 * ```
 *
 * @module
 */

export {
  assertInvariants,
  checkInvariants,
  type CheckInvariantsOptions,
  type InvariantViolation,
  SESSION_INVARIANT_CODES,
} from "../mod.ts";
export { arbSessionLog, type ArbSessionLogOptions } from "./arb_session_log.ts";
export { arbStreamChunks, type ArbStreamChunksOptions } from "./arb_stream_chunks.ts";
export {
  applySurfaceOp,
  arbSurfaceOps,
  type ArbSurfaceOpsOptions,
  SURFACE_OP_KINDS,
  type SurfaceOpCase,
  type SurfaceOpsScript,
} from "./arb_surface_ops.ts";
export { arbMutatedLog, LOG_MUTATIONS, type LogMutationKind, type MutatedLog, mutateLog } from "./mutate_log.ts";
export {
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
  type PropertyOptions,
  propertyRuns,
  referenceSurface,
  replayLog,
  sessionPropertySuites,
} from "./session_properties.ts";
export * from "./scripted_adapter.ts";
