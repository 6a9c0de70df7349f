// The SessionStorage contract, as one suite every backend runs. Just over the house limit on purpose: one suite,
// so that every backend (memory, file, PostgreSQL, PGlite) runs every clause of the contract.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../kernel/harness_error.ts";
import { checkInvariants } from "../invariants/check_invariants.ts";
import type { SessionEvent } from "../session/session_events.ts";
import type { SessionStorage } from "./session_storage.ts";
import { type ContractTarget, onFreshStorage } from "./_test_contract_target.ts";
import { LogBuilder } from "./_test_log.ts";
import { loadUnderLease } from "./_test_lease.ts";
import { LOG_MUTATIONS, type LogMutationKind, mutateLog } from "../../testing/mutate_log.ts";
import { CONVENTION_CODES } from "./_check_stored_log.ts";

const code = (c: string) => (error: unknown) => HarnessError.isInstance(error, c);

/** Standalone events (no turn), so that loading never repairs. */
function todos(n: number): SessionEvent[] {
  return Array.from({ length: n }, (_, seq) => ({
    type: "todo/write",
    seq,
    time: 100 + seq,
    data: { todos: [{ content: `task ${seq}`, status: "pending" }] },
  }));
}

function twoTurns(): SessionEvent[] {
  const log = new LogBuilder();
  log.completeTurn(1);
  log.completeTurn(2);
  return log.events;
}

