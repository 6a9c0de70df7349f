/**
 * `bashShell()`: the shell seam as `bash -c` over a subprocess service.
 *
 * @module
 */

import { HarnessError } from "../../kernel/harness_error.ts";
import { serviceOf, type ServiceSource } from "../_cap_text.ts";
import type { SubprocessService } from "../subprocess/subprocess_service.ts";
import type { ShellResult, ShellService } from "./shell_service.ts";
import { decodeUtf8 } from "../subprocess/_utf8_prefix.ts";
import { checkEnvNames, overlayEnv, pickEnv } from "../subprocess/_host_env.ts";

/** Options of {@linkcode bashShell}. */
export interface BashShellOptions {
  /** Where commands run: a service, or a function returning it at call time (`() => ctx.service("subprocess")`). */
  readonly subprocess: ServiceSource<SubprocessService>;
  /** The initial working directory of every session (absolute, in the subprocess's world). */
  readonly cwd: string;
  /** The shell program. @default {"bash"} */
  readonly shell?: string;
  /**
   * Which environment variables of the process `bashShell` runs in the commands get: by default only
   * {@linkcode SHELL_ENV}, ordinary ones no secret is kept in, since a command the model runs can print what it
   * inherits, and what it prints goes to the model's provider; a provider API key, a token or a database URL would
   * go with it. A list names the ones to pass (`[...SHELL_ENV, "JAVA_HOME"]`; a name, or a prefix ending with `*`;
   * on Windows in any case); `false` passes none. `bashShell` picks them itself, at each call, and runs the command
   * with the subprocess service's `inheritEnv: false` and those variables (with `env`) as its whole environment, so
   * every provider, one written before lists existed included, gives the command that set and no more; a provider
   * that runs commands elsewhere (a container) gets the picked variables of this process, not its own. `true` leaves
   * the environment to the provider (`inheritEnv: true`: for `localSubprocess`, the whole of this process's, as
   * before; a container's own).
   *
   * @default {SHELL_ENV}
   */
  readonly inheritEnv?: boolean | readonly string[];
  /** Variables set for every command, over the inherited ones (a call's own `env` goes over these). */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * The host's environment variables a {@linkcode bashShell} passes to its commands by default (and the hook bridge,
 * `hookBridge()` of `@dsh/harness/hooks`, to its command hooks): where programs are
 * (`PATH`), who and where the user is, the locale, the terminal, the time zone and the temporary directory, and on
 * Windows the system's own directories, the user's and the machine's names and the processor's — what build tools,
 * git and interpreters need to run, and nothing that holds a credential. Left out, among others: proxy variables
 * (their URLs may carry a password), `SSH_AUTH_SOCK`, CA bundle variables (`SSL_CERT_FILE`, `NODE_EXTRA_CA_CERTS`)
 * and toolchain variables (`JAVA_HOME`, `GOPATH`); name them in `inheritEnv` to pass them
 * (`[...SHELL_ENV, "SSH_AUTH_SOCK"]`).
 */
export const SHELL_ENV: readonly string[] = Object.freeze([
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "LC_*",
  "TERM",
  "COLORTERM",
  "NO_COLOR",
  "TZ",
  "TMPDIR",
  "TMP",
  "TEMP",
  // Windows (names are matched in any case there).
  "SYSTEMROOT",
  "SYSTEMDRIVE",
  "WINDIR",
  "COMSPEC",
  "PATHEXT",
  "USERPROFILE",
  "HOMEDRIVE",
  "HOMEPATH",
  "APPDATA",
  "LOCALAPPDATA",
  "PROGRAMDATA",
  "PROGRAMFILES",
  "PROGRAMFILES(X86)",
  "PROGRAMW6432",
  "COMMONPROGRAMFILES",
  "COMMONPROGRAMFILES(X86)",
  "COMMONPROGRAMW6432",
  "USERNAME",
  "USERDOMAIN",
  "COMPUTERNAME",
  "PROCESSOR_ARCHITECTURE",
  "NUMBER_OF_PROCESSORS",
]);

/** The most bytes of a command: Linux's limit for one process argument (128 KiB with its terminating NUL). */
const MAX_COMMAND_BYTES = 128 * 1024 - 1;
/** The directory line's room beyond a caller's output cap: a newline, the marker, the longest path, a newline. */
const MARKER_ROOM = 2 + 48 + 4096;

const utf8Length = (text: string): number => new TextEncoder().encode(text).length;

