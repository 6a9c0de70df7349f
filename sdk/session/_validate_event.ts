// Shape checks of event envelopes and of the payloads of the core event types.
// They run at append, seed and restore, after the lossless-JSON copy.

import { HarnessError } from "../kernel/harness_error.ts";

const ENVELOPE_KEYS = new Set(["type", "seq", "time", "data", "ignorable", "surfaceOp", "sourceEventSeqs"]);

type Json = Record<string, unknown>;

function invalid(seq: number, type: string, what: string): never {
  throw new HarnessError("INVALID_EVENT", `Event ${seq} (${type}) is invalid: ${what}`, { details: { seq, type } });
}

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const isText = (v: unknown): v is string => typeof v === "string" && v.length > 0;
const isCount = (v: unknown): boolean => typeof v === "number" && Number.isSafeInteger(v) && v >= 1;
/** Whether `v` can be an event `time` or a header `createdAt`: a non-negative safe integer (milliseconds). */
export const isTime = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

/** A UTF-16 surrogate without its other half: text that is not well-formed (drivers and file names write U+FFFD). */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

// Types found good (see isEventTypeText).
const goodTypes = new Set<string>();

/**
 * Whether an event type is text every storage keeps as it is: no control
 * character (PostgreSQL's text refuses U+0000) and no lone surrogate.
 */
export function isEventTypeText(type: string): boolean {
  // A session appends a few types over and over: each is tested once (two regular expressions per append were ~1 %
  // of a turn on Bun). Bounded, for an application that makes up types.
  if (goodTypes.has(type)) return true;
  if (CONTROL.test(type) || LONE_SURROGATE.test(type)) return false;
  if (goodTypes.size >= 512) goodTypes.clear();
  goodTypes.add(type);
  return true;
}

const ADAPTER_DEFAULT_KEYS: ReadonlySet<string> = new Set(["reasoningEffort", "maxTokens"]);
const TODO_STATUSES: ReadonlySet<string> = new Set(["pending", "in_progress", "completed"]);

/**
 * The item shape of a new `todo/write` (what `Session.append` takes). Not part of
 * {@linkcode validateEventData}: logs stored before this check hold items of other shapes, and they still load
 * (readers of a log take its items as they come, see renderTodoList).
 */
export function validateTodoItems(data: unknown, seq: number): void {
  const todos = (data as { todos?: unknown }).todos;
  if (!Array.isArray(todos)) return;
  for (const [i, item] of todos.entries()) {
    if (!isObject(item)) invalid(seq, "todo/write", `todos[${i}] must be an object`);
    const todo = item as Record<string, unknown>;
    if (typeof todo.content !== "string") invalid(seq, "todo/write", `todos[${i}].content must be a string`);
    if (!TODO_STATUSES.has(todo.status as string)) {
      invalid(seq, "todo/write", `todos[${i}].status must be pending, in_progress or completed`);
    }
    if (todo.id !== undefined && typeof todo.id !== "string") {
      invalid(seq, "todo/write", `todos[${i}].id must be a string`);
    }
  }
}

/** The token counts a usage may carry (the fast chunk copy takes the same). Internal. */
export const TOKEN_FIELDS = [
  "inputTokens",
  "outputTokens",
  "cacheReadTokens",
  "cacheWriteTokens",
  "reasoningTokens",
] as const;

/**
 * The token counts of a new `usage` chunk (what `Session.append` takes): `inputTokens` and `outputTokens`, and each
 * other known count given, non-negative integers (a count given as a string made the usage totals concatenate it).
 * Not part of {@linkcode validateEventData}: logs stored before this check still load. The fast chunk copy already
 * refuses such counts, so only the general path runs this.
 */
