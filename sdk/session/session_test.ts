import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { appendBracket, appendChunk, type BracketType, Session, SESSION_FORMAT_VERSION } from "./session.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionEvent, SessionEventMap } from "./mod.ts";
import type { UserMessage } from "../llm/messages.ts";
import { renderTranscript } from "./transcript.ts";
import { MAX_NESTING } from "./lossless_json.ts";

const clock = () => {
  let t = 100;
  return () => t++;
};
const user = (id: string, text = id): UserMessage => ({
  id,
  role: "user",
  content: [{ type: "text", text }],
  source: { kind: "user" },
});
const assistant = (id: string, text: string): SessionEventMap["assistant/message"] => ({
  turn: 1,
  step: 1,
  message: {
    id,
    role: "assistant",
    content: text ? [{ type: "text", text }] : [],
    source: { kind: "model", provider: "p", model: "m" },
  },
});
const code = (c: string) => (e: unknown) => HarnessError.isInstance(e, c);
// deno-lint-ignore no-explicit-any
const loose = (s: Session) => s as unknown as { append(type: string, data: unknown, ...rest: any[]): SessionEvent };

describe("Session.append()", () => {
  it("stamps seq from 0 and time from the clock option, and returns the committed event", () => {
    const session = Session.create("s", undefined, { now: clock() });
    const a = session.append("turn/start", { turn: 1 });
    const b = session.append("user/message", user("m1"), { surfaceOp: "append" });
    assert.deepEqual([a.seq, a.time, b.seq, b.time], [0, 101, 1, 102]);
    assert.equal(session.seq, 2);
    assert.equal(session.header.createdAt, 100);
    assert.equal(session.firstLiveSeq, 0);
    assert.deepEqual(session.events, [a, b]);
  });

  it("slice() takes seqs: from start to end, never wrapping from the end for a negative bound", () => {
    const session = Session.create("s", undefined, { now: clock() });
    for (let turn = 1; turn <= 3; turn++) session.append("turn/start", { turn });
    assert.deepEqual(session.slice(1).map((e) => e.seq), [1, 2]);
    assert.deepEqual(session.slice(0, 2).map((e) => e.seq), [0, 1]);
    assert.deepEqual(session.slice(5), []);
    for (const [start, end] of [[-1, undefined], [0, -1], [0.5, undefined], [Number.NaN, undefined]]) {
      assert.throws(() => session.slice(start as number, end), code("INVALID_ARGS"), `${start}, ${end}`);
    }
  });

  it("copies and deep-freezes the data, so the caller's object can change freely", () => {
    const session = Session.create("s");
    const data = user("m1");
    const event = session.append("user/message", data, { surfaceOp: "append", sourceEventSeqs: undefined });
    assert.notEqual(event.data, data);
    assert.ok(Object.isFrozen(event) && Object.isFrozen(event.data) && Object.isFrozen(event.data.content[0]));
    (data.content as unknown[]).length = 0;
    assert.equal((session.events[0] as SessionEvent<"user/message">).data.content.length, 1);
    assert.equal("sourceEventSeqs" in event, false);
  });

  it("requires the surface intent exactly for the three surface types, at run time too", () => {
    const session = Session.create("s");
    for (const type of ["user/message", "assistant/message", "tool/result"]) {
      assert.throws(() => loose(session).append(type, {}), code("SURFACE_OP_MISSING"), type);
    }
    assert.throws(
      () => loose(session).append("turn/start", { turn: 1 }, { surfaceOp: "append" }),
      code("SURFACE_OP_FORBIDDEN"),
    );
    assert.throws(() => loose(session).append("user/message", user("m"), {}), code("SURFACE_OP_MISSING"));
    assert.equal(session.seq, 0);
  });

  it("loads a stored todo/write whose items appends would now refuse, and renders it", () => {
    const events = [{
      type: "todo/write",
      seq: 0,
      time: 0,
      data: { todos: [{ content: "x", status: "cancelled" }, null, 4] },
    }];
    const session = Session.create("s", events as never);
    assert.equal(session.at(0)?.type, "todo/write");
    assert.match(renderTranscript(session.events), /- \[\?\] x\n- \[\?\] null\n- \[\?\] 4/);
  });

  it("refuses a usage chunk whose token counts are not non-negative integers, on both append paths; a stored one loads", () => {
    const bad = [
      { inputTokens: "05", outputTokens: 1 },
      { inputTokens: 1, outputTokens: -2 },
      { inputTokens: 1, outputTokens: 2, reasoningTokens: 1.5 },
      { inputTokens: 1 },
      { inputTokens: 1, outputTokens: 2, extra: "kept" }, // unknown fields stay lossless: this one is accepted
    ];
    for (const [i, usage] of bad.entries()) {
      const accepted = i === bad.length - 1;
      for (const via of ["append", "appendChunk"] as const) {
        const session = Session.create("s");
        const chunk = { type: "usage", usage };
        const append = () =>
          via === "append"
            ? session.append("assistant/chunk", { turn: 1, step: 1, chunk } as never)
            : appendChunk(session, 1, 1, chunk as never);
        if (accepted) append();
        else assert.throws(append, (e: unknown) => HarnessError.isInstance(e, "INVALID_EVENT"), `${via} ${i}`);
        assert.equal(session.seq, accepted ? 1 : 0, `${via} ${i}`);
      }
    }
    const stored = [{
      type: "assistant/chunk",
      seq: 0,
      time: 0,
      data: { turn: 1, step: 1, chunk: { type: "usage", usage: { inputTokens: "05", outputTokens: 1 } } },
    }];
    assert.equal(Session.create("s", stored as never).at(0)?.type, "assistant/chunk");
  });

  it("throws every validation error before committing anything", () => {
    const session = Session.create("s");
    session.append("user/message", user("m0"), { surfaceOp: "append" });
    const before = session.events;
    const bad: [string, unknown, unknown[], string][] = [
      ["todo/write", { todos: [{ content: "x", status: "pending", extra: undefined }] }, [], "NOT_LOSSLESS_JSON"],
      ["todo/write", { todos: [], when: new Date() }, [], "NOT_LOSSLESS_JSON"],
      // Items of the TodoItem shape only: a transcript and the todos projection read them.
      ["todo/write", { todos: [null] }, [], "INVALID_EVENT"],
      ["todo/write", { todos: [42] }, [], "INVALID_EVENT"],
      ["todo/write", { todos: [{ content: "x", status: "weird" }] }, [], "INVALID_EVENT"],
      ["todo/write", { todos: [{ status: "pending" }] }, [], "INVALID_EVENT"],
      ["todo/write", { todos: [{ id: 7, content: "x", status: "pending" }] }, [], "INVALID_EVENT"],
      ["user/message", { ...user("m1"), role: "assistant" }, [{ surfaceOp: "append" }], "INVALID_EVENT"],
      ["assistant/message", {
        ...assistant("a", "x"),
        message: { ...assistant("a", "x").message, source: { kind: "user" } },
      }, [{
        surfaceOp: "append",
      }], "INVALID_EVENT"],
      [
        "tool/result",
        {
          turn: 1,
          step: 1,
          message: { ...user("r"), source: { kind: "tool", callId: "c1" } },
        },
        [{ surfaceOp: "append" }],
        "INVALID_EVENT",
      ],
      ["request/header", { header: { config: { provider: "p" } }, reason: "initial" }, [], "INVALID_EVENT"],
      ["request/header", { header: { config: { provider: "p", model: "m" } }, reason: "fallback" }, [], "LEGACY_EVENT"],
      ["request/header-delta", {}, [], "LEGACY_EVENT"],
      ["turn/start", { turn: 0 }, [], "INVALID_EVENT"],
      [
        "user/message",
        user("m2"),
        [{ surfaceOp: { op: "replace", start: 5, end: 5 }, sourceEventSeqs: [0] }],
        "REPLACE_RANGE_INVALID",
      ],
      ["user/message", user("m2"), [{ surfaceOp: "append", sourceEventSeqs: [1n] }], "NOT_LOSSLESS_JSON"],
      ["", {}, [], "INVALID_ARGS"],
    ];
    for (const [type, data, rest, expected] of bad) {
      assert.throws(() => loose(session).append(type, data, ...rest), code(expected), `${type} ${expected}`);
      assert.equal(session.events, before);
      assert.deepEqual(session.surface.nodes, [0]);
    }
  });

  it("refuses data nested deeper than MAX_NESTING (no storage could stringify it), at append, seed and restore", () => {
    const nest = (depth: number) => {
      let value: unknown = 1;
      for (let i = 0; i < depth; i++) value = { a: value };
      return value;
    };
    const session = Session.create("s", undefined, { now: () => 1 });
    // The payload is one level: MAX_NESTING in all, which this runtime stores.
    const ok = loose(session).append("x/note", { payload: nest(MAX_NESTING - 1) });
    assert.equal(JSON.parse(JSON.stringify(ok)).seq, 0);
    // What append took seeds and restores: the data nests as deep under its event.
    const stored = JSON.parse(JSON.stringify(session.events));
    assert.equal(Session.create("c", stored).seq, 2);
    assert.equal(Session.fromRestore("c", JSON.parse(JSON.stringify(session.events)), {}).seq, 2);
    for (const depth of [MAX_NESTING, 20_000]) {
      assert.throws(() => loose(session).append("x/note", { payload: nest(depth) }), (e: unknown) => {
        assert.ok(HarnessError.isInstance(e, "NOT_LOSSLESS_JSON"));
        assert.equal((e.details as { path: string }).path, "data.payload" + ".a".repeat(MAX_NESTING - 1));
        return true;
      });
      assert.equal(session.seq, 1);
      const seed = [{ type: "x/note", seq: 0, time: 1, data: { payload: nest(depth) } }];
      assert.throws(() => Session.create("c", seed as never), code("NOT_LOSSLESS_JSON"));
      assert.throws(() => Session.fromRestore("c", seed as never, {}), code("NOT_LOSSLESS_JSON"));
    }
  });

  it("accepts event types it does not know, as plugin events", () => {
    const session = Session.create("s");
    loose(session).append("hook/invoked", { handlerId: "h" });
    assert.equal(session.events[0].type, "hook/invoked");
    loose(session).append("note/✓😀", { ok: true });
    // Text every storage keeps as it is: no control character (PostgreSQL's text refuses U+0000), no lone surrogate.
    for (const type of ["x/a\u0000b", "x/\n", "x/\u007f", "x/\uD800", "x/\uDC00y"]) {
      assert.throws(() => loose(session).append(type, { n: 1 }), { code: "INVALID_ARGS" }, JSON.stringify(type));
    }
    assert.equal(session.seq, 2);
    // Types found good are remembered (a bounded set): many made-up ones, then the same checks again.
    for (let i = 0; i < 600; i++) loose(session).append(`note/${i}`, { i });
    loose(session).append("note/✓😀", { ok: false });
    assert.throws(() => loose(session).append("x/\uD800", { n: 1 }), { code: "INVALID_ARGS" });
    assert.equal(session.seq, 603);
  });

  it("reserves session/end-seed for the constructor", () => {
    const session = Session.create("s");
    assert.throws(() => loose(session).append("session/end-seed", {}), code("END_SEED_RESERVED"));
  });

  it("reuses the events snapshot until the next append and never grows a returned array", () => {
    const session = Session.create("s");
    session.append("turn/start", { turn: 1 });
    const first = session.events;
    assert.equal(session.events, first);
    assert.ok(Object.isFrozen(first));
    session.append("turn/end", { turn: 1, reason: { kind: "completed" } });
    assert.equal(first.length, 1);
    assert.equal(session.events.length, 2);
  });
});

