// The incarnation of a session log: a random token naming one life of a
// session id, stored in its header. A session deleted and created again under
// the same id — even in the same millisecond — gets another, so a reader
// holding a position in the old log can tell it is gone. Logs written before
// the token existed stand in their `createdAt` in base 36.

import type { SessionHeader } from "./session.ts";

/** What an incarnation looks like: it is part of an SSE event id (`<incarnation>:<seq>`). */
export const INCARNATION_PATTERN: RegExp = /^[0-9a-z]{1,16}$/;

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/** A fresh incarnation: 16 base-36 characters from the platform's random source (about 82 bits). */
export function newIncarnation(): string {
  const out: string[] = [];
  while (out.length < 16) {
    for (const byte of crypto.getRandomValues(new Uint8Array(16))) {
      // 252 = 7 × 36: the bytes above it are dropped, so every character is equally likely.
      if (byte < 252 && out.length < 16) out.push(ALPHABET[byte % 36]);
    }
  }
  return out.join("");
}

/** The incarnation of a log: its header's token, or its `createdAt` in base 36 for a log written before tokens. */
export function incarnationOf(header: Pick<SessionHeader, "createdAt" | "incarnation">): string {
  return header.incarnation ?? Math.trunc(header.createdAt).toString(36);
}
