import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileStorage, type Harness, HarnessError, memoryStorage, type SessionStorage } from "../../mod.ts";
import { scriptedAdapter, type ScriptEntry, textResponse, toolCallResponse } from "../../testing/mod.ts";
import { createHarnessApp } from "../http/mod.ts";
import { scenarioHarness } from "./_test_scenario.ts";

const task = (id: string) => ({
  id,
  name: "task",
  arguments: JSON.stringify({ agent: "worker", description: id, prompt: `Do ${id}` }),
});

/** The parent delegates two tasks and answers once both are done; a child answers, or hangs when `hang` says so. */
function delegatingModel(hang: (sessionId: string) => boolean = () => false) {
  let started: () => void = () => {};
  const childAsked = new Promise<void>((resolve) => (started = resolve));
  const model = scriptedAdapter((request): ScriptEntry => {
    if (request.sessionId === "parent") {
      const answered = request.messages.some((m) => m.content.some((b) => b.type === "tool-result"));
      return answered ? textResponse("Both done.") : toolCallResponse([task("call_a"), task("call_b")]);
    }
    if (!hang(request.sessionId ?? "")) return textResponse(`done by ${request.sessionId}`);
    started();
    return { hang: true, chunks: [{ type: "block-start", index: 0, blockType: "text" }] };
  });
  return { model, childAsked };
}

const storages = [
  ["memory", () => Promise.resolve({ storage: memoryStorage(), after: () => Promise.resolve(), dir: undefined })],
  ["file", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-delete-tree-"));
    return { storage: fileStorage(dir), after: () => rm(dir, { recursive: true, force: true }), dir };
  }],
] as const;

const storedIds = async (storage: SessionStorage) => (await storage.list()).map((h) => h.id).sort();

async function within<T>(
  make: () => Promise<{ storage: SessionStorage; after(): Promise<void>; dir: string | undefined }>,
  body: (storage: SessionStorage, dir: string | undefined) => Promise<T>,
): Promise<T> {
  const { storage, after, dir } = await make();
  try {
    return await body(storage, dir);
  } finally {
    await after();
  }
}

/** Requests of an app without auth over `harness`. */
function appOf(harness: Harness) {
  const app = createHarnessApp(harness, { auth: false, log: false });
  return (method: string, path: string, body?: unknown) =>
    Promise.resolve(app.request(path, {
      method,
      ...(body !== undefined ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {}),
    }));
}

for (const [kind, make] of storages) {
  describe(`deleting a session that delegated (${kind} storage)`, () => {
    it("harness.deleteSession() deletes its children's logs too: a new session under its id has no children", async () => {
      await within(make, async (storage, dir) => {
        const harness = await scenarioHarness(delegatingModel().model, { storage });
        const parent = await harness.createAgent({ id: "parent" });
        assert.equal((await parent.run("Delegate")).text, "Both done.");
        assert.deepEqual(await storedIds(storage), ["parent", "parent.call_a", "parent.call_b"]);
        assert.equal(await harness.deleteSession("parent"), true);
        assert.equal(harness.ctx.service("agents").get("parent"), undefined, "its agent is disposed");
        assert.deepEqual(await storedIds(storage), []);
        if (dir !== undefined) assert.deepEqual(await readdir(dir), [], "no folder is left behind");
        assert.equal(await harness.deleteSession("parent"), false);

        await harness.createAgent({ id: "parent" });
        const children = (await storage.list()).filter((h) => h.parentSession === "parent");
        assert.deepEqual(children, []);
        await harness.dispose();
      });
    });

    it("DELETE /sessions/:id deletes its children's logs too: the new session of its id lists no children", async () => {
      await within(make, async (storage) => {
        const harness = await scenarioHarness(delegatingModel().model, { storage });
        const call = appOf(harness);
        assert.equal((await call("POST", "/sessions", { id: "parent" })).status, 201);
        const sent = await call("POST", "/sessions/parent/messages", { content: "Delegate", wait: true });
        assert.equal((await sent.json()).result.text, "Both done.");
        assert.equal((await call("DELETE", "/sessions/parent")).status, 204);
        assert.deepEqual(await storedIds(storage), []);
        assert.deepEqual((await (await call("GET", "/sessions")).json()).sessions, []);
        assert.equal((await call("DELETE", "/sessions/parent")).status, 404);

        assert.equal((await call("POST", "/sessions", { id: "parent" })).status, 201);
        const listed = (await (await call("GET", "/sessions")).json()).sessions as { id: string }[];
        assert.deepEqual(listed.map((s) => s.id), ["parent"]);
        await harness.dispose();
      });
    });

    it("a parent whose child is running: the delete stops both, then deletes both", async () => {
      await within(make, async (storage) => {
        const { model, childAsked } = delegatingModel((id) => id === "parent.call_a");
        const harness = await scenarioHarness(model, { storage });
        const call = appOf(harness);
        assert.equal((await call("POST", "/sessions", { id: "parent" })).status, 201);
        const running = call("POST", "/sessions/parent/messages", { content: "Delegate", wait: true });
        await childAsked;
        assert.equal(harness.ctx.service("agents").get("parent.call_a")?.status, "running");
        assert.equal((await call("DELETE", "/sessions/parent")).status, 204);
        assert.equal((await (await running).json()).result.reason.kind, "aborted");
        assert.deepEqual(harness.ctx.service("agents").list(), []);
        assert.deepEqual(await storedIds(storage), []);
        await harness.dispose();
      });
    });

    it("a child resumed on its own and running is stopped and deleted with its parent", async () => {
      await within(make, async (storage) => {
        const first = await scenarioHarness(delegatingModel().model, { storage });
        await (await first.createAgent({ id: "parent" })).run("Delegate");
        await first.dispose();
        const { model, childAsked } = delegatingModel((id) => id === "parent.call_a");
        const harness = await scenarioHarness(model, { storage, idPrefix: "second" });
        const child = await harness.resumeAgent("parent.call_a");
        const run = child.run("Go on");
        await childAsked;
        assert.equal(await harness.deleteSession("parent"), true);
        assert.deepEqual((await run).reason, { kind: "aborted", reason: "disposed" });
        assert.equal(harness.ctx.service("agents").get("parent.call_a"), undefined);
        assert.deepEqual(await storedIds(storage), []);
        await harness.dispose();
      });
    });

    it("a running child of a live parent is not deleted on its own: SESSION_WRITER_BUSY, nothing deleted", async () => {
      await within(make, async (storage) => {
        const { model, childAsked } = delegatingModel((id) => id === "parent.call_a");
        const harness = await scenarioHarness(model, { storage });
        const parent = await harness.createAgent({ id: "parent" });
        const run = parent.run("Delegate");
        await childAsked;
        await assert.rejects(
          harness.deleteSession("parent.call_a"),
          (error) => HarnessError.isInstance(error, "SESSION_WRITER_BUSY"),
        );
        assert.deepEqual(await storedIds(storage), ["parent", "parent.call_a", "parent.call_b"]);
        parent.cancel("user");
        await run;
        await harness.dispose();
      });
    });
  });
}
