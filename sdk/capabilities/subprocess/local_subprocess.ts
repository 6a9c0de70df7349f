/**
 * `localSubprocess()`: the subprocess seam on the host machine, through
 * `node:child_process`, which Deno, Bun and Node all implement.
 *
 * @module
 */

import type { ChildProcess } from "node:child_process";
import process from "node:process";
import { HarnessError } from "../../kernel/harness_error.ts";
import { CappedBuffer } from "./_utf8_prefix.ts";
import { groupHasLiveMember } from "./_process_group.ts";
import { hostEnv, isWindows, overlayEnv } from "./_host_env.ts";
import type { RunOptions, RunResult, SubprocessService } from "./subprocess_service.ts";

type ChildProcessModule = typeof import("node:child_process");
let loading: Promise<ChildProcessModule> | undefined;
// Loaded on first use: importing the package should not pay for child_process.
const childProcess = (): Promise<ChildProcessModule> => (loading ??= import("node:child_process"));

type Env = Record<string, string | undefined>;

/** Options of {@linkcode localSubprocess}. */
export interface LocalSubprocessOptions {
  /**
   * How long a stopped process group has between `SIGTERM` and `SIGKILL`, in milliseconds: when the run ends (the
   * leader exits, `timeoutMs` elapses or `signal` aborts), what is left of the group gets `SIGTERM` and this long to
   * end. A run returns once the group is empty (at once when the program left nothing behind; on Linux, a group
   * left with zombies only, which their parent has not reaped, counts as empty; a process whose main thread ended
   * while its other threads run is no zombie), at the latest when the grace is over.
   *
   * @default {200}
   */
  readonly killGraceMs?: number;
  /** The default `maxOutputBytes` of every run. @default {1048576} */
  readonly maxOutputBytes?: number;
  /**
   * Send `SIGKILL` to the process groups of the runs still going when the host process emits `exit`: it calls
   * `process.exit()`, or dies of an uncaught exception on Node and Bun (Deno emits no `exit` then). A host killed by
   * a signal it does not handle (Ctrl-C's `SIGINT`, `SIGTERM`; `SIGKILL` always) emits no `exit` either: handle the
   * signal (`process.once("SIGINT", () => process.exit(130))`) for this to cover it. Off by default: a run otherwise
   * outlives a host that ends without stopping it (`dispose()`, an abort), in its own process group.
   *
   * @default {false}
   */
  readonly stopOnExit?: boolean;
}

const DEFAULT_MAX_OUTPUT = 1_048_576;
/** The longest delay a timer keeps: setTimeout fires at once past it. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A {@linkcode SubprocessService} that runs programs on this machine.
 *
 * Each run starts a new process group (`detached`); when the run ends — the
 * leader exits, `timeoutMs` elapses or `signal` aborts — the group receives
 * `SIGTERM`, then `SIGKILL` after `killGraceMs`, so background children of the
 * program do not survive the call. (On Windows only the leader is stopped.)
 * A run the host does not stop (it dies without `dispose()`: Ctrl-C, a
 * crash) goes on in its group unless `stopOnExit` is set. A program that left
 * the group and still holds the output pipes does not keep the host alive:
 * the run returns 500 ms after the grace that follows the leader's exit,
 * with the output so far.
 *
 * @param options The kill grace period, the default output cap, and whether to stop runs on the host's exit.
 * @returns The service.
 *
 * @example Running a program
 * ```ts
 * import { localSubprocess } from "@dsh/harness/tools";
 * import assert from "node:assert/strict";
 *
 * const subprocess = localSubprocess();
 * const result = await subprocess.run(["sh", "-c", "echo hello; exit 3"]);
 * assert.equal(result.exitCode, 3);
 * assert.equal(result.stdout, "hello\n");
 * ```
 */
export function localSubprocess(options: LocalSubprocessOptions = {}): SubprocessService {
  const graceMs = options.killGraceMs ?? 200;
  const defaultCap = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  const running = options.stopOnExit === true ? exitStopper() : undefined;
  return {
    run: (argv, runOptions = {}) => runLocal(argv, runOptions, graceMs, defaultCap, running),
  };
}

/** The runs to stop when the host exits: one `exit` listener while any is going, none otherwise. */
interface Running {
  add(stop: () => void): void;
  delete(stop: () => void): void;
}

function exitStopper(): Running {
  const stops = new Set<() => void>();
  const onExit = () => {
    for (const stop of stops) stop();
  };
  return {
    add(stop) {
      if (stops.size === 0) process.on("exit", onExit);
      stops.add(stop);
    },
    delete(stop) {
      if (stops.delete(stop) && stops.size === 0) process.off("exit", onExit);
    },
  };
}