describe("Session observers", () => {
  it("run after commit, in order, with failures contained", () => {
    const seen: string[] = [];
    const session = Session.create("s", undefined, {
      onCommit: (event, s) => seen.push(`commit ${event.seq} ${s.seq}`),
    });
    session.observe(() => {
      throw new Error("observer failure");
    });
    const stop = session.observe((event) => seen.push(`observe ${event.seq}`));
    const originalError = console.error;
    console.error = () => {};
    try {
      assert.equal(session.append("turn/start", { turn: 1 }).seq, 0);
      stop();
      session.append("turn/end", { turn: 1, reason: { kind: "completed" } });
    } finally {
      console.error = originalError;
    }
    assert.deepEqual(seen, ["commit 0 1", "observe 0", "commit 1 2"]);
  });

  it("reject appends made from inside an observer, leaving the log unchanged", () => {
    let caught: unknown;
    const session = Session.create("s");
    session.observe((_event, s) => {
      try {
        s.append("todo/write", { todos: [] });
      } catch (error) {
        caught = error;
      }
    });
    session.append("turn/start", { turn: 1 });
    assert.ok(HarnessError.isInstance(caught, "APPEND_REENTERED"));
    assert.equal(session.seq, 1);
    session.append("turn/end", { turn: 1, reason: { kind: "completed" } });
    assert.equal(session.seq, 2);
  });
});

