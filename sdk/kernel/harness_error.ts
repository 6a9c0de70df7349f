/**
 * The one error base class of the SDK.
 *
 * @module
 */

const BRAND: unique symbol = Symbol.for("@dsh/harness/HarnessError");

/** Options of {@linkcode HarnessError}. */
export interface HarnessErrorOptions {
  /** The error that caused this one. */
  cause?: unknown;
  /** Structured facts about the failure (ids, seqs, paths). */
  details?: Record<string, unknown>;
}

/**
 * An error raised by the harness, with a stable machine-readable `code`.
 *
 * Every error the SDK throws on purpose is a `HarnessError` (or a subclass).
 * Match on `code`, never on the message. Use {@linkcode HarnessError.isInstance}
 * rather than `instanceof` when two copies of the package may be loaded.
 *
 * @example Throwing and matching
 * ```ts
 * import { HarnessError } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const error = new HarnessError("OPEN_TURN", "Cannot fork session: the prefix ends inside turn 3");
 * assert.equal(HarnessError.isInstance(error), true);
 * assert.equal(error.code, "OPEN_TURN");
 * ```
 */
export class HarnessError extends Error {
  /** The stable code, e.g. `INVALID_ARGS` or `SESSION_NOT_FOUND`. */
  readonly code: string;
  /** Structured facts about the failure. */
  readonly details: Record<string, unknown> | undefined;
  /** Brand shared by every copy of the package. */
  readonly [BRAND]: true = true;

  /**
   * Create an error.
   *
   * @param code The stable code.
   * @param message A sentence stating the fact first, sentence case, no final period.
   * @param options The cause and structured details.
   */
  constructor(code: string, message: string, options: HarnessErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "HarnessError";
    this.code = code;
    this.details = options.details;
  }

  /**
   * Whether `value` is a `HarnessError` from any copy of this package.
   *
   * @param value The value to test.
   * @param code When given, also require this code.
   * @returns `true` when `value` carries the brand (and the code).
   */
  static isInstance(value: unknown, code?: string): value is HarnessError {
    if (typeof value !== "object" || value === null) return false;
    if ((value as { [BRAND]?: unknown })[BRAND] !== true) return false;
    return code === undefined || (value as HarnessError).code === code;
  }
}
