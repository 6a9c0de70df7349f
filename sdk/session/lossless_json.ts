/**
 * The lossless-JSON rule of the session log: every event's data must survive
 * `JSON.stringify` / `JSON.parse` unchanged.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";

// The walk recurses for the first RECURSION_LIMIT levels (the session log's
// payloads are shallow, and recursion is the fastest walk for them), then
// continues iteratively with explicit frames, so the walk never overflows the
// call stack (nesting is bounded by MAX_NESTING, which is for storage's sake).
const RECURSION_LIMIT = 64;

/**
 * How deep arrays and objects may nest in a value (the value itself, when a container, is level 1): JSON.stringify
 * recurses, and overflows the call stack at about 4,000 levels on Node (40,000 on Bun), so data any deeper could be
 * logged but never stored. Well below both, to leave room for the envelope around the value and for the stack the
 * caller already uses.
 */
export const MAX_NESTING = 1000;

const hasOwn = Object.prototype.hasOwnProperty;
const functionToString = Function.prototype.toString;

// The iterative part of a walk: one frame per open container, on parallel
// stacks: its source, its copy, its keys (`undefined` for an array), its
// length and the position of the next child.
interface Frames {
  readonly sources: object[];
  readonly targets: (unknown[] | Record<string, unknown> | undefined)[];
  readonly keys: (string[] | undefined)[];
  readonly lengths: number[];
  readonly next: number[];
}

// The keys leading to the current value stay on stacks; the path string is
// built only when the walk rejects, so the hot path allocates no strings.
class Walk {
  readonly #root: string;
  readonly #copy: boolean;
  // Copy what JSON.stringify changes silently (undefined properties, -0) instead of rejecting it.
  readonly #normalize: boolean;
  // Recursive part: the open containers and the key leading to each child.
  readonly #ancestors: object[] = [];
  readonly #path: (string | number)[] = [];
  // Iterative part (see Frames), made on the first descent below
  // RECURSION_LIMIT levels (the session log's payloads never reach it), so a
  // walk allocates two arrays, not seven.
  #frames: Frames | undefined;
  #seen: Set<object> | undefined;
  // The length of the container `check()` accepted last.
  #length = 0;

  // How deep containers may nest below the value walked (MAX_NESTING, one more for an event envelope around data).
  readonly #limit: number;

  constructor(root: string, copy: boolean, normalize = false, limit = MAX_NESTING) {
    this.#root = root;
    this.#copy = copy;
    this.#normalize = normalize;
    this.#limit = limit;
  }

  reject(what: string, index?: number): never {
    let path = this.#root;
    for (const key of this.#path) path += typeof key === "number" ? `[${key}]` : `.${key}`;
    const frames = this.#frames;
    const keys = frames?.keys ?? [];
    for (let f = 0; f < (frames?.sources.length ?? 0); f++) {
      const at = frames!.next[f] - 1;
      const list = keys[f];
      path += list === undefined ? `[${at}]` : `.${list[at]}`;
    }
    if (index !== undefined) path += `[${index}]`;
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
        if (value === 0 && 1 / value < 0) return this.#normalize ? 0 : this.reject("negative zero");
        return value;
      case "object":
        return value === null ? null : this.object(value);
      case "undefined":
        return this.reject("undefined");
      default:
        return this.reject(describe(value));
    }
  }

  // Checks that `value` is a plain array or object that JSON carries whole,
  // and returns its keys (`undefined` for an array); `#length` is set.
  check(value: object): string[] | undefined {
    let array: boolean;
    let proto: unknown;
    try {
      array = Array.isArray(value);
      proto = Object.getPrototypeOf(value);
    } catch {
      return this.reject("a revoked proxy");
    }
    if (array) {
      if (proto !== Array.prototype && !isForeignArrayPrototype(proto)) this.reject(describe(value));
      const length = (value as unknown[]).length;
      // A dense array owns its indices and `length`, nothing else (JSON drops
      // any other property, enumerable or not, string- or symbol-keyed).
      // Indices come first and in order, so this one check covers both.
      const own = Reflect.ownKeys(value);
      if (own.length !== length + 1 || own[length] !== "length") this.rejectArray(value, length);
      this.#length = length;
      return undefined;
    }
    if (proto !== Object.prototype && proto !== null && !isForeignObjectPrototype(proto)) {
      this.reject(describe(value));
    }
    // JSON drops symbol-keyed and non-enumerable properties.
    if (Object.getOwnPropertySymbols(value).length > 0) this.reject("an object with symbol keys");
    const keys = Object.keys(value);
    if (Object.getOwnPropertyNames(value).length !== keys.length) {
      this.reject("an object with non-enumerable properties");
    }
    this.#length = keys.length;
    return keys;
  }

