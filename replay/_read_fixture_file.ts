// Reading fixture files. A fixture is a persisted session log: either a
// storage directory written by `fileStorage` (one `<id>/session.v1.jsonl` (v0: `session.jsonl`) or
// `.zstd` per session, read through the persistence module), or
// one plain log file (a `session` header line, then one event or packed chunk
// row per line; several logs may follow one another). Both are decoded by the
// persistence module's line decoder: a plain file per header-delimited log
// (`decodeRecordLines`), a directory through `fileStorage`.

import { readdir, readFile, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { fileStorage, HarnessError, SESSION_FORMAT_VERSION, type SessionEvent } from "../mod.ts";
import { type DecodedLines, decodeRecordLines } from "../sdk/persistence/_log_decoder.ts";
import { openLine } from "../sdk/persistence/_record_checksum.ts";
import { escapeSessionId } from "../sdk/persistence/_header.ts";
import { parseLogFileName } from "../sdk/persistence/_file_log.ts";
import type { FixtureLog } from "./fixture.ts";
import { type EntryProblem, entryProblem } from "./_check_entry.ts";

const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd];

/** The path of a string or `file:` URL. */
export function toPath(source: string | URL): string {
  return source instanceof URL ? fileURLToPath(source) : source;
}

function invalid(file: string, line: number, message: string, cause?: unknown): HarnessError {
  return new HarnessError("INVALID_FIXTURE", `Fixture ${file} line ${line}: ${message}`, {
    cause,
    details: { file, line },
  });
}

const HEADER_HINT = /"type"\s*:\s*"session"/;

/** The header of one log in a plain fixture file: a `session` record without a seq (format fields optional). */
function headerOf(text: string, file: string, line: number): Record<string, unknown> | undefined {
  if (!HEADER_HINT.test(text)) return undefined;
  const { json, verified } = openLine(text);
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  if (record.type !== "session" || "seq" in record) return undefined;
  if (verified === false) throw invalid(file, line, "the header line fails its checksum");
  return record;
}

/**
 * The logs of a plain fixture file. Lines are trimmed and blank ones skipped;
 * each header line starts a log whose records are decoded by the storage's
 * line decoder (`decodeRecordLines`: checksums, packed rows, seq continuity,
 * the append validator), so a fixture is read exactly as a stored log is, only
 * without the file-layout rules. Every defect, a torn last line included, is an
 * `INVALID_FIXTURE` error naming the file and its line.
 */
function parseLogText(text: string, file: string): FixtureLog[] {
  const sections: { header: Record<string, unknown>; lines: string[]; lineNumbers: number[] }[] = [];
  text.split("\n").forEach((raw, index) => {
    const line = raw.trim();
    if (line === "") return;
    const header = headerOf(line, file, index + 1);
    if (header !== undefined) {
      sections.push({ header, lines: [line], lineNumbers: [index + 1] });
      return;
    }
    if (sections.length === 0) {
      const { json } = openLine(line);
      let value: unknown;
      try {
        value = JSON.parse(json);
      } catch {
        throw invalid(file, index + 1, "not valid JSON");
      }
      const message = typeof value === "object" && value !== null && !Array.isArray(value)
        ? "the file does not start with a session header line"
        : "not a record with a type";
      throw invalid(file, index + 1, message);
    }
    const section = sections[sections.length - 1];
    section.lines.push(line);
    section.lineNumbers.push(index + 1);
  });
  if (sections.length === 0) throw invalid(file, 1, "the file holds no session log");
  return sections.map(({ header, lines, lineNumbers }) => {
    const fileLine = (at: number) => lineNumbers[Math.min(Math.max(at - 1, 0), lineNumbers.length - 1)];
    if ("version" in header && header.version !== SESSION_FORMAT_VERSION) {
      throw invalid(file, lineNumbers[0], `format version ${JSON.stringify(header.version)} is not supported`);
    }
    let decoded: DecodedLines;
    try {
      // Every line is complete here (a header or the end of the text follows), as a newline-terminated log.
      decoded = decodeRecordLines([...lines, ""], file, undefined);
    } catch (error) {
      if (!HarnessError.isInstance(error, "SESSION_CORRUPT")) throw error;
      const at = (error.details as { line: number }).line;
      throw invalid(file, fileLine(at), error.message.replace(/^Session log .* is corrupt at line \d+: /, ""), error);
    }
    if (decoded.tornIndex !== undefined) {
      throw invalid(file, fileLine(decoded.tornIndex + 1), decoded.tornReason ?? "the line is incomplete");
    }
    return {
      ...(typeof header.id === "string" ? { id: header.id } : {}),
      ...(typeof header.createdAt === "number" ? { createdAt: header.createdAt } : {}),
      ...(typeof header.parentSession === "string" ? { parentSession: header.parentSession } : {}),
      // A fork's seed as its header says; a header without it (written before it had one) keeps the fixture's own
      // rule for a fork (its last marker), and a session of its own has none.
      ...seedOf(
        typeof header.seedLength === "number" ? header.seedLength : undefined,
        header.parentSession,
        header.origin,
      ),
      events: decoded.events,
    };
  });
}