export function validateChunkUsage(data: unknown, seq: number): void {
  const chunk = (data as { chunk?: unknown }).chunk;
  if (!isObject(chunk) || chunk.type !== "usage") return;
  const usage = chunk.usage;
  if (!isObject(usage)) invalid(seq, "assistant/chunk", "a usage chunk needs its usage");
  for (const field of TOKEN_FIELDS) {
    const value = (usage as Record<string, unknown>)[field];
    if (value === undefined && field !== "inputTokens" && field !== "outputTokens") continue;
    if (!Number.isSafeInteger(value) || (value as number) < 0) {
      invalid(seq, "assistant/chunk", `usage.${field} must be a non-negative integer`);
    }
  }
}

/**
 * Check an envelope read from a seed or from storage (the keys and scalar fields). `typeText: false` leaves out the
 * check of the type's characters, for a storage batch that `validateBatchShape` has checked already.
 */
export function validateEnvelope(event: unknown, index: number, typeText = true): void {
  if (!isObject(event)) invalid(index, "?", "not an object");
  const type = event.type;
  if (!isText(type)) invalid(index, String(type), "no type");
  // What append takes (and every storage's batch check): a type no storage could have kept is refused here too.
  if (typeText && !isEventTypeText(type)) {
    invalid(index, JSON.stringify(type), "the type has a control character or a lone surrogate");
  }
  for (const key of Object.keys(event)) if (!ENVELOPE_KEYS.has(key)) invalid(index, type, `unknown key ${key}`);
  if (!isTime(event.time)) invalid(index, type, "time is not a non-negative safe integer");
  if (event.ignorable !== undefined && event.ignorable !== true) invalid(index, type, "ignorable must be true");
  if (!("data" in event)) invalid(index, type, "no data");
}

function checkMessage(seq: number, type: string, message: unknown, role: "user" | "assistant" | "system"): Json {
  if (!isObject(message)) invalid(seq, type, "the message is not an object");
  if (!isText(message.id)) invalid(seq, type, "the message has no id");
  if (message.role !== role) invalid(seq, type, `the message role is not ${role}`);
  if (!Array.isArray(message.content)) invalid(seq, type, "the message content is not an array");
  if (!isObject(message.source) || !isText(message.source.kind)) invalid(seq, type, "the message has no source kind");
  return message;
}

function checkStep(seq: number, type: string, data: Json): void {
  if (!isCount(data.turn) || !isCount(data.step)) invalid(seq, type, "turn and step must be integers from 1");
}

// A header's tools: the ToolSchema shape the loop writes (see projectSchema): readers count them, map them and read
// their names.
function checkToolSchemas(seq: number, type: string, tools: unknown): void {
  if (!Array.isArray(tools)) invalid(seq, type, "tools must be an array");
  for (let i = 0; i < tools.length; i++) {
    const tool: unknown = tools[i];
    if (
      !isObject(tool) || typeof tool.name !== "string" || typeof tool.description !== "string" ||
      typeof tool.parameters !== "object" || tool.parameters === null
    ) {
      invalid(seq, type, `tools[${i}] must be an object with a string name, a string description and parameters`);
    }
  }
}