/**
 * A {@linkcode ShellService} that runs each command as `bash -c` in the
 * session's working directory through a subprocess service, so it lives in
 * the same execution world (swap the subprocess provider and the shell
 * follows). Of the host's environment, commands get the variables of
 * {@linkcode SHELL_ENV} only, unless `inheritEnv` says otherwise, so an API
 * key or a token kept in another variable is not handed to what the model
 * runs, where `env` or `echo $KEY` would print it into the conversation.
 * This is defence in depth, not isolation: the commands run as the host's
 * user on the host's machine (with `localSubprocess`) and can read whatever
 * that user can — the host process's whole environment
 * (`/proc/$PPID/environ` on Linux, `$PPID` being the host), credential files
 * under `HOME` (`~/.aws`, `~/.npmrc`, `~/.ssh`, a project's `.env`), an SSH
 * or cloud agent's socket. To keep secrets from what the model runs, run it
 * where they are not: a container or a VM (a subprocess provider that runs
 * there), or another user. After the command, the shell prints
 * its `$PWD` behind a per-service marker on stdout and stderr; the marker is
 * stripped and the directory kept for the session's next call.
 *
 * `stdoutBytes` and `stderrBytes` count the command's bytes, that line aside.
 * On a stream the cap did not cut, or cut inside or after the line, the
 * count is exact. On one it cut before its line, the line is not in the
 * text: its length is read from the other stream's copy and subtracted, on
 * the assumption that the shell wrote the line to both streams. Two cases
 * differ, and the kept bytes cannot tell them from that one:
 *
 * - The command redirected or closed the stream before it ended
 *   (`head -c 100000 /dev/zero; exec >/dev/null`): the shell's line never
 *   reached it, so the cut stream's count is short by the line's length —
 *   a newline, the 44-byte marker, the directory's UTF-8 bytes and a
 *   newline (99,950 for 100,000 bytes written, in `/usr`).
 * - Both streams were cut before their lines: the directory cannot be read
 *   and stays as it was, and both counts include the line, whose length is
 *   unknown.
 *
 * @param options The subprocess service, the initial directory, the shell and the environment.
 * @returns The service.
 * @throws {HarnessError} `INVALID_ARGS` without an initial directory, or when `inheritEnv` is neither a boolean nor a
 *   list of names.
 *
 * @example A `cd` that persists
 * ```ts
 * import { bashShell, localSubprocess } from "@dsh/harness/tools";
 * import assert from "node:assert/strict";
 *
 * const shell = bashShell({ subprocess: localSubprocess(), cwd: "/" });
 * await shell.exec("cd /tmp", { sessionId: "s1" });
 * const result = await shell.exec("pwd", { sessionId: "s1" });
 * assert.equal(result.stdout.trim(), "/tmp");
 * assert.equal(shell.cwd("s2"), "/");
 * ```
 */
