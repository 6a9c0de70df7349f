/**
 * The persistence plugin: makes every live session durable in a
 * {@linkcode SessionStorage}.
 *
 * It takes the session's writer lease when the session is announced, writes
 * the header and any seed (or, for a session continued from storage, only
 * what the store lacks), then writes committed events in batches: a batch
 * closes after a short window (200 ms by default) or at a `session/flush`
 * checkpoint, which is a quiescence barrier — it resolves only when every
 * event committed before it is durable, and rejects when the write failed
 * (the loop fails closed). The log itself is the queue: a flush writes
 * `events[nextStoredSeq..]`, so nothing is copied twice and a failed batch is
 * retried whole at the next flush. When that retry finds storage ahead (the
 * failed append's answer was lost after the storage took it, or the storage
 * took part of the batch), it goes on from there if what storage holds is the
 * session's own events, and fails as before if it is anything else.
 *
 * @module
 */

import type { HarnessContext } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import { jsonEqual } from "../session/_json_equal.ts";
import { incarnationOf } from "../session/_incarnation.ts";
import type { Session, SessionEvents } from "../session/mod.ts";
import type { NewSessionHeader, SessionStorage, SessionWriter } from "./session_storage.ts";
import { noteStored, noteWriteFailed, wasAbandoned } from "./_stored_prefix.ts";

/** Options of {@linkcode persistencePlugin}. */
export interface PersistenceOptions {
  /** Where sessions are written. */
  readonly storage: SessionStorage;
  /**
   * How long committed events may wait before they are written, in milliseconds.
   *
   * @default {200}
   */
  readonly batchWindowMs?: number;
}

interface Tracked {
  readonly session: Session;
  writer: SessionWriter | undefined;
  nextSeq: number;
  /** The lease and the first write; a failure here fails every later write (never write without the lease). */
  ready: Promise<void>;
  /** Writes in order; never rejects. */
  chain: Promise<void>;
  /** A write that is queued and has not started yet: later flushes join it (one batch, one barrier). */
  queued: Promise<void> | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
}

function storedHeader(session: Session): NewSessionHeader {
  const h = session.header;
  const out: Record<string, unknown> = { id: session.id, createdAt: h.createdAt };
  for (
    const key of [
      "cwd",
      "parentSession",
      "seedLength",
      "origin",
      "delegationDepth",
      "agentPreset",
      "incarnation",
      "profile",
    ] as const
  ) {
    if (h[key] !== undefined) out[key] = h[key];
  }
  return out as unknown as NewSessionHeader;
}

/**
 * Persist live sessions to `options.storage`.
 *
 * @param ctx The plugin context (usually the harness root).
 * @param options The storage and batching window.
 *
 * @example
 * ```ts
 * import { createKernel, memoryStorage, persistencePlugin, type SessionEvents, type SessionServices, sessionStorePlugin } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const storage = memoryStorage();
 * const ctx = createKernel<SessionEvents, SessionServices>();
 * await ctx.plugin(sessionStorePlugin).ready;
 * await ctx.plugin(persistencePlugin, { storage }).ready;
 * const session = ctx.service("sessions").create("s1");
 * session.append("todo/write", { todos: [] });
 * await ctx.service("sessions").flush(session);
 * assert.equal((await storage.load("s1")).events.length, 1);
 * ```
 */
export function persistencePlugin(ctx: HarnessContext<SessionEvents, object>, options: PersistenceOptions): void {
  installPersistence(ctx, options, undefined);
}

/**
 * Writer leases taken before their session is announced, by session id, with
 * the incarnation of the log they were taken for: `harness.resumeAgent` takes
 * the lease, loads (and repairs) under it, and hands it to the plugin, which
 * adopts it for the announced session of that id and incarnation instead of
 * taking a lease of its own. The lease is then held from the load on, so no
 * other writer can act between the two. Internal to the harness.
 */
export type HeldWriters = Map<
  string,
  {
    readonly writer: SessionWriter;
    readonly incarnation: string;
    /** How many events of the log are on storage: those loaded under the lease. */
    readonly storedSeq: number;
  }
>;

/**
 * {@linkcode persistencePlugin}'s body, adopting the leases `held` hands over.
 *
 * @param ctx The plugin context.
 * @param options The storage and batching window.
 * @param held Leases taken ahead of a session's announcement.
 */
