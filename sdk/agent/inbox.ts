/**
 * The agent's inbox: two queues of pending input, whose every change is a
 * durable `agent/inbox/spliced` event, so that a resumed agent rebuilds it
 * from the log.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import { promptContextName } from "./_loop_values.ts";
import type { InboxEntry, InboxTarget, SessionEvent, SessionEventMap } from "../session/mod.ts";

/** The payload of one inbox change. */
export type InboxSplice = SessionEventMap["agent/inbox/spliced"];

/**
 * Pending input of an agent. `next-turn` holds followups (each gets a turn of
 * its own); `next-step` holds steering and injected context, claimed at the
 * next step boundary.
 */
export class Inbox {
  readonly #queues: Record<InboxTarget, InboxEntry[]> = { "next-turn": [], "next-step": [] };
  readonly #ids = new Set<string>();
  readonly #commit: (splice: InboxSplice) => InboxSplice | void;

  /**
   * Create an inbox.
   *
   * @param commit Records a splice durably (appends `agent/inbox/spliced`); it runs before the change is applied.
   *   When it returns the splice as logged (the event's frozen copy), the queues hold that copy's entries.
   */
  constructor(commit: (splice: InboxSplice) => InboxSplice | void) {
    this.#commit = commit;
  }

  /**
   * Rebuild an inbox from a log by replaying its splices.
   *
   * @param events The session log.
   * @param commit Records later splices.
   * @returns The inbox as the log leaves it.
   */
  static fromLog(events: readonly SessionEvent[], commit: (splice: InboxSplice) => InboxSplice | void): Inbox {
    const inbox = new Inbox(commit);
    for (const event of events) {
      if (event.type === "agent/inbox/spliced") inbox.#apply(event.data as InboxSplice);
    }
    return inbox;
  }

  /**
   * The claims of a log that a crash stranded: entries a step claimed whose
   * messages never entered the conversation (no `user/message` or
   * `system/message` followed the claim before its turn ended
   * `interrupted`), and that no later splice put back. Acknowledged input
   * that a crash caught between its claim and its step's messages would be
   * lost otherwise: the claim is durable, the messages were not.
   *
   * @param events The session log (crash-repaired).
   * @returns The stranded claims, in log order.
   */
  static strandedClaims(events: readonly SessionEvent[]): { target: InboxTarget; entries: InboxEntry[] }[] {
    const queues: Record<InboxTarget, InboxEntry[]> = { "next-turn": [], "next-step": [] };
    let open: { target: InboxTarget; entries: InboxEntry[] }[] = [];
    let stranded: { target: InboxTarget; entries: InboxEntry[] }[] = [];
    for (const event of events) {
      switch (event.type) {
        case "agent/inbox/spliced": {
          const splice = event.data as InboxSplice;
          const queue = queues[splice.target];
          const removed = queue.splice(splice.start, splice.removedCount ?? 0, ...splice.inserted);
          if (splice.outcome === "claimed" && removed.length > 0) {
            open.push({ target: splice.target, entries: removed });
          }
          if (splice.inserted.length > 0) {
            // Put back (by a resume before this one, or by the loop before its turn ended): no longer stranded.
            const back = new Set(splice.inserted.map((entry) => entry.id));
            const keep = (claims: { target: InboxTarget; entries: InboxEntry[] }[]) =>
              claims
                .map((claim) => ({
                  target: claim.target,
                  entries: claim.entries.filter((entry) => !back.has(entry.id)),
                }))
                .filter((claim) => claim.entries.length > 0);
            stranded = keep(stranded);
            open = keep(open);
          }
          break;
        }
        case "system/message":
          // A prompt context's snapshot: the loop logs it before the step's input, so it says nothing of that input.
          if (promptContextName(event.data.source) !== undefined) break;
          // falls through
        case "user/message":
          // The step's messages entered (its claims served, or the pre-step listener rewrote or dropped them).
          if (event.surfaceOp === "append") open = [];
          break;
        case "turn/end":
          if (event.data.reason.kind === "interrupted") stranded.push(...open);
          open = [];
          break;
      }
    }
    return stranded;
  }

  /**
   * Put entries back at the front of a queue, in order (recorded as an
   * insert): claimed entries whose messages never entered, returned for a
   * later step.
   *
   * @param target Which queue.
   * @param entries The entries, oldest first; their ids are this session's already.
   */
  restore(target: InboxTarget, entries: readonly InboxEntry[]): void {
    if (entries.length === 0) return;
    const splice: InboxSplice = { target, start: 0, inserted: [...entries] };
    this.#apply(this.#commit(splice) ?? splice);
  }

  /**
   * The entries waiting in `target`, oldest first.
   *
   * @param target Which queue.
   * @returns A copy of the queue.
   */
  pending(target: InboxTarget): InboxEntry[] {
    return [...this.#queues[target]];
  }

  /**
   * How many entries wait in `target`, without copying the queue.
   *
   * @param target Which queue.
   * @returns The number of entries.
   */
  count(target: InboxTarget): number {
    return this.#queues[target].length;
  }

  /** The number of entries waiting in both queues. */
  get size(): number {
    return this.#queues["next-turn"].length + this.#queues["next-step"].length;
  }

  /**
   * Append an entry to a queue.
   *
   * @param target Which queue.
   * @param entry The entry; its id must be new to this session.
   * @throws {HarnessError} `DUPLICATE_INBOX_ID` when the id was used before.
   */
  push(target: InboxTarget, entry: InboxEntry): void {
    if (this.#ids.has(entry.id)) {
      throw new HarnessError("DUPLICATE_INBOX_ID", `Inbox entry id "${entry.id}" is already used in this session`);
    }
    const splice: InboxSplice = { target, start: this.#queues[target].length, inserted: [entry] };
    this.#apply(this.#commit(splice) ?? splice);
  }

  /**
   * Remove and return the first `count` entries of a queue (all by default).
   *
   * @param target Which queue.
   * @param count How many entries.
   * @returns The claimed entries, oldest first.
   */
  claim(target: InboxTarget, count?: number): InboxEntry[] {
    const queue = this.#queues[target];
    const n = Math.min(count ?? queue.length, queue.length);
    if (n === 0) return [];
    const claimed = queue.slice(0, n);
    const splice: InboxSplice = { target, start: 0, removedCount: n, inserted: [], outcome: "claimed" };
    this.#commit(splice);
    this.#apply(splice);
    return claimed;
  }

  /**
   * Discard every entry of both queues.
   *
   * @returns The discarded entries.
   */
  clear(): InboxEntry[] {
    const discarded: InboxEntry[] = [];
    for (const target of ["next-step", "next-turn"] as const) {
      const queue = this.#queues[target];
      if (queue.length === 0) continue;
      discarded.push(...queue);
      const splice: InboxSplice = { target, start: 0, removedCount: queue.length, inserted: [], outcome: "canceled" };
      this.#commit(splice);
      this.#apply(splice);
    }
    return discarded;
  }

  #apply(splice: InboxSplice): void {
    const queue = this.#queues[splice.target];
    queue.splice(splice.start, splice.removedCount ?? 0, ...splice.inserted);
    for (const entry of splice.inserted) this.#ids.add(entry.id);
  }
}
