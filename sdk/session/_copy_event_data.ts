// Internal: a fast, exact copy of the plain JSON an event carries, and the
// values the session log has already checked and frozen.
//
// Every event's data is copied and deep-frozen on append by the generic
// lossless-JSON walk (`copyLosslessJson`), which keeps a path for its error
// messages, an ancestor list for cycles and an object per walk. For the plain
// data the loop appends (steps, messages, tool calls and results, inbox
// splices) this copier makes the same copy without them: plain objects and
// arrays of strings, booleans, finite numbers and null, keys in their own
// order, each property read once. Anything else — a class instance, a symbol
// or non-enumerable key, a hole, `undefined`, `NaN`, `-0`, a foreign realm's
// object, a revoked proxy, nesting deeper than MAX_DEPTH (cycles end there),
// a throwing getter — returns `undefined`, and the caller takes the generic
// walk, which accepts or rejects it with its own error as before: only the
// time an append takes changes, and a getter read before the copier gave up
// is read again by the walk (whose value is logged). Accessors are not looked
// for: a property descriptor per key would double the copy's time on Bun.
//
// Vetted values: a value built by these copiers is frozen plain JSON, and the
// session and the tool pipeline vouch for the ones that are appended again
// (the message of an inbox entry, appended as a `user/message` when its turn
// claims it; the tool pipeline's JSON snapshots and result message, appended
// as a `tool/result`). A vetted value met again is shared instead of copied:
// it is deep-frozen lossless JSON already, so sharing it gives the same
// (deep-equal, deep-frozen) event without walking, copying and freezing it
// again — freezing an array costs O(length) on JavaScriptCore. Only those are
// vouched for, not every copy: a WeakSet insertion costs about as much as
// copying a small object on V8.

const vetted = new WeakSet<object>();

/**
 * Nesting deeper than this takes the generic walk (which also finds cycles, and refuses nesting past its
 * MAX_NESTING, far deeper than this: so nothing this copier accepts is too deep, and the cap costs it nothing).
 */
const MAX_DEPTH = 32;

/**
 * Remember `value` as checked, deep-frozen lossless JSON. Only for values
 * built by the session's own copiers (their every level frozen and checked).
 */
export function vouch<T extends object>(value: T): T {
  vetted.add(value);
  return value;
}

/** Whether `value` was vouched for by {@linkcode vouch}. */
export function isVetted(value: unknown): boolean {
  return typeof value === "object" && value !== null && vetted.has(value);
}

/** The copy of every empty array: one frozen, vetted `[]`. */
export const EMPTY_ARRAY: readonly never[] = vouch(Object.freeze([]));

function copyValue(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      // NaN, ±Infinity and -0 are the generic walk's to reject.
      return value - value === 0 && (value !== 0 || 1 / value > 0) ? value : undefined;
    case "object":
      return value === null ? null : copyContainer(value, depth);
    default:
      return undefined;
  }
}

function copyContainer(value: object, depth: number): object | undefined {
  if (vetted.has(value)) return value;
  if (depth === MAX_DEPTH) return undefined;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) return undefined;
    const length = value.length;
    // The indices in order, then `length`, and nothing else (no hole, no extra or symbol-keyed property).
    const own = Reflect.ownKeys(value);
    if (own.length !== length + 1 || own[length] !== "length") return undefined;
    if (length === 0) return EMPTY_ARRAY;
    const out: unknown[] = new Array(length);
    for (let i = 0; i < length; i++) {
      const item = copyValue(value[i], depth + 1);
      if (item === undefined) return undefined;
      out[i] = item;
    }
    return Object.freeze(out);
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return undefined;
  if (Object.getOwnPropertySymbols(value).length !== 0) return undefined;
  const keys = Object.keys(value);
  if (Object.getOwnPropertyNames(value).length !== keys.length) return undefined;
  const out: Record<string, unknown> = {};
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    // The generic walk defines it as an own property; a plain store would set the prototype.
    if (key === "__proto__") return undefined;
    const item = copyValue((value as Record<string, unknown>)[key], depth + 1);
    if (item === undefined) return undefined;
    out[key] = item;
  }
  return Object.freeze(out);
}

/**
 * A deep-frozen copy of `value` equal to what `copyLosslessJson(value)`
 * returns (same keys in the same order, same values), sharing vetted values,
 * or `undefined` when `value` is anything but plain JSON of the common kinds
 * (the generic walk decides then, with its own error).
 */
export function copyPlainJson(value: unknown): unknown {
  try {
    return copyValue(value, 0);
  } catch {
    // A revoked proxy or a throwing getter: the generic walk reports it.
    return undefined;
  }
}

// Seq lists the agent loop fills itself (an assistant message's chunk seqs).
const owned = new WeakSet<number[]>();

/**
 * Internal: a new, empty seq list for the caller to fill with `push` and hand
 * to one append as `sourceEventSeqs`, and never touch again. That append
 * freezes it in place instead of copying it: nobody else can have added a
 * property or a hole to it.
 */
export function seqList(): number[] {
  const list: number[] = [];
  owned.add(list);
  return list;
}

function count(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 && !Object.is(value, -0);
}

// The last list takeSeqList froze whose seqs strictly increase: checked while
// it was still a plain array, because reading a frozen array is a slow path
// on JavaScriptCore (a map lookup per index), and the surface's check of an
// assistant message's chunk seqs would otherwise read every one again.
let increasing: readonly number[] | undefined;
let increasingEnd = -1;

/**
 * The seq list made by {@linkcode seqList}, frozen in place, when every item
 * is a non-negative integer; `undefined` for any other value (including a
 * list already appended), which is then copied as usual.
 */
export function takeSeqList(value: unknown): readonly number[] | undefined {
  if (!Array.isArray(value) || !owned.delete(value)) return undefined;
  const length = value.length;
  let last = -1;
  let ordered = true;
  for (let i = 0; i < length; i++) {
    const seq: unknown = value[i];
    if (!count(seq)) return undefined;
    if (seq <= last) ordered = false;
    last = seq;
  }
  const frozen = Object.freeze(value);
  increasing = ordered && length > 0 ? frozen : undefined;
  increasingEnd = last;
  return frozen;
}

/**
 * The last seq of `value` when it is the last list {@linkcode takeSeqList}
 * froze and its seqs strictly increase (so none repeats, and each is a
 * non-negative safe integer); `undefined` for any other value. The list is
 * frozen, so what was checked still holds.
 */
export function increasingSeqsEnd(value: unknown): number | undefined {
  return value === increasing && value !== undefined ? increasingEnd : undefined;
}
