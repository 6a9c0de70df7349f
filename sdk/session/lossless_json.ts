/**
 * The lossless-JSON rule of the session log: every event's data must survive
 * `JSON.stringify` / `JSON.parse` unchanged.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";

function reject(path: string, what: string): never {
  throw new HarnessError("NOT_LOSSLESS_JSON", `Value at ${path} is not lossless JSON: ${what}`, {
    details: { path },
  });
}

function describe(value: unknown): string {
  if (typeof value === "object" && value !== null) {
    const name = (Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null)?.constructor?.name;
    return `an instance of ${name || "an exotic class"}`;
  }
  return typeof value === "bigint" ? "a BigInt" : `a ${typeof value}`;
}

function walk(value: unknown, path: string, ancestors: unknown[], copy: boolean): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (!Number.isFinite(value)) reject(path, String(value));
      if (Object.is(value, -0)) reject(path, "negative zero");
      return value;
    case "undefined":
      return reject(path, "undefined");
    case "object":
      break;
    default:
      return reject(path, describe(value));
  }
  if (value === null) return null;
  if (ancestors.includes(value)) reject(path, "a circular reference");
  ancestors.push(value);
  let out: unknown;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) reject(path, describe(value));
    const length = value.length;
    const result: unknown[] = copy ? new Array(length) : value;
    for (let i = 0; i < length; i++) {
      if (!(i in value)) reject(`${path}[${i}]`, "a hole in a sparse array");
      const item = walk(value[i], `${path}[${i}]`, ancestors, copy);
      if (copy) result[i] = item;
    }
    out = copy ? Object.freeze(result) : value;
  } else {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) reject(path, describe(value));
    if (Object.getOwnPropertySymbols(value).length > 0) reject(path, "an object with symbol keys");
    const result: Record<string, unknown> = copy ? {} : (value as Record<string, unknown>);
    for (const key of Object.keys(value)) {
      const item = walk((value as Record<string, unknown>)[key], `${path}.${key}`, ancestors, copy);
      if (copy) {
        // defineProperty keeps a key named "__proto__" an own data property.
        if (key === "__proto__") Object.defineProperty(result, key, { value: item, enumerable: true });
        else result[key] = item;
      }
    }
    out = copy ? Object.freeze(result) : value;
  }
  ancestors.pop();
  return out;
}

/**
 * Throw unless `value` is lossless JSON: `null`, booleans, strings, finite
 * numbers other than `-0`, dense plain arrays and plain objects of such
 * values, without cycles. `undefined` (also as a property value), BigInt,
 * functions, symbols, `NaN`, `±Infinity`, sparse arrays, and instances of
 * classes (`Map`, `Date`, …) are rejected.
 *
 * @param value The value to check.
 * @param path How to name the value in the error message.
 * @throws {HarnessError} `NOT_LOSSLESS_JSON`, with `details.path` naming the offending value.
 *
 * @example
 * ```ts
 * import { assertLosslessJson, HarnessError } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * assertLosslessJson({ a: [1, "two", null] });
 * assert.throws(() => assertLosslessJson({ when: new Date(0) }), (e) => HarnessError.isInstance(e, "NOT_LOSSLESS_JSON"));
 * assert.throws(() => assertLosslessJson([1, , 3]), /sparse/);
 * ```
 */
export function assertLosslessJson(value: unknown, path: string = "value"): void {
  walk(value, path, [], false);
}

/**
 * Check `value` like {@linkcode assertLosslessJson} and return a deep-frozen
 * copy of it, in one pass: each property is read once, so a getter cannot
 * show one value to the check and another to the copy.
 *
 * @param value The value to copy.
 * @param path How to name the value in the error message.
 * @returns A deep-frozen copy; primitives are returned as they are.
 * @throws {HarnessError} `NOT_LOSSLESS_JSON` when the value is not lossless JSON.
 *
 * @example
 * ```ts
 * import { copyLosslessJson } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const input = { list: [1, 2] };
 * const copy = copyLosslessJson(input);
 * input.list.push(3);
 * assert.deepEqual(copy, { list: [1, 2] });
 * assert.equal(Object.isFrozen(copy.list), true);
 * ```
 */
export function copyLosslessJson<T>(value: T, path: string = "value"): T {
  return walk(value, path, [], true) as T;
}
