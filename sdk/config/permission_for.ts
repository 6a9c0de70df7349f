/**
 * Deciding a tool call's permission from the configured rules.
 *
 * @module
 */

import type { PermissionAction, PermissionRule } from "./harness_config.ts";
import { serverSpellings, urlSpelling } from "./_url_pattern.ts";

/** What {@linkcode permissionFor} decided, and why. */
export interface PermissionVerdict {
  /** The action of the deciding rule. */
  readonly action: PermissionAction;
  /** The deciding rule's reason, when it gave one. */
  readonly reason?: string;
}

const compiled = new Map<string, RegExp>();

function patternOf(glob: string): RegExp {
  let pattern = compiled.get(glob);
  if (pattern === undefined) {
    const body = glob.split("*").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*");
    pattern = new RegExp(`^${body}$`, "s");
    if (compiled.size > 1000) compiled.clear();
    compiled.set(glob, pattern);
  }
  return pattern;
}

/** A rule's tool part with an argument pattern, `name(pattern)`: the name and the pattern. Internal. */
export const WITH_ARGUMENT = /^([^()]*)\((.*)\)$/s;

const spellings = new Map<string, string | null>();

/** The argument pattern's URL spelled as `web_fetch`'s subject is (see `_url_pattern.ts`), if it names one. */
function spelledAsUrl(pattern: string, allow: boolean): string | undefined {
  const key = `${allow ? "a" : "d"}${pattern}`;
  let spelled = spellings.get(key);
  if (spelled === undefined) {
    spelled = urlSpelling(pattern, allow) ?? null;
    if (spellings.size > 1000) spellings.clear();
    spellings.set(key, spelled);
  }
  return spelled ?? undefined;
}

function matches(rule: PermissionRule, toolName: string, subject: string | undefined): boolean {
  const split = WITH_ARGUMENT.exec(rule.tool);
  if (split === null) return patternOf(rule.tool).test(toolName);
  if (subject === undefined || !patternOf(split[1]).test(toolName)) return false;
  if (patternOf(split[2]).test(subject)) return true;
  const url = spelledAsUrl(split[2], rule.action === "allow");
  return url !== undefined && patternOf(url).test(subject);
}

/** The last matching rule's verdict. */
function lastMatch(
  rules: readonly PermissionRule[],
  toolName: string,
  subject: string | undefined,
): PermissionVerdict | undefined {
  for (let i = rules.length - 1; i >= 0; i--) {
    const rule = rules[i];
    if (!matches(rule, toolName, subject)) continue;
    return rule.reason === undefined ? { action: rule.action } : { action: rule.action, reason: rule.reason };
  }
  return undefined;
}

/**
 * Decide the permission of a tool call from `rules`.
 *
 * A rule matches when its `tool` pattern matches the whole tool name; `*`
 * matches any run of characters (including none) and every other character
 * matches itself, case-sensitively. A rule written `tool(pattern)`, such as
 * `bash(git *)` or `write_file(src/*)`, also requires `pattern` to match the
 * call's subject — the argument the tool names for permissions (the command,
 * the path) — and never matches a call without one. A pattern that is an
 * http(s) URL also matches in the spelling `web_fetch` gives its subject:
 * `web_fetch(https://Docs.Example:443)` matches `https://docs.example/`, as
 * scheme and host are compared in lower case (punycode, no trailing dot),
 * without the default port, an origin alone as its `/`, without a fragment,
 * with the characters a URL escapes escaped (`ü` as `%C3%BC`) and `%61` read
 * as `a` in the path; a user name is dropped from a deny or an ask rule (the
 * subject has none). In a host with a `*`, the labels without one are spelled
 * so, the others compared in ASCII lower case, and under a scheme with a `*`,
 * `:443` and `:80` are https's and http's default port. That spelling never
 * widens an allow rule: one with a user name, with a `*` in its scheme or host
 * or right before its fragment matches as written only (`http://*:80` without
 * its port would allow any port, `https://docs.example/*#top` without its
 * fragment every page), while a deny or an ask rule covers what the spelling
 * matches too.
 * **The last matching rule wins**, so put broad rules first and exceptions
 * after them. No matching rule gives `undefined`: the caller applies its own
 * default. An http(s) URL subject (`web_fetch`'s) whose path has a `%2F`, a
 * `%5C` or an empty segment is also judged as a server may read it — the
 * escapes as `/`, before and after its `..` are resolved, and runs of `/` as
 * one — and where the rules deny (or ask about) that reading, the call is
 * denied (or asked about) whatever the URL as written got: a deny for
 * `web_fetch(https://site.example/private/*)` refuses
 * `https://site.example/private%2Fkey` and
 * `https://site.example/public/..%2Fprivate/key` even after an allow for
 * `https://site.example/public/*`. So an allow rule for a URL with such an
 * escape allows it only where no deny or ask rule covers its other readings.
 *
 * @param rules The rules, in configuration order.
 * @param toolName The name of the tool being called.
 * @param subject The call's permission subject (see `ToolDefinition.permissionSubject`), if any.
 * @returns The deciding rule's action and reason, or `undefined` when no rule matches.
 *
 * @example The last matching rule wins
 * ```ts
 * import { permissionFor } from "@dsh/harness/config";
 * import assert from "node:assert/strict";
 *
 * const rules = [
 *   { tool: "fs_*", action: "ask" as const },
 *   { tool: "fs_read", action: "allow" as const },
 *   { tool: "rm", action: "deny" as const, reason: "Deleting files is not allowed here" },
 * ];
 * assert.deepEqual(permissionFor(rules, "fs_write"), { action: "ask" });
 * assert.deepEqual(permissionFor(rules, "fs_read"), { action: "allow" });
 * assert.deepEqual(permissionFor(rules, "rm"), { action: "deny", reason: "Deleting files is not allowed here" });
 * assert.equal(permissionFor(rules, "add"), undefined);
 * ```
 *
 * @example Argument patterns
 * ```ts
 * import { permissionFor } from "@dsh/harness/config";
 * import assert from "node:assert/strict";
 *
 * const rules = [{ tool: "bash", action: "ask" as const }, { tool: "bash(git *)", action: "allow" as const }];
 * assert.deepEqual(permissionFor(rules, "bash", "git status"), { action: "allow" });
 * assert.deepEqual(permissionFor(rules, "bash", "rm -rf /"), { action: "ask" });
 * assert.deepEqual(permissionFor(rules, "bash"), { action: "ask" });
 * ```
 */
export function permissionFor(
  rules: readonly PermissionRule[],
  toolName: string,
  subject?: string,
): PermissionVerdict | undefined {
  let verdict = lastMatch(rules, toolName, subject);
  if (subject === undefined || verdict?.action === "deny") return verdict;
  // The URL as a server may read it: a deny or an ask there stands over what the URL as written got.
  for (const spelling of serverSpellings(subject)) {
    const other = lastMatch(rules, toolName, spelling);
    if (other?.action === "deny") return other;
    if (other?.action === "ask" && verdict?.action !== "ask") verdict = other;
  }
  return verdict;
}
