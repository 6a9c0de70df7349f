// Live tails of postgresStorage: one LISTEN per storage on the schema's
// channel (payload "<next seq> <session id>"), fanned out to the tails of that
// session. A tail subscribes before its first read, then reads by seq; a
// notification that arrives while it reads makes it read again, so nothing
// falls between the read and the wait. Without LISTEN (HTTP drivers), or if a
// notification is lost with a broken connection, the poll interval bounds the
// delay.

import { HarnessError } from "../kernel/harness_error.ts";
import { corrupt, notFound } from "../persistence/_errors.ts";
import { incarnationOf } from "../session/_incarnation.ts";
import type { SessionEvent } from "../session/session_events.ts";
import type { Statements } from "./_statements.ts";
import { deadline } from "./_deadline.ts";
import type { PostgresExecutor, PostgresUnlisten } from "./postgres_executor.ts";

/** The most events of one page a live tail reads (and at most `pageBytes` of their text, see PAGE_BYTES). */
const PAGE = 500;

/**
 * A driver error of a read (the server is down, the connection dropped) as `SESSION_READ_FAILED`; so is the
 * `SESSION_WRITE_FAILED` of the migrations a first read waits for (kept as the cause). Other harness errors (not
 * found, a schema written by a newer build) stay as they are.
 */
export function readFailed(what: string, sessionId: string | undefined, cause: unknown): HarnessError {
  if (HarnessError.isInstance(cause) && cause.code !== "SESSION_WRITE_FAILED") return cause;
  return new HarnessError(
    "SESSION_READ_FAILED",
    `Reading from PostgreSQL failed (${what}): ${(cause as Error)?.message ?? String(cause)}`,
    { cause, details: sessionId === undefined ? { what } : { sessionId, what } },
  );
}

/** The incarnation in a stored header (see incarnationOf); a header that cannot be read stands for itself. */
export function lifeOf(header: unknown): string {
  const text = String(header);
  try {
    return incarnationOf(JSON.parse(text));
  } catch {
    return text;
  }
}

export class PostgresTail {
  readonly #db: PostgresExecutor;
  readonly #sql: Statements;
  readonly #pollMs: number;
  readonly #timeoutMs: number;
  readonly #pageBytes: number;
  readonly #ensure: () => Promise<void>;
  readonly #waiters = new Map<string, Set<() => void>>();
  #listening: Promise<PostgresUnlisten | undefined> | undefined;
  #closed = false;

  constructor(
    db: PostgresExecutor,
    sql: Statements,
    times: { pollMs: number; timeoutMs: number; pageBytes: number },
    ensure: () => Promise<void>,
  ) {
    this.#db = db;
    this.#sql = sql;
    this.#pollMs = times.pollMs;
    this.#timeoutMs = times.timeoutMs;
    this.#pageBytes = times.pageBytes;
    this.#ensure = ensure;
  }

  #onNotify = (payload: string): void => {
    const space = payload.indexOf(" ");
    const id = space < 0 ? payload : payload.slice(space + 1);
    for (const fn of this.#waiters.get(id) ?? []) fn();
  };

  #listen(): Promise<PostgresUnlisten | undefined> {
    const listen = this.#db.listen;
    if (listen === undefined || this.#closed) return Promise.resolve(undefined);
    this.#listening ??= this.#ensure()
      .then(() => {
        const attempt = listen.call(this.#db, this.#sql.channel, this.#onNotify);
        return deadline(attempt, this.#timeoutMs).catch((error) => {
          attempt.then((unlisten) => unlisten(), () => {}).catch(() => {}); // answered too late: let it go
          throw error;
        });
      })
      .catch(() => {
        // Could not listen now: poll, and try again with the next tail.
        this.#listening = undefined;
        return undefined;
      });
    return this.#listening;
  }

  async *follow(
    sessionId: string,
    fromSeq: number,
    signal: AbortSignal | undefined,
    file: string,
    incarnation?: string,
  ): AsyncGenerator<SessionEvent> {
    let pending = false;
    let wake: (() => void) | undefined;
    const notify = () => {
      pending = true;
      wake?.();
    };
    let set = this.#waiters.get(sessionId);
    if (set === undefined) this.#waiters.set(sessionId, set = new Set());
    set.add(notify);
    try {
      await this.#listen();
      try {
        await this.#ensure();
      } catch (error) {
        throw readFailed("follow", sessionId, error);
      }
      let next = fromSeq;
      // The life of the log being followed: a session deleted and created again under the same id between two
      // reads is another log, and its events are not this one's continuation. A caller that read the log before
      // (an HTTP stream that sent its first events under their ids) names the life it read: a log deleted and created
      // again before the first page is read here is not that one either.
      let life: string | undefined = incarnation;
      while (signal?.aborted !== true && !this.#closed) {
        pending = false;
        let rows;
        try {
          rows = await deadline(
            this.#db.query(this.#sql.page, [sessionId, next, null, PAGE, this.#pageBytes]),
            this.#timeoutMs,
          );
        } catch (error) {
          throw readFailed("follow", sessionId, error);
        }
        if (rows.length === 0) {
          if (life === undefined) throw notFound(sessionId);
          // Deleted: the life followed is over.
          return;
        }
        const now = lifeOf(rows[0].header);
        if (life !== undefined && now !== life) return;
        life = now;
        const text = rows[0].events;
        if (typeof text === "string" && text.length > 0) {
          let events: SessionEvent[];
          try {
            events = JSON.parse(`[${text}]`);
          } catch (error) {
            throw corrupt(file, next + 2, "a record read by a live tail is not JSON", { sessionId }, error);
          }
          for (const event of events) {
            if (event?.seq !== next) throw corrupt(file, next + 2, `the record is not seq ${next}`, { sessionId });
            next++;
            yield event;
          }
          continue;
        }
        if (pending) continue;
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener("abort", done);
            wake = undefined;
            resolve();
          };
          const timer = setTimeout(done, this.#pollMs);
          wake = done;
          signal?.addEventListener("abort", done, { once: true });
        });
      }
    } finally {
      set.delete(notify);
      if (set.size === 0 && this.#waiters.get(sessionId) === set) this.#waiters.delete(sessionId);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const set of this.#waiters.values()) for (const fn of set) fn();
    const unlisten = await this.#listening;
    this.#listening = undefined;
    await unlisten?.();
  }
}