export function installPersistence(
  ctx: HarnessContext<SessionEvents, object>,
  options: PersistenceOptions,
  held: HeldWriters | undefined,
): void {
  const storage = options.storage;
  const windowMs = options.batchWindowMs ?? 200;
  const tracked = new Map<Session, Tracked>();
  const releasing = new Set<Promise<void>>();
  // The last write of each session being released, which a flush asked for meanwhile (the session is still live)
  // waits for and fails with: it had found the session untracked and resolved at once, so `agent.flushed()` (and an
  // HTTP answer waiting for it) acknowledged events whose write was still under way, and then failed.
  const lastWrites = new WeakMap<Session, Promise<void>>();

  // An append whose answer was lost after the storage took it (a timeout, a dropped connection), or a storage that
  // took part of a batch and then failed, leaves storage ahead of this writer. When what it holds past `nextSeq` is
  // this session's own events, the writer goes on from there; anything else is not ours, and the write fails.
  const caughtUp = async (t: Tracked): Promise<boolean> => {
    const stat = await storage.stat(t.session.id);
    if (stat === undefined || stat.torn || stat.nextSeq <= t.nextSeq || stat.nextSeq > t.session.seq) return false;
    if (incarnationOf(stat.header) !== incarnationOf(t.session.header)) return false; // another life of the id
    const stored = (await storage.inspect(t.session.id)).events;
    const ours = t.session.slice(t.nextSeq, stat.nextSeq);
    for (let i = 0; i < ours.length; i++) if (!jsonEqual(stored[t.nextSeq + i], ours[i])) return false;
    t.nextSeq = stat.nextSeq;
    return true;
  };

  const write = (t: Tracked): Promise<void> => {
    if (t.timer !== undefined) {
      clearTimeout(t.timer);
      t.timer = undefined;
    }
    if (t.queued !== undefined) return t.queued;
    const attempt = t.chain.then(async () => {
      // Started: what is committed from now on needs a write of its own.
      t.queued = undefined;
      await t.ready;
      const end = t.session.seq;
      if (end <= t.nextSeq) return;
      try {
        const batch = t.session.slice(t.nextSeq, end);
        t.nextSeq = (await storage.append(t.session.id, batch, { expectedSeq: t.nextSeq, writer: t.writer })).nextSeq;
      } catch (error) {
        if (!HarnessError.isInstance(error, "SESSION_SEQ_MISMATCH") || !(await caughtUp(t))) throw error;
        if (t.nextSeq < end) {
          const rest = t.session.slice(t.nextSeq, end);
          t.nextSeq = (await storage.append(t.session.id, rest, { expectedSeq: t.nextSeq, writer: t.writer })).nextSeq;
        }
      }
      noteStored(t.session, t.nextSeq);
      ctx.emit("session/durable", t.session, t.nextSeq);
    });
    t.queued = attempt;
    t.chain = attempt.catch((error) => {
      // The caller of this write (or of the next flush) reports it; a lost lease is kept for the session's readers.
      noteWriteFailed(t.session, error);
    });
    return attempt;
  };

  ctx.on("session/created", (session) => {
    const t: Tracked = {
      session,
      writer: undefined,
      nextSeq: 0,
      ready: Promise.resolve(),
      chain: Promise.resolve(),
      queued: undefined,
      timer: undefined,
    };
    tracked.set(session, t);
    const handed = held?.get(session.id);
    const adopt = handed !== undefined && handed.incarnation === incarnationOf(session.header);
    if (adopt) {
      held!.delete(session.id);
      // What was loaded under the lease is on storage already: readers of the stored prefix (the HTTP app's summary
      // and transcript) see it while the plugin's start runs, not an empty log.
      noteStored(session, Math.min(handed.storedSeq, session.seq));
    }
    t.ready = (async () => {
      t.writer = adopt ? handed.writer : await storage.acquireWriter(session.id);
      const stat = await storage.stat(session.id);
      if (stat === undefined && adopt) {
        // A session continued from storage (its lease was taken and its log loaded for it) whose log is gone: it was
        // deleted after the load. Creating it again from this copy would undo a delete already acknowledged.
        throw new HarnessError(
          "SESSION_NOT_FOUND",
          `Session "${session.id}" is no longer stored: it was deleted after it was loaded`,
          { details: { sessionId: session.id } },
        );
      } else if (stat === undefined) {
        const events = session.events;
        await storage.create(storedHeader(session), { events, writer: t.writer });
        t.nextSeq = events.length;
      } else if (incarnationOf(stat.header) !== incarnationOf(session.header)) {
        // Another log of the same id (a new session, not this one continued from storage): appending this
        // session's events after it would mix two logs.
        throw new HarnessError("SESSION_ALREADY_EXISTS", `Session "${session.id}" is already stored`, {
          details: { sessionId: session.id },
        });
      } else if (stat.nextSeq > session.seq) {
        // Storage went on after this session was loaded (another instance resumed it, wrote and let go before this
        // one got the lease): its events are not this session's, and writing on would drop or splice them.
        throw new HarnessError(
          "SESSION_SEQ_MISMATCH",
          `Session "${session.id}" has ${stat.nextSeq} events on storage but was loaded with ${session.seq}: ` +
            "another instance wrote it in between; load it again",
          { details: { sessionId: session.id, expectedSeq: session.seq, storedSeq: stat.nextSeq } },
        );
      } else {
        t.nextSeq = stat.nextSeq;
      }
      if (t.nextSeq > 0) {
        noteStored(session, t.nextSeq);
        ctx.emit("session/durable", session, t.nextSeq);
      }
    })();
    t.ready.catch(() => {/* every write awaits it and reports it */});
    t.chain = t.ready.catch(() => {});
  });

  ctx.on("session/event", (session) => {
    const t = tracked.get(session);
    if (t === undefined || t.timer !== undefined) return;
    t.timer = setTimeout(() => {
      t.timer = undefined;
      write(t).catch(() => {/* reported at the next flush */});
    }, windowMs);
  });

  ctx.on("session/flush", async (session) => {
    const t = tracked.get(session);
    if (t !== undefined) await write(t);
    else await lastWrites.get(session);
  });

  // The lease is given up even when the last write failed; that failure is the one reported. A session whose start
  // was abandoned (noteAbandoned) is not written on: the log this writer made for it is deleted once the lease is
  // given up (a delete under the lease would leave a file log's folder behind).
  const release = async (t: Tracked) => {
    tracked.delete(t.session);
    const abandoned = wasAbandoned(t.session);
    if (abandoned && t.timer !== undefined) {
      clearTimeout(t.timer);
      t.timer = undefined;
    }
    let written: { error: unknown } | undefined;
    const last = abandoned ? undefined : write(t);
    if (last !== undefined) lastWrites.set(t.session, last);
    try {
      await last;
    } catch (error) {
      written = { error };
    }
    await t.chain; // a write under way ends first (it never rejects)
    try {
      await t.writer?.release();
    } catch (error) {
      if (written === undefined) throw error;
    }
    if (written !== undefined) throw written.error;
    // Made by this writer only when its first write succeeded: else what storage holds under the id is not its own.
    if (abandoned && await t.ready.then(() => true, () => false)) await storage.delete(t.session.id);
  };

  ctx.on("session/release", async (session) => {
    const t = tracked.get(session);
    if (t !== undefined) await release(t);
  });

  // A session that leaves the store on its own (a fork's owner undone, `sessions.dispose()`) is released without
  // anyone awaiting it: a last write of it that fails is reported when the plugin goes (`harness.dispose()` rejects
  // with it), as an agent's is; it was dropped. A session that never got to storage failed its start, and its
  // starter (`harness.fork()`) was told.
  const unreported: unknown[] = [];
  ctx.on("session/disposed", (session) => {
    const t = tracked.get(session);
    if (t === undefined) return;
    const done = release(t).catch(async (error) => {
      if (await t.ready.then(() => true, () => false)) unreported.push(error);
    });
    releasing.add(done);
    done.finally(() => releasing.delete(done));
  });

  // The sessions still live when the plugin goes are released here, and releases under way are waited for; the
  // last writes among them that failed are reported.
  ctx.effect(() => async () => {
    const settled = await Promise.allSettled([...[...tracked.values()].map(release), ...releasing]);
    const failures = settled.flatMap((result) => result.status === "rejected" ? [result.reason] : []);
    failures.push(...unreported.splice(0));
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, "The last writes of several sessions failed");
  }, "persistence");
}
