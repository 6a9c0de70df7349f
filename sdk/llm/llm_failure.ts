/**
 * Model-call failures with stable codes.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";

/** Stable codes of model-call failures. `HTTP_<status>` covers unmapped statuses. */
export type LlmFailureCode =
  | "EMPTY_RESPONSE"
  | "RATE_LIMIT"
  | "SERVER"
  | "TIMEOUT"
  | "TRANSPORT"
  | "AUTH"
  | "QUOTA"
  | "INVALID_REQUEST"
  | "CONTEXT_WINDOW_EXCEEDED"
  | "MISSING_CREDENTIAL"
  | "UNSUPPORTED_MODEL"
  | "UNSUPPORTED_FEATURE"
  | "STREAM_CLOSED"
  | "MALFORMED_RESPONSE"
  | "ABORTED"
  | "NO_ADAPTER"
  | "UNKNOWN"
  | `HTTP_${number}`;

/** A model-call failure as plain JSON data (what the log and finish chunks carry). */
export interface LlmFailureData {
  /** What failed, fact first. */
  readonly message: string;
  /** The stable code. */
  readonly code: LlmFailureCode | (string & Record<never, never>);
  /** HTTP status, when the provider answered with one. */
  readonly status?: number;
  /** The provider's Retry-After, in milliseconds. */
  readonly providerRetryAfterMs?: number;
  /** The provider's request id, for support tickets. */
  readonly requestId?: string;
}

/** Options of {@linkcode LlmFailure}. */
export interface LlmFailureOptions {
  /** The HTTP status, when the provider answered with one. */
  status?: number;
  /** The provider's Retry-After, in milliseconds. */
  providerRetryAfterMs?: number;
  /** The provider's request id. */
  requestId?: string;
  /** The error that caused this one. */
  cause?: unknown;
}

/** A model-call failure thrown by an adapter; `toData()` gives its JSON form. */
export class LlmFailure extends HarnessError {
  /** HTTP status, when the provider answered with one. */
  readonly status: number | undefined;
  /** The provider's Retry-After, in milliseconds. */
  readonly providerRetryAfterMs: number | undefined;
  /** The provider's request id. */
  readonly requestId: string | undefined;

  /**
   * Create a failure.
   *
   * @param code The stable code.
   * @param message What failed, fact first.
   * @param options Status, Retry-After, request id and cause.
   */
  constructor(
    code: LlmFailureCode | (string & Record<never, never>),
    message: string,
    options: LlmFailureOptions = {},
  ) {
    super(code, message, { cause: options.cause });
    this.name = "LlmFailure";
    this.status = options.status;
    this.providerRetryAfterMs = options.providerRetryAfterMs;
    this.requestId = options.requestId;
  }

  /**
   * The failure as plain JSON data, without undefined fields.
   *
   * @returns The data form.
   */
  toData(): LlmFailureData {
    return {
      message: this.message,
      code: this.code,
      ...(this.status !== undefined ? { status: this.status } : {}),
      ...(this.providerRetryAfterMs !== undefined ? { providerRetryAfterMs: this.providerRetryAfterMs } : {}),
      ...(this.requestId !== undefined ? { requestId: this.requestId } : {}),
    };
  }
}
