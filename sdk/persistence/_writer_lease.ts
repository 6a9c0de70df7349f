// Per-session writer leases: an in-process table (shared by every storage
// instance of this module copy, keyed by the session's storage key), plus,
// for fileStorage, a lock file that other processes respect.

import { errorCode, fsOps, processAlive } from "./_fs.ts";
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
  readonly acquiredAt: number;
}

/** The live lock of a lock file, or `undefined` when there is none or its process is gone. */
export async function readLiveLock(path: string): Promise<LockInfo | undefined> {
  let text: string;
  try {
    text = new TextDecoder().decode(await fsOps.readFile(path));
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    throw error;
  }
  let info: LockInfo;
  try {
    info = JSON.parse(text);
  } catch {
    // Lock files are published whole, so this one was damaged: nobody can prove to hold it.
    return undefined;
  }
  if (typeof info?.pid === "number" && processAlive(info.pid) === false) return undefined;
  return info;
}

/**
 * Create the lock file exclusively, with its content in place from the first
 * moment (written to a temp file, then hard-linked), taking over a stale one.
 * `false` when a live lock exists.
 */
export async function createLock(path: string, info: LockInfo): Promise<boolean> {
  const temp = `${path}.${info.token}.tmp`;
  await fsOps.writeFile(temp, JSON.stringify(info), "wx");
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await fsOps.link(temp, path);
        return true;
      } catch (error) {
        if (errorCode(error) !== "EEXIST") {
          // No hard links here: fall back to an exclusive create (its content lands just after).
          try {
            await fsOps.writeFile(path, JSON.stringify(info), "wx");
            return true;
          } catch (inner) {
            if (errorCode(inner) !== "EEXIST") throw inner;
          }
        }
      }
      if (await readLiveLock(path) !== undefined) return false;
      await fsOps.unlink(path).catch(() => {});
    }
    return false;
  } finally {
    await fsOps.unlink(temp).catch(() => {});
  }
}
