import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { runInNewContext } from "node:vm";
import fc from "fast-check";
import { assertLosslessJson, copyLosslessJson, MAX_NESTING } from "./lossless_json.ts";
import { deepFreeze } from "./deep_freeze.ts";
import { HarnessError } from "../kernel/harness_error.ts";

const rejects = (value: unknown, pattern: RegExp) =>
  assert.throws(
    () => copyLosslessJson(value, "data"),
    (e: unknown) => HarnessError.isInstance(e, "NOT_LOSSLESS_JSON") && pattern.test((e as Error).message),
  );

describe("copyLosslessJson()", () => {
  it("rejects every value JSON cannot carry losslessly, naming its path", () => {
    rejects({ a: undefined }, /data\.a .*undefined/);
    rejects({ a: 1n }, /BigInt/);
    rejects({ a: -0 }, /negative zero/);
    rejects([NaN], /data\[0\].*NaN/);
    rejects({ x: Infinity }, /Infinity/);
    rejects({ x: -Infinity }, /Infinity/);
    rejects([1, , 3], /data\[1\].*sparse/);
    rejects({ f() {} }, /function/);
    rejects({ s: Symbol("x") }, /symbol/);
    rejects({ d: new Date(0) }, /Date/);
    rejects({ m: new Map() }, /Map/);
    rejects(new (class Point {})(), /Point/);
    rejects({ [Symbol("k")]: 1 }, /symbol keys/);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    rejects(cycle, /circular/);
    const arrayCycle: unknown[] = [];
    arrayCycle.push([arrayCycle]);
    rejects(arrayCycle, /circular/);
  });

  it("accepts shared (acyclic) references, null-prototype objects and -0's positive twin", () => {
    const shared = { n: 1 };
    assert.deepEqual(copyLosslessJson({ a: shared, b: shared, z: 0 }), { a: { n: 1 }, b: { n: 1 }, z: 0 });
    const bare = Object.assign(Object.create(null), { k: "v" });
    assert.deepEqual({ ...copyLosslessJson(bare) }, { k: "v" });
  });

  it("returns a deep-frozen copy independent of the input", () => {
    const input = { list: [{ text: "a" }], n: 1 };
    const copy = copyLosslessJson(input);
    assert.notEqual(copy, input);
    assert.notEqual(copy.list[0], input.list[0]);
    input.list[0].text = "changed";
    input.list.push({ text: "b" });
    assert.deepEqual(copy, { list: [{ text: "a" }], n: 1 });
    assert.ok(Object.isFrozen(copy) && Object.isFrozen(copy.list) && Object.isFrozen(copy.list[0]));
  });

  it("reads each property once, so a getter cannot pass the check with one value and store another", () => {
    let reads = 0;
    const tricky = {
      get value() {
        reads++;
        return reads === 1 ? 1 : undefined;
      },
    };
    assert.deepEqual(copyLosslessJson(tricky), { value: 1 });
    assert.equal(reads, 1);
  });

  it("keeps a key named __proto__ as an own property", () => {
    const input = JSON.parse('{"__proto__": {"x": 1}}');
    const copy = copyLosslessJson(input);
    assert.equal(Object.getPrototypeOf(copy), Object.prototype);
    assert.equal(JSON.stringify(copy), '{"__proto__":{"x":1}}');
  });
});

// Nests `leaf` `depth` levels deep, alternating arrays and objects.
function nest(leaf: unknown, depth: number, kinds: readonly ("array" | "object")[] = ["array", "object"]): unknown {
  let value = leaf;
  for (let d = 0; d < depth; d++) value = kinds[d % kinds.length] === "array" ? [value] : { k: value };
  return value;
}

