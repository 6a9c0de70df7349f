// Session ids, header construction and header parsing, shared by the backends.

import { HarnessError } from "../kernel/harness_error.ts";
import { corrupt, formatUnsupported, invalidArgs } from "./_errors.ts";
import { SESSION_FORMAT_VERSION, type SessionHeader } from "../session/session.ts";
import type { NewSessionHeader } from "./session_storage.ts";
import { INCARNATION_PATTERN, newIncarnation } from "../session/_incarnation.ts";
import { LONE_SURROGATE } from "../session/_validate_event.ts";

const MAX_ID_LENGTH = 128;
/** The longest file name most file systems take, in bytes: the escaped id names the session's directory. */
const MAX_NAME_BYTES = 255;

/**
 * Refuse ids that are not plain names: empty, too long (over 128 characters,
 * or over 255 bytes once escaped as a directory name, see
 * {@linkcode escapeSessionId}), `.`/`..`, or holding a path separator or a
 * control character. The same rule for every backend, so that a session can
 * move between them. Throws `INVALID_SESSION_ID`.
 */
export function validateSessionId(sessionId: unknown): asserts sessionId is string {
  let problem: string | undefined;
  if (typeof sessionId !== "string") problem = "it is not a string";
  else if (sessionId.length === 0) problem = "it is empty";
  else if (sessionId.length > MAX_ID_LENGTH) problem = `it is longer than ${MAX_ID_LENGTH} characters`;
  else if (sessionId === "." || sessionId === "..") problem = "it names a directory";
  else if (/[/\\]/.test(sessionId)) problem = "it contains a path separator";
  // deno-lint-ignore no-control-regex
  else if (/[\u0000-\u001f\u007f]/.test(sessionId)) problem = "it contains a control character";
  // Not UTF-8 text: drivers and file names write a lone surrogate as U+FFFD, so two such ids would share one log.
  else if (LONE_SURROGATE.test(sessionId)) problem = "it contains a lone surrogate (it is not well-formed text)";
  else {
    const name = escapeSessionId(sessionId).length; // ASCII: characters are bytes
    if (name > MAX_NAME_BYTES) {
      problem = `it is too long once escaped as a directory name (${name} bytes, at most ${MAX_NAME_BYTES})`;
    }
  }
  if (problem !== undefined) {
    throw new HarnessError("INVALID_SESSION_ID", `Session id ${JSON.stringify(sessionId)} is refused: ${problem}`, {
      details: { sessionId },
    });
  }
}

const encoder = new TextEncoder();

/**
 * The directory name of a session id: `[a-z0-9_-]` and inner dots kept, every
 * other byte of its UTF-8 form (upper case included, so that case-insensitive
 * file systems cannot merge two ids) written `%XX`. Windows device names get
 * their first letter escaped. Injective, so two ids never share a directory.
 */
export function escapeSessionId(sessionId: string): string {
  let out = "";
  for (const byte of encoder.encode(sessionId)) {
    const c = String.fromCharCode(byte);
    const plain = (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || c === "_" || c === "-" ||
      (c === "." && out.length > 0);
    out += plain ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  if (/^(con|prn|aux|nul|com\d|lpt\d)(\.|$)/.test(out)) {
    out = `%${out.charCodeAt(0).toString(16).toUpperCase()}${out.slice(1)}`;
  }
  return out;
}

/** A full header from the caller's fields. */
export function makeHeader(init: NewSessionHeader, now: () => number): SessionHeader {
  if (typeof init !== "object" || init === null) throw invalidArgs("The session header must be an object");
  validateSessionId(init.id);
  const createdAt = init.createdAt ?? now();
  if (!Number.isSafeInteger(createdAt) || createdAt < 0) {
    throw invalidArgs(`createdAt must be a non-negative integer, got ${String(createdAt)}`);
  }
  if (init.version !== undefined && init.version !== SESSION_FORMAT_VERSION) {
    throw new HarnessError(
      "SESSION_FORMAT_UNSUPPORTED",
      `Session format version ${init.version} is not supported; this SDK writes version ${SESSION_FORMAT_VERSION}`,
      { details: { version: init.version } },
    );
  }
  const incarnation = init.incarnation ?? newIncarnation();
  if (typeof incarnation !== "string" || !INCARNATION_PATTERN.test(incarnation)) {
    throw invalidArgs(`incarnation must be 1 to 16 characters [0-9a-z], got ${JSON.stringify(incarnation)}`);
  }
  const { id: _id, createdAt: _createdAt, version: _version, incarnation: _incarnation, ...rest } = init;
  return { version: SESSION_FORMAT_VERSION, id: init.id, createdAt, ...rest, incarnation };
}

/** The header record as stored: `{ type: "session", ...header }`. */
export function headerRecord(header: SessionHeader): Record<string, unknown> {
  return { type: "session", ...header };
}

/**
 * Read a stored header record. The version is checked before anything else
 * (`SESSION_FORMAT_UNSUPPORTED`); then the shape and the id (`SESSION_CORRUPT`).
 */
export function parseHeader(record: unknown, file: string, sessionId: string | undefined): SessionHeader {
  if (typeof record === "object" && record !== null && "version" in record) {
    if (record.version !== SESSION_FORMAT_VERSION) {
      throw formatUnsupported(file, record.version, SESSION_FORMAT_VERSION);
    }
  }
  if (typeof record !== "object" || record === null || Array.isArray(record)) {
    throw corrupt(file, 1, "the header is not an object");
  }
  const { type, ...header } = record as Record<string, unknown>;
  if (type !== "session") throw corrupt(file, 1, 'the header has no type "session"');
  if (!("version" in header)) throw corrupt(file, 1, "the header has no version");
  if (typeof header.id !== "string") throw corrupt(file, 1, "the header has no id");
  if (!Number.isFinite(header.createdAt)) throw corrupt(file, 1, "the header has no createdAt");
  if (header.incarnation !== undefined && !INCARNATION_PATTERN.test(String(header.incarnation))) {
    throw corrupt(file, 1, "the header's incarnation is not 1 to 16 characters [0-9a-z]");
  }
  if (sessionId !== undefined && header.id !== sessionId) {
    throw corrupt(file, 1, `the header names session ${JSON.stringify(header.id)}`, { sessionId });
  }
  return header as unknown as SessionHeader;
}
