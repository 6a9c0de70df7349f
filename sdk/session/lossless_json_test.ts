import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { assertLosslessJson, copyLosslessJson } from "./lossless_json.ts";
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