  rejectArray(value: object, length: number): never {
    for (let i = 0; i < length; i++) if (!hasOwn.call(value, i)) this.reject("a hole in a sparse array", i);
    for (const key of Reflect.ownKeys(value)) {
      if (typeof key === "symbol") this.reject("an array with a symbol-keyed property");
      if (key !== "length" && !(String(Number(key)) === key && Number(key) < length)) {
        this.reject(`an array with an extra property "${key}"`);
      }
    }
    return this.reject("an array with extra properties");
  }

  object(value: object): unknown {
    const ancestors = this.#ancestors;
    if (ancestors.length === RECURSION_LIMIT) return this.iterate(value);
    if (ancestors.length > 0 && ancestors.includes(value)) this.reject("a circular reference");
    const keys = this.check(value);
    const length = this.#length;
    const path = this.#path;
    const copy = this.#copy;
    ancestors.push(value);
    let out: unknown;
    if (keys === undefined) {
      const result: unknown[] | undefined = copy ? new Array(length) : undefined;
      for (let i = 0; i < length; i++) {
        path.push(i);
        const item = this.value((value as unknown[])[i]);
        if (result) result[i] = item;
        path.pop();
      }
      out = result ? Object.freeze(result) : value;
    } else {
      const result: Record<string, unknown> | undefined = copy ? {} : undefined;
      for (const key of keys) {
        const raw = (value as Record<string, unknown>)[key];
        if (raw === undefined && this.#normalize) continue;
        path.push(key);
        const item = this.value(raw);
        if (result) {
          // defineProperty keeps a key named "__proto__" an own data property.
          if (key === "__proto__") Object.defineProperty(result, key, { value: item, enumerable: true });
          else result[key] = item;
        }
        path.pop();
      }
      out = result ? Object.freeze(result) : value;
    }
    ancestors.pop();
    return out;
  }

