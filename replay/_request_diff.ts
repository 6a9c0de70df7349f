// Strict replay: the first difference between a live request and the request
// recorded in the fixture, as a readable report (which field, and a line diff).

import { callConfigOf, canonicalHeader, type GenerateOptions, type Message, type ToolSchema } from "../mod.ts";
import type { RecordedRequest } from "./fixture.ts";
import { unifiedDiff } from "./_line_diff.ts";

/** One divergence: what differs, and a unified diff (fixture `-`, live `+`). */
export interface RequestDivergence {
  readonly field: "config" | "system" | "tools" | "messages";
  readonly summary: string;
  readonly diff: string;
}

function json(value: unknown): string {
  return JSON.stringify(sortKeys(value), null, 2) ?? "undefined";
}

/**
 * A value as a divergence's diff shows it: {@linkcode json}'s form (sorted keys, two-space indent), but a string that
 * holds line breaks is printed one of its lines per line (each JSON-escaped, between `"""` marks). A changed line of a
 * long text (a file a tool read, a multi-line tool description) is then one changed line of the diff, not a line as
 * long as the whole text on each side. Only the diff reads it: whether two values are equal is `json`'s to say.
 */
function readable(value: unknown, indent = ""): string {
  const inner = indent + "  ";
  if (typeof value === "string") {
    if (!value.includes("\n")) return JSON.stringify(value);
    const lines = value.split("\n").map((line) => inner + JSON.stringify(line).slice(1, -1));
    return `"""\n${lines.join("\n")}\n${inner}"""`;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return `[\n${value.map((v) => inner + (v === undefined ? "null" : readable(v, inner))).join(",\n")}\n${indent}]`;
  }
  if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).sort().filter((key) => record[key] !== undefined);
    if (keys.length === 0) return "{}";
    const fields = keys.map((key) => `${inner}${JSON.stringify(key)}: ${readable(record[key], inner)}`);
    return `{\n${fields.join(",\n")}\n${indent}}`;
  }
  return JSON.stringify(value) ?? "undefined";
}

/** The diff of two values that differ, as {@linkcode readable} shows them (as `json` does, should those be equal). */
function diffValues(expected: unknown, actual: unknown): string {
  const a = readable(expected);
  const b = readable(actual);
  return a === b ? diff(json(expected) + "\n", json(actual) + "\n") : diff(a + "\n", b + "\n");
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.keys(value).sort().map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}

/** A message without its generated id: ids differ between runs and never reach the provider. */
function comparable(message: Message): unknown {
  const { id: _id, ...rest } = message;
  return rest;
}

/**
 * A cheap key of a message list, for finding a recorded request a live one may equal before comparing them whole: its
 * length and its last message as the comparison reads it (no id, keys sorted). Lists with different keys differ.
 */
export function messagesKey(messages: readonly Message[]): string {
  const last = messages.at(-1);
  return `${messages.length}:${last === undefined ? "" : json(comparable(last))}`;
}

/** Whether two message lists are equal as the strict comparison reads them (ids aside). */
export function sameMessages(expected: readonly Message[], actual: readonly Message[]): boolean {
  return expected.length === actual.length && firstDifference(expected, actual, newMessageMatch()) === undefined;
}

function diff(expected: string, actual: string): string {
  return unifiedDiff(expected, actual, { expectedLabel: "fixture", actualLabel: "live" });
}

function describeMessage(message: Message | undefined): string {
  if (message === undefined) return "none";
  const kinds = [...new Set(message.content.map((b) => b.type))].join(", ");
  return `${message.role} (${message.source.kind}${kinds ? `: ${kinds}` : ""})`;
}

function compareTools(expected: readonly ToolSchema[], actual: readonly ToolSchema[]): RequestDivergence | undefined {
  if (json(expected) === json(actual)) return undefined;
  const expectedNames = expected.map((t) => t.name);
  const actualNames = actual.map((t) => t.name);
  const added = actualNames.filter((n) => !expectedNames.includes(n));
  const removed = expectedNames.filter((n) => !actualNames.includes(n));
  const changed = actual.find((tool) => {
    const before = expected.find((t) => t.name === tool.name);
    return before !== undefined && json(before) !== json(tool);
  });
  let summary: string;
  let text: string;
  if (changed !== undefined) {
    summary = `the schema of tool "${changed.name}" differs`;
    text = diffValues(expected.find((t) => t.name === changed.name), changed);
  } else if (added.length > 0 || removed.length > 0) {
    const parts = [
      added.length ? `added ${added.map((n) => `"${n}"`).join(", ")}` : "",
      removed.length ? `removed ${removed.map((n) => `"${n}"`).join(", ")}` : "",
    ].filter(Boolean);
    summary = `the tool list differs (${parts.join("; ")})`;
    text = diff(expectedNames.join("\n") + "\n", actualNames.join("\n") + "\n");
  } else {
    summary = "the tools are in another order";
    text = diff(expectedNames.join("\n") + "\n", actualNames.join("\n") + "\n");
  }
  return { field: "tools", summary, diff: text };
}

