import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createHarness, type CreateHarnessOptions } from "../harness.ts";
import { checkInvariants } from "../invariants/mod.ts";
import type { SessionEvent } from "../session/mod.ts";
import { type Script, scriptedAdapter, textResponse } from "../../testing/scripted_adapter.ts";
import { counterClock, counterIds, summarize } from "../agent/_test_support.ts";
import { fileStorage } from "./file_storage.ts";
import { loadUnderLease } from "./_test_lease.ts";
import { memoryStorage } from "./memory_storage.ts";
import type { SessionStorage } from "./session_storage.ts";
import { slowWrites, withFaults } from "./_test_storage_faults.ts";
import { persistencePlugin } from "./persistence_plugin.ts";
import { createKernel } from "../kernel/mod.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import { type SessionEvents, type SessionServices, sessionStorePlugin } from "../session/session_store.ts";
import { childCommand } from "../kernel/_test_child_command.ts";

function harnessWith(storage: SessionStorage, script: Script, extra: Partial<CreateHarnessOptions> = {}) {
  const model = scriptedAdapter(script);
  return createHarness({
    adapters: [model],
    model: { provider: "scripted", model: "scripted-model" },
    storage,
    now: counterClock(),
    newId: counterIds(`h${Math.random().toString(36).slice(2, 6)}`),
    sleep: () => Promise.resolve(),
    ...extra,
  }).then((harness) => ({ harness, model }));
}

const strip = (events: readonly SessionEvent[]) => JSON.parse(JSON.stringify(events));