describe("Session seeds and session/end-seed", () => {
  it("an empty seed gets an end-seed at seq 0; no seed gets none", () => {
    const seeded = Session.create("a", [], { now: () => 7 });
    assert.deepEqual(seeded.events, [{ type: "session/end-seed", seq: 0, time: 7, data: {} }]);
    assert.equal(seeded.firstLiveSeq, 0);
    assert.equal(Session.create("b").seq, 0);
  });

  it("a seed gets one end-seed at firstLiveSeq, unless it already ends with one", () => {
    const source = Session.create("a", undefined, { now: () => 0 });
    source.append("user/message", user("m1"), { surfaceOp: "append" });
    source.append("todo/write", { todos: [] });
    const child = Session.create("b", source.events, { now: () => 0 });
    assert.equal(child.firstLiveSeq, 2);
    assert.equal(child.events[2].type, "session/end-seed");
    assert.equal(child.seq, 3);
    assert.notEqual(child.events[0], source.events[0]);
    const again = Session.create("c", child.events);
    assert.equal(again.seq, 3);
    assert.equal(again.firstLiveSeq, 3);
    assert.equal(again.events.filter((e) => e.type === "session/end-seed").length, 1);
  });

  it("does not publish seed events or the end-seed to observers", () => {
    const seen: number[] = [];
    const session = Session.create("a", [{ type: "turn/start", seq: 0, time: 0, data: { turn: 1 } }], {
      onCommit: (e) => seen.push(e.seq),
    });
    session.append("turn/end", { turn: 1, reason: { kind: "completed" } });
    assert.deepEqual(seen, [2]);
  });

  it("validates the seed: envelope keys, seq, payloads and surface", () => {
    const ok: SessionEvent = { type: "turn/start", seq: 0, time: 0, data: { turn: 1 } };
    const cases: [unknown[], string][] = [
      [[{ ...ok, extra: 1 }], "INVALID_EVENT"],
      [[{ ...ok, seq: 1 }], "SEQ_NOT_CONTIGUOUS"],
      [[{ ...ok, time: "now" }], "INVALID_EVENT"],
      [[{ ...ok, ignorable: false }], "INVALID_EVENT"],
      [[{ type: "user/message", seq: 0, time: 0, data: user("m") }], "SURFACE_OP_MISSING"],
      [[{
        type: "assistant/message",
        seq: 0,
        time: 0,
        data: {
          ...assistant("a", "x"),
          message: { ...assistant("a", "x").message, source: { kind: "model", provider: "p" } },
        },
        surfaceOp: "append",
      }], "INVALID_EVENT"],
      [
        [{ type: "request/header", seq: 0, time: 0, data: { header: { config: { model: "m" } }, reason: "initial" } }],
        "INVALID_EVENT",
      ],
      [[{ type: "request/header-delta", seq: 0, time: 0, data: {} }], "LEGACY_EVENT"],
      [[{ ...ok, data: { turn: 1, n: NaN } }], "NOT_LOSSLESS_JSON"],
      [[null], "INVALID_EVENT"],
    ];
    for (const [seed, expected] of cases) {
      assert.throws(() => Session.create("s", seed as SessionEvent[]), code(expected), JSON.stringify(seed));
    }
    assert.throws(() => Session.create(""), code("INVALID_ARGS"));
    assert.throws(() => Session.create("s", {} as never), code("INVALID_ARGS"));
  });

  it("refuses, in a seed and at restore, the event types append refuses (no storage keeps them)", () => {
    for (const type of ["x/a\u0000b", "x/\n", "x/\u007f", "x/\uD800", "x/\uDC00y"]) {
      const seed = [{ type, seq: 0, time: 0, data: {} }];
      assert.throws(() => Session.create("s", seed as never), code("INVALID_EVENT"), JSON.stringify(type));
      assert.throws(() => Session.fromRestore("s", seed as never, {}), code("INVALID_EVENT"), JSON.stringify(type));
    }
  });
});