// Whether `a` and `b` are the same JSON, walked iteratively (JSON.stringify
// overflows Node's stack on such depths): same primitives (`Object.is`), same
// container kinds, the same own keys in the same order (symbols and
// non-enumerable ones included) and plain prototypes (`Object.prototype`,
// `null`, `Array.prototype`, or another realm's). A getter is read once, here.
function sameJson(a: unknown, b: unknown): boolean {
  const stack: [unknown, unknown][] = [[a, b]];
  const plain = (x: object) => {
    const proto = Object.getPrototypeOf(x);
    if (proto === null || proto === Object.prototype || proto === Array.prototype) return true;
    const ctor = Object.getOwnPropertyDescriptor(proto, "constructor")?.value;
    return typeof ctor === "function" && (ctor.name === "Object" || ctor.name === "Array") &&
      /\[native code\]/.test(Function.prototype.toString.call(ctor)) && ctor.prototype === proto;
  };
  while (stack.length > 0) {
    const [x, y] = stack.pop()!;
    if (typeof x !== "object" || x === null || typeof y !== "object" || y === null) {
      if (!Object.is(x, y)) return false;
      continue;
    }
    if (Array.isArray(x) !== Array.isArray(y) || !plain(x) || !plain(y)) return false;
    const xk = Reflect.ownKeys(x), yk = Reflect.ownKeys(y);
    if (xk.length !== yk.length || xk.some((k, i) => k !== yk[i])) return false;
    for (const k of xk) {
      const dx = Object.getOwnPropertyDescriptor(x, k)!, dy = Object.getOwnPropertyDescriptor(y, k)!;
      if (dx.enumerable !== dy.enumerable) return false;
      if (k !== "length" || !Array.isArray(x)) {
        stack.push([(x as Record<PropertyKey, unknown>)[k], (y as Record<PropertyKey, unknown>)[k]]);
      } else if (dx.value !== dy.value) return false;
    }
  }
  return true;
}

// Whether JSON.stringify / JSON.parse gives `value` back unchanged.
function jsonKeeps(value: unknown): boolean {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return false; // a cycle or a BigInt
  }
  return text !== undefined && sameJson(JSON.parse(text), value);
}

describe("copyLosslessJson(value, path, { normalize: true })", () => {
  it("drops undefined properties and turns -0 into 0, as JSON.stringify would, and still refuses the rest", () => {
    const copy = copyLosslessJson({ a: undefined, b: -0, c: [{ d: undefined, e: 1 }] }, "v", { normalize: true }) as {
      b: number;
      c: object[];
    };
    assert.deepEqual(copy, { b: 0, c: [{ e: 1 }] });
    assert.ok(Object.is(copy.b, 0) && !("a" in copy) && Object.isFrozen(copy.c[0]));
    // 200 levels: the recursive walk and the iterative one below it both normalise.
    const deep = copyLosslessJson(nest({ x: undefined, y: -0 }, 200), "v", { normalize: true });
    assert.deepEqual(deep, nest({ y: 0 }, 200));
    for (const bad of [[undefined], { m: new Map() }, { n: NaN }, { f: () => 1 }]) {
      assert.throws(() => copyLosslessJson(bad, "v", { normalize: true }), { code: "NOT_LOSSLESS_JSON" });
    }
    assert.throws(() => copyLosslessJson({ a: undefined }, "v"), /undefined/);
  });
});

describe("copyLosslessJson() on deep data", () => {
  it("copies and checks arrays, objects and mixes nested MAX_NESTING levels deep, past its recursive part", () => {
    for (const kinds of [["array"], ["object"], ["array", "object"]] as const) {
      // The leaf adds two levels: MAX_NESTING in all.
      const value = nest({ leaf: [1, "x", null] }, MAX_NESTING - 2, kinds);
      assertLosslessJson(value);
      const copy = copyLosslessJson(value);
      assert.ok(sameJson(copy, value));
      let cursor: unknown = copy;
      for (let d = 0; d < MAX_NESTING - 2; d++) {
        assert.ok(Object.isFrozen(cursor));
        cursor = Array.isArray(cursor) ? cursor[0] : (cursor as { k: unknown }).k;
      }
      assert.ok(Object.isFrozen(cursor) && Object.isFrozen((cursor as { leaf: unknown }).leaf));
      // What the cap is for: this runtime stringifies and parses it, inside an event, from a nested call.
      const deepCall = (n: number): string => n === 0 ? JSON.stringify({ seq: 0, data: copy }) : deepCall(n - 1);
      assert.ok(sameJson(JSON.parse(deepCall(200)).data, value));
    }
  });

  it("refuses nesting past MAX_NESTING with a coded error naming the first container too deep, at any depth", () => {
    for (const kinds of [["array"], ["object"]] as const) {
      for (const depth of [MAX_NESTING + 1, 20_000, 200_000]) {
        const value = nest(1, depth, kinds);
        const path = "data" + (kinds[0] === "array" ? "[0]" : ".k").repeat(MAX_NESTING);
        for (const walk of [() => copyLosslessJson(value, "data"), () => assertLosslessJson(value, "data")]) {
          const error = caught(walk);
          assert.equal(error.code, "NOT_LOSSLESS_JSON", `${kinds} ${depth}`);
          assert.equal(error.path, path);
          assert.match(error.message, /nested deeper than 1000 levels/);
        }
      }
    }
    assert.equal(copyLosslessJson(nest(1, MAX_NESTING, ["array"])) !== undefined, true);
  });

  it("refuses a bad value or a cycle far down with a coded error naming its path", () => {
    const bad = caught(() => copyLosslessJson(nest({ bad: undefined }, 900, ["array"]), "data"));
    assert.equal(bad.code, "NOT_LOSSLESS_JSON");
    assert.equal(bad.path, "data" + "[0]".repeat(900) + ".bad");
    const ring: Record<string, unknown> = {};
    ring.next = nest(ring, 900, ["object"]);
    const cycle = caught(() => assertLosslessJson(ring));
    assert.equal(cycle.code, "NOT_LOSSLESS_JSON");
    assert.match(cycle.message.slice(-40), /circular/);
    // A value that repeats (without a cycle) at depth is fine.
    const shared = [1];
    assert.deepEqual(copyLosslessJson(nest([shared, shared], 100, ["array"])), nest([[1], [1]], 100, ["array"]));
  });
});

