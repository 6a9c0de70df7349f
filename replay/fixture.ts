/**
 * Fixtures: recorded session logs cut into one script of model calls per
 * session.
 *
 * A little over the house limit on purpose: the public fixture types carry the
 * rules of how a log is cut (seeds, retries, compactions, calls a crash cut
 * off) beside the one pass that applies them; reading files is in
 * `_read_fixture_file.ts`, the shared history in `_shared_history.ts`.
 *
 * @module
 */

import {
  type EpochHeader,
  HarnessError,
  type Message,
  type SessionEvent,
  type StreamChunk,
  type TokenUsage,
} from "../mod.ts";
import { withoutForeignReplayState } from "../sdk/llm/_replay_state.ts";
import { readFixtureFile } from "./_read_fixture_file.ts";
import { SharedHistory } from "./_shared_history.ts";
import type { ReplayOverrides } from "./replay_adapter.ts";

/** What the live request looked like when a recorded model call was made. */
export interface RecordedRequest {
  /** The request header in force (the last `request/header` before the call); absent when the log has none. */
  readonly header?: EpochHeader;
  /**
   * The history derived from the log prefix before the call (`deriveMessages` at that point), as the
   * runtime sent it to the call's adapter: when the log recorded a header, the messages of providers
   * other than the header's carry no `replayState` (it is private to the adapter that produced it).
   *
   * In a fixture built by {@linkcode fixtureFromLogs} this is a getter that builds a fresh array on
   * each read from one history shared by all the calls of the session, so that a fixture holds
   * O(log) messages rather than a copy of the history per call.
   */
  readonly messages: readonly Message[];
}

/**
 * One recorded model call: the `assistant/chunk`s of one attempt, up to and including its `finish` (for a call the
 * session stopped inside, which has none, an `aborted` one the fixture adds).
 */
export interface FixtureCall {
  /** The turn of the call. */
  readonly turn: number;
  /** The step of the call (retries are several calls in one step). */
  readonly step: number;
  /** The seq of the call's first chunk. */
  readonly seq: number;
  /**
   * The chunks, ending with `finish`. A call the session stopped inside (a crash cut its stream, and the log's repair
   * closed its step without a finish) ends with an `aborted` finish (code `ABORTED`) the fixture adds: it replays as a
   * cancelled call does, hanging until the live call is aborted.
   */
  readonly chunks: readonly StreamChunk[];
  /** The request recorded for the call, for strict replay. */
  readonly request: RecordedRequest;
}

/**
 * One recorded compaction: what its summary call answered, as far as the log
 * tells (the summary call is not in the log as chunks; a compaction writes
 * `compaction/start`, `compaction/summary` when the call gave a summary, and
 * `compaction/end`).
 */
export interface FixtureCompaction {
  /** The seq of its `compaction/start`. */
  readonly seq: number;
  /** Why it ran, as `compaction/start` recorded it (`manual`, `threshold`, `overflow`). */
  readonly reason: string;
  /** The summary the call gave (`compaction/summary`). */
  readonly summary?: string;
  /** Why it failed, when `compaction/end` recorded the outcome `failed` without a summary before it. */
  readonly error?: string;
  /**
   * The failure of its last summary call, as `compaction/end` recorded it (`cancelled` when the call itself was
   * cancelled); absent in logs written before it was recorded, and when the call did not fail.
   */
  readonly failure?: { readonly code: string; readonly message: string; readonly cancelled?: boolean };
  /** How many summary calls it made, retries included, as `compaction/end` recorded it; absent in older logs. */
  readonly attempts?: number;
  /** The token usage its summary calls reported, summed, as `compaction/end` recorded it; absent in older logs. */
  readonly usage?: TokenUsage;
}

/** One recorded session of a fixture. */
export interface FixtureSession {
  /** The session id as recorded. */
  readonly id: string;
  /** The creation time as recorded (0 when unknown). */
  readonly createdAt: number;
  /** The parent session, for forked and child sessions. */
  readonly parentSession?: string;
  /** The whole recorded log, seed included. */
  readonly events: readonly SessionEvent[];
  /** The first seq written by the session itself (after its seed and end-seed marker). */
  readonly firstLiveSeq: number;
  /** The script: the model calls made by the session itself, in order (compaction summary calls are not among them). */
  readonly calls: readonly FixtureCall[];
  /**
   * The compactions the session itself ran, in order: `replayAdapter` answers the live summary calls
   * (`purpose: "compaction"`) from them. Absent (none) in a session built by hand.
   */
  readonly compactions?: readonly FixtureCompaction[];
}