describe("Session validation of what is seeded or restored", () => {
  const header = (config: Record<string, unknown>, adapterDefaults?: unknown) => ({
    type: "request/header",
    seq: 0,
    time: 1,
    data: {
      header: {
        config: { provider: "p", model: "m", ...config },
        ...(adapterDefaults === undefined ? {} : { adapterDefaults }),
      },
      reason: "initial",
    },
  });

  it("a seeded request/header keeps a non-empty reasoningEffort and refuses any other", () => {
    const valid = header({ reasoningEffort: "high" });
    assert.deepEqual(Session.create("s", [valid as SessionEvent]).events[0], valid);
    for (const reasoningEffort of ["", 1, null]) {
      const seed = [header({ reasoningEffort })];
      assert.throws(() => Session.create("s", seed as never), code("INVALID_EVENT"), String(reasoningEffort));
    }
  });

  it("a seeded request/header's adapterDefaults marks present config fields with true, nothing else", () => {
    const valid = header({ maxTokens: 256_000, reasoningEffort: "high" }, { maxTokens: true, reasoningEffort: true });
    assert.deepEqual(Session.create("s", [valid as SessionEvent]).events[0], valid);
    for (const adapterDefaults of [null, [], "yes", { unknown: true }, { maxTokens: false }, { maxTokens: 1 }]) {
      const seed = [header({ maxTokens: 256_000 }, adapterDefaults)];
      assert.throws(() => Session.create("s", seed as never), code("INVALID_EVENT"), JSON.stringify(adapterDefaults));
    }
    // A marker for a field the config does not hold.
    assert.throws(() => Session.create("s", [header({}, { reasoningEffort: true })] as never), code("INVALID_EVENT"));
  });

  it("a request/header's system is a string and its tools ToolSchemas, at append, seed and restore", () => {
    const tool = { name: "t", description: "d", parameters: { type: "object" } };
    const valid = {
      ...header({}),
      data: { header: { config: { provider: "p", model: "m" }, system: "s", tools: [tool] }, reason: "initial" },
    };
    assert.deepEqual(Session.create("s", [valid as SessionEvent]).events[0], valid);
    const bad: [string, unknown][] = [
      ["system", 42],
      ["system", null],
      ["tools", null],
      ["tools", "abc"],
      ["tools", { length: 1 }],
      ["tools", [1, null]],
      ["tools", [{ description: "d", parameters: {} }]],
      ["tools", [{ name: "t", parameters: {} }]],
      ["tools", [{ name: "t", description: "d" }]],
      ["tools", [{ name: "t", description: "d", parameters: null }]],
    ];
    for (const [key, value] of bad) {
      const data = { header: { config: { provider: "p", model: "m" }, [key]: value }, reason: "initial" };
      const label = `${key}: ${JSON.stringify(value)}`;
      // Refused before anything is committed: no event, no observer call, no request header.
      const session = Session.create("s", undefined, { now: () => 1 });
      session.append("turn/start", { turn: 1 });
      const seen: string[] = [];
      session.observe((e) => void seen.push(e.type));
      assert.throws(() => loose(session).append("request/header", data), code("INVALID_EVENT"), label);
      assert.equal(session.seq, 1, label);
      assert.deepEqual(seen, [], label);
      assert.equal(session.requestHeader(), undefined, label);
      const seed = [{ type: "request/header", seq: 0, time: 1, data }];
      assert.throws(() => Session.create("s", seed as never), code("INVALID_EVENT"), label);
      assert.throws(() => Session.fromRestore("s", structuredClone(seed) as never, {}), code("INVALID_EVENT"), label);
    }
  });

  it("an envelope time must be a non-negative safe integer, in a seed and from the clock", () => {
    for (const time of [0.5, -1, "1", 2 ** 53]) {
      const seed = [{ type: "turn/start", seq: 0, time, data: { turn: 1 } }];
      assert.throws(() => Session.create("s", seed as never), code("INVALID_EVENT"), String(time));
      assert.throws(() => Session.fromRestore("s", seed as never, {}), code("INVALID_EVENT"), String(time));
    }
    const session = Session.create("s", undefined, { createdAt: 0, now: () => 0.5 });
    assert.throws(() => session.append("turn/start", { turn: 1 }), code("INVALID_ARGS"));
    assert.equal(session.seq, 0);
  });

  it("checks every time the clock gives: the first, a repeated one, and one after a good one", () => {
    // A clock that turns bad after the header's time, then recovers: each bad value is refused, whether or not it is
    // the first of the session (events of one millisecond share their time) or the same as the one before.
    for (const bad of [null, undefined, Number.NaN, -1, 0.5, "7"]) {
      const times: unknown[] = [5, bad, bad, 7, 7, bad, 7];
      const session = Session.create("s", undefined, { now: () => times.shift() as number });
      const logged: unknown[] = [];
      for (let i = 0; i < 6; i++) {
        try {
          logged.push(session.append("turn/start", { turn: 1 }).time);
        } catch (error) {
          assert.equal((error as { code?: string }).code, "INVALID_ARGS", String(bad));
          logged.push("refused");
        }
      }
      assert.deepEqual(logged, ["refused", "refused", 7, 7, "refused", 7], String(bad));
    }
    // 0 and -0 are both good times; -0 is logged as 0, which is what a stored log (JSON) reads back.
    const zeros = [0, -0, 0, -0];
    const session = Session.create("z", undefined, { createdAt: 0, now: () => zeros.shift() as number });
    const logged = [1, 2, 3, 4].map(() => session.append("turn/start", { turn: 1 }).time);
    assert.ok(logged.every((t) => Object.is(t, 0)), logged.map((t) => Object.is(t, -0) ? "-0" : String(t)).join());
    assert.deepEqual(JSON.parse(JSON.stringify(session.events)), session.events);
  });

  it("reads each seed entry once, and each of its properties once", () => {
    const accepted = { type: "turn/start", seq: 0, time: 1, data: { turn: 1 } };
    let reads = 0;
    const seed = new Array(1);
    Object.defineProperty(seed, 0, {
      enumerable: true,
      get: () => (++reads === 1 ? accepted : { ...accepted, seq: 99, data: { turn: 1n } }),
    });
    const session = Session.create("s", seed);
    assert.equal(reads, 1);
    assert.deepEqual(session.events[0], accepted);
    let timeReads = 0;
    const shifty = Object.defineProperty({ type: "turn/start", seq: 0, data: { turn: 1 } }, "time", {
      enumerable: true,
      get: () => (++timeReads === 1 ? 1 : 0.5),
    });
    assert.equal(Session.create("s", [shifty as never]).events[0].time, 1);
    assert.equal(timeReads, 1);
  });

  it("validates session headers: a plain object with typed fields", () => {
    const base = { version: SESSION_FORMAT_VERSION, id: "s", createdAt: 123 };
    const cases: unknown[] = [
      { ...base, createdAt: "123" },
      { ...base, createdAt: 0.5 },
      { ...base, createdAt: -1 },
      { ...base, cwd: 1 },
      { ...base, cwd: "relative/dir" },
      { ...base, cwd: "" },
      { ...base, parentSession: 1 },
      { ...base, parentSession: "" },
      { ...base, seedLength: "1" },
      { ...base, seedLength: 0.5 },
      { ...base, seedLength: -1 },
      { ...base, delegationDepth: -1 },
      { ...base, origin: 2 },
      { ...base, incarnation: "" },
      { ...base, incarnation: "ABC" },
      { ...base, incarnation: "a:1" },
      { ...base, incarnation: "x".repeat(17) },
      { ...base, incarnation: 7 },
      new (class Header {
        version = SESSION_FORMAT_VERSION;
        id = "s";
        createdAt = 123;
      })(),
    ];
    for (const header of cases) {
      assert.throws(() => Session.create("s", undefined, header as never), code("INVALID_ARGS"), String(header));
      assert.throws(() => Session.fromRestore("s", [], header as never), code("INVALID_ARGS"), String(header));
    }
    for (const header of [null, 1, [], "header"]) {
      assert.throws(() => Session.create("s", undefined, header as never), code("INVALID_ARGS"), String(header));
      assert.throws(() => Session.fromRestore("s", [], header as never), code("INVALID_ARGS"), String(header));
    }
    for (const cwd of ["/work", "C:\\work", "D:/work", "\\\\host\\share"]) {
      assert.equal(Session.create("s", undefined, { ...base, cwd }).header.cwd, cwd);
    }
    const full = { ...base, cwd: "/w", parentSession: "p", seedLength: 0, origin: "cli", delegationDepth: 0 };
    assert.deepEqual(Session.fromRestore("s", [], full).header, full);
    assert.deepEqual(Session.fromRestore("s", [], { ...full, incarnation: "z9" }).header, {
      ...full,
      incarnation: "z9",
    });
  });

  it("gives every new session a random incarnation, even with a frozen clock; a restored header keeps its own", () => {
    const now = () => 5;
    const a = Session.create("s", undefined, { now });
    const b = Session.create("s", undefined, { now });
    assert.equal(a.header.createdAt, b.header.createdAt);
    assert.match(a.header.incarnation!, /^[0-9a-z]{16}$/);
    assert.notEqual(a.header.incarnation, b.header.incarnation);
    assert.equal(Session.create("s", undefined, { now, incarnation: "abc" }).header.incarnation, "abc");
    const legacy = { version: SESSION_FORMAT_VERSION, id: "s", createdAt: 1 };
    assert.equal(Session.fromRestore("s", [], legacy).header.incarnation, undefined);
  });
});

