import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createKernel } from "../kernel/harness_context.ts";
import { createScope } from "../kernel/scope.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import { Session } from "./session.ts";
import { type SessionEvents, type SessionServices, SessionStore, sessionStorePlugin } from "./session_store.ts";
import type { SessionEvent } from "./session_events.ts";

const code = (c: string) => (e: unknown) => HarnessError.isInstance(e, c);

async function setup() {
  const ctx = createKernel<SessionEvents, SessionServices>();
  const handle = ctx.plugin(sessionStorePlugin, { now: () => 5, newId: idGen() });
  await handle.ready;
  return { ctx, handle, store: ctx.service("sessions") };
}
function idGen() {
  let n = 0;
  return () => `id${++n}`;
}
function closedTurn(session: Session, turn: number): void {
  session.append("turn/start", { turn });
  session.append("turn/end", { turn, reason: { kind: "completed" } });
}

describe("SessionStore lifecycle", () => {
  it("create() enters, announces once (a second announce() throws), and publishes committed events after commit", async () => {
    const { ctx, store } = await setup();
    const log: string[] = [];
    ctx.on("session/created", (s) => void log.push(`created ${s.id}`));
    ctx.on("session/event", (s, e) => void log.push(`event ${e.seq} len ${s.seq}`));
    const session = store.create();
    assert.equal(session.id, "id1");
    assert.equal(session.header.createdAt, 5);
    session.append("turn/start", { turn: 1 });
    assert.throws(() => store.announce(session), code("SESSION_ALREADY_ANNOUNCED"));
    assert.deepEqual(log, ["created id1", "event 0 len 1"]);
    assert.equal(store.get("id1"), session);
    assert.deepEqual(store.list(), [session]);
    assert.throws(() => store.create("id1"), code("SESSION_ALREADY_EXISTS"));
  });

  it("one session object is in one store at a time", async () => {
    const first = await setup();
    const second = await setup();
    const session = Session.create("owned");
    const detachFirst = first.store.enter(session);
    assert.throws(() => second.store.enter(session), code("SESSION_ALREADY_ATTACHED"));
    assert.throws(() => first.store.enter(session), code("SESSION_ALREADY_ATTACHED"));
    assert.equal(second.store.get("owned"), undefined);
    detachFirst();
    const detachSecond = second.store.enter(session);
    assert.equal(second.store.get("owned"), session);
    detachSecond();
  });

  it("announce() emits session/created once; a repeat, also from a listener, throws", async () => {
    const { ctx, store } = await setup();
    let created = 0;
    let reentrant: unknown;
    ctx.on("session/created", (s) => {
      created++;
      try {
        store.announce(s);
      } catch (error) {
        reentrant = error;
      }
    });
    const session = store.prepare("once");
    const detach = store.enter(session);
    store.announce(session);
    assert.ok(code("SESSION_ALREADY_ANNOUNCED")(reentrant));
    assert.throws(() => store.announce(session), code("SESSION_ALREADY_ANNOUNCED"));
    assert.equal(created, 1);
    detach();
  });

  it("a failing session/event listener is contained; an append from a listener is rejected", async () => {
    const { ctx, store } = await setup();
    const errors: unknown[] = [];
    const heard: number[] = [];
    ctx.raw.on("kernel/listener-error" as never, ((_name: string, error: unknown) => void errors.push(error)) as never);
    ctx.on("session/event", (s) => void s.append("todo/write", { todos: [] }));
    ctx.on("session/event", () => {
      throw new Error("listener failure");
    });
    ctx.on("session/event", (_s, e) => void heard.push(e.seq));
    const session = store.create("s");
    const event = session.append("turn/start", { turn: 1 });
    assert.equal(event.seq, 0);
    assert.equal(session.seq, 1);
    assert.deepEqual(heard, [0]);
    assert.equal(errors.length, 2);
    assert.ok(HarnessError.isInstance(errors[0], "APPEND_REENTERED"));
  });

  it("publishes session/event to listeners added and removed after the session entered", async () => {
    // The store's emitter skips the call while nothing listens: it must ask on every event, not once.
    const { ctx, store } = await setup();
    const a = createScope(ctx, "a");
    const session = store.create("late");
    const scoped = store.create("scoped", { ctx: a.ctx });
    session.append("turn/start", { turn: 1 });
    scoped.append("turn/start", { turn: 1 });
    const heard: string[] = [];
    const off = ctx.on("session/event", (s, e) => void heard.push(`root ${s.id}:${e.seq}`));
    const offScoped = a.ctx.on("session/event", (s, e) => void heard.push(`a ${s.id}:${e.seq}`));
    session.append("turn/end", { turn: 1, reason: { kind: "completed" } });
    scoped.append("turn/end", { turn: 1, reason: { kind: "completed" } });
    off();
    session.append("turn/start", { turn: 2 });
    scoped.append("turn/start", { turn: 2 });
    offScoped();
    scoped.append("turn/end", { turn: 2, reason: { kind: "completed" } });
    // A session dispatched from the root is heard in every scope (see the scoped dispatch test below).
    assert.deepEqual(heard, ["root late:1", "a late:1", "root scoped:1", "a scoped:1", "a late:2", "a scoped:2"]);
  });

  it("publishes every event through a dispatch context that is not a harness context", () => {
    const calls: string[] = [];
    const dispatch = {
      emit: (name: string, s: Session, e?: SessionEvent) => void calls.push(`${name} ${s.id}${e ? `:${e.seq}` : ""}`),
      parallel: () => Promise.resolve(),
      effect: () => () => Promise.resolve(),
    };
    const store = new SessionStore(dispatch as never);
    const session = store.create("plain", { ctx: dispatch as never });
    session.append("turn/start", { turn: 1 });
    assert.deepEqual(calls, ["session/created plain", "session/event plain:0"]);
  });

  it("prepare() builds without entering; enter() checks ids and its disposer detaches silently", async () => {
    const { ctx, store } = await setup();
    const events: string[] = [];
    ctx.on("session/event", (s, e) => void events.push(`${s.id}:${e.seq}`));
    ctx.on("session/disposed", (s) => void events.push(`disposed ${s.id}`));
    const session = store.prepare("p", { cwd: "/w", seed: [] });
    assert.equal(store.get("p"), undefined);
    assert.equal(session.header.cwd, "/w");
    assert.equal(session.events[0].type, "session/end-seed");
    session.append("turn/start", { turn: 1 });
    const detach = store.enter(session);
    assert.throws(() => store.enter(store.prepare("p")), code("SESSION_ALREADY_EXISTS"));
    session.append("turn/end", { turn: 1, reason: { kind: "completed" } });
    detach();
    detach();
    session.append("turn/start", { turn: 2 });
    assert.equal(store.get("p"), undefined);
    assert.deepEqual(events, ["p:2"]);
  });

  it("prepare() takes a stored header, with top-level fields overriding it", async () => {
    const { store } = await setup();
    const session = store.prepare("h", {
      header: { type: "session", version: 1, id: "h", createdAt: 1, cwd: "/a", delegationDepth: 0 },
      cwd: "/b",
    });
    // A stored header from before incarnation tokens keeps the stand-in its log has: createdAt in base 36.
    assert.deepEqual(session.header, {
      version: 1,
      id: "h",
      createdAt: 1,
      cwd: "/b",
      delegationDepth: 0,
      incarnation: "1",
    });
    const stored = store.prepare("t", { header: { version: 1, id: "t", createdAt: 7, incarnation: "k3x9" } });
    assert.equal(stored.header.incarnation, "k3x9");
    assert.throws(() => store.prepare("x", { header: { id: "y" } }), code("INVALID_ARGS"));
  });

  it("flush() dispatches session/flush in parallel and waits for every listener", async () => {
    const { ctx, store } = await setup();
    const order: string[] = [];
    let release!: () => void;
    ctx.on("session/flush", async () => {
      order.push("a start");
      await new Promise<void>((resolve) => (release = resolve));
      order.push("a end");
    });
    ctx.on("session/flush", () => {
      order.push("b");
      return Promise.resolve();
    });
    const session = store.create("f");
    const flushing = store.flush(session);
    assert.deepEqual(order, ["a start", "b"]);
    release();
    assert.equal(await flushing, true);
    assert.deepEqual(order, ["a start", "b", "a end"]);
    assert.equal(await store.flush(Session.create("f")), false);
  });

  it("flush() without a listener resolves true; a listener added later (also in a scope) is waited for", async () => {
    const { ctx, store } = await setup();
    const a = createScope(ctx, "a");
    const session = store.create("quiet");
    const scoped = store.create("scoped", { ctx: a.ctx });
    assert.equal(await store.flush(session), true);
    assert.equal(await store.flush(scoped), true);
    const heard: string[] = [];
    let release!: () => void;
    const off = a.ctx.on("session/flush", async (s) => {
      heard.push(`start ${s.id}`);
      await new Promise<void>((resolve) => (release = resolve));
      heard.push(`end ${s.id}`);
    });
    const flushing = store.flush(scoped);
    assert.deepEqual(heard, ["start scoped"]);
    release();
    assert.equal(await flushing, true);
    assert.deepEqual(heard, ["start scoped", "end scoped"]);
    off();
    assert.equal(await store.flush(scoped), true);
    assert.deepEqual(heard, ["start scoped", "end scoped"]);
  });

  it("flush() through a dispatch context that is not a harness context calls its parallel()", async () => {
    const calls: string[] = [];
    const dispatch = {
      emit: () => {},
      parallel: (name: string, s: Session) => (calls.push(`${name} ${s.id}`), Promise.resolve()),
      effect: () => () => Promise.resolve(),
    };
    const store = new SessionStore(dispatch as never);
    const session = store.create("plain", { ctx: dispatch as never });
    assert.equal(await store.flush(session), true);
    assert.deepEqual(calls, ["session/flush plain"]);
  });

  it("a failing flush listener rejects flush() (fails closed)", async () => {
    const { ctx, store } = await setup();
    ctx.on("session/flush", () => Promise.reject(new Error("disk full")));
    await assert.rejects(
      store.flush(store.create("f")),
      (e) => code("SESSION_FLUSH_FAILED")(e) && /disk full/.test((e as Error).message),
    );
  });

  it("disposing the store plugin disposes the sessions it created", async () => {
    const { ctx, handle, store } = await setup();
    const disposed: string[] = [];
    ctx.on("session/disposed", (s) => void disposed.push(s.id));
    store.create("a");
    store.create("b");
    await handle.dispose();
    assert.deepEqual(disposed.sort(), ["a", "b"]);
    assert.equal(store.list().length, 0);
  });

  it("dispose() removes one session it created, once; not one it only entered", async () => {
    const { ctx, store } = await setup();
    const disposed: string[] = [];
    ctx.on("session/disposed", (s) => void disposed.push(s.id));
    const a = store.create("a");
    const b = store.create("b");
    const entered = store.prepare("c");
    store.enter(entered);
    assert.equal(store.dispose(a), true);
    assert.equal(store.dispose(a), false);
    assert.equal(store.dispose(entered), false);
    assert.deepEqual(disposed, ["a"]);
    assert.deepEqual(store.list().map((s) => s.id).sort(), ["b", "c"]);
    assert.equal(store.get("b"), b);
  });
});

