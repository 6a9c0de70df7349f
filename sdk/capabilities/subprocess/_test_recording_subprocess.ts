// Test support (not published): a SubprocessService that runs nothing and records the options of each call, for
// tests of what a caller (bashShell, the hook bridge) asks any provider to run with.

import type { RunOptions, RunResult, SubprocessService } from "./subprocess_service.ts";

/** A run that exited 0 and printed nothing. */
export const EMPTY_RUN: RunResult = Object.freeze({
  exitCode: 0,
  signal: null,
  stdout: "",
  stderr: "",
  stdoutTruncated: false,
  stderrTruncated: false,
  stdoutBytes: 0,
  stderrBytes: 0,
  timedOut: false,
  aborted: false,
});

/** A provider that runs nothing: each call's options (`{}` when none) go to `given`, and it resolves with `result`. */
export function recordingSubprocess(
  result: RunResult = EMPTY_RUN,
): { service: SubprocessService; given: RunOptions[] } {
  const given: RunOptions[] = [];
  const service: SubprocessService = {
    run: (_argv, options = {}) => {
      given.push(options);
      return Promise.resolve(result);
    },
  };
  return { service, given };
}