describe("Session.fromRestore()", () => {
  it("takes ownership: validates, then freezes the given events in place", () => {
    const events = [{ type: "turn/start", seq: 0, time: 5, data: { turn: 1 } }] as SessionEvent[];
    const session = Session.fromRestore("s", events, {
      version: SESSION_FORMAT_VERSION,
      id: "s",
      createdAt: 1,
      cwd: "/w",
    });
    assert.equal(session.events[0], events[0]);
    assert.ok(Object.isFrozen(events[0].data));
    assert.equal(session.events[1].type, "session/end-seed");
    // A restored header from before incarnation tokens stays without one.
    assert.deepEqual(session.header, { version: SESSION_FORMAT_VERSION, id: "s", createdAt: 1, cwd: "/w" });
    assert.ok(Object.isFrozen(session.header));
  });

  it("refuses a foreign version, an id mismatch, and invalid events", () => {
    assert.throws(() => Session.fromRestore("s", [], { version: 99 }), code("SESSION_FORMAT_UNSUPPORTED"));
    assert.throws(() => Session.fromRestore("s", [], { id: "t" }), code("INVALID_ARGS"));
    assert.throws(
      () =>
        Session.fromRestore("s", [{ type: "todo/write", seq: 0, time: 0, data: { todos: [undefined] } }] as never, {}),
      code("NOT_LOSSLESS_JSON"),
    );
  });
});

