/**
 * The file tools: `read_file`, `write_file`, `edit_file`, `list_dir`, `glob`
 * and `grep`, each a thin model-facing consumer of `ctx.fs`.
 *
 * Slightly over the house limit on purpose: the six tools share their schemas' helpers, the path subject and the
 * output caps, and read best side by side; their matching machinery lives in `_glob.ts` and `_nested_repeat.ts`.
 *
 * @module
 */

import { z } from "zod";
import { HarnessError } from "../../kernel/harness_error.ts";
import { defineTool } from "../../tools/define_tool.ts";
import type { AnyToolDefinition } from "../../tools/tool_definition.ts";
import { capText, headOf, serviceOf, type ServiceSource } from "../_cap_text.ts";
import { riskyRepeat } from "./_nested_repeat.ts";
import type { FsEntry, FsService } from "./fs_service.ts";
import type { ToolRunContext } from "../../tools/tool_definition.ts";

/** Options of {@linkcode fsTools}. */
export interface FsToolsOptions {
  /**
   * The most characters of one tool result the model sees; the rest is cut with a note.
   *
   * @default {30000}
   */
  readonly maxOutputChars?: number;
  /** The most lines `read_file` returns when the model names no limit. @default {2000} */
  readonly defaultReadLines?: number;
  /** The longest line `read_file` and `grep` show before cutting it. @default {2000} */
  readonly maxLineChars?: number;
  /**
   * The most files one `grep` searches (the first ones by path); past it the result says how the search was cut
   * (`truncated` and `filesCapped`), never that it was complete.
   *
   * @default {100000}
   */
  readonly maxGrepFiles?: number;
}

/**
 * A path as permission rules see it: lexically normalised, so that
 * `src/../secrets/key` is matched as `secrets/key`, not as something under `src/`.
 * Only relative paths reach it: the tools' parameters refuse absolute ones, and
 * a subject is taken from arguments that passed them.
 */
function subjectOf(path: string): string {
  const out: string[] = [];
  for (const part of path.replaceAll("\\", "/").split("/")) {
    if (part === "" || part === ".") continue;
    if (part === ".." && out.length > 0 && out[out.length - 1] !== "..") out.pop();
    else out.push(part);
  }
  const joined = out.join("/");
  return joined === "" ? "." : joined;
}

/** A POSIX absolute path, a Windows drive or UNC path. */
const ABSOLUTE = /^(?:[/\\]|[A-Za-z]:)/;
/** How long grep searches lines before it lets the event loop run (a cancel, a timeout) once. */
const YIELD_AFTER_MS = 20;

/**
 * Why `new RegExp()` refused a pattern, without the runtime's own framing: V8 (Node, Deno) says
 * "Invalid regular expression: /(/i: Unterminated group", JavaScriptCore (Bun) "Invalid regular expression: missing )".
 */
function regexReason(cause: unknown, pattern: string, flags: string): string {
  const message = cause instanceof Error ? cause.message : String(cause);
  let reason = message.replace(/^Invalid regular expression: /, "");
  const quoted = `/${pattern}/${flags}: `;
  if (reason.startsWith(quoted)) reason = reason.slice(quoted.length);
  return reason.charAt(0).toLowerCase() + reason.slice(1);
}

const cutLine = (line: string, max: number): string => (line.length > max ? `${headOf(line, max)}… [line cut]` : line);

/**
 * The six file tools over a file system. Reads (`read_file`, `list_dir`,
 * `glob`, `grep`) declare `access: "read"` and may run in parallel; writes
 * (`write_file`, `edit_file`) declare `access: "write"`, run alone and ask
 * for approval by default. Each names its path as the permission subject, so
 * a rule such as `{ tool: "write_file(src/*)", action: "allow" }` applies.
 *
 * @param fs The file system, or a function returning it at call time.
 * @param options Output caps.
 * @returns The tool definitions, to register on `ctx.tools`.
 *
 * @example Reading a file with line numbers
 * ```ts
 * import { fsTools, memoryFs } from "@dsh/harness/tools";
 * import assert from "node:assert/strict";
 *
 * const [readFile] = fsTools(memoryFs({ files: { "a.txt": "one\ntwo\n" } }));
 * const controller = new AbortController();
 * const value = await readFile.execute({ path: "a.txt" }, { signal: controller.signal } as never);
 * assert.equal(readFile.output.render({ path: "a.txt" }, value), "     1\tone\n     2\ttwo");
 * ```
 */