function checkArgs(argv: readonly string[], options: RunOptions): void {
  const bad = (problem: string): never => {
    throw new HarnessError("INVALID_ARGS", `Cannot run a program: ${problem}`);
  };
  if (!Array.isArray(argv) || argv.length === 0) bad("argv must be a non-empty array");
  for (const arg of argv) if (typeof arg !== "string") bad("every argv entry must be a string");
  if (argv[0] === "") bad("the program name is empty");
  // No process argument or variable can carry a NUL (the runtime refuses it at the spawn), and a name with `=`
  // would set another variable than the one named (`A=B` with "c" is the entry `A=B=c`, that is A set to "B=c").
  if (argv.some((arg) => arg.includes("\0"))) bad("an argv entry contains a NUL character");
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (name === "" || name.includes("=") || name.includes("\0")) {
      bad(`the environment variable name ${JSON.stringify(name)} is empty or contains "=" or a NUL character`);
    }
    if (typeof value === "string" && value.includes("\0")) bad(`the value of ${name} contains a NUL character`);
  }
  // Anything but a boolean (a list of names, from a caller written for another contract) is refused, not read as
  // "not false", which would pass the whole environment.
  if (options.inheritEnv !== undefined && typeof options.inheritEnv !== "boolean") bad("inheritEnv must be a boolean");
  const { timeoutMs, maxOutputBytes } = options;
  // A timer fires at once past 2^31 - 1 ms (about 24.8 days): a longer timeout would be none at all.
  if (timeoutMs !== undefined && !(typeof timeoutMs === "number" && timeoutMs > 0 && timeoutMs <= MAX_TIMER_MS)) {
    bad(`timeoutMs must be a positive number of at most ${MAX_TIMER_MS}`);
  }
  if (maxOutputBytes !== undefined && !(Number.isInteger(maxOutputBytes) && maxOutputBytes >= 0)) {
    bad("maxOutputBytes must be a non-negative integer");
  }
}

function childEnv(options: RunOptions): Env {
  return overlayEnv(options.inheritEnv === false ? {} : hostEnv(), options.env);
}