describe("Session derived state", () => {
  it("deriveMessages() projects the surface, skipping usage-only assistant messages and non-surface events", () => {
    const session = Session.create("s");
    session.append("turn/start", { turn: 1 });
    const u = session.append("user/message", user("u1"), { surfaceOp: "append" });
    session.append("assistant/message", assistant("a0", ""), { surfaceOp: "append", sourceEventSeqs: [] });
    const a = session.append("assistant/message", assistant("a1", "hi"), { surfaceOp: "append" });
    const messages = session.deriveMessages();
    assert.deepEqual(messages, [u.data, a.data.message]);
    assert.equal(messages[0], u.data);
    assert.equal(session.deriveEventMessage(u), u.data);
  });

  it("deriveMessages() follows a replace and keeps growing incrementally after it", () => {
    const session = Session.create("s");
    session.append("user/message", user("u0"), { surfaceOp: "append" });
    session.append("user/message", user("u1"), { surfaceOp: "append" });
    assert.equal(session.deriveMessages().length, 2);
    session.append("user/message", user("sum"), {
      surfaceOp: { op: "replace", start: 0, end: 1 },
      sourceEventSeqs: [0, 1],
    });
    assert.deepEqual(session.deriveMessages().map((m) => m.id), ["sum"]);
    assert.equal(session.surface.replaceGeneration, 1);
    session.append("user/message", user("u3"), { surfaceOp: "append" });
    assert.deepEqual(session.deriveMessages().map((m) => m.id), ["sum", "u3"]);
  });

  it("deriveMessages() projects each node once and rebuilds only after a replace", () => {
    // Restored events are frozen in place, so a getter on `data` counts every read of it.
    let reads = 0;
    const counted = (seq: number, id: string) => {
      const data = user(id);
      return {
        type: "user/message",
        seq,
        time: 0,
        surfaceOp: "append",
        get data() {
          reads++;
          return data;
        },
      } as unknown as SessionEvent;
    };
    const session = Session.fromRestore("s", [counted(0, "a"), counted(1, "b"), counted(2, "c")], {});
    reads = 0;
    assert.equal(session.deriveMessages().length, 3);
    assert.equal(reads, 3);
    session.deriveMessages();
    session.append("todo/write", { todos: [] });
    session.deriveMessages();
    assert.equal(reads, 3);
    session.append("user/message", user("d"), { surfaceOp: "append" });
    assert.equal(session.deriveMessages().length, 4);
    assert.equal(reads, 3);
    session.append("user/message", user("s"), { surfaceOp: { op: "replace", start: 0, end: 0 }, sourceEventSeqs: [0] });
    assert.deepEqual(session.deriveMessages().map((m) => m.id), ["s", "b", "c", "d"]);
    assert.equal(reads, 5);
  });

  it("requestHeader() and requestContext() fold the latest records", () => {
    const session = Session.create("s");
    assert.equal(session.requestHeader(), undefined);
    assert.equal(session.requestContext(), undefined);
    session.append("request/header", {
      header: { config: { provider: "p", model: "m" }, system: "", tools: [] },
      reason: "initial",
    });
    assert.deepEqual(session.requestHeader(), { config: { provider: "p", model: "m" } });
    session.append("request/context", { provider: "p", model: "m", contextWindow: 100 });
    session.append("request/header", {
      header: { config: { provider: "p", model: "n" }, system: "S" },
      reason: "change",
    });
    session.append("request/context", { provider: "p", model: "n" });
    assert.deepEqual(session.requestHeader(), { config: { provider: "p", model: "n" }, system: "S" });
    assert.deepEqual(session.requestContext(), { provider: "p", model: "n" });
    assert.ok(Object.isFrozen(session.requestHeader()));
  });

  it("the surface view is stable and follows the log", () => {
    const session = Session.create("s");
    const surface = session.surface;
    session.append("user/message", user("u0"), { surfaceOp: "append" });
    assert.equal(session.surface, surface);
    assert.deepEqual(surface.nodes, [0]);
  });
});