export function fsTools(fs: ServiceSource<FsService>, options: FsToolsOptions = {}): AnyToolDefinition[] {
  const maxChars = options.maxOutputChars ?? 30_000;
  const defaultLines = options.defaultReadLines ?? 2000;
  const maxLine = options.maxLineChars ?? 2000;
  const maxGrepFiles = options.maxGrepFiles ?? 100_000;
  // Relative only: permission rules match the path as given (see subjectOf), so an absolute path to the same file
  // would pass a rule written for its relative form.
  const path = z.string().min(1).refine((p) => !ABSOLUTE.test(p), {
    message: "Give a path relative to the project root, not an absolute one",
  }).describe("A path relative to the project root");

  // Path-scoped permission rules judge a call by the path it names. What the call reaches beyond it is judged too
  // (exec.permits, present when a subject guard applies): where a symbolic link leads — the file a read or a write
  // names, the directory a listing or a search starts from — and each file a search or a listing finds. (A link
  // changed between this check and the operation is not caught.)
  const realOf = async (path: string): Promise<string | undefined> => {
    const service = serviceOf(fs);
    if (service.realPath === undefined) return undefined;
    try {
      return subjectOf(await service.realPath(path));
    } catch {
      return undefined; // the operation itself reports what is wrong with the path
    }
  };
  const reachable = async (exec: ToolRunContext, path: string): Promise<void> => {
    if (exec.permits === undefined) return;
    const real = await realOf(path);
    if (real !== undefined && real !== subjectOf(path) && !exec.permits(real)) {
      throw new HarnessError(
        "DENIED",
        `${path} leads to ${real}, which the permission rules do not let ${exec.name} reach`,
      );
    }
  };
  const visible = async (exec: ToolRunContext, path: string): Promise<boolean> => {
    const permits = exec.permits;
    if (permits === undefined) return true;
    const subject = subjectOf(path);
    if (!permits(subject)) return false;
    const real = await realOf(path);
    return real === undefined || real === subject || permits(real);
  };
  const visibleOnly = async (exec: ToolRunContext, paths: readonly string[]): Promise<string[]> => {
    const out: string[] = [];
    for (const path of paths) if (await visible(exec, path)) out.push(path);
    return out;
  };

  const readFile = defineTool({
    name: "read_file",
    description:
      `Read a text file. Lines come numbered ("    12\\tcode"). At most ${defaultLines} lines are returned ` +
      "unless you pass limit; use offset (1-based line) and limit to read a part of a long file.",
    parameters: z.object({
      path,
      offset: z.number().int().min(1).optional().describe("The first line to read, counting from 1"),
      limit: z.number().int().min(1).optional().describe("How many lines to read"),
    }),
    output: {
      schema: z.object({
        path: z.string(),
        text: z.string(),
        startLine: z.number(),
        endLine: z.number(),
        totalLines: z.number(),
        binary: z.boolean(),
      }),
      render: (args, v) => {
        if (v.binary) return `(${v.path} is a binary file; it is not shown)`;
        if (v.totalLines === 0) return `(${v.path} is empty)`;
        if (v.endLine < v.startLine) {
          return `(${v.path} has ${v.totalLines} lines; nothing at line ${args.offset ?? v.startLine})`;
        }
        const lines = v.text.replace(/\n$/, "").split("\n");
        // Whole numbered lines up to the character cap: the note then names the last line shown, so that reading on
        // from it misses nothing.
        let shown = 0;
        let size = 0;
        const parts: string[] = [];
        for (const line of lines) {
          const part = `${String(v.startLine + shown).padStart(6)}\t${cutLine(line, maxLine)}`;
          if (shown > 0 && size + part.length + 1 > maxChars) break;
          parts.push(part);
          size += part.length + 1;
          shown++;
        }
        const last = v.startLine + shown - 1;
        const more = last < v.totalLines
          ? `\n[showing lines ${v.startLine}-${last} of ${v.totalLines}${
            last < v.endLine ? ` (cut at ${maxChars} characters)` : ""
          }; read on with offset ${last + 1}]`
          : "";
        return capText(parts.join("\n"), maxChars) + more;
      },
    },
    access: "read",
    isConcurrencySafe: () => true,
    permissionSubject: (args) => subjectOf(args.path),
    presentCall: (args) => ({ card: "file", title: `Read ${args.path}`, path: args.path }),
    execute: async (args, exec) => {
      await reachable(exec, args.path);
      const read = await serviceOf(fs).readText(args.path, {
        startLine: args.offset ?? 1,
        lineCount: args.limit ?? defaultLines,
      });
      return { path: args.path, ...read, binary: read.text.includes("\u0000") };
    },
  });

  const writeFile = defineTool({
    name: "write_file",
    description: "Create or overwrite a file with the given content; missing parent directories are created.",
    parameters: z.object({ path, content: z.string().describe("The whole new content of the file") }),
    output: {
      schema: z.object({ path: z.string(), bytes: z.number() }),
      render: (_args, v) => `Wrote ${v.bytes} bytes to ${v.path}`,
    },
    access: "write",
    permissionSubject: (args) => subjectOf(args.path),
    presentCall: (args) => ({ card: "file", title: `Write ${args.path}`, path: args.path }),
    execute: async (args, exec) => {
      await reachable(exec, args.path);
      await serviceOf(fs).writeFile(args.path, args.content);
      return { path: args.path, bytes: new TextEncoder().encode(args.content).length };
    },
  });

  const editFile = defineTool({
    name: "edit_file",
    description: "Replace an exact piece of text in a file. old_string must occur exactly once (include enough " +
      "surrounding lines to make it unique) unless replace_all is true. Read the file first.",
    parameters: z.object({
      path,
      old_string: z.string().min(1).describe("The exact text to replace"),
      new_string: z.string().describe("The replacement"),
      replace_all: z.boolean().optional().describe("Replace every occurrence"),
    }),
    output: {
      schema: z.object({ path: z.string(), replacements: z.number() }),
      render: (_args, v) => `Edited ${v.path}: ${v.replacements} replacement${v.replacements === 1 ? "" : "s"}`,
    },
    access: "write",
    permissionSubject: (args) => subjectOf(args.path),
    presentCall: (args) => ({ card: "diff", title: `Edit ${args.path}`, path: args.path }),
    execute: async (args, exec) => {
      await reachable(exec, args.path);
      const replacements = await serviceOf(fs).edit(args.path, args.old_string, args.new_string, {
        replaceAll: args.replace_all ?? false,
      });
      return { path: args.path, replacements };
    },
  });

  const listDir = defineTool({
    name: "list_dir",
    description: "List a directory: directories end with /, symbolic links with @.",
    parameters: z.object({ path: path.optional().describe("The directory, relative to the project root; default .") }),
    output: {
      schema: z.object({ path: z.string(), entries: z.array(z.object({ name: z.string(), kind: z.string() })) }),
      render: (_args, v) => {
        if (v.entries.length === 0) return `(${v.path} is empty)`;
        const marks: Record<string, string> = { directory: "/", symlink: "@", file: "", other: "" };
        return capText(v.entries.map((e) => e.name + (marks[e.kind] ?? "")).join("\n"), maxChars);
      },
    },
    access: "read",
    isConcurrencySafe: () => true,
    permissionSubject: (args) => subjectOf(args.path ?? "."),
    execute: async (args, exec) => {
      const dir = args.path ?? ".";
      // Its entries are judged by the path they are listed under (pub/a), not where they are (secret/a): the
      // directory itself must be one the rules let the call reach.
      await reachable(exec, dir);
      const entries = await serviceOf(fs).list(dir);
      if (exec.permits === undefined) return { path: dir, entries };
      const shown: FsEntry[] = [];
      for (const entry of entries) {
        if (await visible(exec, dir === "." ? entry.name : `${dir}/${entry.name}`)) shown.push(entry);
      }
      return { path: dir, entries: shown };
    },
  });

  const globLimit = 1000;
  const glob = defineTool({
    name: "glob",
    description: `Find files by glob pattern (*, **, ?, [abc], {a,b}), e.g. "src/**/*.ts". At most ${globLimit} ` +
      "paths, sorted.",
    parameters: z.object({
      pattern: z.string().min(1),
      path: path.optional().describe("The directory to search in; default the project root"),
    }),
    output: {
      schema: z.object({ paths: z.array(z.string()), truncated: z.boolean() }),
      render: (args, v) => {
        // Cut, with every path the search reached hidden by the rules: more may match past the cut.
        if (v.paths.length === 0 && v.truncated) {
          return `[no path shown: the search stopped at the first ${globLimit} paths matching ${args.pattern}, ` +
            "and the permission rules hide all of them; narrow the pattern]";
        }
        if (v.paths.length === 0) return `No files match ${args.pattern}`;
        const note = v.truncated
          ? `\n[the search stopped at the first ${globLimit} matching paths; narrow the pattern]`
          : "";
        return capText(v.paths.join("\n"), maxChars) + note;
      },
    },
    access: "read",
    isConcurrencySafe: () => true,
    permissionSubject: (args) => subjectOf(args.path ?? "."),
    execute: async (args, exec) => {
      await reachable(exec, args.path ?? "."); // as list_dir: a directory through a link is judged where it leads
      // One more than the cap, and whether it was reached decided before the rules hide paths (as grep does): a
      // hidden path among the first ones must not make a cut listing look complete.
      let paths = await serviceOf(fs).glob(args.pattern, { cwd: args.path ?? ".", limit: globLimit + 1 });
      const truncated = paths.length > globLimit;
      if (truncated) paths = paths.slice(0, globLimit);
      if (exec.permits !== undefined) paths = await visibleOnly(exec, paths);
      return { paths, truncated };
    },
  });

  const grep = defineTool({
    name: "grep",
    description: "Search file contents with a JavaScript regular expression. Prints path:line: text for each " +
      "matching line. Narrow with path (a directory) and glob (which files, default **).",
    parameters: z.object({
      pattern: z.string().min(1).describe("A JavaScript regular expression"),
      path: path.optional().describe("The directory to search in; default the project root"),
      glob: z.string().optional().describe('Which files, e.g. "**/*.ts"; default every file'),
      ignore_case: z.boolean().optional(),
      max_matches: z.number().int().min(1).max(5000).optional().describe("Stop after this many matches; default 200"),
    }),
    output: {
      schema: z.object({
        matches: z.array(z.object({ path: z.string(), line: z.number(), text: z.string() })),
        filesSearched: z.number(),
        /** The search stopped early: at max_matches, or (with filesCapped) at the cap on files. */
        truncated: z.boolean(),
        /** More files matched the path and glob than one search reads: only the first ones (by path) were searched. */
        filesCapped: z.boolean().optional(),
        /** Files that could not be read (too large, gone, not a regular file), not searched. */
        unreadable: z.array(z.object({ path: z.string(), code: z.string() })).optional(),
      }),
      render: (args, v) => {
        const unread = v.unreadable ?? [];
        const skipped = unread.length === 0
          ? ""
          : `\n[${unread.length} file${unread.length === 1 ? "" : "s"} could not be read and ${
            unread.length === 1 ? "was" : "were"
          } not searched: ${unread.slice(0, 5).map((u) => `${u.path} (${u.code})`).join(", ")}${
            unread.length > 5 ? ", …" : ""
          }]`;
        const capped = v.filesCapped
          ? `\n[only the first ${maxGrepFiles} files (by path) were searched; the files after them were not: ` +
            "narrow path or glob]"
          : "";
        if (v.matches.length === 0) {
          return `No matches for /${args.pattern}/ in ${v.filesSearched} files${capped}${skipped}`;
        }
        const body = v.matches.map((m) => `${m.path}:${m.line}: ${cutLine(m.text, maxLine)}`).join("\n");
        const note = v.truncated && !v.filesCapped
          ? `\n[stopped after ${v.matches.length} matches; narrow the search]`
          : "";
        return capText(body, maxChars) + note + capped + skipped;
      },
    },
    access: "read",
    isConcurrencySafe: () => true,
    permissionSubject: (args) => subjectOf(args.path ?? "."),
    execute: async (args, exec) => {
      let regex: RegExp;
      const flags = args.ignore_case ? "i" : "";
      try {
        regex = new RegExp(args.pattern, flags);
      } catch (cause) {
        throw new HarnessError(
          "INVALID_ARGS",
          `The pattern /${args.pattern}/ is not a valid regular expression: ${regexReason(cause, args.pattern, flags)}`,
          { cause },
        );
      }
      const risky = riskyRepeat(args.pattern);
      if (risky === "nested") {
        throw new HarnessError(
          "INVALID_ARGS",
          "The pattern repeats a group that itself repeats, like (a+)+, which can take exponential time: drop " +
            "one of the two repeats (search for the repeated unit alone), or bound the outer one to at most 3",
        );
      }
      if (risky === "alternation") {
        throw new HarnessError(
          "INVALID_ARGS",
          "The pattern repeats a choice whose alternatives can match the same text, like (a|aa)* or (\\w|\\d)*, " +
            "which can take exponential time: use one character class ([\\w\\d]), alternatives of plain text none " +
            "of which begins another (like (foo|bar)+), or bound the repeat to at most 3",
        );
      }
      await reachable(exec, args.path ?? "."); // as list_dir: a directory through a link is judged where it leads
      const service = serviceOf(fs);
      const max = args.max_matches ?? 200;
      // One more than the cap: a search that could not read every file says so.
      let files = await service.glob(args.glob ?? "**", { cwd: args.path ?? ".", limit: maxGrepFiles + 1 });
      const capped = files.length > maxGrepFiles;
      if (capped) files = files.slice(0, maxGrepFiles);
      if (exec.permits !== undefined) files = await visibleOnly(exec, files);
      const matches: { path: string; line: number; text: string }[] = [];
      const unreadable: { path: string; code: string }[] = [];
      // Stopped at max_matches: the files not reached say nothing of the cap on files.
      const result = (atMax: boolean) => ({
        matches,
        filesSearched: searched,
        truncated: atMax || capped,
        ...(capped && !atMax ? { filesCapped: true } : {}),
        ...(unreadable.length === 0 ? {} : { unreadable }),
      });
      let searched = 0;
      let ranSince = performance.now();
      for (const file of files) {
        if (exec.signal.aborted) break;
        let text: string;
        try {
          text = (await service.readText(file)).text;
        } catch (error) {
          // Unreadable (too large for a string, a FIFO, a link out of the root, gone): not searched, and said so.
          const code = (error as { code?: unknown })?.code?.toString() ?? "FS_ERROR";
          // A directory that a link became since glob listed it holds nothing to search itself.
          if (code !== "IS_A_DIRECTORY") unreadable.push({ path: file, code });
          continue;
        }
        searched++;
        if (text.includes("\u0000")) continue;
        // Lines as read_file counts them: a final newline ends the last line (it starts none), and a line's \r\n
        // ending is not part of it (so `;$` matches in a file with Windows line ends).
        const lines = text.split("\n");
        if (lines[lines.length - 1] === "") lines.pop();
        for (let i = 0; i < lines.length; i++) {
          // A search that has run for a while gives the event loop a turn, so that a cancel or a timeout stops it
          // between lines, not only between files (a pattern can be slow on long lines; one line is not cut short).
          if ((i & 7) === 7 && performance.now() - ranSince > YIELD_AFTER_MS) {
            await new Promise((resolve) => setTimeout(resolve, 0));
            ranSince = performance.now();
            if (exec.signal.aborted) return result(false);
          }
          const line = lines[i].endsWith("\r") ? lines[i].slice(0, -1) : lines[i];
          if (!regex.test(line)) continue;
          if (matches.length === max) return result(true);
          matches.push({ path: file, line: i + 1, text: line });
        }
      }
      return result(false);
    },
  });

  return [readFile, writeFile, editFile, listDir, glob, grep] as AnyToolDefinition[];
}