export function storageContract(target: ContractTarget): void {
  const withStorage = (fn: (storage: SessionStorage) => Promise<void>) => onFreshStorage(target, fn);

  describe(`SessionStorage contract: ${target.name}`, () => {
    it(
      "append() then load() gives identical events and the header",
      withStorage(async (storage) => {
        const events = twoTurns();
        const header = await storage.create({ id: "s-1", createdAt: 42, cwd: "/w" });
        assert.deepEqual(header, { version: 1, id: "s-1", createdAt: 42, cwd: "/w", incarnation: header.incarnation });
        // A random incarnation when none is given: deleted and created again, the same id is another log.
        assert.match(header.incarnation!, /^[0-9a-z]{16}$/);
        const cut = 17;
        assert.deepEqual(await storage.append("s-1", events.slice(0, cut), { expectedSeq: 0 }), { nextSeq: cut });
        assert.deepEqual(await storage.append("s-1", events.slice(cut), { expectedSeq: cut }), {
          nextSeq: events.length,
        });
        const loaded = await storage.load("s-1");
        assert.deepEqual(loaded.header, header);
        assert.deepEqual(loaded.events, events);
        assert.equal(loaded.repair.repaired, false);
        assert.deepEqual(loaded.repair.syntheticEvents, []);
        assert.equal((await storage.stat("s-1"))?.nextSeq, events.length);
      }),
    );

    it(
      "create() with seed events publishes them with the header",
      withStorage(async (storage) => {
        const events = twoTurns();
        await storage.create({ id: "seeded", createdAt: 1, parentSession: "p", seedLength: events.length }, { events });
        const loaded = await storage.load("seeded");
        assert.deepEqual(loaded.events, events);
        assert.equal(loaded.header.seedLength, events.length);
      }),
    );

    it(
      "create() refuses an existing id",
      withStorage(async (storage) => {
        await storage.create({ id: "dup" });
        await assert.rejects(storage.create({ id: "dup" }), code("SESSION_ALREADY_EXISTS"));
      }),
    );

    it(
      "append() rejects an expected-seq mismatch and writes nothing",
      withStorage(async (storage) => {
        const events = todos(6);
        await storage.create({ id: "s" });
        await storage.append("s", events.slice(0, 3), { expectedSeq: 0 });
        await assert.rejects(storage.append("s", events.slice(3, 5), { expectedSeq: 2 }), code("SESSION_SEQ_MISMATCH"));
        await assert.rejects(storage.append("s", events.slice(4, 6), { expectedSeq: 4 }), code("SESSION_SEQ_MISMATCH"));
        await assert.rejects(storage.append("s", events.slice(4, 6), { expectedSeq: 3 }), code("SESSION_SEQ_MISMATCH"));
        assert.deepEqual((await storage.load("s")).events.slice(0, 3), events.slice(0, 3));
        assert.equal((await storage.stat("s"))?.nextSeq, 3);
        await storage.append("s", events.slice(3, 5), { expectedSeq: 3 });
        assert.equal((await storage.stat("s"))?.nextSeq, 5);
      }),
    );

    it(
      "append() rejects bad arguments and unknown sessions, and persists events of any well-formed type",
      withStorage(async (storage) => {
        await storage.create({ id: "s" });
        const ok = { type: "todo/write", seq: 0, time: 1, data: { todos: [] } } as SessionEvent;
        await assert.rejects(storage.append("nope", [ok], { expectedSeq: 0 }), code("SESSION_NOT_FOUND"));
        assert.throws(() => storage.append("s", [ok], { expectedSeq: -1 }), code("INVALID_ARGS"));
        assert.throws(() => storage.append("s", [{ ...ok, time: NaN }], { expectedSeq: 0 }), code("INVALID_ARGS"));
        const unknown = { type: "my/event", seq: 0, time: 1, data: {} } as unknown as SessionEvent;
        // A plugin's event type needs no registration with the storage: it is persisted and loaded back.
        await storage.append("s", [unknown], { expectedSeq: 0 });
        const ignorable = { ...unknown, seq: 1, ignorable: true } as SessionEvent;
        await storage.append("s", [ignorable], { expectedSeq: 1 });
        assert.deepEqual((await storage.load("s")).events, [unknown, ignorable]);
      }),
    );

    it(
      "append() and create() refuse a record that no load would accept, and write nothing",
      withStorage(async (storage) => {
        await storage.create({ id: "s" });
        const bad = [
          { type: "assistant/message", seq: 0, time: 1, data: {} },
          { type: "turn/start", seq: 0, time: 1, data: { turn: 0 } },
          { type: "todo/write", seq: 0, time: 1, data: { todos: [] }, extra: 1 },
        ] as unknown as SessionEvent[];
        for (const event of bad) {
          await assert.rejects(
            async () => await storage.append("s", [event], { expectedSeq: 0 }),
            code("INVALID_EVENT"),
          );
          await assert.rejects(
            async () => await storage.create({ id: `c${bad.indexOf(event)}` }, { events: [event] }),
            code("INVALID_EVENT"),
          );
        }
        assert.equal((await storage.stat("s"))?.nextSeq, 0);
        assert.deepEqual((await storage.list()).map((h) => h.id), ["s"]);
      }),
    );

    it(
      "refuses path-like ids",
      withStorage(async (storage) => {
        assert.deepEqual(await storage.list(), []);
        for (const id of ["../x", "a/b", "/abs", "..", ".", "a\\b", "", "a\u0000b", "x".repeat(129)]) {
          assert.throws(() => storage.create({ id }), code("INVALID_SESSION_ID"), JSON.stringify(id));
          assert.throws(() => storage.load(id), code("INVALID_SESSION_ID"));
          assert.throws(() => storage.inspect(id), code("INVALID_SESSION_ID"));
          assert.throws(() => storage.stat(id), code("INVALID_SESSION_ID"));
          assert.throws(() => storage.delete(id), code("INVALID_SESSION_ID"));
          assert.throws(() => storage.append(id, [], { expectedSeq: 0 }), code("INVALID_SESSION_ID"));
          assert.throws(() => storage.acquireWriter(id), code("INVALID_SESSION_ID"));
        }
      }),
    );

    it(
      "keeps ids that differ only in case or punctuation apart",
      withStorage(async (storage) => {
        const ids = ["Abc", "abc", "a.b", "a%2Eb", "CON", "日本", ".hidden", "a:b"];
        for (const [i, id] of ids.entries()) await storage.create({ id, createdAt: i });
        assert.deepEqual((await storage.list()).map((h) => h.id), ids);
        for (const id of ids) assert.equal((await storage.load(id)).header.id, id);
      }),
    );

    it(
      "a second writer is refused until the first releases",
      withStorage(async (storage) => {
        const events = todos(4);
        await storage.create({ id: "w" });
        const writer = await storage.acquireWriter("w");
        assert.equal(writer.sessionId, "w");
        await assert.rejects(storage.acquireWriter("w"), code("SESSION_WRITER_BUSY"));
        await assert.rejects(storage.append("w", events.slice(0, 2), { expectedSeq: 0 }), code("SESSION_WRITER_BUSY"));
        await assert.rejects(storage.delete("w"), code("SESSION_WRITER_BUSY"));
        await storage.append("w", events.slice(0, 2), { expectedSeq: 0, writer });
        await writer.release();
        assert.equal(writer.released, true);
        await assert.rejects(
          storage.append("w", events.slice(2, 3), { expectedSeq: 2, writer }),
          code("SESSION_WRITER_BUSY"),
        );
        await storage.append("w", events.slice(2, 3), { expectedSeq: 2 });
        {
          await using second = await storage.acquireWriter("w");
          await storage.append("w", events.slice(3, 4), { expectedSeq: 3, writer: second });
        }
        const third = await storage.acquireWriter("w");
        await third.release();
        await third.release();
      }),
    );

    it(
      "a lease can be taken before the session exists",
      withStorage(async (storage) => {
        const writer = await storage.acquireWriter("early");
        await assert.rejects(storage.create({ id: "early" }), code("SESSION_WRITER_BUSY"));
        await storage.create({ id: "early" }, { writer });
        assert.equal((await storage.stat("early"))?.nextSeq, 0);
        await writer.release();
      }),
    );

    it(
      "load() closes an open final turn and commits; inspect() only shows it",
      withStorage(async (storage) => {
        const log = new LogBuilder();
        log.completeTurn(1);
        log.push({ type: "turn/start", data: { turn: 2 } });
        log.push({ type: "step/start", data: { turn: 2, step: 1 } });
        log.stream(2, 1, ["a", "b", "c"], { calls: ["k1", "k2"] });
        log.toolCall(2, 1, "k1");
        await storage.create({ id: "crashed" }, { events: log.events });

        const inspected = await storage.inspect("crashed");
        assert.equal(inspected.repair.repaired, true);
        assert.equal(inspected.repair.committed, false);
        assert.equal(inspected.repair.closedTurn, 2);
        assert.deepEqual(inspected.repair.syntheticEvents.map((e) => e.type), [
          "tool/result",
          "tool/result",
          "step/end",
          "turn/end",
        ]);
        assert.equal((await storage.stat("crashed"))?.nextSeq, log.events.length);

        const writer = await storage.acquireWriter("crashed");
        await assert.rejects(storage.load("crashed"), code("SESSION_WRITER_BUSY"));
        const loaded = await storage.load("crashed", { writer });
        assert.equal(loaded.repair.committed, true);
        assert.deepEqual(loaded.events.slice(0, log.events.length), log.events);
        assert.deepEqual(loaded.events.slice(log.events.length), loaded.repair.syntheticEvents);
        assert.deepEqual(checkInvariants(loaded.events), []);
        const codes = loaded.repair.syntheticEvents.slice(0, 2).map((e) =>
          (e.data as { error: { code: string } }).error
        );
        assert.deepEqual(codes.map((e) => e.code), ["TOOL_OUTCOME_UNKNOWN", "TOOL_NOT_STARTED"]);
        assert.equal((await storage.stat("crashed"))?.nextSeq, loaded.events.length);
        await writer.release();

        const again = await storage.load("crashed");
        assert.equal(again.repair.repaired, false);
        assert.deepEqual(again.events, loaded.events);
      }),
    );

    it(
      "load() without the writer lease never writes a repair: SESSION_REPAIR_REQUIRED, nothing written",
      withStorage(async (storage) => {
        // Two loaders repairing at once would each cut and append at their own idea of the end; only the lease
        // holder may repair (harness.resumeAgent takes the lease, then loads under it).
        const log = new LogBuilder();
        log.completeTurn(1);
        log.push({ type: "turn/start", data: { turn: 2 } });
        log.push({ type: "step/start", data: { turn: 2, step: 1 } });
        await storage.create({ id: "cold" }, { events: log.events });
        await assert.rejects(storage.load("cold"), code("SESSION_REPAIR_REQUIRED"));
        assert.equal((await storage.stat("cold"))?.nextSeq, log.events.length, "nothing was written");
        assert.equal((await storage.inspect("cold")).repair.repaired, true);
        // With a lease held by another writer, it is that writer's session: busy, as before.
        const writer = await storage.acquireWriter("cold");
        await assert.rejects(storage.load("cold"), code("SESSION_WRITER_BUSY"));
        const loaded = await storage.load("cold", { writer });
        assert.equal(loaded.repair.committed, true);
        await writer.release();
        // Once repaired, a load needs no lease.
        const again = await storage.load("cold");
        assert.equal(again.repair.repaired, false);
        assert.deepEqual(again.events, loaded.events);
      }),
    );

    it(
      "load() closes a compaction a crash cut short between turns, and commits",
      withStorage(async (storage) => {
        const log = new LogBuilder();
        log.completeTurn(1);
        log.completeTurn(2);
        log.push({ type: "compaction/start", data: { reason: "manual" } });
        await storage.create({ id: "compacting" }, { events: log.events });

        const writer = await storage.acquireWriter("compacting");
        const loaded = await storage.load("compacting", { writer });
        await writer.release();
        assert.equal(loaded.repair.committed, true);
        assert.equal(loaded.repair.closedTurn, undefined);
        assert.deepEqual(
          loaded.repair.syntheticEvents.map((e) => [e.type, e.seq, (e.data as { outcome: string }).outcome]),
          [
            ["compaction/end", log.events.length, "failed"],
          ],
        );
        assert.deepEqual(loaded.events.slice(log.events.length), loaded.repair.syntheticEvents);
        assert.deepEqual(checkInvariants(loaded.events), []);
        const again = await storage.load("compacting");
        assert.equal(again.repair.repaired, false);
        assert.deepEqual(again.events, loaded.events);
      }),
    );

    it(
      "load() and inspect() refuse a log that breaks a structural invariant, naming it and its seq, and change nothing",
      withStorage(async (storage) => {
        const base = twoTurns();
        let n = 0;
        for (const [kind, invariant] of Object.entries(LOG_MUTATIONS)) {
          const { events } = mutateLog(base, kind as LogMutationKind);
          const id = `m${n++}`;
          await storage.create({ id });
          try {
            await storage.append(id, events, { expectedSeq: 0 });
          } catch (error) {
            // Seq damage never reaches a store: append refuses it.
            assert.ok(HarnessError.isInstance(error, "SESSION_SEQ_MISMATCH"), `${kind}: ${error}`);
            continue;
          }
          if (CONVENTION_CODES.has(invariant)) {
            // Conventions of the loop (numbering, bookkeeping between turns) are not corruption.
            const loaded = await loadUnderLease(storage, id);
            assert.deepEqual(loaded.events.slice(0, events.length), events, kind);
            continue;
          }
          for (const read of [() => storage.inspect(id), () => storage.load(id)]) {
            await assert.rejects(read(), (error: unknown) => {
              assert.ok(HarnessError.isInstance(error, "SESSION_CORRUPT"), `${kind}: ${error}`);
              assert.equal(error.details?.invariant, invariant, kind);
              assert.ok(error.message.includes(`${invariant} at seq ${error.details?.seq}`), error.message);
              assert.ok((error.details?.seq as number) >= base.length, kind);
              return true;
            });
          }
          assert.equal((await storage.stat(id))?.nextSeq, events.length, `${kind}: nothing was written`);
        }
      }),
    );

    it(
      "load() accepts bookkeeping events outside turns and closes an open final turn whatever precedes it",
      withStorage(async (storage) => {
        const log = new LogBuilder(todos(2));
        log.completeTurn(1);
        log.push({ type: "todo/write", data: { todos: [] } });
        log.push({ type: "turn/start", data: { turn: 2 } });
        log.push({ type: "step/start", data: { turn: 2, step: 1 } });
        await storage.create({ id: "open" }, { events: log.events });
        const writer = await storage.acquireWriter("open");
        const loaded = await storage.load("open", { writer });
        await writer.release();
        assert.equal(loaded.repair.closedTurn, 2);
        assert.deepEqual(
          checkInvariants(loaded.events).map((v) => v.code),
          ["EVENT_OUTSIDE_TURN", "EVENT_OUTSIDE_TURN", "EVENT_OUTSIDE_TURN"],
        );
      }),
    );

    it(
      "list(), stat() and delete()",
      withStorage(async (storage) => {
        assert.deepEqual(await storage.list(), []);
        assert.equal(await storage.stat("none"), undefined);
        await storage.create({ id: "b", createdAt: 2 });
        await storage.create({ id: "a", createdAt: 2 });
        await storage.create({ id: "c", createdAt: 1 });
        assert.deepEqual((await storage.list()).map((h) => h.id), ["c", "a", "b"]);
        const stat = await storage.stat("a");
        assert.deepEqual(stat?.header, { version: 1, id: "a", createdAt: 2, incarnation: stat?.header.incarnation });
        assert.equal(stat?.torn, false);
        assert.equal(await storage.delete("a"), true);
        assert.equal(await storage.delete("a"), false);
        await assert.rejects(storage.load("a"), code("SESSION_NOT_FOUND"));
        assert.deepEqual((await storage.list()).map((h) => h.id), ["c", "b"]);
        const again = await storage.create({ id: "a", createdAt: 2 });
        assert.notEqual(again.incarnation, stat?.header.incarnation, "created again: another incarnation");
        assert.equal((await storage.create({ id: "given", incarnation: "k3x9" })).incarnation, "k3x9");
        assert.equal((await storage.load("given")).header.incarnation, "k3x9");
        assert.throws(() => storage.create({ id: "bad", incarnation: "Not:Ok" }), code("INVALID_ARGS"));
      }),
    );

    it(
      "concurrent appends at the same expected seq: one wins",
      withStorage(async (storage) => {
        const events = todos(3);
        await storage.create({ id: "race" });
        const results = await Promise.allSettled([
          storage.append("race", events.slice(0, 2), { expectedSeq: 0 }),
          storage.append("race", events.slice(0, 3), { expectedSeq: 0 }),
        ]);
        assert.deepEqual(results.map((r) => r.status).sort(), ["fulfilled", "rejected"]);
        const loaded = await storage.load("race");
        assert.ok(loaded.events.length === 2 || loaded.events.length === 3);
      }),
    );
  });
}
