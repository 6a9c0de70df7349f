// Creating sessions concurrently over HTTP: two requests for one id, on one app or on two apps sharing storage (two
// servers, or serverless instances), get one 201 and one 409 SESSION_ALREADY_EXISTS, never a writer lease's
// SESSION_WRITER_BUSY, and leave the winner's session whole; requests for distinct ids all succeed.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { memoryStorage } from "../persistence/memory_storage.ts";
import { fileStorage } from "../persistence/file_storage.ts";
import { withFaults } from "../persistence/_test_storage_faults.ts";
import type { SessionStorage } from "../persistence/session_storage.ts";
import { scriptedAdapter, textResponse } from "../../testing/scripted_adapter.ts";
import { createHarness, type Harness } from "../harness.ts";
import { createHarnessApp } from "./create_harness_app.ts";
import { createServerlessHandler } from "./create_serverless_handler.ts";

const headers = { authorization: "Bearer race-token", "content-type": "application/json" };
const post = (path: string, body: unknown) =>
  new Request(`http://localhost${path}`, { method: "POST", headers, body: JSON.stringify(body) });

function makeHarness(storage: SessionStorage | undefined): Promise<Harness> {
  return createHarness({
    adapters: [scriptedAdapter(() => textResponse("Hi"))],
    model: { provider: "scripted", model: "scripted-model" },
    storage,
  });
}

/** Two apps, as two servers would run them, over one storage. */
async function twoApps(storage: SessionStorage) {
  const harnesses = [await makeHarness(storage), await makeHarness(storage)];
  const apps = harnesses.map((h) => createHarnessApp(h, { token: "race-token", log: false }));
  return {
    harnesses,
    apps,
    liveIds: () => harnesses.map((h) => h.ctx.service("agents").list().map((a) => a.id).sort()),
    dispose: () => Promise.all(harnesses.map((h) => h.dispose())),
  };
}

/**
 * `storage` whose first `n` stats of `id` are answered together, once all `n` were asked: `n` requests racing to
 * create `id` all find it free (as they may, however the requests interleave), whatever their timing here.
 */
function raced(storage: SessionStorage, id: string, n: number): SessionStorage {
  let asked = 0;
  let open!: () => void;
  const all = new Promise<void>((resolve) => (open = resolve));
  return withFaults(storage, {
    stat: (stat) => async (sessionId) => {
      const answer = await stat(sessionId);
      if (sessionId !== id || asked >= n) return answer;
      if (++asked === n) open();
      await all;
      return answer;
    },
  });
}

/** The answers' statuses and codes, sorted: `201` or `409 CODE`. */
async function outcomes(responses: readonly Response[]): Promise<string[]> {
  const seen = await Promise.all(
    responses.map(async (r) => r.status === 201 ? "201" : `${r.status} ${(await r.json()).code}`),
  );
  return seen.sort();
}

const storages: readonly [string, () => Promise<{ storage: SessionStorage; done(): Promise<void> }>][] = [
  ["memory storage", () => Promise.resolve({ storage: memoryStorage(), done: () => Promise.resolve() })],
  ["file storage", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-race-"));
    return { storage: fileStorage(dir), done: () => rm(dir, { recursive: true, force: true }) };
  }],
];