function caught(fn: () => unknown): { code?: string; message: string; path?: string } {
  try {
    fn();
  } catch (e) {
    const error = e as HarnessError;
    return { code: error.code, message: error.message, path: (error.details as { path?: string })?.path };
  }
  return { message: "no error" };
}

describe("copyLosslessJson() refuses what JSON would drop", () => {
  it("refuses arrays with extra properties, enumerable or not, string- or symbol-keyed", () => {
    const enumerable = Object.assign([1, 2], { note: "x" });
    const hidden = Object.defineProperty([1], "note", { value: "x" });
    const symbolic = Object.defineProperty([1], Symbol("s"), { value: "x", enumerable: true });
    // A hole "paid for" by an extra property: as many own keys as a dense array.
    const compensated = Object.defineProperty(new Array(2), "x", { value: 1 });
    compensated[0] = 1;
    rejects({ list: enumerable }, /data\.list .*extra property "note"/);
    rejects(hidden, /extra property "note"/);
    rejects(symbolic, /symbol-keyed/);
    rejects({ a: compensated }, /data\.a\[1\].*sparse/);
    for (const value of [enumerable, hidden, symbolic, compensated]) {
      assert.throws(() => assertLosslessJson(value), { code: "NOT_LOSSLESS_JSON" });
    }
  });

  it("refuses objects with non-enumerable properties", () => {
    const hidden = Object.defineProperty({ shown: 1 }, "hidden", { value: 2 });
    rejects({ a: [hidden] }, /data\.a\[0\] .*non-enumerable/);
    assert.throws(() => assertLosslessJson(hidden), { code: "NOT_LOSSLESS_JSON" });
  });

  it("accepts plain objects and arrays from another realm, and copies them into this one", () => {
    const foreign = runInNewContext(
      "({ object: { nested: [1] }, array: [2, { ok: true }], bare: Object.create(null) })",
    );
    assert.notEqual(Object.getPrototypeOf(foreign), Object.prototype);
    assertLosslessJson(foreign);
    const copy = copyLosslessJson(foreign) as { object: { nested: number[] }; array: unknown[] };
    assert.deepEqual(copy, { object: { nested: [1] }, array: [2, { ok: true }], bare: {} });
    assert.equal(Object.getPrototypeOf(copy.object), Object.prototype);
    assert.equal(Object.getPrototypeOf(copy.array), Array.prototype);
  });

  it("still refuses another realm's class instances, array subclasses and decorated arrays", () => {
    const [box, list, decorated] = runInNewContext(`(() => {
      class Box { constructor() { this.value = 1 } }
      class List extends Array {}
      return [new Box(), List.from([1]), Object.assign([1], { extra: 1 })];
    })()`);
    rejects(box, /Box/);
    rejects(list, /List/);
    rejects(decorated, /extra property/);
  });

  it("refuses forged prototypes that only pose as Object.prototype", () => {
    const forged = (ctor: unknown) => {
      const proto = Object.create(null);
      Object.defineProperty(proto, "constructor", { value: ctor });
      return Object.assign(Object.create(proto), { value: 1 });
    };
    function Object_() {}
    Object.defineProperty(Object_, "name", { value: "Object" });
    rejects(forged(Object_), /not lossless JSON/);
    // Pointing at this realm's Object is not enough either: its prototype is not `proto`.
    rejects(forged(Object), /not lossless JSON/);
  });

  it("answers a revoked proxy, as a value or as a constructor, with a coded error", () => {
    const proxy = Proxy.revocable({}, {});
    proxy.revoke();
    rejects({ p: proxy.proxy }, /data\.p .*revoked proxy/);
    const ctor = Proxy.revocable(function Object() {}, {});
    ctor.revoke();
    const proto = Object.create(null);
    Object.defineProperty(proto, "constructor", { value: ctor.proxy });
    rejects(Object.assign(Object.create(proto), { value: 1 }), /exotic class/);
  });
});

