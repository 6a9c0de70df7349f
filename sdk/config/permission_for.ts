/**
 * Deciding a tool call's permission from the configured rules.
 *
 * @module
 */

import type { PermissionAction, PermissionRule } from "./harness_config.ts";

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

/**
 * Decide the permission of a tool from `rules`.
 *
 * A rule matches when its `tool` pattern matches the whole tool name; `*`
 * matches any run of characters (including none) and every other character
 * matches itself, case-sensitively. **The last matching rule wins**, so put
 * broad rules first and exceptions after them. No matching rule gives
 * `undefined`: the caller applies its own default.
 *
 * @param rules The rules, in configuration order.
 * @param toolName The name of the tool being called.
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
 */
export function permissionFor(rules: readonly PermissionRule[], toolName: string): PermissionVerdict | undefined {
  for (let i = rules.length - 1; i >= 0; i--) {
    const rule = rules[i];
    if (!patternOf(rule.tool).test(toolName)) continue;
    return rule.reason === undefined ? { action: rule.action } : { action: rule.action, reason: rule.reason };
  }
  return undefined;
}
