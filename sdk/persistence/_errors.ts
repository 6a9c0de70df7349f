// Constructors of the storage errors, so that codes and messages stay uniform
// across backends.

import { HarnessError } from "../kernel/harness_error.ts";

export function invalidArgs(message: string, details?: Record<string, unknown>): HarnessError {
  return new HarnessError("INVALID_ARGS", message, { details });
}

export function notFound(sessionId: string): HarnessError {
  return new HarnessError("SESSION_NOT_FOUND", `Session ${JSON.stringify(sessionId)} does not exist`, {
    details: { sessionId },
  });
}

export function alreadyExists(sessionId: string): HarnessError {
  return new HarnessError("SESSION_ALREADY_EXISTS", `Session ${JSON.stringify(sessionId)} already exists`, {
    details: { sessionId },
  });
}

export function writerBusy(sessionId: string, action: string): HarnessError {
  return new HarnessError(
    "SESSION_WRITER_BUSY",
    `Another writer holds session ${JSON.stringify(sessionId)}: cannot ${action}`,
    { details: { sessionId, action } },
  );
}

export function seqMismatch(sessionId: string, expectedSeq: number, storedNextSeq: number): HarnessError {
  return new HarnessError(
    "SESSION_SEQ_MISMATCH",
    `Stored next seq of session ${JSON.stringify(sessionId)} is ${storedNextSeq}, not ${expectedSeq}`,
    { details: { sessionId, expectedSeq, storedNextSeq } },
  );
}

export function corrupt(
  file: string,
  line: number,
  message: string,
  details: Record<string, unknown> = {},
  cause?: unknown,
): HarnessError {
  return new HarnessError("SESSION_CORRUPT", `Session log ${file} is corrupt at line ${line}: ${message}`, {
    cause,
    details: { file, line, ...details },
  });
}

export function formatUnsupported(file: string, version: unknown, supported: number): HarnessError {
  return new HarnessError(
    "SESSION_FORMAT_UNSUPPORTED",
    `Session log ${file} has format version ${JSON.stringify(version)}; this build reads version ${supported}`,
    { details: { file, version, supported } },
  );
}

export function unknownEventType(file: string, line: number, type: string): HarnessError {
  return new HarnessError(
    "SESSION_UNKNOWN_EVENT_TYPE",
    `Session log ${file} has unknown event type ${JSON.stringify(type)} at line ${line} without ignorable`,
    { details: { file, line, type } },
  );
}

/** A `load` without the writer lease of a log that needs crash repair: only the lease holder writes a repair. */
export function repairRequired(sessionId: string): HarnessError {
  return new HarnessError(
    "SESSION_REPAIR_REQUIRED",
    `Session ${JSON.stringify(sessionId)} needs crash repair, which only the writer lease's holder writes: ` +
      "load it with { writer } (from acquireWriter), or read the repaired view with inspect()",
    { details: { sessionId } },
  );
}
