/**
 * Record mode: wrap a real adapter, run the agent, and save the session logs
 * as a fixture. The session log itself is the fixture; the wrapper only
 * remembers which sessions called the model so that none is left out.
 *
 * @module
 */

import {
  fileStorage,
  type GenerateOptions,
  HarnessError,
  type LlmAdapter,
  type NewSessionHeader,
  type Session,
  type StreamChunk,
} from "../mod.ts";
import { mkdir, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { validateSessionId } from "../sdk/persistence/_header.ts";
import { parseLogFileName } from "../sdk/persistence/_file_log.ts";
import { toPath } from "./_read_fixture_file.ts";

/** The adapter returned by {@linkcode recordingAdapter}. */
export interface RecordingAdapter extends LlmAdapter {
  /** The wrapped adapter. */
  readonly inner: LlmAdapter;
  /** The ids of the sessions that called the model, in order of their first call. */
  readonly sessionIds: readonly string[];
  /**
   * Write the sessions' logs as a fixture directory (see {@linkcode writeFixture}).
   *
   * @param dir The fixture directory.
   * @param sessions The sessions to save; every session that called the model must be among them.
   * @param options The encoding.
   * @throws {HarnessError} `RECORD_INCOMPLETE` when a session that called the model is missing; the errors of
   *   {@linkcode writeFixture}, such as `FIXTURE_CONFLICT` when another write saved the same fixture meanwhile.
   */
  save(dir: string | URL, sessions: Session | readonly Session[], options?: WriteFixtureOptions): Promise<void>;
}

/**
 * Wrap a real adapter for record mode: calls pass through unchanged, and
 * `save()` writes the sessions that made them as a fixture for
 * `loadFixture` / `replayAdapter`.
 *
 * @param inner The real adapter.
 * @returns The recording adapter, on the same provider route and models.
 * @throws {HarnessError} `INVALID_ARGS` when `inner` is not an adapter.
 *
 * @example
 * ```ts
 * import { createHarness } from "@dsh/harness";
 * import { loadFixture, recordingAdapter } from "@dsh/harness/replay";
 * import { scriptedAdapter, textResponse } from "@dsh/harness/testing";
 * import { mkdtemp } from "node:fs/promises";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 * import assert from "node:assert/strict";
 *
 * const recorder = recordingAdapter(scriptedAdapter(textResponse("Recorded")));
 * const harness = await createHarness({ adapters: [recorder] });
 * const agent = await harness.createAgent({ provider: "scripted", model: "scripted-model" });
 * await agent.run("Hello");
 * const path = join(await mkdtemp(join(tmpdir(), "dsh-")), "hello");
 * await recorder.save(path, agent.session, { compression: "zstd" });
 * await harness.dispose();
 * const fixture = await loadFixture(path);
 * assert.equal(fixture.sessions[0].calls.length, 1);
 * ```
 */
export function recordingAdapter(inner: LlmAdapter): RecordingAdapter {
  if (typeof inner !== "object" || inner === null || typeof inner.stream !== "function") {
    throw new HarnessError("INVALID_ARGS", "recordingAdapter() needs an adapter to wrap");
  }
  const sessionIds: string[] = [];
  return {
    provider: inner.provider,
    models: inner.models,
    inner,
    sessionIds,
    stream(request: GenerateOptions): AsyncIterable<StreamChunk> {
      if (request.sessionId !== undefined && !sessionIds.includes(request.sessionId)) {
        sessionIds.push(request.sessionId);
      }
      return inner.stream(request);
    },
    async save(
      dir: string | URL,
      sessions: Session | readonly Session[],
      options?: WriteFixtureOptions,
    ): Promise<void> {
      const list: readonly Session[] = Array.isArray(sessions) ? sessions : [sessions as Session];
      const missing = sessionIds.filter((id) => !list.some((s) => s.id === id));
      if (missing.length > 0) {
        throw new HarnessError(
          "RECORD_INCOMPLETE",
          `Cannot save the fixture: sessions ${missing.join(", ")} called the model but were not given`,
          { details: { missing } },
        );
      }
      await writeFixture(dir, list, options);
    },
  };
}

/** Options of {@linkcode writeFixture} and `RecordingAdapter.save()`. */
export interface WriteFixtureOptions {
  /**
   * How the logs are encoded.
   *
   * @default {"none"}
   */
  readonly compression?: "none" | "zstd";
}

/**
 * Write session logs as a fixture: a storage directory in the persistence
 * module's format (`fileStorage`), one `<id>/session.v1.jsonl` per session.
 * Sessions already stored in the directory are replaced, so that it holds
 * exactly this run; other files in it (an override sidecar) stay. A
 * `.gitattributes` with `* -text` is added (unless the directory has one), so
 * a git checkout does not turn the logs' line endings into CRLF.
 *
 * The ids are checked before anything is written, and the new logs are
 * written whole beside the directory before any old one is removed: a
 * failure while writing leaves the old fixture as it was.
 *
 * One fixture takes one writer at a time. Two writes of the same path at once
 * (two processes recording the same missing fixture, or two calls in one
 * process) do not mix their sessions: the first to put its directory in place
 * wins, and a write that finds the directory changed under it (made, moved or
 * replaced since it looked) fails `FIXTURE_CONFLICT`, leaving the other's
 * fixture whole and nothing of its own beside it.
 *
 * @param dir The fixture directory.
 * @param sessions The sessions, in order.
 * @param options The encoding.
 * @returns Resolves once every log is durable.
 * @throws {HarnessError} `INVALID_SESSION_ID` for an id no storage takes; `INVALID_ARGS` for a session given twice
 *   or a path that is a file; `FIXTURE_CONFLICT` (`details.path`) when another write changed the directory while
 *   this one was saving.
 */
export async function writeFixture(
  dir: string | URL,
  sessions: readonly Session[],
  options: WriteFixtureOptions = {},
): Promise<void> {
  const path = toPath(dir);
  const ids = new Set<string>();
  for (const session of sessions) {
    validateSessionId(session.id);
    if (ids.has(session.id)) {
      throw new HarnessError("INVALID_ARGS", `Session ${JSON.stringify(session.id)} is given twice`);
    }
    ids.add(session.id);
  }
  const kind = await stat(path).then((s) => (s.isDirectory() ? "directory" : "file"), () => "none");
  if (kind === "file") {
    throw new HarnessError("INVALID_ARGS", `Fixture path ${path} is a file; a recorded fixture is a directory`);
  }
  const compression = options.compression ?? "none";
  const staging = `${path.replace(/[/\\]+$/, "")}.recording-${crypto.randomUUID()}`;
  try {
    const written = fileStorage(staging, { compression });
    for (const session of sessions) {
      const h = session.header;
      const header: Record<string, unknown> = { id: session.id, createdAt: h.createdAt };
      for (const key of ["cwd", "parentSession", "seedLength", "origin", "delegationDepth"] as const) {
        if (h[key] !== undefined) header[key] = h[key];
      }
      await written.create(header as unknown as NewSessionHeader, { events: session.events });
    }
    if (kind === "directory") {
      // What is not a session of the old fixture (override sidecars, notes) moves into the new one.
      const taken = new Set(await readdir(staging));
      for (const name of await readdir(path).catch((error) => conflict(path, error))) {
        if (taken.has(name) || await isSessionFolder(join(path, name))) continue;
        await rename(join(path, name), join(staging, name)).catch((error) => conflict(path, error));
      }
    }
    // Git must not rewrite the logs' line endings (core.autocrlf): an existing .gitattributes (moved over) is kept.
    await writeFile(join(staging, ".gitattributes"), GITATTRIBUTES, { flag: "wx" }).catch((error) => {
      if ((error as { code?: unknown }).code !== "EEXIST") throw error;
    });
    if (kind === "directory") {
      // The old fixture is swapped whole for the new: each rename is atomic, and a failure between the two puts
      // the old one back (a crash between them leaves it beside, as <dir>.replaced-<uuid>).
      const old = `${path.replace(/[/\\]+$/, "")}.replaced-${crypto.randomUUID()}`;
      await rename(path, old).catch((error) => conflict(path, error));
      try {
        await rename(staging, path);
      } catch (error) {
        await rename(old, path).catch((cause) => conflict(path, cause, old));
        conflict(path, error);
      }
      await rm(old, { recursive: true, force: true });
    } else {
      await mkdir(dirname(path), { recursive: true });
      // Another write (another process, or another call) may have put its fixture there since the check above.
      await rename(staging, path).catch((error) => conflict(path, error));
    }
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** The codes of a rename or read that found the fixture directory changed under it by another write. */
const CONFLICT_CODES: ReadonlySet<unknown> = new Set(["ENOTEMPTY", "EEXIST", "ENOENT"]);

/**
 * Rethrow a file system error of the swap: one that says another write changed the fixture directory meanwhile
 * (it appeared, or vanished) as `FIXTURE_CONFLICT`, any other as it is.
 */
function conflict(path: string, error: unknown, aside?: string): never {
  const code = (error as { code?: unknown } | null)?.code;
  if (!CONFLICT_CODES.has(code)) throw error;
  throw new HarnessError(
    "FIXTURE_CONFLICT",
    `Fixture ${path} was changed by another write while this one was being saved (${String(code)}); ` +
      "record one fixture with one writer at a time" +
      (aside === undefined ? "" : `; the fixture it replaced is left at ${aside}`),
    { cause: error, details: aside === undefined ? { path } : { path, aside } },
  );
}

/** The `.gitattributes` of a fixture directory: its logs are bytes, never line-ending converted. */
const GITATTRIBUTES =
  "# Written by writeFixture: session logs are checksummed bytes; keep git from converting line endings.\n* -text\n";

/** Whether a fixture entry is a session's folder (it holds a session log of some version). */
async function isSessionFolder(path: string): Promise<boolean> {
  try {
    return (await readdir(path)).some((name) => parseLogFileName(name) !== undefined);
  } catch {
    return false; // a file
  }
}