export function bashShell(options: BashShellOptions): ShellService {
  if (typeof options?.cwd !== "string" || options.cwd === "") {
    throw new HarnessError("INVALID_ARGS", "bashShell needs an initial working directory");
  }
  const shell = options.shell ?? "bash";
  const inherited = checkEnvNames(options.inheritEnv, SHELL_ENV, "bashShell");
  const cwds = new Map<string, string>();
  const marker = `__DSH_CWD_${crypto.randomUUID().replaceAll("-", "")}__`;
  // $1 the directory, $2 the command, $3 the marker, $4 the initial directory. A session's directory that is gone
  // (removed by an earlier command) is left for the initial one, with a note, rather than failing every command.
  // The command reaches bash as its own text, parsed once by `eval`: it must not see itself as a parameter (with
  // `$2` set, `${2@P}` in the command prompt-expands its own text, decoding `\044\050` into a `$(` that runs), so
  // the positional parameters are cleared and the variable holding it is unset before any of its words expand.
  // One physical line before the command's own, so that bash's line numbers in its messages (and `$LINENO`) are the
  // command's. The directory is reported on exit, so that a command ending in `exit` (cd x && exit 0) keeps it too;
  // the trap traces nothing (`set -x` in the command) and calls `printf` and `exit` through `command` (a command may
  // define functions of those names; `command` is POSIX, so `sh` (dash) runs the wrapper as well as bash).
  const script = 'if ! cd -- "$1" 2>/dev/null; then ' +
    'printf "dsh: the working directory %s is gone; back in %s\\n" "$1" "$4" >&2; cd -- "$4" || exit 126; fi; ' +
    "readonly __dsh_marker=$3; __dsh_command=$2; set --; " +
    "trap '{ __dsh_status=$?; set +x; } 2>/dev/null; " +
    'command printf "\\n%s%s\\n" "$__dsh_marker" "$PWD"; command printf "\\n%s%s\\n" "$__dsh_marker" "$PWD" >&2; ' +
    'command exit "$__dsh_status"\' EXIT; ' +
    'eval "unset -v __dsh_command; $__dsh_command"\n';

  // A stream without its directory line: the directory, if the line is whole, and where the line starts (`-1`: not
  // seen — none was written, or the cap cut it off).
  const strip = (text: string, truncated: boolean): { text: string; cwd: string | undefined; at: number } => {
    const at = text.lastIndexOf(`\n${marker}`);
    if (at === -1) return { text, cwd: undefined, at };
    // The directory is the rest of the marker's line (anything after it is not the directory's); a line the cap cut
    // (no newline after it) names none.
    const rest = text.slice(at + 1 + marker.length);
    const newline = rest.indexOf("\n");
    const line = newline === -1 ? (truncated ? "" : rest) : rest.slice(0, newline);
    return { text: text.slice(0, at), cwd: line === "" ? undefined : line, at };
  };
  // The bytes the command wrote to a stream: all the stream's bytes but the shell's directory line, the last thing
  // the shell writes there. A line the cap cut off is not in the text, but the other stream's copy (the same bytes)
  // tells its length — assuming the line was written to this stream too, which a command that redirected or closed
  // the stream (`exec >/dev/null`) prevents, and nothing kept tells so; a line cut inside shows where it began.
  // `undefined` when neither tells: both streams were cut before their lines (bashShell's JSDoc says what is counted
  // in both cases).
  const commandBytes = (
    stripped: { text: string; at: number },
    raw: string,
    total: number,
    truncated: boolean,
    cwd: string | undefined,
  ): number | undefined => {
    if (!truncated) return stripped.at === -1 ? total : total - utf8Length(raw.slice(stripped.at));
    if (cwd !== undefined) return total - utf8Length(`\n${marker}${cwd}\n`);
    if (stripped.at !== -1) return utf8Length(stripped.text);
    return undefined;
  };
  // The stream cut to the caller's cap (the command's own output, the directory line aside).
  const capped = (
    stripped: { text: string; cwd: string | undefined },
    truncated: boolean,
    cap: number | undefined,
  ): { text: string; truncated: boolean } => {
    const encoded = cap === undefined ? undefined : new TextEncoder().encode(stripped.text);
    if (encoded === undefined || encoded.length <= cap!) return { text: stripped.text, truncated };
    return { text: decodeUtf8(encoded.subarray(0, cap), true), truncated: true };
  };

  return {
    cwd: (sessionId = "default") => cwds.get(sessionId) ?? options.cwd,
    async exec(command, exec = {}): Promise<ShellResult> {
      if (typeof command !== "string" || command.trim() === "") {
        throw new HarnessError("INVALID_ARGS", "The command is empty");
      }
      // The command travels as one process argument: no NUL, and no more than Linux takes for one (else the spawn
      // fails with a bare E2BIG). The same limit everywhere, so that a session behaves alike on every host.
      if (command.includes("\0")) {
        throw new HarnessError(
          "INVALID_ARGS",
          "The command contains a NUL character, which no process argument can carry",
        );
      }
      const bytes = utf8Length(command);
      if (bytes > MAX_COMMAND_BYTES) {
        throw new HarnessError(
          "COMMAND_TOO_LONG",
          `The command is ${bytes} bytes; a command is at most ${MAX_COMMAND_BYTES} (one process argument): write long ` +
            "content to a file with the file tools, then run it from there",
          { details: { bytes, max: MAX_COMMAND_BYTES } },
        );
      }
      const sessionId = exec.sessionId ?? "default";
      const cwd = cwds.get(sessionId) ?? options.cwd;
      // The directory is entered by the script, so a directory that vanished is an exit code, not a spawn failure.
      const result = await serviceOf(options.subprocess).run([
        shell,
        "-c",
        script,
        "dsh-shell",
        cwd,
        command,
        marker,
        options.cwd,
      ], {
        // Never a list: a provider written when inheritEnv was a boolean would read it as "not false", everything.
        inheritEnv: inherited === true,
        env: overlayEnv(inherited === true ? {} : pickEnv(inherited), options.env, exec.env),
        ...(exec.timeoutMs !== undefined ? { timeoutMs: exec.timeoutMs } : {}),
        ...(exec.signal !== undefined ? { signal: exec.signal } : {}),
        // Room for the directory line beyond the cap: the cap is the command's own output's.
        ...(exec.maxOutputBytes !== undefined ? { maxOutputBytes: exec.maxOutputBytes + MARKER_ROOM } : {}),
      });
      const cap = exec.maxOutputBytes;
      const rawOut = strip(result.stdout, result.stdoutTruncated);
      const rawErr = strip(result.stderr, result.stderrTruncated);
      const seen = rawOut.cwd ?? rawErr.cwd;
      const out = capped(rawOut, result.stdoutTruncated, cap);
      const err = capped(rawErr, result.stderrTruncated, cap);
      cwds.set(sessionId, seen ?? cwd);
      return {
        ...result,
        stdout: out.text,
        stderr: err.text,
        stdoutTruncated: out.truncated,
        stderrTruncated: err.truncated,
        stdoutBytes: commandBytes(rawOut, result.stdout, result.stdoutBytes, result.stdoutTruncated, seen) ??
          result.stdoutBytes,
        stderrBytes: commandBytes(rawErr, result.stderr, result.stderrBytes, result.stderrTruncated, seen) ??
          result.stderrBytes,
        cwd: seen ?? cwd,
      };
    },
  };
}
