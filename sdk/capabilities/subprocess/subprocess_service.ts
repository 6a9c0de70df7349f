/**
 * The subprocess seam (`ctx.subprocess`): run one program and collect its
 * exit status and output.
 *
 * @module
 */

/** Options of {@linkcode SubprocessService.run}. */
export interface RunOptions {
  /** The working directory. @default {the host process's working directory} */
  readonly cwd?: string;
  /**
   * Variables set for the child, over the inherited environment (see `inheritEnv`); on Windows, where a name is one
   * variable in any case, one set here replaces the inherited one whatever its case.
   */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Whether the child inherits the provider's environment (for `localSubprocess`, the host process's) under `env`.
   * With `false` the child's environment is `env` exactly: a caller that must keep variables from a command (as
   * `bashShell` keeps the host's API keys) passes `false` and the variables it chose, which any provider gives the
   * child and nothing else. A boolean only: `localSubprocess` refuses anything else (`INVALID_ARGS`) rather than
   * read it as "not false".
   *
   * @default {true}
   */
  readonly inheritEnv?: boolean;
  /** Bytes or text written to the child's standard input, which is then closed; without it stdin is empty. */
  readonly stdin?: string | Uint8Array;
  /** Stop the process group after this many milliseconds; the result then has `timedOut: true`. */
  readonly timeoutMs?: number;
  /** Stop the process group when this signal aborts; the result then has `aborted: true`. */
  readonly signal?: AbortSignal;
  /**
   * The most bytes kept of stdout and of stderr each; the rest is counted and dropped.
   *
   * @default {1048576}
   */
  readonly maxOutputBytes?: number;
}

/** How a run ended and what it printed. */
export interface RunResult {
  /** The exit code, or `null` when the process was ended by a signal. */
  readonly exitCode: number | null;
  /** The signal that ended the process (`SIGTERM`, `SIGKILL`, …), or `null`. */
  readonly signal: string | null;
  /** Standard output as UTF-8 text, cut at `maxOutputBytes`. */
  readonly stdout: string;
  /** Standard error as UTF-8 text, cut at `maxOutputBytes`. */
  readonly stderr: string;
  /** Whether stdout was cut. */
  readonly stdoutTruncated: boolean;
  /** Whether stderr was cut. */
  readonly stderrTruncated: boolean;
  /** Bytes the process wrote to stdout, kept or not. */
  readonly stdoutBytes: number;
  /** Bytes the process wrote to stderr, kept or not. */
  readonly stderrBytes: number;
  /** Whether `timeoutMs` elapsed and the process group was stopped. */
  readonly timedOut: boolean;
  /** Whether `signal` aborted and the process group was stopped. */
  readonly aborted: boolean;
}

/**
 * Runs programs: the service behind `ctx.subprocess`.
 *
 * Contract: `run()` resolves with a {@linkcode RunResult} once the process has
 * ended, whatever its exit code — a non-zero exit, a timeout and an abort are
 * results, not errors. It rejects only when the program cannot be started
 * (`SPAWN_FAILED`) or the arguments are bad (`INVALID_ARGS`). Every process of
 * a run lives in its own process group: when the run ends (the leader exits,
 * the timeout elapses or the signal aborts) the whole group is stopped, so no
 * descendant that stays in the group outlives the call. A descendant that
 * leaves it (`setsid`, a daemon that detaches) is not found and keeps running:
 * a process group is not a sandbox; run untrusted commands in a container or
 * a VM whose end stops everything in it.
 */
export interface SubprocessService {
  /**
   * Run `argv[0]` with the arguments `argv.slice(1)` (no shell).
   *
   * @param argv The program and its arguments.
   * @param options Working directory, environment, stdin, time budget, signal and output cap.
   * @returns The exit status and the (possibly cut) output.
   * @throws {HarnessError} `INVALID_ARGS` for an empty argv, a NUL in an argument or a variable, a variable name that
   *   is empty or has `=`, an `inheritEnv` that is not a boolean, or a bad `timeoutMs` or `maxOutputBytes`;
   *   `SPAWN_FAILED` when the program cannot be started.
   */
  run(argv: readonly string[], options?: RunOptions): Promise<RunResult>;
}