describe("persistence plugin", () => {
  it("writes every committed event; the stored log equals the live one", async () => {
    const storage = memoryStorage();
    const { harness } = await harnessWith(storage, [textResponse("one"), textResponse("two")]);
    const agent = await harness.createAgent({ id: "p1" });
    await agent.run("first");
    await agent.run("second");
    const live = strip(agent.session.events);
    await harness.dispose();
    const loaded = await storage.load("p1");
    assert.deepEqual(strip(loaded.events), live);
    assert.equal(loaded.repair.repaired, false);
  });

  it("acknowledged means durable: run() settles with turn/end stored, flushed() covers queued input", async () => {
    const storage = memoryStorage();
    // A window longer than the test: only barriers write.
    const { harness } = await harnessWith(storage, [textResponse("one"), textResponse("two")], {
      batchWindowMs: 60_000,
    });
    const agent = await harness.createAgent({ id: "ack" });
    const result = await agent.run("first");
    assert.equal(result.reason.kind, "completed");
    const afterRun = await storage.inspect("ack");
    assert.equal(afterRun.events.at(-1)?.type, "turn/end");
    assert.equal(afterRun.events.length, agent.session.seq, "everything committed is stored");
    agent.inject("context for later");
    const spliced = agent.session.seq;
    assert.equal((await storage.stat("ack"))?.nextSeq, spliced - 1, "the splice waits in the batch");
    await agent.flushed();
    assert.equal((await storage.stat("ack"))?.nextSeq, spliced);
    await harness.dispose();
  });

  it("flushes asked for together share one write", async () => {
    const storage = memoryStorage();
    const appends: number[] = [];
    const counting: SessionStorage = {
      ...storage,
      kind: "counting",
      create: (h, o) => storage.create(h, o),
      acquireWriter: (id) => storage.acquireWriter(id),
      stat: (id) => storage.stat(id),
      append: (id, events, o) => {
        appends.push(events.length);
        return storage.append(id, events, o);
      },
    };
    const { harness } = await harnessWith(counting, [], { batchWindowMs: 60_000 });
    const agent = await harness.createAgent({ id: "batch" });
    await agent.flushed();
    appends.length = 0;
    const pending: Promise<void>[] = [];
    for (let i = 0; i < 10; i++) {
      agent.inject(`note ${i}`);
      pending.push(agent.flushed());
    }
    await Promise.all(pending);
    assert.deepEqual(appends, [10], "one batch for ten barriers");
    await harness.dispose();
  });

  it("a flush asked for while the session is released waits for the release's last write, and fails with it", async () => {
    const storage = memoryStorage();
    const held = { armed: false, fail: (_error: Error) => {} };
    let appendStarted!: () => void;
    const started = new Promise<void>((resolve) => (appendStarted = resolve));
    const gated = withFaults(storage, {
      append: (append) => (id, events, options) => {
        if (!held.armed) return append(id, events, options);
        appendStarted();
        return new Promise((_resolve, reject) => (held.fail = reject));
      },
    });
    const ctx = createKernel<SessionEvents, SessionServices>();
    await ctx.plugin(sessionStorePlugin).ready;
    await ctx.plugin(persistencePlugin, { storage: gated, batchWindowMs: 60_000 }).ready;
    const sessions = ctx.service("sessions");
    const session = sessions.create("r1");
    await sessions.flush(session);
    session.append("todo/write", { todos: [] });
    held.armed = true;
    // As an agent's teardown does: the release writes what is left, and the session is still live meanwhile.
    const releasing = ctx.parallel("session/release", session);
    await started;
    let settled = false;
    const flushing = sessions.flush(session).finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(settled, false, "no flush settles before the write it stands for");
    held.fail(new HarnessError("SESSION_WRITE_FAILED", "disk full"));
    await assert.rejects(flushing, (e) => HarnessError.isInstance(e, "SESSION_FLUSH_FAILED"));
    // The kernel gathers the release listeners' failures.
    await assert.rejects(releasing, (e) => e instanceof AggregateError && /disk full/.test(String(e.errors[0])));
    assert.equal((await storage.stat("r1"))?.nextSeq, 0);
  });

  it("a checkpoint that cannot write fails the turn closed", async () => {
    const storage = memoryStorage();
    const failing: SessionStorage = {
      ...storage,
      kind: "failing",
      create: (h, o) => storage.create(h, o),
      acquireWriter: (id) => storage.acquireWriter(id),
      stat: (id) => storage.stat(id),
      append: () => Promise.reject(new Error("disk full")),
    };
    const { harness, model } = await harnessWith(failing, [textResponse("never")]);
    const agent = await harness.createAgent({ id: "p2" });
    const errors: unknown[] = [];
    harness.ctx.on("agent/error", (_a, error) => void errors.push(error));
    // The turn cannot be made durable, so run() refuses to report it.
    await assert.rejects(agent.run("hi"), { code: "SESSION_FLUSH_FAILED" });
    const end = agent.session.events.at(-1);
    assert.equal(end?.type === "turn/end" && end.data.reason.kind, "error");
    assert.equal(model.requests.length, 0, "no model call is made past a failed checkpoint");
    assert.equal(errors.length, 1);
    // Disposal's last write fails too, and says so.
    await assert.rejects(harness.dispose(), /disk full/);
  });

  it("after an append whose answer was lost (or that stored part of a batch), the writer catches up with its own events", async () => {
    for (const fault of ["answer lost", "part stored", "someone else's"] as const) {
      const memory = memoryStorage();
      let armed = false;
      const storage = withFaults(memory, {
        append: (append) => async (id, events, options) => {
          if (!armed) return await append(id, events, options);
          armed = false;
          const stored = fault === "answer lost"
            ? events
            : fault === "part stored"
            ? events.slice(0, 1)
            : [{ ...events[0], data: { turn: 99 } } as SessionEvent];
          await append(id, stored, options);
          throw new Error("connection reset");
        },
      });
      const { harness } = await harnessWith(storage, [textResponse("one"), textResponse("two")]);
      const agent = await harness.createAgent({ id: "s" });
      armed = true;
      await assert.rejects(agent.run("hi"));
      if (fault === "someone else's") {
        // What storage holds past this writer's count is not its own: the writes keep failing, nothing is overwritten.
        await assert.rejects(agent.flushed(), { code: "SESSION_FLUSH_FAILED" });
        assert.deepEqual((await memory.inspect("s")).events.at(-1)?.data, { turn: 99 });
        await assert.rejects(harness.dispose(), { code: "SESSION_SEQ_MISMATCH" }); // so does disposal's last write
      } else {
        await agent.flushed();
        assert.equal((await agent.run("again")).reason.kind, "completed");
        assert.deepEqual(strip((await memory.inspect("s")).events), strip(agent.session.events), fault);
        await harness.dispose();
      }
    }
  });
});