async function readLogFile(file: string): Promise<FixtureLog[]> {
  const bytes = await readFile(file);
  if (!ZSTD_MAGIC.every((b, i) => bytes[i] === b)) return parseLogText(new TextDecoder().decode(bytes), file);
  // A compressed log is read through the storage directory that holds it: <root>/<id>/session.v1.jsonl.zstd.
  const dir = dirname(file);
  const logs = await readStorageDir(dirname(dir));
  const own = logs.filter((log) => log.id === basename(dir));
  if (own.length === 1) return own;
  if (logs.length === 1) return logs;
  throw new HarnessError(
    "INVALID_FIXTURE",
    `Fixture ${file} is zstd-compressed and its session could not be told apart in ${
      dirname(dir)
    }; load that directory instead`,
    { details: { file } },
  );
}

async function readStorageDir(dir: string): Promise<FixtureLog[]> {
  const storage = fileStorage(dir);
  const logs: FixtureLog[] = [];
  const headers = await storage.list();
  // list() leaves out a session it cannot read, or whose folder is not named after its id: in a fixture that would
  // drop a recorded session without a word, and replay would then report a false divergence.
  const listed = new Set(headers.map((header) => escapeSessionId(header.id)));
  for (const name of await readdir(dir)) {
    if (name.startsWith(".") || listed.has(name)) continue;
    const inside = await readdir(join(dir, name)).catch(() => [] as string[]); // a file, such as the sidecar
    if (inside.some((entry) => parseLogFileName(entry) !== undefined)) {
      // A checkout that turned the log's line endings into CRLF (git's core.autocrlf): read it as a plain log file.
      const crlf = await crlfLog(join(dir, name), inside);
      if (crlf !== undefined) {
        logs.push(...crlf);
        continue;
      }
      // Why the storage left it out (a newer format version, a damaged header, a header naming another id).
      const id = sessionIdOf(name);
      const error = id === undefined ? undefined : await storage.inspect(id).then(() => undefined, (e: unknown) => e);
      throw unreadable(dir, name, error);
    }
  }
  for (const header of headers) {
    let events: readonly SessionEvent[];
    try {
      ({ events } = await storage.inspect(header.id));
    } catch (error) {
      const folder = join(dir, escapeSessionId(header.id));
      const crlf = await crlfLog(folder, await readdir(folder).catch(() => [] as string[]));
      if (crlf === undefined) throw unreadable(dir, escapeSessionId(header.id), error);
      logs.push(...crlf);
      continue;
    }
    logs.push({
      id: header.id,
      createdAt: header.createdAt,
      ...(header.parentSession !== undefined ? { parentSession: header.parentSession } : {}),
      ...seedOf(header.seedLength, header.parentSession, header.origin),
      events,
    });
  }
  return logs;
}

/** The session id whose folder `name` is, when it is one (`escapeSessionId` is injective: `%XX` is a UTF-8 byte). */
function sessionIdOf(name: string): string | undefined {
  try {
    const id = decodeURIComponent(name);
    return escapeSessionId(id) === name ? id : undefined;
  } catch {
    return undefined; // not percent-encoding
  }
}

/**
 * A session folder whose log the storage does not read, as an `INVALID_FIXTURE` error that gives the storage's reason
 * (`SESSION_CORRUPT` naming the file and line, `SESSION_FORMAT_UNSUPPORTED`, ...), that error as its cause.
 */
function unreadable(dir: string, folder: string, error: unknown): HarnessError {
  const reason = error === undefined
    ? "its name is not a session's folder name, or its header names another id"
    : error instanceof Error
    ? error.message
    : String(error);
  return new HarnessError(
    "INVALID_FIXTURE",
    `Fixture ${dir} has a session folder ${folder} whose log cannot be read: ${reason}`,
    {
      ...(error !== undefined ? { cause: error } : {}),
      details: { dir, folder, ...(HarnessError.isInstance(error) ? { code: error.code } : {}) },
    },
  );
}