/** Check the payload of a core event type; other types are not checked. */
export function validateEventData(type: string, data: unknown, seq: number): void {
  switch (type) {
    case "request/header-delta":
      throw new HarnessError("LEGACY_EVENT", `Event ${seq} is a legacy request/header-delta, which is not supported`, {
        details: { seq, type },
      });
    case "turn/start":
    case "turn/end":
    case "step/start":
    case "step/end":
    case "user/message":
    case "system/message":
    case "assistant/chunk":
    case "assistant/message":
    case "tool/call":
    case "tool/result":
    case "request/header":
    case "request/context":
    case "todo/write":
    case "session/end-seed":
      break;
    default:
      return;
  }
  if (!isObject(data)) invalid(seq, type, "data is not an object");
  switch (type) {
    case "turn/start":
      if (!isCount(data.turn)) invalid(seq, type, "turn must be an integer from 1");
      return;
    case "turn/end":
      if (!isCount(data.turn)) invalid(seq, type, "turn must be an integer from 1");
      if (!isObject(data.reason) || !isText(data.reason.kind)) invalid(seq, type, "reason has no kind");
      return;
    case "step/start":
    case "step/end":
      return checkStep(seq, type, data);
    case "assistant/chunk":
      checkStep(seq, type, data);
      if (!isObject(data.chunk) || !isText(data.chunk.type)) invalid(seq, type, "chunk has no type");
      return;
    case "tool/call":
      checkStep(seq, type, data);
      if (!isText(data.callId) || !isText(data.name)) invalid(seq, type, "callId and name are required");
      if (typeof data.arguments !== "string") invalid(seq, type, "arguments must be the raw string");
      return;
    case "user/message":
      checkMessage(seq, type, data, "user");
      return;
    case "system/message": {
      const message = checkMessage(seq, type, data, "system");
      const content = message.content as unknown[];
      if (content.length === 0 || !content.every((b) => isObject(b) && b.type === "text" && isText(b.text))) {
        invalid(seq, type, "a system message holds one or more non-empty text blocks");
      }
      return;
    }
    case "assistant/message": {
      checkStep(seq, type, data);
      const message = checkMessage(seq, type, data.message, "assistant");
      const source = message.source as Json;
      if (source.kind !== "model" || !isText(source.provider) || !isText(source.model)) {
        invalid(seq, type, "an assistant message needs a model source with provider and model");
      }
      return;
    }
    case "tool/result": {
      checkStep(seq, type, data);
      const message = checkMessage(seq, type, data.message, "user");
      const source = message.source as Json;
      if (source.kind !== "tool" || !isText(source.callId)) invalid(seq, type, "a tool result needs a tool source");
      const content = message.content as unknown[];
      const block = content[0];
      if (
        content.length !== 1 || !isObject(block) || block.type !== "tool-result" || block.toolCallId !== source.callId
      ) {
        invalid(seq, type, "a tool result holds exactly one tool-result block for its call");
      }
      return;
    }
    case "request/header": {
      if (data.reason === "fallback") {
        throw new HarnessError(
          "LEGACY_EVENT",
          `Event ${seq} is a legacy fallback request header, which is not supported`,
          {
            details: { seq, type },
          },
        );
      }
      if (data.reason !== "initial" && data.reason !== "resume" && data.reason !== "change") {
        invalid(seq, type, "reason must be initial, resume or change");
      }
      const header = data.header;
      if (
        !isObject(header) || !isObject(header.config) || !isText(header.config.provider) || !isText(header.config.model)
      ) {
        invalid(seq, type, "the header needs config.provider and config.model");
      }
      if (header.system !== undefined && typeof header.system !== "string") {
        invalid(seq, type, "system must be a string");
      }
      if (header.tools !== undefined) checkToolSchemas(seq, type, header.tools);
      const config = header.config;
      if (config.reasoningEffort !== undefined && !isText(config.reasoningEffort)) {
        invalid(seq, type, "config.reasoningEffort must be a non-empty string");
      }
      // adapterDefaults marks the config fields the adapter filled in: each
      // marker is `true` and its field is present in the config.
      const defaults = header.adapterDefaults;
      if (defaults !== undefined) {
        if (!isObject(defaults)) invalid(seq, type, "adapterDefaults must be an object");
        for (const key of Object.keys(defaults)) {
          if (!ADAPTER_DEFAULT_KEYS.has(key)) invalid(seq, type, `adapterDefaults has an unknown key ${key}`);
          if (defaults[key] !== true) invalid(seq, type, `adapterDefaults.${key} must be true`);
          if (config[key] === undefined) {
            invalid(seq, type, `adapterDefaults.${key} marks a config field that is absent`);
          }
        }
      }
      return;
    }
    case "request/context":
      if (!isText(data.provider) || !isText(data.model)) invalid(seq, type, "provider and model are required");
      return;
    case "todo/write":
      if (!Array.isArray(data.todos)) invalid(seq, type, "todos must be an array");
      return;
    case "session/end-seed":
      if (Object.keys(data).length > 0) invalid(seq, type, "the payload must be empty");
      return;
  }
}