async function runLocal(
  argv: readonly string[],
  options: RunOptions,
  graceMs: number,
  defaultCap: number,
  running: Running | undefined,
): Promise<RunResult> {
  checkArgs(argv, options);
  const cap = options.maxOutputBytes ?? defaultCap;
  const stdout = new CappedBuffer(cap);
  const stderr = new CappedBuffer(cap);
  const signal = options.signal;
  const result = (exitCode: number | null, sig: string | null, timedOut: boolean, aborted: boolean): RunResult => ({
    exitCode,
    signal: sig,
    stdout: stdout.text(),
    stderr: stderr.text(),
    stdoutTruncated: stdout.truncated,
    stderrTruncated: stderr.truncated,
    stdoutBytes: stdout.total,
    stderrBytes: stderr.total,
    timedOut,
    aborted,
  });
  if (signal?.aborted) return result(null, null, false, true);

  const { spawn } = await childProcess();
  // A working directory that is not there makes spawn fail with ENOENT, as a missing program does: say which.
  if (options.cwd !== undefined) {
    const { stat } = await import("node:fs/promises");
    const isDir = await stat(options.cwd).then((s) => s.isDirectory(), () => false);
    if (!isDir) {
      throw new HarnessError(
        "SPAWN_FAILED",
        `Cannot start "${argv[0]}": the working directory "${options.cwd}" is not an existing directory`,
        { details: { program: argv[0], cwd: options.cwd, errno: "ENOENT" } },
      );
    }
  }
  // The signal may have aborted while the module and the directory were awaited: the program is not started then.
  if (signal?.aborted) return result(null, null, false, true);
  let child: ChildProcess;
  try {
    child = spawn(argv[0], argv.slice(1), {
      cwd: options.cwd,
      env: childEnv(options),
      stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      detached: !isWindows(),
      windowsHide: true,
    });
  } catch (cause) {
    throw spawnFailed(argv, options, cause);
  }

  return await new Promise<RunResult>((resolve, reject) => {
    let timedOut = false;
    let aborted = false;
    let exited: { code: number | null; signal: string | null } | undefined;
    let settled = false;
    let killTimer: ReturnType<typeof setTimeout> | undefined;
    let drainTimer: ReturnType<typeof setTimeout> | undefined;
    let pollTimer: ReturnType<typeof setTimeout> | undefined;
    let graceEndsAt = 0;
    let graceOver = false;

    const killGroup = (sig: "SIGTERM" | "SIGKILL") => {
      const pid = child.pid;
      if (pid === undefined) return;
      try {
        if (isWindows()) child.kill(sig);
        else process.kill(-pid, sig);
      } catch { /* the group is already gone */ }
    };
    // SIGTERM once, SIGKILL after the grace: the first of the leader's exit, the timeout and the abort starts it.
    const stop = () => {
      if (killTimer !== undefined) return;
      killGroup("SIGTERM");
      graceEndsAt = Date.now() + graceMs;
      killTimer = setTimeout(() => {
        graceOver = true;
        killGroup("SIGKILL");
      }, graceMs);
    };
    /**
     * Whether the group still has a process. `kill(-pgid, 0)` counts a zombie not yet reaped too: on Linux a group
     * it says is there is looked for in /proc, and one left with zombies only is not waited for (its members ended;
     * a PID 1 that does not reap, in a PID namespace, would keep them until the grace is over). Elsewhere this errs
     * on waiting.
     */
    const groupAlive = async () => {
      const pid = child.pid;
      if (pid === undefined || isWindows()) return false;
      try {
        process.kill(-pid, 0);
      } catch {
        return false;
      }
      return (await groupHasLiveMember(pid)) !== false;
    };
    const killOnExit = () => killGroup("SIGKILL");
    running?.add(killOnExit);
    const onAbort = () => {
      if (exited !== undefined || settled) return;
      aborted = true;
      stop();
    };
    const timeout = options.timeoutMs === undefined ? undefined : setTimeout(() => {
      if (exited !== undefined || settled) return;
      timedOut = true;
      stop();
    }, options.timeoutMs);
    signal?.addEventListener("abort", onAbort, { once: true });

    const cleanup = () => {
      settled = true;
      running?.delete(killOnExit);
      if (timeout !== undefined) clearTimeout(timeout);
      if (drainTimer !== undefined) clearTimeout(drainTimer);
      if (pollTimer !== undefined) clearTimeout(pollTimer);
      signal?.removeEventListener("abort", onAbort);
    };
    const finish = async () => {
      if (settled || exited === undefined) return;
      // What is left of the group without holding the pipes has the rest of the grace to end (a group that is empty,
      // the common case, costs no wait).
      if (!graceOver && (await groupAlive()) && !settled) {
        stop();
        if (pollTimer !== undefined) clearTimeout(pollTimer);
        pollTimer = setTimeout(finish, 20);
        return;
      }
      if (settled || exited === undefined) return;
      cleanup();
      // Whatever the leader left behind in its group goes with it.
      killGroup("SIGKILL");
      if (killTimer !== undefined) clearTimeout(killTimer);
      resolve(result(exited.code, exited.signal, timedOut, aborted));
      release();
    };
    // A program that left the group (`setsid`, a daemon) may still hold the pipes after the drain timer: let go of
    // them and of the child, or their handles keep the host's event loop alive until that program ends.
    const release = () => {
      for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.destroy();
      child.unref();
    };

    child.stdout?.on("data", (chunk: Uint8Array) => stdout.push(chunk));
    child.stderr?.on("data", (chunk: Uint8Array) => stderr.push(chunk));
    child.on("error", (cause) => {
      if (settled) return;
      if (child.pid === undefined || exited === undefined) {
        cleanup();
        if (killTimer !== undefined) clearTimeout(killTimer);
        reject(spawnFailed(argv, options, cause));
      }
    });
    child.on("exit", (code, sig) => {
      exited = { code, signal: sig };
      // Descendants may hold the pipes open: stop them (SIGTERM, SIGKILL after the grace) so the streams end, and do
      // not wait for the streams forever: 500 ms past the end of the grace.
      stop();
      drainTimer = setTimeout(finish, Math.max(0, graceEndsAt - Date.now()) + 500);
    });
    child.on("close", (code, sig) => {
      exited ??= { code, signal: sig };
      void finish();
    });

    if (options.stdin !== undefined && child.stdin) {
      child.stdin.on("error", () => {/* the program did not read its input */});
      child.stdin.end(options.stdin);
    }
  });
}

function spawnFailed(argv: readonly string[], options: RunOptions, cause: unknown): HarnessError {
  const code = (cause as { code?: unknown } | null)?.code;
  return new HarnessError(
    "SPAWN_FAILED",
    `Cannot start "${argv[0]}": ${cause instanceof Error ? cause.message : String(cause)}`,
    { cause, details: { program: argv[0], cwd: options.cwd, errno: typeof code === "string" ? code : undefined } },
  );
}