/**
 * The logs of a session folder whose plain log file has CRLF line endings (as a git checkout with
 * `core.autocrlf` writes them; `writeFixture` puts a `.gitattributes` with `* -text` in a fixture to prevent it),
 * read as a plain log file; `undefined` when the folder holds no such file.
 */
async function crlfLog(folder: string, entries: readonly string[]): Promise<FixtureLog[] | undefined> {
  for (const entry of entries) {
    if (parseLogFileName(entry)?.encoding !== "plain") continue;
    const file = join(folder, entry);
    const text = await readFile(file, "utf8").catch(() => "");
    if (!text.includes("\r\n")) continue;
    try {
      return parseLogText(text.replaceAll("\r\n", "\n"), file);
    } catch (error) {
      if (!HarnessError.isInstance(error, "INVALID_FIXTURE")) throw error;
      throw new HarnessError("INVALID_FIXTURE", `${error.message} (the file has CRLF line endings)`, {
        cause: error,
        details: error.details,
      });
    }
  }
  return undefined;
}

async function readSidecar(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (cause) {
    if ((cause as { code?: unknown }).code === "ENOENT") return undefined;
    throw new HarnessError("INVALID_FIXTURE", `Replay override file ${path} cannot be read: ${String(cause)}`, {
      cause,
    });
  }
  let overrides: unknown;
  try {
    overrides = JSON.parse(text);
  } catch (cause) {
    throw new HarnessError("INVALID_FIXTURE", `Replay override file ${path} is not valid JSON`, { cause });
  }
  // The shape replayAdapter takes (it checks where each patch goes when it applies them, against the fixture).
  const patches = (overrides as { patches?: unknown } | null)?.patches;
  if (!Array.isArray(overrides) && !(typeof overrides === "object" && overrides !== null && Array.isArray(patches))) {
    throw new HarnessError(
      "INVALID_FIXTURE",
      `Replay override file ${path} holds neither an array of entries nor { "patches": [...] }`,
    );
  }
  // Each entry and its chunks, now rather than mid-replay.
  const problem = Array.isArray(overrides)
    ? firstProblem(overrides, (entry, i) => entryProblem(entry, `[${i}]`))
    : firstProblem(patches as unknown[], (patch, i) =>
      typeof patch === "object" && patch !== null
        ? entryProblem((patch as { entry?: unknown }).entry, `patches[${i}].entry`)
        : { path: `patches[${i}]`, message: "must be a patch object" });
  if (problem !== undefined) {
    throw new HarnessError("INVALID_FIXTURE", `Replay override file ${path}: ${problem.path} ${problem.message}`, {
      details: { file: path, path: problem.path },
    });
  }
  return overrides;
}

function firstProblem(
  items: readonly unknown[],
  check: (item: unknown, index: number) => EntryProblem | undefined,
): EntryProblem | undefined {
  for (let i = 0; i < items.length; i++) {
    const problem = check(items[i], i);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** Read the session logs of a fixture file or directory, and its override sidecar. */
export async function readFixtureFile(
  source: string | URL,
): Promise<{ path: string; logs: FixtureLog[]; overrides?: unknown }> {
  const path = toPath(source);
  let isDirectory: boolean;
  try {
    isDirectory = (await stat(path)).isDirectory();
  } catch (cause) {
    throw new HarnessError("FIXTURE_NOT_FOUND", `Fixture ${path} does not exist`, { cause, details: { path } });
  }
  const sidecar = isDirectory
    ? join(path, "replay.override.json")
    : path.replace(/(\.jsonl)?(\.zstd)?$/, ".override.json");
  const overrides = await readSidecar(sidecar);
  const extra = overrides === undefined ? {} : { overrides };
  if (!isDirectory) return { path, logs: await readLogFile(path), ...extra };
  const logs = await readStorageDir(path);
  if (logs.length === 0) throw new HarnessError("INVALID_FIXTURE", `Fixture directory ${path} holds no session logs`);
  return { path, logs, ...extra };
}

/**
 * The `seedLength` a fixture log gets from its header: its own, else 0 — but for a fork (a `parentSession` without
 * `origin: "subagent"`) written before headers said it, whose seed then ends at its last marker.
 */
function seedOf(seedLength: number | undefined, parentSession: unknown, origin: unknown): { seedLength?: number } {
  if (seedLength !== undefined) return { seedLength };
  return parentSession === undefined || origin === "subagent" ? { seedLength: 0 } : {};
}