describe("resumeAgent()", () => {
  it("a resume that waits for the lease loads after it: what another instance wrote meanwhile is in its log", async () => {
    // Before, resumeAgent loaded first and took the lease later: a resume whose lease came late held a stale copy
    // (refused then with SESSION_SEQ_MISMATCH). It now takes the lease, then loads under it.
    const storage = memoryStorage();
    const first = await harnessWith(storage, [textResponse("zero")]);
    await (await first.harness.createAgent({ id: "s" })).run("hello 0");
    await first.harness.dispose();
    // Instance B waits for the lease (network latency to a shared store) while A resumes and writes.
    let open!: () => void;
    const gate = new Promise<void>((resolve) => open = resolve);
    const order: string[] = [];
    const slow = new Proxy(storage, {
      get: (target, prop) =>
        prop === "acquireWriter"
          ? async (id: string) => (order.push("acquireWriter"), await gate, target.acquireWriter(id))
          : prop === "load"
          ? (id: string, options?: { writer?: unknown }) => (
            order.push(options?.writer === undefined ? "load" : "load with the lease"),
              target.load(id, options as never)
          )
          : typeof target[prop as keyof SessionStorage] === "function"
          ? (target[prop as keyof SessionStorage] as (...a: unknown[]) => unknown).bind(target)
          : target[prop as keyof SessionStorage],
    });
    const b = await harnessWith(slow, [textResponse("B")]);
    const resuming = b.harness.resumeAgent("s");
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(order, ["acquireWriter"], "nothing is loaded before the lease is held");
    const a = await harnessWith(storage, [textResponse("A")]);
    await (await a.harness.resumeAgent("s")).run("hello A");
    await a.harness.dispose();
    open();
    const again = await resuming;
    assert.deepEqual(order, ["acquireWriter", "load with the lease"]);
    await again.run("hello B");
    const { events } = await storage.inspect("s");
    const said = events.flatMap((e) =>
      e.type === "user/message" && e.data.content[0]?.type === "text" ? [e.data.content[0].text] : []
    );
    assert.deepEqual(said, ["hello 0", "hello A", "hello B"]);
    assert.deepEqual(strip(events), strip(again.session.events));
    await b.harness.dispose();
  });

  it("a session deleted between its load and its start is not stored again: the resume fails SESSION_NOT_FOUND", async () => {
    // The persistence plugin, finding no stored log for the adopted session, created it again from the loaded copy:
    // a DELETE already answered 204 was undone, the whole log back.
    const storage = memoryStorage();
    const first = await harnessWith(storage, [textResponse("zero")]);
    await (await first.harness.createAgent({ id: "s" })).run("hello 0");
    await first.harness.dispose();
    let writer: unknown;
    const deleting = new Proxy(storage, {
      get: (target, prop) =>
        prop === "acquireWriter"
          ? async (id: string) => (writer = await target.acquireWriter(id))
          : prop === "load"
          ? async (id: string, options?: { writer?: unknown }) => {
            const loaded = await target.load(id, options as never);
            // Another party's delete lands right after the load (as a PostgreSQL delete that checked the lease
            // before it was taken could).
            assert.equal(await target.delete(id, { writer } as never), true);
            return loaded;
          }
          : typeof target[prop as keyof SessionStorage] === "function"
          ? (target[prop as keyof SessionStorage] as (...a: unknown[]) => unknown).bind(target)
          : target[prop as keyof SessionStorage],
    });
    const b = await harnessWith(deleting, [textResponse("B")]);
    await assert.rejects(b.harness.resumeAgent("s"), { code: "SESSION_NOT_FOUND" });
    assert.equal(await storage.stat("s"), undefined, "the deleted session stays deleted");
    assert.equal(b.harness.sessions.get("s"), undefined);
    await b.harness.dispose();
  });

  it("continues a stored conversation in a new harness: resume header, rebuilt inbox, full history", async () => {
    const storage = memoryStorage();
    const first = await harnessWith(storage, [textResponse("Paris is in France")]);
    const a1 = await first.harness.createAgent({ id: "r1" });
    await a1.run("Where is Paris?");
    a1.inject("Context: the user likes short answers");
    await first.harness.dispose();

    const second = await harnessWith(storage, [textResponse("Yes")]);
    const a2 = await second.harness.resumeAgent("r1");
    assert.equal(a2.inbox.pending("next-step").length, 1, "the injected context survived");
    const result = await a2.run("Is it the capital?");
    assert.equal(result.text, "Yes");
    assert.equal(result.turn, 2);
    const request = second.model.requests[0];
    const texts = request.messages.map((m) => m.content.map((b) => (b.type === "text" ? b.text : "")).join(""));
    assert.deepEqual(texts, [
      "Where is Paris?",
      "Paris is in France",
      "Context: the user likes short answers",
      "Is it the capital?",
    ]);
    const headers = a2.session.events.filter((e) => e.type === "request/header").map((e) =>
      e.type === "request/header" ? e.data.reason : ""
    );
    assert.deepEqual(headers, ["initial", "resume"]);
    assert.equal(a2.session.events.filter((e) => e.type === "session/end-seed").length, 1);
    assert.deepEqual(checkInvariants(a2.session.events), []);
    await second.harness.dispose();
    const stored = await storage.load("r1");
    assert.deepEqual(strip(stored.events), strip(a2.session.events));
  });

  it("refuses without storage, for an unknown session, and for a live one", async () => {
    const noStorage = await createHarness({ adapters: [scriptedAdapter(textResponse("x"))] });
    await assert.rejects(noStorage.resumeAgent("x"), { code: "NO_STORAGE" });
    await noStorage.dispose();
    const storage = memoryStorage();
    const { harness } = await harnessWith(storage, textResponse("x"));
    await assert.rejects(harness.resumeAgent("missing"), { code: "SESSION_NOT_FOUND" });
    const live = await harness.createAgent({ id: "live" });
    await live.run("hi");
    await assert.rejects(harness.resumeAgent("live"), { code: "SESSION_ALREADY_EXISTS" });
    await harness.dispose();
  });
});

