/**
 * Invariant checks the harness can run live and tests run on whole logs:
 * the session invariants (`checkInvariants`, `assertInvariants`).
 * `@dsh/harness/testing` re-exports them.
 *
 * @module
 */

export {
  assertInvariants,
  checkInvariants,
  type CheckInvariantsOptions,
  type InvariantViolation,
  SESSION_INVARIANT_CODES,
} from "./check_invariants.ts";