/** A loaded fixture: one script per recorded session, parents first, then children by creation time. */
export interface Fixture {
  /** The sessions, in the order live sessions are bound to them. */
  readonly sessions: readonly FixtureSession[];
  /** Where the fixture was read from, when it was read from a file. */
  readonly source?: string;
  /** Script overrides read from the fixture's sidecar file, applied by `replayAdapter`. */
  readonly overrides?: ReplayOverrides;
}

/** A recorded session log given directly to {@linkcode fixtureFromLogs}. */
export interface FixtureLog {
  /** The session id. @default {"session-<n>"} */
  readonly id?: string;
  /** The creation time, used to order children. @default {0} */
  readonly createdAt?: number;
  /** The parent session, for forked and child sessions. */
  readonly parentSession?: string;
  /**
   * How many events at the start of the log the session was seeded with: its header's `seedLength` (a fork's, a
   * forked child's), or 0 for a session that was created empty — a resume marks where it went on with a
   * `session/end-seed` of its own, after events that are still the session's. When absent, the events after the
   * log's last `session/end-seed` are taken as the session's own, which is right for a fork and drops the calls made
   * before a resume. `loadFixture` of a directory or file gives it from each header: the header's own, else 0 for
   * a session that is not a fork or child (one whose header names no `parentSession`).
   */
  readonly seedLength?: number;
  /** The log. */
  readonly events: readonly SessionEvent[];
}

/** What {@linkcode loadFixture} accepts: a file or directory path, one log's events, or several logs. */
export type FixtureSource = string | URL | readonly SessionEvent[] | readonly FixtureLog[];

function isEventArray(value: readonly unknown[]): value is readonly SessionEvent[] {
  return value.length === 0 || (typeof value[0] === "object" && value[0] !== null && "seq" in value[0]);
}

// The first seq the session wrote itself: after its seed and the marker that follows it when the seed length is known,
// else after the last marker.
function firstLiveSeq(events: readonly SessionEvent[], seedLength: number | undefined): number {
  if (seedLength !== undefined) return events[seedLength]?.type === "session/end-seed" ? seedLength + 1 : seedLength;
  for (let i = events.length - 1; i >= 0; i--) if (events[i].type === "session/end-seed") return i + 1;
  return 0;
}

function recordedRequest(header: EpochHeader | undefined, history: () => readonly Message[]): RecordedRequest {
  // The adapter of the call was sent the history without the replay state of other providers' messages (the
  // runtime's rule; each adapter serves the route of its own provider), so that is the request to compare with.
  const provider = header?.config.provider;
  const messages = provider === undefined ? history : () => withoutForeignReplayState(history(), (p) => p === provider);
  // Own enumerable getters, so a spread or JSON.stringify of the request still shows the messages.
  return header === undefined
    ? {
      get messages() {
        return messages();
      },
    }
    : {
      header,
      get messages() {
        return messages();
      },
    };
}

/** The recorded compactions a log's events fold into, one event at a time (each event of the log is read once). */
class CompactionCutter {
  readonly compactions: FixtureCompaction[] = [];
  #open: { seq: number; reason: string; summary?: string } | undefined;

  push(event: SessionEvent): void {
    if (event.type === "compaction/start") {
      this.#open = { seq: event.seq, reason: event.data.reason };
    } else if (event.type === "compaction/summary" && this.#open !== undefined) {
      this.#open.summary = event.data.summary;
    } else if (event.type === "compaction/end" && this.#open !== undefined) {
      // A bracket with neither a summary nor a failure (a plugin's `skipped`) made no summary call.
      const open = this.#open;
      const { attempts, failure, usage } = event.data;
      const counted = {
        ...(typeof attempts === "number" ? { attempts } : {}),
        ...(usage !== undefined ? { usage } : {}),
      };
      if (open.summary !== undefined) this.compactions.push({ ...open, ...counted });
      else if (event.data.outcome === "failed") {
        this.compactions.push({
          seq: open.seq,
          reason: open.reason,
          error: event.data.error ?? "",
          ...(failure !== undefined
            ? {
              failure: {
                code: failure.code,
                message: failure.message,
                ...(failure.cancelled === true ? { cancelled: true } : {}),
              },
            }
            : {}),
          ...counted,
        });
      }
      this.#open = undefined;
    }
  }