describe("appendBracket() (the loop's turn/start, step/start and step/end)", () => {
  // What appendBracket() stands for: append() of `{ turn }` (no step) or `{ turn, step }`.
  const data = (turn: unknown, step: unknown) => step === undefined ? { turn } : { turn, step };
  // The committed event, or the error's code (a non-HarnessError as its string).
  const outcome = (run: () => SessionEvent) => {
    try {
      const event = run();
      assert.ok(Object.isFrozen(event) && Object.isFrozen(event.data));
      return { event };
    } catch (error) {
      return { error: HarnessError.isInstance(error) ? error.code : String(error) };
    }
  };

  it("commits what append() commits: the same events, deep-frozen, seen by observers alike", () => {
    const steps: [BracketType, number, number | undefined][] = [
      ["turn/start", 1, undefined],
      ["step/start", 1, 1],
      ["step/end", 1, 1],
      ["step/start", 1, 2],
      ["step/end", 1, 2],
      ["turn/start", 2, undefined],
    ];
    const a = Session.create("s", undefined, { now: clock() });
    const b = Session.create("s", undefined, { now: clock() });
    const seen: [SessionEvent[], SessionEvent[]] = [[], []];
    a.observe((e) => void seen[0].push(e));
    b.observe((e) => void seen[1].push(e));
    for (const [type, turn, step] of steps) {
      const fast = appendBracket(a, type, turn, step);
      const general = loose(b).append(type, data(turn, step));
      assert.deepEqual(fast, general);
      assert.ok(Object.isFrozen(fast) && Object.isFrozen(fast.data));
    }
    assert.deepEqual(a.events, b.events);
    assert.deepEqual(seen[0], seen[1]);
  });

  it("accepts exactly what append() accepts, with the same event or the same error", () => {
    // Counting integers and everything near them that append() refuses (or takes): 0, negatives, fractions,
    // -0, NaN, infinities, unsafe integers, a missing or extra step, non-numbers.
    const value = fc.oneof(
      fc.integer({ min: -2, max: 4 }),
      fc.constantFrom(0, -0, 1.5, Number.NaN, Infinity, -Infinity, 2 ** 53, 2 ** 53 - 1, -(2 ** 53), undefined),
      fc.double(),
      fc.constantFrom("1", null, true, {}),
    );
    fc.assert(
      fc.property(fc.constantFrom<BracketType>("turn/start", "step/start", "step/end"), value, value, (type, t, s) => {
        const a = Session.create("s", undefined, { now: clock() });
        const b = Session.create("s", undefined, { now: clock() });
        const fast = outcome(() => appendBracket(a, type, t as number, s as number | undefined));
        const general = outcome(() => loose(b).append(type, data(t, s)));
        assert.deepEqual(fast, general);
        assert.deepEqual(a.events, b.events);
      }),
      { numRuns: 500 },
    );
  });

  it("refuses an append from inside an observer, as append() does", () => {
    const session = Session.create("s");
    const codes: unknown[] = [];
    session.observe((event) => {
      if (event.type !== "user/message") return;
      for (
        const run of [() => appendBracket(session, "turn/start", 2), () => session.append("turn/start", { turn: 2 })]
      ) {
        try {
          run();
        } catch (error) {
          codes.push(HarnessError.isInstance(error) ? error.code : error);
        }
      }
    });
    session.append("user/message", user("m1"), { surfaceOp: "append" });
    assert.deepEqual(codes, ["APPEND_REENTERED", "APPEND_REENTERED"]);
    assert.equal(session.seq, 1);
  });

  it("reports a bad clock as append() does, committing nothing", () => {
    // The clock is good for the header, then returns -1.
    const badLater = () => {
      let calls = 0;
      return () => calls++ === 0 ? 0 : -1;
    };
    const a = Session.create("s", undefined, { now: badLater() });
    const b = Session.create("s", undefined, { now: badLater() });
    const fast = outcome(() => appendBracket(a, "step/start", 1, 1));
    assert.deepEqual(fast, { error: "INVALID_ARGS" });
    assert.deepEqual(fast, outcome(() => b.append("step/start", { turn: 1, step: 1 })));
    assert.equal(a.seq, 0);
  });
});
