/**
 * `@dsh/harness/replay`: test agents like software, deterministically and
 * offline. A real session is recorded once (its session log is the fixture);
 * from then on {@linkcode replayAdapter} plays its recorded model calls back
 * through the full loop, strict mode catches prompt and tool-schema drift,
 * and golden transcripts catch any change in behaviour.
 *
 * - {@linkcode loadFixture} / {@linkcode fixtureFromLogs}: a persisted log becomes one script per session.
 * - {@linkcode replayAdapter}: positional replay per session, overrides, placeholders, strict mode,
 *   `assertConsumed()`.
 * - {@linkcode recordingAdapter} / {@linkcode openFixture}: record mode and the `DSH_REPLAY` switch.
 * - {@linkcode assertGolden} / {@linkcode assertGoldenTranscript}: golden files with a diff and
 *   `DSH_GOLDEN=update`; {@linkcode normalizeLog} / {@linkcode normalizeText} take times and ids out.
 *
 * @example
 * ```ts
 * import { fixtureFromLogs, replayAdapter } from "@dsh/harness/replay";
 * import assert from "node:assert/strict";
 *
 * const replay = replayAdapter({ fixture: fixtureFromLogs([]), providers: ["deepseek"] });
 * assert.equal(replay.provider, "deepseek");
 * replay.assertConsumed();
 * ```
 *
 * @module
 */

export {
  type Fixture,
  type FixtureCall,
  type FixtureCompaction,
  fixtureFromLogs,
  type FixtureLog,
  type FixtureSession,
  type FixtureSource,
  loadFixture,
  type RecordedRequest,
} from "./fixture.ts";
export {
  type ReplayAdapter,
  replayAdapter,
  type ReplayAdapterOptions,
  type ReplayEntry,
  type ReplayOverrides,
  type ReplayPatch,
} from "./replay_adapter.ts";
export { type RecordingAdapter, recordingAdapter, writeFixture } from "./recording_adapter.ts";
export { type FixtureHandle, openFixture, type OpenFixtureOptions, type ReplayMode } from "./open_fixture.ts";
export { normalizeLog, type NormalizeLogOptions } from "./normalize_log.ts";
export {
  assertGolden,
  assertGoldenTranscript,
  type GoldenOptions,
  type GoldenOutcome,
  normalizeText,
} from "./golden.ts";
