import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { runInNewContext } from "node:vm";
import fc from "fast-check";
import {
  copyPlainJson,
  EMPTY_ARRAY,
  increasingSeqsEnd,
  isVetted,
  seqList,
  takeSeqList,
  vouch,
} from "./_copy_event_data.ts";
import { copySeqs } from "./_copy_chunk_data.ts";
import { deepFreeze } from "./deep_freeze.ts";
import { copyLosslessJson } from "./lossless_json.ts";
import { Session } from "./session.ts";
import type { SessionEvent } from "./session_events.ts";

/** `session.append` for event types and payloads chosen at run time (the tests feed it good and bad data alike). */
function looseAppend(session: Session): (type: string, data: unknown, options?: object) => SessionEvent {
  return session.append.bind(session) as never;
}

function deepFrozen(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return true;
  if (!Object.isFrozen(value)) return false;
  return Object.values(value).every(deepFrozen);
}

// What the generic walk makes of `value`: its copy, or the code and path of its error.
function generic(value: unknown): { copy: unknown } | { code: string; path: unknown } {
  try {
    return { copy: copyLosslessJson(value, "data") };
  } catch (error) {
    const e = error as { code?: string; details?: { path?: unknown } };
    return { code: e.code ?? String(error), path: e.details?.path };
  }
}

// The fast copy agrees with the generic walk: the same JSON text (keys in the same order), deep-equal, deep-frozen;
// or `undefined`, and then the generic walk decides (accepts or rejects).
function agrees(value: unknown): void {
  const fast = copyPlainJson(value);
  const slow = generic(value);
  if (fast === undefined) return;
  assert.ok("copy" in slow, `the fast copy accepted what the generic walk rejects: ${JSON.stringify(slow)}`);
  assert.deepEqual(fast, slow.copy);
  assert.equal(JSON.stringify(fast), JSON.stringify(slow.copy));
  assert.ok(deepFrozen(fast));
}

function hasProtoKey(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  return Object.keys(value).some((key) => key === "__proto__") || Object.values(value).some(hasProtoKey);
}

class Point {
  x = 1;
}

describe("copyPlainJson()", () => {
  it("copies plain JSON exactly as the generic walk does, keys in their order, deep-frozen", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        agrees(value);
        // Without -0 (which the generic walk rejects) and without an own "__proto__" key (the generic walk's to
        // define), every JSON value takes the fast path.
        const clean = JSON.parse(JSON.stringify(value));
        if (clean !== null && !hasProtoKey(clean)) assert.notEqual(copyPlainJson(clean), undefined);
      }),
      { numRuns: 300 },
    );
    // fast-check generates own "__proto__" keys too: they take the generic walk, which keeps them as own properties.
    const proto = JSON.parse('{"a": {"__proto__": [1]}}');
    assert.equal(copyPlainJson(proto), undefined);
    assert.deepEqual(Object.keys(copyLosslessJson(proto).a), ["__proto__"]);
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        const clean = JSON.parse(JSON.stringify(value));
        if (clean !== null && !hasProtoKey(clean)) assert.notEqual(copyPlainJson(clean), undefined);
      }),
      { numRuns: 2000 },
    );
    const payloads = [
      { turn: 1, step: 2 },
      { step: 2, turn: 1 },
      { "2": "b", a: 1, "1": "a" },
      { id: "m", role: "user", content: [{ type: "text", text: "hi" }], source: { kind: "user" } },
      { target: "next-turn", start: 0, removedCount: 1, inserted: [], outcome: "claimed" },
      { nested: [[], {}, [null, true, false, 0, -1.5, ""]] },
      Object.assign(Object.create(null), { a: 1 }),
    ];
    for (const payload of payloads) {
      agrees(payload);
      assert.notEqual(copyPlainJson(payload), undefined);
      assert.notEqual(copyPlainJson(payload), payload);
    }
  });

  it("leaves everything else to the generic walk, which rejects it as before", () => {
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    const holey = [1, , 3];
    const extra = Object.assign([1], { note: "x" });
    const hidden = Object.defineProperty({ a: 1 }, "h", { value: 1 });
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const throwing = {
      get a() {
        throw new Error("getter");
      },
    };
    const odd: unknown[] = [
      undefined,
      NaN,
      Infinity,
      -0,
      1n,
      Symbol("s"),
      () => 1,
      new Date(0),
      new Point(),
      new Map(),
      holey,
      extra,
      hidden,
      { [Symbol("k")]: 1 },
      { a: undefined },
      { a: [undefined] },
      { a: -0 },
      cyclic,
      [revocable.proxy],
      throwing,
      JSON.parse('{"__proto__": 1}'),
      runInNewContext("({ a: [1] })"),
    ];
    for (const [i, value] of odd.entries()) {
      const wrapped = { deep: [{ value }] };
      agrees(value);
      agrees(wrapped);
      assert.equal(copyPlainJson(value), undefined, `odd value ${i}`);
      assert.equal(copyPlainJson(wrapped), undefined, `odd value ${i}`);
    }
    // Mixed: plain JSON with an odd value somewhere inside, at any depth.
    const oddLeaf = fc.constantFrom<unknown>(undefined, NaN, -0, 1n, new Point(), holey, extra, hidden, cyclic);
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), oddLeaf, fc.nat(40), (json, bad, depth) => {
        let value: unknown = { json, bad };
        for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { v: value };
        assert.equal(copyPlainJson(value), undefined);
        agrees(value);
      }),
      { numRuns: 200 },
    );
  });

  it("hands nesting deeper than its limit to the generic walk, which copies it", () => {
    let value: unknown = "leaf";
    for (let i = 0; i < 100; i++) value = { v: [value] };
    assert.equal(copyPlainJson(value), undefined);
    assert.deepEqual(copyLosslessJson(value), value);
  });

  it("shares vetted values, copies everything else (a frozen object too)", () => {
    const block = vouch(copyPlainJson({ type: "text", text: "x" }) as object);
    assert.ok(isVetted(block));
    const message = { id: "a", role: "assistant", content: [block], source: { kind: "model" } };
    const copy = copyPlainJson(message) as { content: object[] };
    assert.equal(copy.content[0], block);
    assert.ok(deepFrozen(copy));
    assert.ok(!isVetted(copy), "only what is vouched for is shared");
    assert.notEqual(copyPlainJson(copy), copy);
    const frozen = Object.freeze({ a: Object.freeze([1]) });
    assert.notEqual(copyPlainJson(frozen), frozen);
    assert.equal(copyPlainJson([]), EMPTY_ARRAY);
    assert.ok(Object.isFrozen(EMPTY_ARRAY));
    assert.ok(!isVetted({}) && !isVetted(null) && !isVetted("x"));
    // deepFreeze leaves a vetted value as it is (it is deep-frozen already).
    assert.equal(deepFreeze({ v: block }).v, block);
  });
});