describe("SessionStore scoped dispatch", () => {
  it("dispatches a session's events from the context it was created with", async () => {
    const { ctx, store } = await setup();
    const a = createScope(ctx, "a");
    const b = createScope(ctx, "b");
    const heard: string[] = [];
    ctx.on("session/event", (s) => void heard.push(`root ${s.id}`));
    a.ctx.on("session/event", (s) => void heard.push(`a ${s.id}`));
    b.ctx.on("session/event", (s) => void heard.push(`b ${s.id}`));
    const inA = store.create("sa", { ctx: a.ctx });
    const global = store.create("sg");
    inA.append("turn/start", { turn: 1 });
    global.append("turn/start", { turn: 1 });
    assert.deepEqual(heard, ["root sa", "a sa", "root sg", "a sg", "b sg"]);
    const disposed: string[] = [];
    ctx.on("session/disposed", (s) => void disposed.push(s.id));
    await a.dispose();
    assert.deepEqual(disposed, ["sa"]);
    assert.equal(store.get("sa"), undefined);
    assert.equal(store.get("sg"), global);
  });
});

describe("SessionStore.fork()", () => {
  it("copies the prefix up to an inclusive boundary into a live child with lineage", async () => {
    const { ctx, store } = await setup();
    const created: string[] = [];
    ctx.on("session/created", (s) => void created.push(s.id));
    const parent = store.create("parent", { cwd: "/w" });
    closedTurn(parent, 1);
    parent.append("todo/write", { todos: [] });
    parent.append("turn/start", { turn: 2 });
    const child = store.fork("parent", 1, "child");
    assert.equal(store.get("child"), child);
    assert.deepEqual(child.header, {
      version: 1,
      id: "child",
      createdAt: 5,
      cwd: "/w",
      parentSession: "parent",
      seedLength: 2,
      incarnation: child.header.incarnation,
    });
    assert.match(child.header.incarnation!, /^[0-9a-z]{16}$/);
    assert.notEqual(child.header.incarnation, parent.header.incarnation, "a fork is a new log");
    assert.deepEqual(child.events.slice(0, 2), parent.events.slice(0, 2));
    assert.notEqual(child.events[0], parent.events[0]);
    assert.equal(child.events[2].type, "session/end-seed");
    assert.equal(child.firstLiveSeq, 2);
    assert.deepEqual(created, ["parent", "child"]);
    const other = store.fork(parent, 2);
    assert.equal(other.id, "id1");
    assert.equal(other.header.seedLength, 3);
  });

  it("rejects unknown, non-live and taken sessions, bad boundaries and open turns", async () => {
    const { store } = await setup();
    const parent = store.create("parent");
    assert.throws(() => store.fork(parent, 0), code("INVALID_BOUNDARY"));
    closedTurn(parent, 1);
    parent.append("turn/start", { turn: 2 });
    store.create("taken");
    assert.throws(() => store.fork("nobody"), code("SESSION_NOT_FOUND"));
    assert.throws(() => store.fork(Session.create("parent")), code("SESSION_NOT_LIVE"));
    assert.throws(() => store.fork(Session.create("detached")), code("SESSION_NOT_FOUND"));
    assert.throws(() => store.fork(parent, 1, "taken"), code("SESSION_ALREADY_EXISTS"));
    for (const boundary of [-1, 3, 1.5, NaN]) {
      assert.throws(() => store.fork(parent, boundary), code("INVALID_BOUNDARY"), String(boundary));
    }
    assert.throws(() => store.fork(parent), (e) => code("OPEN_TURN")(e) && /inside turn 2/.test((e as Error).message));
    assert.throws(() => store.fork(parent, 0), code("OPEN_TURN"));
    assert.equal(store.fork(parent, 1).seq, 3);
  });

  it("refuses a boundary inside a compaction (OPEN_COMPACTION): the child would keep it open for good", async () => {
    const { store } = await setup();
    const parent = store.create("compacting");
    closedTurn(parent, 1); // 0, 1
    parent.append("compaction/start", { reason: "manual" }); // 2
    parent.append("compaction/end", { outcome: "failed", error: "no summary" }); // 3
    parent.append("compaction/start", { reason: "manual" }); // 4: a manual compaction still running
    const refused = (e: unknown) =>
      code("OPEN_COMPACTION")(e) && /compaction started at seq 4/.test((e as Error).message) &&
      (e as HarnessError).details?.compactionStart === 4;
    assert.throws(() => store.fork(parent), refused, "the default boundary is the live log's last event");
    assert.throws(() => store.fork(parent, 2), code("OPEN_COMPACTION"));
    assert.equal(store.fork(parent, 3, "after-failed").events.at(-1)!.type, "session/end-seed");
    assert.equal(store.fork(parent, 1, "before").seq, 3);
    parent.append("compaction/end", { outcome: "failed", error: "no summary" }); // 5
    assert.equal(store.fork(parent).seq, 7);
  });

  it("a compaction left open inside a turn (older logs) is closed by that turn's end: later boundaries fork", async () => {
    const { store } = await setup();
    const parent = store.create("old-log");
    closedTurn(parent, 1); // 0, 1
    parent.append("turn/start", { turn: 2 }); // 2
    parent.append("compaction/start", { reason: "threshold" }); // 3: never got its compaction/end
    assert.throws(() => store.fork(parent, 3), code("OPEN_TURN"), "inside the turn, the turn is what is open");
    const error = { code: "REPLACE_SOURCES_INCOMPLETE", message: "Cannot replace" };
    parent.append("turn/end", { turn: 2, reason: { kind: "error", error } }); // 4
    assert.equal(store.fork(parent, 4, "at-turn-end").events.at(-1)!.type, "session/end-seed");
    closedTurn(parent, 3); // 5, 6
    assert.equal(store.fork(parent, 6, "later").header.seedLength, 7);
    parent.append("compaction/start", { reason: "manual" }); // 7: a manual one, outside any turn, still open
    assert.throws(() => store.fork(parent), (e) => code("OPEN_COMPACTION")(e) && /at seq 7/.test((e as Error).message));
  });

  it("forks an empty session (default boundary) into an empty child with its lineage", async () => {
    const { store } = await setup();
    const parent = store.create("empty-parent", { cwd: "/workspace" });
    const child = store.fork(parent, undefined, "empty-child");
    assert.deepEqual(child.events.map((e) => e.type), ["session/end-seed"]);
    assert.equal(child.firstLiveSeq, 0);
    assert.equal(child.header.parentSession, "empty-parent");
    assert.equal(child.header.seedLength, 0);
    assert.equal(child.header.cwd, "/workspace");
    assert.equal(store.get("empty-child"), child);
  });

  it("does not publish the child's seed or end-seed on session/event", async () => {
    const { ctx, store } = await setup();
    const parent = store.create("parent");
    closedTurn(parent, 1);
    const seen: SessionEvent[] = [];
    ctx.on("session/event", (_s, e) => void seen.push(e));
    const child = store.fork(parent);
    assert.equal(seen.length, 0);
    child.append("turn/start", { turn: 2 });
    assert.deepEqual(seen.map((e) => e.seq), [3]);
  });
});

describe("SessionStore without the plugin", () => {
  it("can be constructed over any context", () => {
    const ctx = createKernel<SessionEvents, SessionServices>();
    const store = new SessionStore(ctx);
    assert.equal(typeof store.create().id, "string");
  });
});
