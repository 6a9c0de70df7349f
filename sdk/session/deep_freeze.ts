/**
 * Deep freezing of plain data.
 *
 * @module
 */

import { isVetted } from "./_copy_event_data.ts";

/**
 * Freeze `value` and every object reachable from it, in place.
 *
 * @param value Any value; primitives are returned unchanged.
 * @returns The same value, now deep-frozen.
 *
 * @example
 * ```ts
 * import { deepFreeze } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const value = deepFreeze({ a: { b: [1] } });
 * assert.equal(Object.isFrozen(value.a.b), true);
 * ```
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  const stack: object[] = [value];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const item = stack.pop()!;
    // A value the session's copiers made is deep-frozen already (freezing an array again is O(length) on JavaScriptCore).
    if (seen.has(item) || isVetted(item)) continue;
    seen.add(item);
    Object.freeze(item);
    for (const key of Reflect.ownKeys(item)) {
      const child = (item as Record<PropertyKey, unknown>)[key];
      if (typeof child === "object" && child !== null && !seen.has(child)) stack.push(child);
    }
  }
  return value;
}