describe("seqList() / takeSeqList()", () => {
  it("freezes the filled list in place, once, as copySeqs would copy it", () => {
    const list = seqList();
    list.push(3, 4, 9);
    const taken = takeSeqList(list)!;
    assert.equal(taken, list);
    assert.deepEqual(taken, copySeqs([3, 4, 9]));
    assert.ok(Object.isFrozen(taken));
    assert.equal(takeSeqList(list), undefined);
    assert.equal(takeSeqList([1, 2]), undefined);
    assert.equal(takeSeqList("1"), undefined);
    const bad = seqList();
    bad.push(1, -0);
    assert.equal(takeSeqList(bad), undefined);
    assert.ok(!Object.isFrozen(bad));
  });
});

describe("the surface's check of a taken seq list", () => {
  // One session per list: `prior` custom events, then an assistant message citing `seqs`, given either as a
  // list made by seqList() (frozen in place; the surface skips its walk when takeSeqList found the seqs in
  // strictly increasing order) or as a plain array (copied by copySeqs; always walked).
  const attempt = (seqs: number[], prior: number, taken: boolean, type = "assistant/message") => {
    const session = Session.create("s", undefined, { now: () => 1 });
    for (let i = 0; i < prior; i++) looseAppend(session)("acme/x", { i });
    let list = seqs;
    if (taken) {
      list = seqList();
      list.push(...seqs);
    }
    const data = type === "assistant/message"
      ? {
        turn: 1,
        step: 1,
        message: { id: "a", role: "assistant", content: [], source: { kind: "model", provider: "p", model: "m" } },
      }
      : { id: "u", role: "user", content: [{ type: "text", text: "u" }], source: { kind: "user" } };
    try {
      const event = looseAppend(session)(type, data, { surfaceOp: "append", sourceEventSeqs: list });
      assert.ok(Object.isFrozen(event.sourceEventSeqs));
      return { ok: [...event.sourceEventSeqs!], seq: session.seq };
    } catch (error) {
      const e = error as { code?: string; message?: string };
      return { code: e.code, message: e.message, seq: session.seq };
    }
  };

  it("accepts and rejects exactly what the walk does, with the same error", () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(12), { maxLength: 8 }),
        fc.nat(10),
        fc.constantFrom("assistant/message", "user/message"),
        (seqs, prior, type) => {
          assert.deepEqual(attempt(seqs, prior, true, type), attempt(seqs, prior, false, type));
        },
      ),
      { numRuns: 400 },
    );
  });

  it("walks a list that cites a later seq, repeats one or is out of order", () => {
    assert.deepEqual(attempt([0, 1, 2], 3, true), { ok: [0, 1, 2], seq: 4 });
    for (
      const [seqs, text] of [
        [[0, 1, 3], "cites the later seq 3"],
        [[0, 3, 5], "cites the later seq 3"],
        [[0, 1, 1], "repeats 1"],
        [[2, 0, 2], "repeats 2"],
      ] as const
    ) {
      const outcome = attempt([...seqs], 3, true);
      assert.equal(outcome.code, "SOURCE_SEQS_INVALID");
      assert.ok(outcome.message?.includes(text), outcome.message);
      assert.equal(outcome.seq, 3);
    }
    // Only the last list taken, when increasing, is vouched for; the others are walked.
    const first = seqList();
    first.push(0, 4);
    assert.equal(increasingSeqsEnd(takeSeqList(first)), 4);
    const second = seqList();
    second.push(5, 6);
    assert.equal(increasingSeqsEnd(takeSeqList(second)), 6);
    assert.equal(increasingSeqsEnd(first), undefined);
    const unordered = seqList();
    unordered.push(1, 0);
    assert.equal(increasingSeqsEnd(takeSeqList(unordered)), undefined);
    assert.equal(increasingSeqsEnd(second), undefined);
    assert.equal(increasingSeqsEnd(takeSeqList(seqList())), undefined);
    assert.equal(increasingSeqsEnd([5, 6]), undefined);
    assert.equal(increasingSeqsEnd(undefined), undefined);
  });
});

