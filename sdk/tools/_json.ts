/**
 * Internal: JSON snapshots for the tool pipeline. Arguments, values, metadata
 * and content cross one materialisation boundary: they are copied as plain
 * JSON and deep-frozen, so no hook can change what another one saw.
 *
 * @module
 */

import { deepFreeze } from "../session/deep_freeze.ts";

// The tool pipeline freezes with the session log's own deepFreeze.
export { deepFreeze };

/**
 * Copy `value` as plain JSON (objects, arrays, strings, finite numbers,
 * booleans, `null`) and deep-freeze the copy. Object properties whose value is
 * `undefined` are dropped, as `JSON.stringify` would.
 *
 * @throws {TypeError} when the value holds anything else (functions, class
 * instances, `undefined` array items, non-finite numbers, cycles).
 */
export function frozenJson<T>(value: T, path = "$"): T {
  return deepFreeze(copy(value, path, new Set())) as T;
}

function copy(value: unknown, path: string, seen: Set<object>): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`${path} is not a finite number`);
      return value;
    case "object": {
      if (value === null) return null;
      if (seen.has(value)) throw new TypeError(`${path} is a cycle`);
      seen.add(value);
      try {
        if (Array.isArray(value)) {
          const out: unknown[] = [];
          for (let i = 0; i < value.length; i++) {
            if (!(i in value) || value[i] === undefined) throw new TypeError(`${path}[${i}] is not a JSON value`);
            out.push(copy(value[i], `${path}[${i}]`, seen));
          }
          return out;
        }
        const proto = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) throw new TypeError(`${path} is not a plain object`);
        const out: Record<string, unknown> = {};
        for (const [key, item] of Object.entries(value)) {
          // defineProperty: a "__proto__" key stays an ordinary property.
          if (item !== undefined) {
            Object.defineProperty(out, key, {
              value: copy(item, `${path}.${key}`, seen),
              enumerable: true,
              writable: true,
              configurable: true,
            });
          }
        }
        return out;
      } finally {
        seen.delete(value);
      }
    }
    default:
      throw new TypeError(`${path} is not a JSON value (${typeof value})`);
  }
}