describe("copyLosslessJson() properties", () => {
  it("round-trips arbitrary JSON nested up to MAX_NESTING levels deep", () => {
    const arbDeep = fc.record({
      // fc.jsonValue() may hold -0, which JSON turns into 0: take what JSON gives back.
      leaf: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.parse(JSON.stringify(v))),
      // The leaf nests a few levels of its own.
      depth: fc.oneof(fc.nat(50), fc.integer({ min: 0, max: MAX_NESTING - 10 })),
      kinds: fc.array(fc.constantFrom("array" as const, "object" as const), { minLength: 1, maxLength: 5 }),
    });
    fc.assert(
      fc.property(arbDeep, ({ leaf, depth, kinds }) => {
        const value = nest(leaf, depth, kinds);
        const copy = copyLosslessJson(value);
        assert.ok(sameJson(copy, value));
        if (depth <= 50) assert.equal(JSON.stringify(copy), JSON.stringify(value));
      }),
      { numRuns: 60 },
    );
  });

  it("refuses exactly the values JSON.stringify / JSON.parse would change", () => {
    class Point {
      x = 1;
    }
    const odd = fc.oneof(
      fc.constantFrom<unknown>(undefined, NaN, Infinity, -Infinity, -0, 1n, Symbol("s"), () => 1, new Date(0)),
      fc.constant(null).map(() => new Point()),
      fc.constant(null).map(() => Object.assign([1], { extra: true })),
      fc.constant(null).map(() => Object.defineProperty([1], "hidden", { value: 1 })),
      fc.constant(null).map(() => Object.defineProperty({ a: 1 }, "hidden", { value: 1 })),
      fc.constant(null).map(() => ({ [Symbol("k")]: 1 })),
      fc.constant(null).map(() => [1, , 3]),
      fc.constant(null).map(() => runInNewContext("({ nested: [1, { ok: true }] })")),
    );
    const anything = fc.anything({
      maxDepth: 3,
      withBigInt: true,
      withBoxedValues: true,
      withDate: true,
      withMap: true,
      withSet: true,
      withNullPrototype: true,
      withObjectString: true,
      withSparseArray: true,
      withTypedArray: true,
    });
    const arbValue = fc.oneof(
      anything,
      fc.jsonValue({ maxDepth: 3 }),
      fc.tuple(fc.jsonValue({ maxDepth: 2 }), odd, fc.nat(30)).map(([json, bad, depth]) => nest({ json, bad }, depth)),
    );
    fc.assert(
      fc.property(arbValue, (value) => {
        let copy: unknown;
        let accepted = true;
        try {
          copy = copyLosslessJson(value);
        } catch (e) {
          assert.ok(HarnessError.isInstance(e, "NOT_LOSSLESS_JSON"), String(e));
          accepted = false;
        }
        assert.equal(accepted, jsonKeeps(value));
        if (accepted) assert.ok(sameJson(copy, value));
        let checked = true;
        try {
          assertLosslessJson(value);
        } catch {
          checked = false;
        }
        assert.equal(checked, accepted);
      }),
      { numRuns: 500 },
    );
  });
});

describe("assertLosslessJson()", () => {
  it("checks without copying or freezing", () => {
    const value = { a: [1] };
    assertLosslessJson(value);
    assert.equal(Object.isFrozen(value), false);
    assert.throws(() => assertLosslessJson({ a: [undefined] }, "event"), /event\.a\[0\]/);
  });
});

describe("deepFreeze()", () => {
  it("freezes every reachable object in place, cycles included", () => {
    const value: Record<string, unknown> = { a: { b: [{ c: 1 }] } };
    value.self = value;
    assert.equal(deepFreeze(value), value);
    assert.ok(Object.isFrozen((value.a as { b: object[] }).b[0]));
    assert.equal(deepFreeze(3), 3);
  });
});