describe("Session.append with the fast copies", () => {
  const message = (id: string) => ({
    id,
    role: "user" as const,
    content: [{ type: "text" as const, text: id }],
    source: { kind: "user" as const },
  });

  it("commits the same events as the generic copy, and shares what the log already holds", () => {
    const session = Session.create("s", undefined, { now: () => 1 });
    const payloads: [string, unknown][] = [
      ["turn/start", { turn: 1 }],
      ["agent/inbox/spliced", { target: "next-turn", start: 0, inserted: [{ id: "e", message: message("m") }] }],
      ["step/start", { step: 1, turn: 1 }],
      ["tool/call", { turn: 1, step: 1, callId: "c", name: "add", arguments: "{}" }],
      ["acme/custom", { list: [1, "two", null, { deep: [true] }] }],
      ["acme/scalar", "text"],
      ["acme/null", null],
      ["turn/end", { turn: 1, reason: { kind: "error", error: { code: "X", message: "x" } } }],
    ];
    for (const [type, data] of payloads) {
      const event = looseAppend(session)(type, data);
      assert.deepEqual(event.data, copyLosslessJson(data));
      assert.equal(JSON.stringify(event.data), JSON.stringify(copyLosslessJson(data)));
      assert.ok(deepFrozen(event));
    }
    const splice = session.events[1].data as unknown as { inserted: { message: object }[] };
    const user = session.append("user/message", splice.inserted[0].message as never, { surfaceOp: "append" });
    assert.equal(user.data, splice.inserted[0].message);
    const list = seqList();
    list.push(0, 2);
    const assistant = session.append("assistant/message", {
      turn: 1,
      step: 1,
      message: { id: "a", role: "assistant", content: [], source: { kind: "model", provider: "p", model: "m" } },
    }, { surfaceOp: "append", sourceEventSeqs: list });
    assert.equal(assistant.sourceEventSeqs, list);
    assert.ok(deepFrozen(assistant));
  });

  it("rejects what the generic copy rejects, with the same code and path, and commits nothing", () => {
    const session = Session.create("s");
    session.append("turn/start", { turn: 1 });
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    const bad: [string, unknown][] = [
      ["step/start", { turn: 1, step: -0 }],
      ["tool/call", { turn: 1, step: 1, callId: "c", name: "add", arguments: undefined }],
      ["acme/custom", { list: [1, , 3] }],
      ["acme/custom", { when: new Date(0) }],
      ["acme/custom", { p: revocable.proxy }],
      ["user/message", { ...message("m"), content: [{ type: "text", text: "x", [Symbol("s")]: 1 }] }],
    ];
    for (const [type, data] of bad) {
      const expected = generic(data) as { code: string; path: unknown };
      assert.ok("code" in expected);
      assert.throws(
        () => looseAppend(session)(type, data, type === "user/message" ? { surfaceOp: "append" } : undefined),
        (error: { code?: string; details?: { path?: unknown } }) =>
          error.code === expected.code && error.details?.path === expected.path,
      );
    }
    assert.equal(session.seq, 1);
    // Shape errors come from the same validation as before.
    assert.throws(() => session.append("step/start", { turn: 0, step: 1 }), { code: "INVALID_EVENT" });
    const list = seqList();
    list.push(5);
    assert.throws(
      () => session.append("user/message", message("m2"), { surfaceOp: "append", sourceEventSeqs: list }),
      { code: "SOURCE_SEQS_INVALID" },
    );
    assert.equal(session.seq, 1);
  });
});
