// Reading fixture files: persisted session logs (a `session` header line,
// then one event or packed chunk row per line). This is the seam to switch to
// the persistence module's public reader once it exports one.

import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { HarnessError, type SessionEvent, type StreamChunk } from "@dsh/harness";
import type { FixtureLog } from "./fixture.ts";

const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd];
const ROW_DELTA = {
  "text-chunks": "text-delta",
  "reasoning-chunks": "reasoning-delta",
  "tool-call-chunks": "tool-call-delta",
} as const;

/** The path of a string or `file:` URL. */
export function toPath(source: string | URL): string {
  return source instanceof URL ? fileURLToPath(source) : source;
}

function invalid(file: string, line: number, message: string): HarnessError {
  return new HarnessError("INVALID_FIXTURE", `Fixture ${file} line ${line}: ${message}`, { details: { file, line } });
}

function expandRow(record: Record<string, unknown>, file: string, line: number): SessionEvent[] {
  const delta = ROW_DELTA[record.type as keyof typeof ROW_DELTA];
  const data = record.data as { turn: number; step: number; index: number; id?: string; dt: number[]; texts: string[] };
  const { seq0, time0 } = record as { seq0: number; time0: number };
  if (!data || !Array.isArray(data.dt) || !Array.isArray(data.texts) || data.dt.length !== data.texts.length) {
    throw invalid(file, line, `malformed ${String(record.type)} row`);
  }
  return data.texts.map((text, i) => {
    const chunk: StreamChunk = delta === "tool-call-delta"
      ? { type: delta, index: data.index, id: data.id ?? "", argumentsDelta: text }
      : { type: delta, index: data.index, text };
    return {
      type: "assistant/chunk",
      seq: seq0 + i,
      time: time0 + data.dt[i],
      data: { turn: data.turn, step: data.step, chunk },
    };
  });
}

function parseLogText(text: string, file: string): FixtureLog[] {
  const logs: { id?: string; createdAt?: number; parentSession?: string; events: SessionEvent[] }[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i].trim();
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
        events: [],
      });
      continue;
    }
    if (logs.length === 0) throw invalid(file, i + 1, "the file does not start with a session header line");
    const events = logs[logs.length - 1].events;
    const added = record.type in ROW_DELTA && "seq0" in record
      ? expandRow(record, file, i + 1)
      : [record as unknown as SessionEvent];
    for (const event of added) {
      if (event.seq !== events.length) {
        throw invalid(file, i + 1, `expected seq ${events.length}, found ${String(event.seq)}`);
      }
      events.push(event);
    }
  }
  if (logs.length === 0) throw invalid(file, 1, "the file holds no session log");
  return logs;
}

async function readLogFile(file: string): Promise<FixtureLog[]> {
  const bytes = await readFile(file);
  if (ZSTD_MAGIC.every((b, i) => bytes[i] === b)) {
    throw new HarnessError(
      "INVALID_FIXTURE",
      `Fixture ${file} is zstd-compressed; this build reads plain JSONL fixtures`,
      {
        details: { file },
      },
    );
  }
  return parseLogText(new TextDecoder().decode(bytes), file);
}

async function listLogFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name < b.name ? -1 : 1);
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...await listLogFiles(path));
    else if (/\.jsonl(\.zstd)?$/.test(entry.name)) out.push(path);
  }
  return out;
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
  const logs: FixtureLog[] = [];
  for (const file of await listLogFiles(path)) logs.push(...await readLogFile(file));
  if (logs.length === 0) throw new HarnessError("INVALID_FIXTURE", `Fixture directory ${path} holds no session logs`);
  return { path, logs, ...extra };
}

/** Serialise session logs in the fixture file format: per log, a header line and one event per line. */
export function formatLogs(logs: readonly FixtureLog[]): string {
  const lines: string[] = [];
  for (const log of logs) {
    lines.push(JSON.stringify({
      type: "session",
      version: 1,
      id: log.id,
      createdAt: log.createdAt ?? 0,
      ...(log.parentSession !== undefined ? { parentSession: log.parentSession } : {}),
    }));
    for (const event of log.events) lines.push(JSON.stringify(event));
  }
  return lines.join("\n") + "\n";
}
