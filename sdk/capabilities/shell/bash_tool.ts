/**
 * The `bash` tool: the model-facing consumer of `ctx.shell`.
 *
 * @module
 */

import { z } from "zod";
import { defineTool } from "../../tools/define_tool.ts";
import type { AnyToolDefinition } from "../../tools/tool_definition.ts";
import { capText, serviceOf, type ServiceSource } from "../_cap_text.ts";
import type { ShellService } from "./shell_service.ts";

// A command is a permission subject only when bash reads it as the words it shows: letters, digits, spaces and
// a few punctuation marks that bash gives no meaning to outside quotes, and quotes (which, without `$`, a
// backslash or a backquote, hold only literal text). Everything else (`$` in any form, backslashes, backquotes,
// separators, redirections, globs, braces, `~`, parentheses, comments, control and non-ASCII characters) leaves
// the command without a subject: an allow-list, since a deny-list misses the next expansion.
const SIMPLE = /^[A-Za-z0-9 \t_.,:\/=@%+\-^'"]+$/;
// A first word that assigns (`NAME=value cmd`) runs another command than the one the subject starts with.
const LEADING_ASSIGNMENT = /^\s*[^\s=]*=/;

/** Options of {@linkcode bashTool}. */
export interface BashToolOptions {
  /** The time budget of a command when the model names none, in milliseconds. @default {120000} */
  readonly defaultTimeoutMs?: number;
  /** The largest time budget the model may ask for, in milliseconds. @default {600000} */
  readonly maxTimeoutMs?: number;
  /** The most characters of the result the model sees (stdout and stderr together). @default {30000} */
  readonly maxOutputChars?: number;
  /** The most bytes kept of each stream. @default {1048576} */
  readonly maxOutputBytes?: number;
}

/**
 * The `bash` tool: runs a command line through a shell service in the
 * session's working directory (a `cd` persists to the next call). A non-zero
 * exit code, a timeout or a cancellation is a result the model sees, with the
 * output so far; the process group is stopped on timeout and cancel. It
 * declares `access: "write"` (so it asks by default and runs alone) and a
 * simple command as its permission subject, so `{ tool: "bash(git *)", action:
 * "allow" }` lets git commands through. Only a command made of letters,
 * digits, spaces, quotes and `_ . , : / = @ % + - ^`, and not starting with a
 * `NAME=value` assignment, has a subject; one with
 * `$`, a backslash, a backquote, `;`, `&`, `|`, a redirection, a glob, a
 * brace, `~`, parentheses, `#`, `!` or a newline has none: argument patterns
 * never match it (allowing or denying), and plain `bash` rules or the default
 * ask decide. An allow rule for a program that runs programs itself (git
 * through its configuration, hooks and `--upload-pack`, `sed`'s `e`, `tar`'s
 * checkpoint actions, `find -exec`, interpreters) is not a boundary:
 * `git -c core.fsmonitor='sh -c id' status` is a git command.
 *
 * @param shell The shell service, or a function returning it at call time.
 * @param options Time budgets and output caps.
 * @returns The tool definition.
 *
 * @example A failing command is a result
 * ```ts
 * import { bashShell, bashTool, localSubprocess } from "@dsh/harness/tools";
 * import assert from "node:assert/strict";
 *
 * const bash = bashTool(bashShell({ subprocess: localSubprocess(), cwd: "/" }));
 * const args = { command: "echo oops >&2; exit 3" };
 * const value = await bash.execute(args, { signal: new AbortController().signal } as never);
 * assert.equal(bash.output.render(args, value), "[stderr]\noops\n[exit code 3]");
 * ```
 */
export function bashTool(shell: ServiceSource<ShellService>, options: BashToolOptions = {}): AnyToolDefinition {
  const defaultTimeout = options.defaultTimeoutMs ?? 120_000;
  const maxTimeout = options.maxTimeoutMs ?? 600_000;
  const maxChars = options.maxOutputChars ?? 30_000;
  return defineTool({
    name: "bash",
    description: "Run a bash command line in the project. The working directory persists between calls (cd works); " +
      "nothing else does. A non-zero exit code is reported, not hidden. " +
      `Commands stop after ${defaultTimeout / 1000} s unless you pass timeout_ms (at most ${maxTimeout}).`,
    parameters: z.object({
      command: z.string().min(1).describe("The command line"),
      timeout_ms: z.number().int().min(1).max(maxTimeout).optional().describe("Time budget in milliseconds"),
    }),
    output: {
      schema: z.object({
        exitCode: z.number().nullable(),
        signal: z.string().nullable(),
        stdout: z.string(),
        stderr: z.string(),
        stdoutTruncated: z.boolean(),
        stderrTruncated: z.boolean(),
        timedOut: z.boolean(),
        aborted: z.boolean(),
        cwd: z.string(),
        timeoutMs: z.number(),
      }),
      render: (_args, v) => {
        const parts: string[] = [];
        if (v.stdout !== "") parts.push(v.stdout.replace(/\n$/, ""));
        if (v.stdoutTruncated) parts.push("[stdout truncated]");
        if (v.stderr !== "") parts.push(`[stderr]\n${v.stderr.replace(/\n$/, "")}`);
        if (v.stderrTruncated) parts.push("[stderr truncated]");
        if (v.timedOut) parts.push(`[timed out after ${v.timeoutMs} ms; the command was stopped]`);
        else if (v.aborted) parts.push("[cancelled; the command was stopped]");
        else if (v.exitCode !== 0) {
          parts.push(v.exitCode === null ? `[killed by ${v.signal}]` : `[exit code ${v.exitCode}]`);
        }
        return capText(parts.length === 0 ? "(no output)" : parts.join("\n"), maxChars);
      },
      meta: (_args, v) => ({ exitCode: v.exitCode }),
    },
    access: "write",
    // Only a simple command is a subject: `git status; rm -rf x` or `git ${x@P}` must not pass as `bash(git *)`.
    permissionSubject: (args) =>
      SIMPLE.test(args.command) && !LEADING_ASSIGNMENT.test(args.command) ? args.command.trim() : undefined,
    presentCall: (args) => ({ card: "terminal", title: args.command, command: args.command }),
    execute: async (args, exec) => {
      const timeoutMs = args.timeout_ms ?? defaultTimeout;
      const r = await serviceOf(shell).exec(args.command, {
        timeoutMs,
        signal: exec.signal,
        ...(exec.sessionId !== undefined ? { sessionId: exec.sessionId } : {}),
        ...(options.maxOutputBytes !== undefined ? { maxOutputBytes: options.maxOutputBytes } : {}),
      });
      return {
        exitCode: r.exitCode,
        signal: r.signal,
        stdout: r.stdout,
        stderr: r.stderr,
        stdoutTruncated: r.stdoutTruncated,
        stderrTruncated: r.stderrTruncated,
        timedOut: r.timedOut,
        aborted: r.aborted,
        cwd: r.cwd,
        timeoutMs,
      };
    },
  });
}
