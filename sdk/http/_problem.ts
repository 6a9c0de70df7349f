// Internal: the error type routes throw and the mapping of errors to problem+json responses.

import { HarnessError } from "../kernel/harness_error.ts";
import type { ProblemDetails, ProblemFieldError } from "./problem_details.ts";

const TITLES: Readonly<Record<number, string>> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  410: "Gone",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
};

/** HTTP statuses of the harness error codes a route can surface. */
const STATUS_BY_CODE: Readonly<Record<string, number>> = {
  INVALID_ARGS: 422,
  UNKNOWN_TOOL: 422,
  INVALID_BOUNDARY: 422,
  INVALID_SESSION_ID: 400,
  SESSION_NOT_FOUND: 404,
  AGENT_NOT_FOUND: 404,
  SESSION_ALREADY_EXISTS: 409,
  AGENT_ALREADY_EXISTS: 409,
  SESSION_NOT_LIVE: 409,
  OPEN_TURN: 409,
  OPEN_COMPACTION: 409,
  SESSION_WRITER_BUSY: 409,
  // This server's writer lease of the session expired or was taken over by another instance.
  SESSION_LEASE_LOST: 409,
  AGENT_DISPOSED: 410,
  INPUT_DISCARDED: 409,
  HARNESS_DISPOSED: 503,
  // Storage: a stored log this server cannot use, a write that did not happen.
  SESSION_CORRUPT: 500,
  SESSION_FORMAT_UNSUPPORTED: 500,
  SESSION_UNKNOWN_EVENT_TYPE: 500,
  SESSION_REPAIR_REQUIRED: 409,
  SESSION_SEQ_MISMATCH: 409,
  SESSION_WRITE_FAILED: 503,
  SESSION_READ_FAILED: 503,
  SESSION_FLUSH_FAILED: 503,
  // A database migrated by a newer build: every route fails until this server is upgraded.
  STORAGE_SCHEMA_UNSUPPORTED: 500,
  INVALID_EVENT: 422,
};

/** What a client is told of a server-side failure, instead of its message. */
const SERVER_SIDE: Readonly<Record<string, string>> = {
  SESSION_CORRUPT: "The stored log of this session is damaged",
  SESSION_FORMAT_UNSUPPORTED: "The stored log of this session has a format this server cannot read",
  SESSION_UNKNOWN_EVENT_TYPE: "The stored log of this session holds an event type this server does not read",
  SESSION_WRITE_FAILED: "Writing to storage failed",
  SESSION_READ_FAILED: "Reading from storage failed",
  SESSION_FLUSH_FAILED: "Writing to storage failed",
  STORAGE_SCHEMA_UNSUPPORTED: "The storage was upgraded by a newer version of the server, which this one cannot use",
};

/**
 * What a client may be told of a server-side failure: the generic sentence for
 * a storage failure (whose own message names paths or a driver's words), else
 * the message itself.
 */
export function clientMessage(code: string, message: string): string {
  return SERVER_SIDE[code] ?? message;
}

/** An error a route throws on purpose; `onError` turns it into a problem response. */
export class HttpProblem extends HarnessError {
  readonly status: number;
  readonly errors: readonly ProblemFieldError[] | undefined;
  readonly headers: Readonly<Record<string, string>> | undefined;

  constructor(
    status: number,
    code: string,
    message: string,
    extra: { errors?: readonly ProblemFieldError[]; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(code, message, { cause: extra.cause });
    this.status = status;
    this.errors = extra.errors;
    this.headers = extra.headers;
  }
}

/** What a thrown value becomes on the wire, and whether it is a server fault worth logging. */
export function toProblem(
  error: unknown,
  instance: string,
  requestId: string,
): { body: ProblemDetails; headers: Record<string, string>; fault: boolean } {
  let status = 500;
  let code = "INTERNAL";
  let detail = "The server failed to handle the request";
  let errors: readonly ProblemFieldError[] | undefined;
  let headers: Record<string, string> = {};
  if (error instanceof HttpProblem) {
    ({ status, code, message: detail, errors } = error);
    headers = { ...error.headers };
  } else if (HarnessError.isInstance(error) && STATUS_BY_CODE[error.code] !== undefined) {
    status = STATUS_BY_CODE[error.code];
    code = error.code;
    // A server-side failure's own message names the storage layout (file paths, a database's driver message): it
    // goes to the server's log, the client gets what happened and the request id to find it there.
    detail = status >= 500 && SERVER_SIDE[code] !== undefined
      ? `${SERVER_SIDE[code]} (the server's log has the details: request ${requestId})`
      : error.message;
  }
  const body: ProblemDetails = {
    ...problemOf(status, code, detail),
    instance,
    requestId,
    ...(errors !== undefined ? { errors } : {}),
  };
  return { body, headers, fault: status >= 500 };
}

/** The body of a problem with this status, code and detail (no request to name). */
export function problemOf(status: number, code: string, detail: string): ProblemDetails {
  return { type: `urn:dsh-harness:problem:${code}`, title: TITLES[status] ?? "Error", status, detail, code };
}

/** A problem+json response. */
export function problemResponse(body: ProblemDetails, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status: body.status,
    headers: { ...headers, "content-type": "application/problem+json" },
  });
}