describe("POST /sessions raced for one id", () => {
  it("on one app: one 201, the other 409 SESSION_ALREADY_EXISTS; one live agent, one stored log", async () => {
    for (const storage of [undefined, memoryStorage()]) {
      const harness = await makeHarness(storage && raced(storage, "x", 3));
      const app = createHarnessApp(harness, { token: "race-token", log: false });
      const responses = await Promise.all([1, 2, 3].map(() => app.fetch(post("/sessions", { id: "x" }))));
      assert.deepEqual(await outcomes(responses), ["201", "409 SESSION_ALREADY_EXISTS", "409 SESSION_ALREADY_EXISTS"]);
      assert.deepEqual(harness.ctx.service("agents").list().map((a) => a.id), ["x"]);
      if (storage !== undefined) assert.deepEqual((await storage.list()).map((h) => h.id), ["x"]);
      await harness.dispose();
    }
  });

  for (const [name, open] of storages) {
    it(`on two apps over one ${name}: one 201, the other 409 SESSION_ALREADY_EXISTS, nothing half made`, async () => {
      const { storage, done } = await open();
      const both = await twoApps(raced(storage, "x", 2));
      try {
        const responses = await Promise.all(both.apps.map((app) => app.fetch(post("/sessions", { id: "x" }))));
        assert.deepEqual(await outcomes(responses), ["201", "409 SESSION_ALREADY_EXISTS"]);
        const loser = responses.findIndex((r) => r.status !== 201);
        const winner = 1 - loser;
        // The loser keeps no agent; the stored log is the winner's, which goes on.
        assert.deepEqual(both.liveIds()[loser], []);
        const stored = await storage.stat("x");
        const session = both.harnesses[winner].ctx.service("agents").get("x")!.session;
        assert.equal(stored?.header.incarnation, session.header.incarnation);
        const sent = await both.apps[winner].fetch(post("/sessions/x/messages", { content: "Hello", wait: true }));
        assert.equal(sent.status, 200);
        assert.equal((await sent.json()).result.text, "Hi");
      } finally {
        await both.dispose();
      }
      // Once the winner let go, another instance serves the session: there is one, whole.
      const again = await makeHarness(storage);
      try {
        const app = createHarnessApp(again, { token: "race-token", log: false });
        const sent = await app.fetch(post("/sessions/x/messages", { content: "Again", wait: true }));
        assert.equal(sent.status, 200);
        const types = (await storage.load("x")).events.map((e) => e.type);
        assert.equal(types.filter((t) => t === "turn/end").length, 2);
      } finally {
        await again.dispose();
        await done();
      }
    });
  }

  it("on serverless instances over one storage: one 201, the others 409 SESSION_ALREADY_EXISTS", async () => {
    const storage = memoryStorage();
    const shared = raced(storage, "x", 3);
    const instance = () =>
      createServerlessHandler({ harness: () => makeHarness(shared), app: { token: "race-token", log: false } });
    const responses = await Promise.all([1, 2, 3].map(() => instance()(post("/sessions", { id: "x" }))));
    assert.deepEqual(await outcomes(responses), ["201", "409 SESSION_ALREADY_EXISTS", "409 SESSION_ALREADY_EXISTS"]);
    assert.deepEqual((await storage.list()).map((h) => h.id), ["x"]);
    const sent = await instance()(post("/sessions/x/messages", { content: "Hello", wait: true }));
    assert.equal((await sent.json()).result.text, "Hi");
  });

  it("when the winner is done before the loser takes the lease, the loser's 409 leaves the winner's log whole", async () => {
    // The loser found no session at first (its check ran before the winner stored it), and took the lease only once
    // the winner had let it go: storage then holds another life of the id.
    const memory = memoryStorage();
    let hold: Promise<void> | undefined;
    const late = withFaults(memory, {
      stat: (stat) => async (id) => {
        const answer = await stat(id);
        await hold;
        return answer;
      },
    });
    const winner = createServerlessHandler({
      harness: () => makeHarness(memory),
      app: { token: "race-token", log: false },
    });
    const loser = createServerlessHandler({
      harness: () => makeHarness(late),
      app: { token: "race-token", log: false },
    });
    let release!: () => void;
    hold = new Promise((resolve) => (release = resolve));
    const lost = loser(post("/sessions", { id: "x" }));
    await new Promise((resolve) => setTimeout(resolve, 5)); // the loser's check has read storage
    assert.equal((await winner(post("/sessions", { id: "x" }))).status, 201);
    const before = await memory.load("x");
    hold = undefined;
    release();
    const answer = await lost;
    assert.equal(answer.status, 409);
    assert.equal((await answer.json()).code, "SESSION_ALREADY_EXISTS");
    assert.deepEqual(await memory.load("x"), before, "the winner's log is untouched");
  });
});

describe("POST /sessions/:id/fork raced for one child id", () => {
  it("on two apps over one storage: one 201, the other 409 SESSION_ALREADY_EXISTS", async () => {
    const storage = memoryStorage();
    const both = await twoApps(raced(storage, "f", 2));
    try {
      assert.equal((await both.apps[0].fetch(post("/sessions", { id: "a" }))).status, 201);
      assert.equal((await both.apps[1].fetch(post("/sessions", { id: "b" }))).status, 201);
      const responses = await Promise.all([
        both.apps[0].fetch(post("/sessions/a/fork", { id: "f" })),
        both.apps[1].fetch(post("/sessions/b/fork", { id: "f" })),
      ]);
      assert.deepEqual(await outcomes(responses), ["201", "409 SESSION_ALREADY_EXISTS"]);
      const winner = responses.findIndex((r) => r.status === 201);
      assert.deepEqual(both.liveIds()[1 - winner], [winner === 0 ? "b" : "a"]);
      assert.equal((await storage.stat("f"))?.header.parentSession, winner === 0 ? "a" : "b");
    } finally {
      await both.dispose();
    }
  });
});

describe("POST /sessions raced for distinct ids", () => {
  for (const [name, open] of storages) {
    it(`on two apps over one ${name}: every request is a 201 and every session is stored`, async () => {
      const { storage, done } = await open();
      const both = await twoApps(storage);
      try {
        const bodies = [{ id: "x" }, { id: "y" }, {}, {}];
        const responses = await Promise.all(
          [...bodies, ...bodies.map((b) => "id" in b ? { id: `${b.id}2` } : b)].map((body, i) =>
            both.apps[i % 2].fetch(post("/sessions", body))
          ),
        );
        assert.deepEqual(responses.map((r) => r.status), responses.map(() => 201));
        const ids = await Promise.all(responses.map(async (r) => (await r.json()).id as string));
        assert.equal(new Set(ids).size, ids.length);
        assert.deepEqual((await storage.list()).map((h) => h.id).sort(), [...ids].sort());
      } finally {
        await both.dispose();
        await done();
      }
    });
  }
});
