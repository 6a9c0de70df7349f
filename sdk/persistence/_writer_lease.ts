// Per-session writer leases: an in-process table (shared by every storage
// instance of this module copy, keyed by the session's storage key), plus,
// for fileStorage, a lock file that other processes respect.

import { currentPid, errorCode, fsOps, pidNamespace, processAlive } from "./_fs.ts";
import { unrefTimer } from "../kernel/_unref_timer.ts";
import { invalidArgs, writerBusy } from "./_errors.ts";
import type { SessionWriter } from "./session_storage.ts";

/** A held lease; `release()` runs the backend's release once. */
export class WriterLease implements SessionWriter {
  readonly sessionId: string;
  readonly token: string;
  /** The storage key (a path for files) the lease is for. */
  readonly key: string;
  #released = false;
  #onRelease: () => Promise<void>;

  constructor(sessionId: string, key: string, token: string, onRelease: () => Promise<void>) {
    this.sessionId = sessionId;
    this.key = key;
    this.token = token;
    this.#onRelease = onRelease;
  }

  get released(): boolean {
    return this.#released;
  }

  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    await this.#onRelease();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}

/** Which leases are held, by storage key. */
export class LeaseTable {
  readonly #held = new Map<string, WriterLease | "pending">();

  /** Reserve `key` synchronously; `false` when it is taken. */
  reserve(key: string): boolean {
    if (this.#held.has(key)) return false;
    this.#held.set(key, "pending");
    return true;
  }

  set(key: string, lease: WriterLease): void {
    this.#held.set(key, lease);
  }

  drop(key: string, lease?: WriterLease): void {
    const held = this.#held.get(key);
    if (lease === undefined ? held === "pending" : held === lease) this.#held.delete(key);
  }

  isHeld(key: string): boolean {
    return this.#held.has(key);
  }

  /**
   * Check the right to write `key`: with a `writer`, it must be the live lease
   * of this key; without one, no lease may be held in this process.
   */
  check(key: string, sessionId: string, writer: SessionWriter | undefined, action: string): void {
    const held = this.#held.get(key);
    if (writer === undefined) {
      if (held !== undefined) throw writerBusy(sessionId, action);
      return;
    }
    if (!(writer instanceof WriterLease) || writer.sessionId !== sessionId) {
      throw invalidArgs(`The writer given is not a lease of session ${JSON.stringify(sessionId)} from this storage`);
    }
    if (writer.released || held !== writer) throw writerBusy(sessionId, `${action} with a released lease`);
  }
}

/** The table fileStorage instances share. */
export const processLeases: LeaseTable = new LeaseTable();

/** The content of a lock file. */
export interface LockInfo {
  readonly token: string;
  readonly pid?: number;
  /** The pid namespace `pid` belongs to ({@linkcode pidNamespace}); absent in locks of earlier versions. */
  readonly host?: string;
  readonly acquiredAt: number;
}

// The tokens of the lock files this thread holds, shared by every copy of this module loaded in it. A lock that
// names this process's pid and a token held here is live. One with another token is another thread's (a worker's:
// same pid, its own globals) or an earlier process's that had the same pid, as a container's first process has on
// every start: the holder renews its lock's mtime every RENEW_MS, so a lock not renewed for STALE_MS is the earlier
// process's.
const HELD = Symbol.for("@dsh/harness/held-lock-tokens");
let RENEW_MS = 10_000;
let STALE_MS = 30_000;

/** Test support: shorter renewal and staleness periods. */
export function lockTimingForTests(renewMs: number, staleMs: number): () => void {
  const before = [RENEW_MS, STALE_MS];
  RENEW_MS = renewMs;
  STALE_MS = staleMs;
  return () => void ([RENEW_MS, STALE_MS] = before);
}
const renewals = new Map<string, ReturnType<typeof setInterval>>();

function heldTokens(): Set<string> {
  const global = globalThis as unknown as Record<symbol, Set<string> | undefined>;
  return global[HELD] ??= new Set();
}

async function isLive(info: LockInfo, path: string, staleMs: number): Promise<boolean> {
  if (typeof info.pid !== "number") return true; // nobody can tell it is dead
  // A pid of another container or machine names no process here (or another one): only its renewals tell.
  if (typeof info.host === "string" && info.host !== await pidNamespace()) return renewedWithin(path, staleMs);
  if (info.pid !== currentPid()) return processAlive(info.pid) !== false;
  if (heldTokens().has(info.token)) return true;
  return renewedWithin(path, staleMs);
}

async function renewedWithin(path: string, staleMs: number): Promise<boolean> {
  const stat = await fsOps.stat(path).catch(() => undefined);
  return stat !== undefined && Date.now() - stat.mtimeMs < staleMs;
}

// A takeover guard is held for the few file operations of a takeover and never renewed: one of this pid that no
// thread here holds is stale after this long (one a taker put back after moving it aside, see takeGuard).
const GUARD_STALE_MS = 5_000;

// Keep a held lock's mtime fresh (see HELD); the timer does not keep the process alive.
function renew(path: string, token: string): void {
  const timer = setInterval(() => {
    const now = new Date();
    fsOps.utimes(path, now, now).catch(() => {/* gone or moved: its release or takeover decides */});
  }, RENEW_MS);
  unrefTimer(timer);
  renewals.set(token, timer);
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return new TextDecoder().decode(await fsOps.readFile(path));
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    throw error;
  }
}

/** A lock file as read: its text, and whether it proves a live holder. `undefined` when there is none. */
async function readLock(
  path: string,
  staleMs = STALE_MS,
): Promise<{ text: string; info: LockInfo | undefined } | undefined> {
  const text = await readText(path);
  if (text === undefined) return undefined;
  let info: unknown;
  try {
    info = JSON.parse(text);
  } catch {
    // Lock files are published whole, so this one was damaged: nobody can prove to hold it.
    return { text, info: undefined };
  }
  const lock = info as LockInfo | null;
  if (typeof lock !== "object" || lock === null || typeof lock.token !== "string") return { text, info: undefined };
  return { text, info: await isLive(lock, path, staleMs) ? lock : undefined };
}

/** The live lock of a lock file, or `undefined` when there is none, it is damaged, or its holder is gone. */
export async function readLiveLock(path: string): Promise<LockInfo | undefined> {
  return (await readLock(path))?.info;
}

// Publish `temp`'s content at `path` exclusively; `false` when `path` exists.
async function publish(temp: string, path: string, content: string): Promise<boolean> {
  try {
    await fsOps.link(temp, path);
    return true;
  } catch (error) {
    if (errorCode(error) === "EEXIST") return false;
    // No hard links here: an exclusive create (its content lands just after).
    try {
      await fsOps.writeFile(path, content, "wx");
      return true;
    } catch (inner) {
      if (errorCode(inner) === "EEXIST") return false;
      throw inner;
    }
  }
}

/**
 * Create the lock file exclusively, with its content in place from the first
 * moment (written to a temp file, then hard-linked), taking over a stale one.
 * `false` when a live lock exists, or another process is taking it over.
 *
 * Only a takeover removes a lock file it did not create, and only while it
 * holds the takeover guard (`<lock>.takeover`, published the same way) and
 * finds the lock still the one it judged stale: two processes that found the
 * same dead lock cannot both remove it, and neither can remove the lock the
 * other then created.
 */
export async function createLock(path: string, info: LockInfo): Promise<boolean> {
  const temp = `${path}.${info.token}.tmp`;
  const content = JSON.stringify(info);
  const held = heldTokens();
  // Held from before it is published: another copy of this module in this process must see it live at once.
  held.add(info.token);
  let created = false;
  try {
    await fsOps.writeFile(temp, content, "wx");
    for (let attempt = 0; attempt < 3; attempt++) {
      if (await publish(temp, path, content)) {
        renew(path, info.token);
        return created = true;
      }
      const found = await readLock(path);
      if (found?.info !== undefined) return false;
      if (found !== undefined && !(await removeStale(path, found.text, temp, content))) return false;
    }
    return false;
  } finally {
    if (!created) held.delete(info.token);
    await fsOps.unlink(temp).catch(() => {});
  }
}

/** Forget a released lock's token and stop renewing it (its file is removed by the caller). */
export function forgetLock(token: string): void {
  heldTokens().delete(token);
  clearInterval(renewals.get(token));
  renewals.delete(token);
}

// Remove the stale lock `judged` (its text) under the takeover guard; `false` when another process holds the guard.
async function removeStale(path: string, judged: string, temp: string, content: string): Promise<boolean> {
  const guard = `${path}.takeover`;
  if (!(await takeGuard(guard, temp, content))) return false;
  try {
    // Nobody else removes the lock while the guard is held, and a new one cannot be linked over it.
    if (await readText(path) === judged) {
      await fsOps.unlink(path).catch((error) => {
        if (errorCode(error) !== "ENOENT") throw error;
      });
    }
    return true;
  } finally {
    await fsOps.unlink(guard).catch(() => {});
  }
}

async function takeGuard(guard: string, temp: string, content: string): Promise<boolean> {
  for (let attempt = 0; attempt < 2; attempt++) {
    if (await publish(temp, guard, content)) return true;
    const found = await readLock(guard, GUARD_STALE_MS);
    if (found?.info !== undefined) return false; // a live takeover: it will create the lock
    if (found === undefined) continue;
    // Its taker died mid-takeover (or it is damaged). Move it aside under a name of this taker's own (of two that
    // found it, one moves it), then check that what was moved is the guard judged stale: a read then an unlink
    // could remove the guard another taker published in between.
    const aside = `${temp}.dead`;
    try {
      await fsOps.rename(guard, aside);
    } catch (error) {
      if (errorCode(error) === "ENOENT") continue;
      throw error;
    }
    if (await readText(aside) === found.text) {
      await fsOps.unlink(aside).catch(() => {});
      continue;
    }
    // Another taker's fresh guard was moved: put it back and leave the takeover to it. (If that taker finished in
    // between, the guard put back outlives it; it is stale GUARD_STALE_MS later.)
    await fsOps.link(aside, guard).catch(() => {});
    await fsOps.unlink(aside).catch(() => {});
    return false;
  }
  return false;
}
