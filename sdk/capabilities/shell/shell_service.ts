/**
 * The shell seam (`ctx.shell`): run a command line, with a working directory
 * that persists across the calls of one session.
 *
 * @module
 */

import type { RunResult } from "../subprocess/subprocess_service.ts";

/** Options of {@linkcode ShellService.exec}. */
export interface ShellExecOptions {
  /** Whose working directory to use and update. @default {"default"} */
  readonly sessionId?: string;
  /** Stop the command's process group after this many milliseconds. */
  readonly timeoutMs?: number;
  /** Stop the command's process group when this aborts. */
  readonly signal?: AbortSignal;
  /** The most bytes kept of stdout and of stderr each. */
  readonly maxOutputBytes?: number;
  /** Variables set for the command, over the inherited environment (and the service's own variables). */
  readonly env?: Readonly<Record<string, string>>;
}

/** A command's outcome: the subprocess result, and the working directory after it. */
export interface ShellResult extends RunResult {
  /** The session's working directory after the command (a `cd` in it persists). */
  readonly cwd: string;
}

/**
 * Runs command lines: the service behind `ctx.shell`.
 *
 * Contract: `exec()` resolves with a {@linkcode ShellResult} whatever the exit
 * code (timeouts and aborts included, as in `SubprocessService.run`); each
 * session has its own working directory, which starts at the service's
 * initial directory and follows the `cd`s of its commands. Nothing else (shell
 * variables, functions) persists between calls.
 */
export interface ShellService {
  /** Run `command` with the session's working directory. */
  exec(command: string, options?: ShellExecOptions): Promise<ShellResult>;
  /** The working directory of a session. */
  cwd(sessionId?: string): string;
}
