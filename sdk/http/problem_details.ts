/**
 * `ProblemDetails`: the `application/problem+json` body (RFC 9457) of every
 * error response of the HTTP app.
 *
 * @module
 */

/** One invalid field of a request body. */
export interface ProblemFieldError {
  /** The JSON path of the field, e.g. `content[0].text`; empty for the body itself. */
  readonly path: string;
  /** What is wrong with it. */
  readonly message: string;
}

/**
 * The body of an error response, served as `application/problem+json`.
 *
 * `code` is stable and meant for programs: `INVALID_JSON`, `INVALID_BODY`,
 * `BODY_TOO_LARGE`, `UNSUPPORTED_MEDIA_TYPE`, `AUTH_REQUIRED` (no credentials),
 * `MALFORMED_AUTHORIZATION` (an `Authorization` header that is not `Bearer <token>`), `INVALID_TOKEN`,
 * `HOST_NOT_ALLOWED` and `CROSS_SITE_REQUEST` (without auth), `INVALID_SESSION_ID`, `SESSION_NOT_FOUND`,
 * `SESSION_ALREADY_EXISTS` (409: a session or fork id in use, or made first by a racing request),
 * `SESSION_WRITER_BUSY` (409: another instance is serving an existing session; nothing of the request was done),
 * `SESSION_LEASE_LOST` (409), `SESSION_WRITE_FAILED`, `SESSION_READ_FAILED` and `SESSION_FLUSH_FAILED` (503: storage
 * failed a write or a read; its own message is not sent), `APPROVAL_NOT_FOUND`, `UNKNOWN_TOOL`, `NOT_FOUND`, `METHOD_NOT_ALLOWED`, `INTERNAL`,
 * the serverless handler's `HARNESS_UNAVAILABLE` (503) and `SESSION_NOT_SAVED` (409, 500), or the code of a
 * `HarnessError` the harness raised (`OPEN_TURN`, `INVALID_BOUNDARY`, …).
 */
export interface ProblemDetails {
  /** A URI naming the problem type: `urn:dsh-harness:problem:<code>`. */
  readonly type: string;
  /** The HTTP reason phrase of `status`. */
  readonly title: string;
  /** The HTTP status. */
  readonly status: number;
  /** What went wrong, for people. */
  readonly detail: string;
  /** The stable machine-readable code. */
  readonly code: string;
  /** The request path. */
  readonly instance?: string;
  /** The request id, as sent back in the `X-Request-Id` header. */
  readonly requestId?: string;
  /** The invalid fields, for `INVALID_BODY`. */
  readonly errors?: readonly ProblemFieldError[];
}
