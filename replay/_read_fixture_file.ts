// Reading fixture files. A fixture is a persisted session log: either a
// storage directory written by `fileStorage` (one `<id>/session.v1.jsonl` (v0: `session.jsonl`) or
// `.zstd` per session, read through the persistence module), or
// one plain log file (a `session` header line, then one event or packed chunk
// row per line; several logs may follow one another).

import { readFile, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { fileStorage, HarnessError, type SessionEvent, type StoredRecord, unpackChunkRows } from "../mod.ts";
import type { FixtureLog } from "./fixture.ts";

const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd];

/** The path of a string or `file:` URL. */
export function toPath(source: string | URL): string {
  return source instanceof URL ? fileURLToPath(source) : source;
}

function invalid(file: string, line: number, message: string): HarnessError {
  return new HarnessError("INVALID_FIXTURE", `Fixture ${file} line ${line}: ${message}`, { details: { file, line } });
}

function parseLogText(text: string, file: string): FixtureLog[] {
  const logs: { id?: string; createdAt?: number; parentSession?: string; records: StoredRecord[] }[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    // fileStorage writes `<json>\t<checksum>` lines (older logs have no checksum); the JSON is what counts here.
    const raw = lines[i].trim().replace(/\t[0-9a-f]{8}$/, "");
    if (raw === "") continue;
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(raw);
    } catch {
      throw invalid(file, i + 1, "not valid JSON");
    }
    if (typeof record !== "object" || record === null || typeof record.type !== "string") {
      throw invalid(file, i + 1, "not a record with a type");
    }
    if (record.type === "session" && !("seq" in record)) {
      logs.push({
        ...(typeof record.id === "string" ? { id: record.id } : {}),
        ...(typeof record.createdAt === "number" ? { createdAt: record.createdAt } : {}),
        ...(typeof record.parentSession === "string" ? { parentSession: record.parentSession } : {}),
        records: [],
      });
      continue;
    }
    if (logs.length === 0) throw invalid(file, i + 1, "the file does not start with a session header line");
    logs[logs.length - 1].records.push(record as unknown as StoredRecord);
  }
  if (logs.length === 0) throw invalid(file, 1, "the file holds no session log");
  return logs.map(({ records, ...header }) => {
    const events: SessionEvent[] = unpackChunkRows(records);
    events.forEach((event, seq) => {
      if (event.seq !== seq) {
        throw invalid(file, 0, `event ${seq} of session ${header.id} has seq ${String(event.seq)}`);
      }
    });
    return { ...header, events };
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
  for (const header of await storage.list()) {
    const { events } = await storage.inspect(header.id);
    logs.push({
      id: header.id,
      createdAt: header.createdAt,
      ...(header.parentSession !== undefined ? { parentSession: header.parentSession } : {}),
      events,
    });
  }
  return logs;
}

async function readSidecar(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return undefined;
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new HarnessError("INVALID_FIXTURE", `Replay override file ${path} is not valid JSON`, { cause });
  }
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
