/**
 * The replay/record switch: one call that replays a fixture, records it
 * when it is missing, or re-records it, chosen by `DSH_REPLAY`.
 *
 * @module
 */

import { readdir, stat } from "node:fs/promises";
import process from "node:process";
import { HarnessError, type LlmAdapter, type Session } from "../mod.ts";
import { type Fixture, loadFixture } from "./fixture.ts";
import { type RecordingAdapter, recordingAdapter } from "./recording_adapter.ts";
import { type ReplayAdapter, replayAdapter, type ReplayOverrides } from "./replay_adapter.ts";
import { toPath } from "./_read_fixture_file.ts";

/**
 * How a fixture is used: `replay` plays it (it must exist), `record` records
 * it when it is missing and replays it otherwise, `refresh` re-records it.
 */
export type ReplayMode = "replay" | "record" | "refresh";

/** Options of {@linkcode openFixture}. */
export interface OpenFixtureOptions {
  /** The fixture directory (a session storage directory, see `writeFixture`). */
  readonly path: string | URL;
  /** The real adapter to record with; called only when recording. */
  readonly live: () => LlmAdapter | Promise<LlmAdapter>;
  /**
   * The mode.
   *
   * @default {the DSH_REPLAY environment variable, else "replay"}
   */
  readonly mode?: ReplayMode;
  /**
   * Strict replay (see `replayAdapter`): a request that differs from the recording (system
   * prompt, tool schemas, messages) fails with a diff. A session that compacted replays strictly
   * as recorded, with no override: the summary calls are answered from the recorded compactions.
   * Pass `false` to replay positionally.
   *
   * @default {true}
   */
  readonly strict?: boolean;
  /** Script overrides for replay (see `replayAdapter`). */
  readonly overrides?: ReplayOverrides;
}

/** What {@linkcode openFixture} resolves to. */
export interface FixtureHandle {
  /** What this run does. */
  readonly mode: "replay" | "record";
  /** The adapters to give the harness. */
  readonly adapters: readonly LlmAdapter[];
  /** The replay adapter, in replay mode. */
  readonly replay?: ReplayAdapter;
  /** The recording adapter, in record mode. */
  readonly recorder?: RecordingAdapter;
  /**
   * End the run: in replay mode check that the fixture was played to the end
   * (`assertConsumed()`); in record mode save the sessions as the fixture.
   *
   * @param sessions The sessions of the run (used in record mode).
   */
  finish(sessions: Session | readonly Session[]): Promise<void>;
}

function modeFromEnv(): ReplayMode {
  const value = process.env.DSH_REPLAY;
  if (value === undefined || value === "") return "replay";
  if (value === "replay" || value === "record" || value === "refresh") return value;
  throw new HarnessError("INVALID_ARGS", `DSH_REPLAY must be replay, record or refresh, not "${value}"`);
}

// An empty folder (made by a test's setup, or left by a recording that never finished) holds no fixture.
async function exists(path: string): Promise<boolean> {
  try {
    return !(await stat(path)).isDirectory() || (await readdir(path)).length > 0;
  } catch {
    return false;
  }
}

/**
 * Open a fixture for replay or record, as the mode (or `DSH_REPLAY`) says.
 *
 * @param options The fixture path, the real adapter, the mode and replay settings.
 * @returns The adapters to run with and `finish()` to close the run.
 * @throws {HarnessError} `FIXTURE_NOT_FOUND` in replay mode when the fixture is missing;
 *   `INVALID_ARGS` for an unknown mode.
 *
 * @example Recording when missing, replaying afterwards
 * ```ts
 * import { createHarness } from "@dsh/harness";
 * import { openFixture } from "@dsh/harness/replay";
 * import { scriptedAdapter, textResponse } from "@dsh/harness/testing";
 * import { mkdtemp } from "node:fs/promises";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 * import assert from "node:assert/strict";
 *
 * const path = join(await mkdtemp(join(tmpdir(), "dsh-")), "greeting");
 * const live = () => scriptedAdapter(textResponse("Hello!"));
 * for (const expected of ["record", "replay"]) {
 *   const fixture = await openFixture({ path, live, mode: "record" });
 *   assert.equal(fixture.mode, expected);
 *   const harness = await createHarness({ adapters: fixture.adapters });
 *   const agent = await harness.createAgent({ provider: "scripted", model: "scripted-model" });
 *   assert.equal((await agent.run("Hi")).text, "Hello!");
 *   await fixture.finish(agent.session);
 *   await harness.dispose();
 * }
 * ```
 */
export async function openFixture(options: OpenFixtureOptions): Promise<FixtureHandle> {
  if (typeof options?.live !== "function") {
    throw new HarnessError("INVALID_ARGS", "openFixture() needs a live adapter factory");
  }
  const mode = options.mode ?? modeFromEnv();
  if (mode !== "replay" && mode !== "record" && mode !== "refresh") {
    throw new HarnessError("INVALID_ARGS", `Replay mode must be replay, record or refresh, not "${String(mode)}"`);
  }
  const path = toPath(options.path);
  const record = mode === "refresh" || (mode === "record" && !(await exists(path)));
  if (record) {
    const recorder = recordingAdapter(await options.live());
    return {
      mode: "record",
      adapters: [recorder],
      recorder,
      finish: (sessions) => recorder.save(path, sessions),
    };
  }
  let fixture: Fixture;
  try {
    fixture = await loadFixture(path);
  } catch (error) {
    if (!HarnessError.isInstance(error, "FIXTURE_NOT_FOUND")) throw error;
    throw new HarnessError(
      "FIXTURE_NOT_FOUND",
      `Fixture ${path} does not exist; record it by running once with DSH_REPLAY=record (or mode: "record"), ` +
        "which calls the live adapter and saves the fixture",
      { cause: error, details: { path } },
    );
  }
  const replay = replayAdapter({
    fixture,
    strict: options.strict ?? true,
    ...(options.overrides !== undefined ? { overrides: options.overrides } : {}),
  });
  return {
    mode: "replay",
    adapters: replay.adapters,
    replay,
    finish: () => new Promise<void>((resolve) => resolve(replay.assertConsumed())),
  };
}