describe("agents over storage start durable", () => {
  it("createAgent() and forkAgent() hand out an agent whose session is already on storage", async () => {
    const memory = memoryStorage();
    const storage = slowWrites(memory);
    const { harness } = await harnessWith(storage, [textResponse("x")]);
    const agent = await harness.createAgent({ id: "s1" });
    assert.equal((await storage.stat("s1"))?.nextSeq, agent.session.seq);
    await agent.run("hi");
    const child = await harness.forkAgent("s1", { id: "c1" });
    assert.equal((await storage.stat("c1"))?.nextSeq, child.session.seq);
    const forked = await harness.fork("s1", undefined, "f1");
    assert.equal((await storage.stat("f1"))?.nextSeq, forked.seq);
    await harness.dispose();
  });

  it("a session whose lease another process holds is refused with SESSION_WRITER_BUSY and nothing is left live", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-durable-start-"));
    try {
      const storage = fileStorage(dir);
      const { harness } = await harnessWith(storage, [textResponse("Back")]);
      await storage.create({ id: "s1" });
      // Another live process holds s1's lease (this process's parent stands in for it).
      const lock = join(dir, "s1", "writer.lock");
      const ppid = (globalThis as { process: { ppid: number } }).process.ppid;
      await writeFile(lock, JSON.stringify({ token: "other", pid: ppid, acquiredAt: 0 }));
      await assert.rejects(harness.resumeAgent("s1"), { code: "SESSION_WRITER_BUSY" });
      await assert.rejects(harness.createAgent({ id: "s2" }).then(() => harness.createAgent({ id: "s2" })), {
        code: "SESSION_ALREADY_EXISTS",
      });
      for (const id of ["s3", "f3"]) {
        await mkdir(join(dir, id));
        await writeFile(join(dir, id, "writer.lock"), JSON.stringify({ token: "other", pid: ppid, acquiredAt: 0 }));
      }
      await assert.rejects(harness.createAgent({ id: "s3" }), { code: "SESSION_WRITER_BUSY" });
      await assert.rejects(harness.fork("s2", undefined, "f3"), { code: "SESSION_WRITER_BUSY" });
      for (const id of ["s1", "s3", "f3"]) assert.equal(harness.sessions.get(id), undefined, `${id} stayed live`);
      // Once the other process lets go, the session resumes here and writes.
      await rm(lock);
      const agent = await harness.resumeAgent("s1");
      assert.equal((await agent.run("hi")).text, "Back");
      assert.equal((await storage.stat("s1"))?.nextSeq, agent.session.seq);
      await harness.dispose();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("fork from storage", () => {
  it("forks a stored session at a turn boundary into a new persisted session", async () => {
    const storage = memoryStorage();
    const first = await harnessWith(storage, [textResponse("one"), textResponse("two")]);
    const agent = await first.harness.createAgent({ id: "src" });
    await agent.run("first");
    await agent.run("second");
    const boundary = agent.session.events.findIndex((e) => e.type === "turn/end");
    await first.harness.dispose();

    const second = await harnessWith(storage, textResponse("forked"));
    const child = await second.harness.fork("src", boundary, "child");
    assert.equal(child.header.parentSession, "src");
    assert.equal(child.events.filter((e) => e.type === "turn/end").length, 1);
    await assert.rejects(second.harness.fork("src", boundary - 1, "child2"), { code: "OPEN_TURN" });
    await second.harness.sessions.flush(child);
    const stored = await storage.load("child");
    assert.equal(stored.events.length, child.events.length);
    await second.harness.dispose();
  });
});

describe("forks keep the session profile", () => {
  it("harness.fork() and forkAgent(), from a live session and from storage, copy profile into the child header", async () => {
    const storage = memoryStorage();
    const profile = { system: "Answer in French", tools: ["read_file"], model: "scripted-model" };
    const first = await harnessWith(storage, [textResponse("one"), textResponse("two")]);
    const source = await first.harness.createAgent({ id: "prof", profile });
    await source.run("first");
    const live = await first.harness.forkAgent("prof", { id: "live-agent" });
    assert.deepEqual(live.session.header.profile, profile);
    const liveSession = await first.harness.fork("prof", undefined, "live-session");
    assert.deepEqual(liveSession.header.profile, profile);
    await first.harness.dispose();

    const second = await harnessWith(storage, [textResponse("three")]);
    const stored = await second.harness.forkAgent("prof", { id: "stored-agent" });
    assert.deepEqual(stored.session.header.profile, profile);
    const storedSession = await second.harness.fork("prof", undefined, "stored-session");
    assert.deepEqual(storedSession.header.profile, profile);
    await second.harness.dispose();
    for (const id of ["live-agent", "live-session", "stored-agent", "stored-session"]) {
      assert.deepEqual((await storage.inspect(id)).header.profile, profile, id);
    }
  });
});

describe("forkAgent()", () => {
  it("forks a live session into a new agent that continues from the prefix", async () => {
    const storage = memoryStorage();
    const { harness, model } = await harnessWith(storage, [
      textResponse("one"),
      textResponse("two"),
      textResponse("alt"),
    ]);
    const source = await harness.createAgent({ id: "src" });
    await source.run("first");
    const boundary = source.session.seq - 1;
    await source.run("second");
    const child = await harness.forkAgent("src", { boundary, id: "alt" });
    assert.equal(child.session.header.parentSession, "src");
    const result = await child.run("another second");
    assert.equal(result.text, "alt");
    const texts = model.requests.at(-1)!.messages.map((m) =>
      m.content.map((b) => (b.type === "text" ? b.text : "")).join("")
    );
    assert.deepEqual(texts, ["first", "one", "another second"]);
    assert.deepEqual(checkInvariants(child.session.events), []);
    await assert.rejects(harness.forkAgent("src", { boundary: 2 }), { code: "OPEN_TURN" });
    await harness.dispose();
  });

  it("forks a session that is only in storage", async () => {
    const storage = memoryStorage();
    const first = await harnessWith(storage, [textResponse("one")]);
    const a = await first.harness.createAgent({ id: "stored-src" });
    await a.run("first");
    await first.harness.dispose();
    const second = await harnessWith(storage, [textResponse("continued")]);
    const child = await second.harness.forkAgent("stored-src", { id: "stored-child" });
    assert.equal((await child.run("more")).text, "continued");
    await second.harness.dispose();
    assert.equal((await storage.load("stored-child")).header.parentSession, "stored-src");
  });

  it("disposeAgent() resolves after the writer lease is released", async () => {
    const storage = memoryStorage();
    const { harness } = await harnessWith(storage, [textResponse("one")]);
    const agent = await harness.createAgent({ id: "lease" });
    await agent.run("hi");
    await harness.disposeAgent(agent);
    const writer = await storage.acquireWriter("lease");
    await writer.release();
    assert.equal(await storage.delete("lease"), true);
    await harness.dispose();
  });

  it("input queued when an agent is disposed is kept for the resumed agent", async () => {
    const storage = memoryStorage();
    const first = await harnessWith(storage, [textResponse("one")]);
    const a = await first.harness.createAgent({ id: "keep" });
    a.inject("remember me");
    await first.harness.dispose();
    const second = await harnessWith(storage, [textResponse("two")]);
    const b = await second.harness.resumeAgent("keep");
    assert.deepEqual(b.inbox.pending("next-step").map((e) => e.message.content), [[{
      type: "text",
      text: "remember me",
    }]]);
    await second.harness.dispose();
  });
});

describe("crash recovery", () => {
  it("a session killed with SIGKILL mid-turn reloads repaired, valid, complete, and resumes", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-crash-"));
    try {
      const script = fileURLToPath(new URL("./_test_crash_child.ts", import.meta.url));
      const [cmd, args] = childCommand(script, dir);
      const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      const flushedSeq = await new Promise<number>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d) => {
          out += d;
          const m = out.match(/FLUSHED (\d+)/);
          if (m) resolve(Number(m[1]));
        });
        child.on("exit", (code) => reject(new Error(`child exited early (${code}): ${stderr}`)));
      });
      const exited = new Promise((resolve) => child.on("exit", resolve));
      child.kill("SIGKILL");
      await exited;

      const storage = fileStorage(dir);
      const inspected = await storage.inspect("crash");
      assert.equal(inspected.repair.repaired, true);
      const loaded = await loadUnderLease(storage, "crash");
      const events = loaded.events;
      assert.ok(events.length >= flushedSeq, "every event flushed before the kill is there");
      assert.deepEqual(checkInvariants(events), []);
      const tail = summarize(events.slice(flushedSeq));
      assert.deepEqual(tail, ["step/end 2.2", "turn/end 2 interrupted"]);

      const { harness, model } = await harnessWith(storage, textResponse("Recovered"));
      const agent = await harness.resumeAgent("crash");
      const result = await agent.run("Are you there?");
      assert.equal(result.text, "Recovered");
      assert.equal(result.turn, 3);
      assert.equal(model.requests.length, 1);
      assert.deepEqual(checkInvariants(agent.session.events), []);
      await harness.dispose();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
