/**
 * A plugin that contributes its own log-only event types (seed 000 §4.1.9):
 * `acme/note`, a required record, and `acme/trace`, an optional one that it
 * marks `ignorable: true` so that readers which do not know it may skip it.
 *
 * The event types join the harness's vocabulary by declaration merging, in the
 * plugin's own code: `session.append("acme/note", …)` is then type-checked
 * against the payload below, and `SessionEvent<"acme/note">` has a typed
 * `data`. Storage needs no registration: `fileStorage` and `memoryStorage`
 * persist every well-formed event.
 *
 * @module
 */

import type { Session, SessionEvent } from "../mod.ts";

declare module "@dsh/harness" {
  interface SessionEventMap {
    /** A note a reviewer pinned to the conversation. */
    "acme/note": { readonly text: string; readonly author: string };
    /** A timing sample; optional for readers. */
    "acme/trace": { readonly label: string; readonly ms: number };
  }
}

/**
 * Pin a note to a session's log.
 *
 * @param session The live session.
 * @param text The note.
 * @param author Who wrote it.
 * @returns The committed event.
 */
export function pinNote(session: Session, text: string, author: string): SessionEvent<"acme/note"> {
  return session.append("acme/note", { text, author });
}

/**
 * Record a timing sample that readers may skip.
 *
 * @param session The live session.
 * @param label What was timed.
 * @param ms How long it took.
 * @returns The committed event.
 */
export function traceTiming(session: Session, label: string, ms: number): SessionEvent<"acme/trace"> {
  return session.append("acme/trace", { label, ms }, { ignorable: true });
}

/**
 * The notes of a log, read with their typed payload.
 *
 * @param events The log.
 * @returns Each note's author and text.
 */
export function notesOf(events: readonly SessionEvent[]): string[] {
  const out: string[] = [];
  for (const event of events) {
    if (event.type === "acme/note") out.push(`${event.data.author}: ${event.data.text}`);
  }
  return out;
}

/** Compile-time proof that the payload is typed (never called). */
export function typeChecks(session: Session): void {
  // @ts-expect-error: `author` is missing from the acme/note payload
  session.append("acme/note", { text: "no author" });
  // @ts-expect-error: log-only events take no surface intent
  session.append("acme/note", { text: "x", author: "y" }, { surfaceOp: "append" });
}