/**
 * What the previous strict comparison of one live session matched: its two
 * message lists and how many leading messages were equal. Consecutive
 * requests of a session share their message objects (the loop's history and
 * the fixture's shared history hand out the same frozen messages), so a
 * position whose two messages are the very objects found equal last time is
 * equal again, without serialising either.
 */
export interface MessageMatch {
  expected: readonly Message[];
  actual: readonly Message[];
  matched: number;
}

/** A fresh {@linkcode MessageMatch} for a session that has compared nothing yet. */
export function newMessageMatch(): MessageMatch {
  return { expected: [], actual: [], matched: 0 };
}

// The first position where the two lists differ, with both messages as compared; `previous` is updated to what
// matched (see MessageMatch).
function firstDifference(
  expected: readonly Message[],
  actual: readonly Message[],
  previous: MessageMatch,
): { i: number; a: string | undefined; b: string | undefined } | undefined {
  const length = Math.max(expected.length, actual.length);
  const known = Math.min(previous.matched, expected.length, actual.length);
  let i = 0;
  while (i < known && expected[i] === previous.expected[i] && actual[i] === previous.actual[i]) i++;
  for (; i < length; i++) {
    const a = expected[i] === undefined ? undefined : json(comparable(expected[i]));
    const b = actual[i] === undefined ? undefined : json(comparable(actual[i]));
    if (a === b) continue;
    previous.expected = expected;
    previous.actual = actual;
    previous.matched = i;
    return { i, a, b };
  }
  previous.expected = expected;
  previous.actual = actual;
  previous.matched = length;
  return undefined;
}

function compareMessages(
  expected: readonly Message[],
  actual: readonly Message[],
  previous: MessageMatch,
): RequestDivergence | undefined {
  const found = firstDifference(expected, actual, previous);
  if (found === undefined) return undefined;
  const { i, a, b } = found;
  let summary: string;
  if (a === undefined) summary = `the live request has an extra message ${i}: ${describeMessage(actual[i])}`;
  else if (b === undefined) {
    summary = `message ${i} is missing from the live request: ${describeMessage(expected[i])}`;
  } else summary = `message ${i} differs: ${describeMessage(expected[i])}`;
  const shown = (message: Message | undefined) => message === undefined ? "" : readable(comparable(message)) + "\n";
  const x = shown(expected[i]);
  const y = shown(actual[i]);
  return {
    field: "messages",
    summary: `${summary} (fixture has ${expected.length} messages, live ${actual.length})`,
    diff: x === y ? diff(a === undefined ? "" : a + "\n", b === undefined ? "" : b + "\n") : diff(x, y),
  };
}

/**
 * Compare a live request with the recorded one: config, system prompt, tool
 * schemas (only when the fixture recorded a header), then the messages
 * (ignoring message ids). `previous` carries what the session's previous
 * request matched, so only the messages that are new since are serialised.
 */
export function diffRequest(
  recorded: RecordedRequest,
  live: GenerateOptions,
  previous: MessageMatch = newMessageMatch(),
): RequestDivergence | undefined {
  if (recorded.header !== undefined) {
    const header = canonicalHeader(recorded.header);
    const config = canonicalHeader({ config: callConfigOf(live) }).config;
    if (json(header.config) !== json(config)) {
      const keys = new Set([...Object.keys(header.config), ...Object.keys(config)]);
      const fields = [...keys].filter((k) =>
        json((header.config as unknown as Record<string, unknown>)[k]) !==
          json((config as unknown as Record<string, unknown>)[k])
      );
      return {
        field: "config",
        summary: `the call config differs in ${fields.join(", ")}`,
        diff: diffValues(header.config, config),
      };
    }
    const system = live.system ?? "";
    if ((header.system ?? "") !== system) {
      return {
        field: "system",
        summary: "the system prompt differs",
        diff: diff(ensureNewline(header.system ?? ""), ensureNewline(system)),
      };
    }
    const tools = compareTools(header.tools ?? [], live.tools ?? []);
    if (tools !== undefined) return tools;
  }
  return compareMessages(recorded.messages, live.messages, previous);
}

function ensureNewline(text: string): string {
  return text === "" || text.endsWith("\n") ? text : text + "\n";
}
