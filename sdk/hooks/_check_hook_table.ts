// The check `hookBridge()` runs on the table it is given: the same rules as the configuration schema's `hooks`
// (events, fields, matchers that compile, timeouts), plus the function form, which only code can give. A mistake
// here would otherwise fail open at run time: a misspelled event never runs, a matcher that does not compile never
// matches, a handler of no known type runs as the command `undefined` — and a PreToolUse hook used as a guard is
// then silently off.

import { HarnessError } from "../kernel/harness_error.ts";
import type { HookEventName } from "../session/session_events.ts";
import type { HookHandler, HookInput, HookMatcher, HookTable } from "./hook_definition.ts";

const EVENTS: readonly HookEventName[] = ["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart"];
const MATCHER_KEYS = new Set(["matcher", "hooks"]);
const COMMAND_KEYS = new Set(["type", "command", "timeout"]);

function invalid(path: string, message: string, cause?: unknown): HarnessError {
  return new HarnessError("INVALID_ARGS", `hooks${path}: ${message}`, { details: { path: `hooks${path}` }, cause });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function onlyKeys(value: Record<string, unknown>, keys: ReadonlySet<string>, path: string): void {
  for (const key of Object.keys(value)) {
    if (!keys.has(key)) throw invalid(path, `unknown field "${key}" (expected ${[...keys].join(", ")})`);
  }
}

const isName = (value: unknown): value is string => typeof value === "string" && value.trim() !== "";

/**
 * The regular expression a tool-name matcher stands for (`^(?:matcher)$`), or
 * undefined for one that matches everything (absent, empty or `*`).
 *
 * @throws {HarnessError} `INVALID_ARGS` when it does not compile (the runtime's `SyntaxError` as its `cause`).
 */
export function matcherPattern(matcher: string | undefined, path = ""): RegExp | undefined {
  if (matcher === undefined || matcher === "" || matcher === "*") return undefined;
  try {
    return new RegExp(`^(?:${matcher})$`);
  } catch (error) {
    const why = error instanceof Error ? `: ${error.message}` : "";
    throw invalid(`${path}.matcher`, `${JSON.stringify(matcher)} is not a regular expression${why}`, error);
  }
}

/**
 * Check a hook table as `hookBridge()` takes it.
 *
 * @param hooks The table (undefined: none).
 * @returns A frozen copy of the table (its lists, matchers and hooks; a function hook's `run` is the one given), so
 *   that what was checked is what runs, whatever the caller changes later.
 * @throws {HarnessError} `INVALID_ARGS` naming the first wrong field (`details.path`).
 */
export function checkHookTable(hooks: unknown): HookTable {
  if (hooks === undefined) return Object.freeze({});
  if (!isRecord(hooks)) throw invalid("", "expected an object of hook lists by event name");
  for (const [event, matchers] of Object.entries(hooks)) {
    const at = `.${event}`;
    if (!(EVENTS as readonly string[]).includes(event)) {
      throw invalid(at, `unknown hook event (expected one of ${EVENTS.join(", ")})`);
    }
    if (matchers === undefined || matchers === null) continue;
    if (!Array.isArray(matchers)) throw invalid(at, "expected an array of matchers");
    matchers.forEach((entry: unknown, m) => {
      const mAt = `${at}[${m}]`;
      if (!isRecord(entry)) throw invalid(mAt, "expected an object { matcher?, hooks }");
      onlyKeys(entry, MATCHER_KEYS, mAt);
      if (entry.matcher !== undefined && typeof entry.matcher !== "string") {
        throw invalid(`${mAt}.matcher`, "expected a string");
      }
      matcherPattern(entry.matcher as string | undefined, mAt);
      if (!Array.isArray(entry.hooks)) throw invalid(`${mAt}.hooks`, "expected an array of hooks");
      entry.hooks.forEach((handler: unknown, h) => checkHandler(handler, `${mAt}.hooks[${h}]`));
    });
  }
  const copy: Record<string, readonly HookMatcher[]> = {};
  for (const [event, matchers] of Object.entries(hooks as HookTable)) {
    if (matchers === undefined || matchers === null) continue;
    copy[event] = Object.freeze(matchers.map((m) =>
      Object.freeze({
        ...(m.matcher !== undefined ? { matcher: m.matcher } : {}),
        hooks: Object.freeze(m.hooks.map(copyHandler)),
      })
    ));
  }
  return Object.freeze(copy) as HookTable;
}

/**
 * A frozen copy of a checked hook: a command's fields; a function hook's name and timeout, and its `run` as checked,
 * called on the hook object itself (a method of a class keeps its `this`).
 */
function copyHandler(handler: HookHandler): HookHandler {
  if (handler.type === "command") return Object.freeze({ ...handler });
  const run = handler.run;
  return Object.freeze({
    type: "function" as const,
    name: handler.name,
    ...(handler.timeout !== undefined ? { timeout: handler.timeout } : {}),
    run: (input: HookInput, options: { readonly signal: AbortSignal }) => run.call(handler, input, options),
  });
}

function checkHandler(handler: unknown, at: string): void {
  if (!isRecord(handler)) throw invalid(at, 'expected a hook object of type "command" or "function"');
  if (handler.type === "command") {
    onlyKeys(handler, COMMAND_KEYS, at);
    if (!isName(handler.command)) throw invalid(`${at}.command`, "expected a non-empty command line");
  } else if (handler.type === "function") {
    // Written in code, perhaps as an instance of a class of one's own (with fields of its own, `run` a method): its
    // fields are its own business; what the bridge reads is checked.
    if (!isName(handler.name)) throw invalid(`${at}.name`, "expected a non-empty name");
    if (typeof handler.run !== "function") throw invalid(`${at}.run`, "expected a function");
  } else {
    throw invalid(`${at}.type`, `expected "command" or "function", not ${JSON.stringify(handler.type)}`);
  }
  // At most what the configuration schema allows (a timer fires at once past 2^31 - 1 ms, so a longer one would be
  // none), and at least the 1 ms a timer counts in: a shorter one would round to 0 ms, which no run takes.
  const timeout = handler.timeout;
  if (timeout !== undefined && !(typeof timeout === "number" && timeout >= 0.001 && timeout <= 3600)) {
    throw invalid(
      `${at}.timeout`,
      `a hook timeout is at least 0.001 (1 ms) and at most 3600 seconds, not ${String(timeout)}`,
    );
  }
}
