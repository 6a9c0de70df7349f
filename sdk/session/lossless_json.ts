/**
 * The lossless-JSON rule of the session log: every event's data must survive
 * `JSON.stringify` / `JSON.parse` unchanged.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";

// The walk keeps the keys leading to the current value on a stack and builds
// the path string only when it rejects, so the hot path allocates no strings.
class Walk {
  readonly keys: (string | number)[] = [];
  readonly ancestors: object[] = [];
  readonly root: string;
  readonly copy: boolean;
  constructor(root: string, copy: boolean) {
    this.root = root;
    this.copy = copy;
  }

  reject(what: string): never {
    let path = this.root;
    for (const key of this.keys) path += typeof key === "number" ? `[${key}]` : `.${key}`;
    throw new HarnessError("NOT_LOSSLESS_JSON", `Value at ${path} is not lossless JSON: ${what}`, {
      details: { path },
    });
  }

  value(value: unknown): unknown {
    switch (typeof value) {
      case "string":
      case "boolean":
        return value;
      case "number":
        if (value !== value || value === Infinity || value === -Infinity) this.reject(String(value));
        if (value === 0 && 1 / value < 0) this.reject("negative zero");
        return value;
      case "object":
        return value === null ? null : this.object(value);
      case "undefined":
        return this.reject("undefined");
      default:
        return this.reject(describe(value));
    }
  }

  object(value: object): unknown {
    const ancestors = this.ancestors;
    if (ancestors.length > 0 && ancestors.includes(value)) this.reject("a circular reference");
    ancestors.push(value);
    const keys = this.keys;
    let out: unknown;
    if (Array.isArray(value)) {
      if (Object.getPrototypeOf(value) !== Array.prototype) this.reject(describe(value));
      const length = value.length;
      const result: unknown[] | undefined = this.copy ? new Array(length) : undefined;
      for (let i = 0; i < length; i++) {
        keys.push(i);
        if (!(i in value)) this.reject("a hole in a sparse array");
        const item = this.value(value[i]);
        if (result) result[i] = item;
        keys.pop();
      }
      out = result ? Object.freeze(result) : value;
    } else {
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) this.reject(describe(value));
      if (Object.getOwnPropertySymbols(value).length > 0) this.reject("an object with symbol keys");
      const result: Record<string, unknown> | undefined = this.copy ? {} : undefined;
      for (const key of Object.keys(value)) {
        keys.push(key);
        const item = this.value((value as Record<string, unknown>)[key]);
        if (result) {
          // defineProperty keeps a key named "__proto__" an own data property.
          if (key === "__proto__") Object.defineProperty(result, key, { value: item, enumerable: true });
          else result[key] = item;
        }
        keys.pop();
      }
      out = result ? Object.freeze(result) : value;
    }
    ancestors.pop();
    return out;
  }
}

function describe(value: unknown): string {
  if (typeof value === "object" && value !== null) {
    const name = (Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null)?.constructor?.name;
    return `an instance of ${name || "an exotic class"}`;
  }
  return typeof value === "bigint" ? "a BigInt" : `a ${typeof value}`;
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
  new Walk(path, false).value(value);
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
  return new Walk(path, true).value(value) as T;
}