  /** The compactions; a log cut inside a compaction (a crash) still tells the summary, when the call gave one. */
  end(): FixtureCompaction[] {
    if (this.#open?.summary !== undefined) this.compactions.push(this.#open);
    this.#open = undefined;
    return this.compactions;
  }
}

/**
 * The finish of a call the session stopped inside: a crash cut its stream, and the repair of the log at the next load
 * closed its step and turn (`step/end`, `turn/end` with `interrupted`) without one.
 */
const INTERRUPTED: StreamChunk = Object.freeze({
  type: "finish",
  reason: Object.freeze({
    kind: "aborted",
    failure: Object.freeze({
      code: "ABORTED",
      message: "Model call was interrupted: the session stopped before it finished, and its log was repaired",
    }),
  }),
});

/** Whether an event ends the step of an open call: its `step/end`, or the `turn/end` of its turn. */
function endsStep(event: SessionEvent, call: { readonly turn: number; readonly step: number }): boolean {
  return (event.type === "step/end" && event.data.turn === call.turn && event.data.step === call.step) ||
    (event.type === "turn/end" && event.data.turn === call.turn);
}

function cutCalls(
  id: string,
  events: readonly SessionEvent[],
  live: number,
): { calls: FixtureCall[]; compactions: FixtureCompaction[] } {
  const calls: FixtureCall[] = [];
  const compactions = new CompactionCutter();
  const history = new SharedHistory();
  let header: EpochHeader | undefined;
  let open: { turn: number; step: number; seq: number; chunks: StreamChunk[]; request: RecordedRequest } | undefined;
  const missingFinish = (call: NonNullable<typeof open>) =>
    new HarnessError(
      "REPLAY_MISSING_FINISH",
      `Fixture session ${id} has a model call without a finish chunk: turn ${call.turn}, step ${call.step}, from seq ${call.seq}`,
      { details: { sessionId: id, turn: call.turn, step: call.step, seq: call.seq } },
    );
  for (const event of events) {
    if (open !== undefined && endsStep(event, open)) {
      // The session stopped inside the call (a crash) and the log's repair closed its step: it ends as cancelled.
      open.chunks.push(INTERRUPTED);
      calls.push(open);
      open = undefined;
    }
    if (event.type === "assistant/chunk" && event.seq >= live) {
      const { turn, step, chunk } = event.data;
      if (open !== undefined && (open.turn !== turn || open.step !== step)) throw missingFinish(open);
      if (open === undefined) {
        open = { turn, step, seq: event.seq, chunks: [], request: recordedRequest(header, history.snapshot()) };
      }
      open.chunks.push(chunk);
      if (chunk.type === "finish") {
        calls.push(open);
        open = undefined;
      }
    } else if (event.type === "request/header") {
      header = event.data.header;
    } else if (event.seq >= live) {
      compactions.push(event);
    }
    history.commit(event);
  }
  if (open !== undefined) throw missingFinish(open);
  return { calls, compactions: compactions.end() };
}

/**
 * Build a fixture from session logs already in memory.
 *
 * Each log becomes one script: its `assistant/chunk` events grouped by
 * (turn, step), each model call cut at its `finish` chunk, so a step with
 * retries yields several calls; a call whose step ends without one (a crash
 * cut it off, and the log's repair closed the step) ends with an `aborted`
 * finish added in its place. A compaction's summary call is not in the log
 * as chunks: each compaction the session ran is kept in `compactions` (its
 * summary, or why it failed) instead. A seeded session (a fork or child)
 * contributes only the calls and compactions after its seed: its log's first
 * `seedLength` events and the `session/end-seed` marker after them, or, when
 * the log does not say its `seedLength`, everything up to its last marker (so
 * give `seedLength` — 0 for a session created empty — for a log that went on
 * after a resume, whose own marker follows calls of its own). Sessions are ordered parents first (logs without `parentSession`),
 * then by `createdAt`, keeping the given order among equals.
 *
 * @param logs One log's events, or several logs.
 * @param source Where the logs came from, for messages.
 * @returns The fixture.
 * @throws {HarnessError} `REPLAY_MISSING_FINISH` when a model call has no finish chunk and its step does not end
 *   (chunks of another step follow, or the log ends inside it); `INVALID_ARGS` for anything but events or logs.
 *
 * @example
 * ```ts
 * import { fixtureFromLogs } from "@dsh/harness/replay";
 * import assert from "node:assert/strict";
 *
 * const fixture = fixtureFromLogs([
 *   { type: "turn/start", seq: 0, time: 0, data: { turn: 1 } },
 *   { type: "step/start", seq: 1, time: 0, data: { turn: 1, step: 1 } },
 *   { type: "assistant/chunk", seq: 2, time: 0, data: { turn: 1, step: 1, chunk: { type: "finish", reason: { kind: "stop" } } } },
 * ]);
 * assert.equal(fixture.sessions.length, 1);
 * assert.equal(fixture.sessions[0].calls[0].chunks.length, 1);
 * ```
 */
export function fixtureFromLogs(logs: readonly SessionEvent[] | readonly FixtureLog[], source?: string): Fixture {
  if (!Array.isArray(logs)) {
    throw new HarnessError("INVALID_ARGS", "A fixture is built from an array of events or logs");
  }
  const list: readonly FixtureLog[] = isEventArray(logs) ? [{ events: logs }] : logs as readonly FixtureLog[];
  const sessions = list.map((log, index): FixtureSession => {
    if (typeof log !== "object" || log === null || !Array.isArray(log.events)) {
      throw new HarnessError("INVALID_ARGS", `Fixture log ${index} has no events array`);
    }
    const id = log.id ?? `session-${index + 1}`;
    const seedLength = log.seedLength;
    if (
      seedLength !== undefined &&
      (!Number.isSafeInteger(seedLength) || seedLength < 0 || seedLength > log.events.length)
    ) {
      throw new HarnessError(
        "INVALID_ARGS",
        `Fixture log ${index} has seedLength ${
          String(seedLength)
        }: give a count from 0 to its ${log.events.length} events`,
      );
    }
    const live = firstLiveSeq(log.events, seedLength);
    const { calls, compactions } = cutCalls(id, log.events, live);
    return {
      id,
      createdAt: log.createdAt ?? 0,
      ...(log.parentSession !== undefined ? { parentSession: log.parentSession } : {}),
      events: log.events,
      firstLiveSeq: live,
      calls,
      compactions,
    };
  });
  const order = sessions
    .map((session, index) => ({ session, index }))
    .sort((x, y) =>
      Number(x.session.parentSession !== undefined) - Number(y.session.parentSession !== undefined) ||
      (x.session.parentSession !== undefined ? x.session.createdAt - y.session.createdAt : 0) ||
      x.index - y.index
    )
    .map((entry) => entry.session);
  return source === undefined ? { sessions: order } : { sessions: order, source };
}

/**
 * Load a fixture: persisted session logs, or logs in memory.
 *
 * - A directory is a session storage directory as `fileStorage` writes it
 *   (one `<id>/session.v1.jsonl[.zstd]` per session, or the v0 name `session.jsonl[.zstd]`; this is
 *   what `writeFixture` and record mode produce); every stored session is
 *   read, crash-repaired in memory like `inspect()`. A plain log whose line
 *   endings a git checkout turned into CRLF is read as a plain log file
 *   (`writeFixture` adds a `.gitattributes` against that).
 * - A file is one plain log file (a session header line, then one
 *   event or packed chunk row per line; several logs may follow one another).
 *   A zstd log file is read through the storage directory that
 *   holds it.
 *
 * A sidecar file with script overrides is read with a fixture file
 * (`weather.jsonl` → `weather.override.json`) or directory
 * (`replay.override.json` inside it) when it exists; see `ReplayOverrides`.
 * Its entries and their chunks are checked as it is read (where each patch
 * goes is checked by `replayAdapter`, against the fixture).
 *
 * @param source A path or `file:` URL, one log's events, or several logs.
 * @returns The fixture; see {@linkcode fixtureFromLogs} for how scripts are cut.
 * @throws {HarnessError} `FIXTURE_NOT_FOUND` when the path does not exist; `INVALID_FIXTURE` when a
 *   file is not a session log, or a session folder's log cannot be read (damaged, of a newer format version, its
 *   header naming another id: the message gives the storage's reason, `details.code` its code, such as
 *   `SESSION_CORRUPT` or `SESSION_FORMAT_UNSUPPORTED`), or the override sidecar is not JSON of the overrides' shape
 *   (an entry, or a chunk of an unknown `type`: `details.path` names it, `details.file` the sidecar);
 *   `REPLAY_MISSING_FINISH` when a model call has no finish chunk
 *   and its step does not end (see {@linkcode fixtureFromLogs}).
 *
 * @example From events in memory
 * ```ts
 * import { loadFixture } from "@dsh/harness/replay";
 * import assert from "node:assert/strict";
 *
 * const fixture = await loadFixture([
 *   { type: "assistant/chunk", seq: 0, time: 0, data: { turn: 1, step: 1, chunk: { type: "finish", reason: { kind: "stop" } } } },
 *   { type: "assistant/chunk", seq: 1, time: 0, data: { turn: 1, step: 1, chunk: { type: "finish", reason: { kind: "stop" } } } },
 * ]);
 * assert.equal(fixture.sessions[0].calls.length, 2);
 * ```
 */
export async function loadFixture(source: FixtureSource): Promise<Fixture> {
  if (typeof source === "string" || source instanceof URL) {
    const { path, logs, overrides } = await readFixtureFile(source);
    const fixture = fixtureFromLogs(logs, path);
    return overrides === undefined ? fixture : { ...fixture, overrides: overrides as ReplayOverrides };
  }
  return fixtureFromLogs(source);
}