  // The walk below RECURSION_LIMIT levels.
  iterate(value: object): unknown {
    const seen = new Set(this.#ancestors);
    const frames = this.#frames ??= { sources: [], targets: [], keys: [], lengths: [], next: [] };
    const sources = frames.sources, targets = frames.targets, keyLists = frames.keys;
    const lengths = frames.lengths, next = frames.next;
    const open = (container: object): unknown => {
      if (seen.has(container)) this.reject("a circular reference");
      // Checked here only: the recursive part stops at RECURSION_LIMIT levels, well within MAX_NESTING.
      if (this.#ancestors.length + sources.length >= this.#limit) {
        this.reject(`arrays and objects nested deeper than ${MAX_NESTING} levels`);
      }
      const keys = this.check(container);
      const target = this.#copy ? (keys === undefined ? new Array(this.#length) : {}) : undefined;
      seen.add(container);
      sources.push(container);
      targets.push(target);
      keyLists.push(keys);
      lengths.push(this.#length);
      next.push(0);
      return target ?? container;
    };
    const root = open(value);
    while (sources.length > 0) {
      const top = sources.length - 1;
      const source = sources[top] as Record<string | number, unknown>;
      const target = targets[top];
      const keys = keyLists[top];
      const length = lengths[top];
      let descended = false;
      // Scalars are handled in this inner loop; the first container child
      // pushes its frame and the outer loop continues with it.
      for (let i = next[top]; i < length; i++) {
        const key = keys === undefined ? i : keys[i];
        const item = source[key];
        next[top] = i + 1;
        if (item === undefined && keys !== undefined && this.#normalize) continue;
        let out: unknown;
        if (typeof item === "object" && item !== null) {
          out = open(item);
          descended = true;
        } else {
          out = this.value(item);
        }
        if (target !== undefined) {
          if (key === "__proto__") Object.defineProperty(target, key, { value: out, enumerable: true });
          else (target as Record<string | number, unknown>)[key] = out;
        }
        if (descended) break;
      }
      if (descended) continue;
      seen.delete(source);
      sources.pop();
      targets.pop();
      if (target !== undefined) Object.freeze(target);
      keyLists.pop();
      lengths.pop();
      next.pop();
    }
    return root;
  }
}

// Whether `proto` is the intrinsic `Object.prototype` of some realm (a
// `node:vm` context, an iframe, a worker): its own `constructor` is that
// realm's native `Object`. A forged prototype fails the native-code check; a
// revoked proxy in the way makes this false, never a throw.
function isForeignObjectPrototype(proto: unknown): boolean {
  if (typeof proto !== "object" || proto === null) return false;
  try {
    return Object.getPrototypeOf(proto) === null && hasNativeConstructor(proto, "Object");
  } catch {
    return false;
  }
}

function isForeignArrayPrototype(proto: unknown): boolean {
  try {
    return Array.isArray(proto) && hasNativeConstructor(proto, "Array") &&
      isForeignObjectPrototype(Object.getPrototypeOf(proto));
  } catch {
    return false;
  }
}

// V8 prints `function Object() { [native code] }`; JavaScriptCore breaks the line.
const NATIVE = {
  Object: /^function Object\(\) \{\s*\[native code\]\s*\}$/,
  Array: /^function Array\(\) \{\s*\[native code\]\s*\}$/,
} as const;

function hasNativeConstructor(proto: object, name: "Object" | "Array"): boolean {
  const ctor: unknown = Object.getOwnPropertyDescriptor(proto, "constructor")?.value;
  return typeof ctor === "function" && ctor.name === name && ctor.prototype === proto &&
    NATIVE[name].test(functionToString.call(ctor));
}

function describe(value: unknown): string {
  if (typeof value === "object" && value !== null) {
    try {
      const name = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
      return `an instance of ${typeof name === "string" && name !== "" ? name : "an exotic class"}`;
    } catch {
      return "an instance of an exotic class";
    }
  }
  return typeof value === "bigint" ? "a BigInt" : `a ${typeof value}`;
}

/**
 * Throw unless `value` is lossless JSON: `null`, booleans, strings, finite
 * numbers other than `-0`, dense plain arrays and plain objects of such
 * values, without cycles. `undefined` (also as a property value), BigInt,
 * functions, symbols, `NaN`, `±Infinity`, sparse arrays, instances of classes
 * (`Map`, `Date`, …), arrays with any property besides their indices and
 * `length`, and objects with symbol-keyed or non-enumerable properties are
 * rejected: JSON would drop or change each of them. Plain objects (also with
 * a `null` prototype) and arrays from another realm (`node:vm`, an iframe, a
 * worker) are plain JSON and accepted. Arrays and objects nested deeper
 * than 1,000 levels are rejected too: `JSON.stringify` overflows the call
 * stack at about 4,000 levels on Node, so no storage could keep them (the
 * walk itself is iterative below a few dozen levels: checking any depth never
 * overflows the stack). Getters run (once each); what they throw
 * propagates.
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
 * assert.throws(() => assertLosslessJson(Object.assign([1], { note: "dropped by JSON" })), /extra property/);
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
 * @param options `normalize` to drop `undefined` properties and turn `-0` into `0`.
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
export function copyLosslessJson<T>(value: T, path: string = "value", options: CopyLosslessJsonOptions = {}): T {
  // A string or boolean is its own copy (a surface op "append", a flag): no walk to set up.
  if (typeof value === "string" || typeof value === "boolean") return value;
  return new Walk(path, true, options.normalize === true).value(value) as T;
}

/**
 * Internal: {@linkcode assertLosslessJson} (or, with `copy`, {@linkcode copyLosslessJson}) of a whole event, whose data
 * sits one level below it: the data may nest as deep as an append's (a seed or a restored log of what append
 * took).
 */
export function losslessEvent<T>(event: T, path: string, copy: boolean): T {
  const walked = new Walk(path, copy, false, MAX_NESTING + 1).value(event) as T;
  return copy ? walked : event;
}

/** Options of {@linkcode copyLosslessJson}. */
export interface CopyLosslessJsonOptions {
  /**
   * Copy what `JSON.stringify` changes silently instead of rejecting it: an
   * object property whose value is `undefined` is left out of the copy and
   * `-0` becomes `0` (the tool pipeline snapshots values this way). Everything
   * else JSON would drop or change is still rejected.
   *
   * @default {false}
   */
  readonly normalize?: boolean;
}
