import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileStorage, type LlmAdapter } from "../mod.ts";
import { scriptedAdapter, textResponse } from "../testing/mod.ts";
import serverless, { createServerlessHandler, type ServerlessOptions } from "./serverless.ts";

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const headers = { authorization: "Bearer fn-token", "content-type": "application/json" };

function post(path: string, body: unknown): Request {
  return new Request(`https://fn.example${path}`, { method: "POST", headers, body: JSON.stringify(body) });
}

describe("serverless example", () => {
  it("continues one conversation across fresh handler instances that share only storage", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "dsh-fn-"));
    try {
      // Every instance gets its own model, which records the requests it saw.
      const instance = (answer: string) => {
        const model = scriptedAdapter(textResponse(answer), { provider: "echo", models: [{ id: "echo-1" }] });
        const options: ServerlessOptions = { dataDir, token: "fn-token", adapters: () => [model] };
        return { handler: createServerlessHandler(options), model };
      };

      const a = instance("unused");
      assert.equal((await a.handler(post("/sessions", { id: "chat" }))).status, 201);

      const b = instance("Nice to meet you, Ada.");
      const first = await b.handler(post("/sessions/chat/messages", { content: "My name is Ada.", wait: true }));
      assert.equal(first.status, 200);
      assert.deepEqual((await first.json()).result.turn, 1);

      const c = instance("Your name is Ada.");
      const second = await c.handler(post("/sessions/chat/messages", { content: "What is my name?", wait: true }));
      const { result } = await second.json();
      assert.deepEqual([result.text, result.turn], ["Your name is Ada.", 2]);
      const seen = c.model.requests[0].messages.map((m) =>
        m.content.map((block) => (block.type === "text" ? block.text : "")).join("")
      );
      assert.deepEqual(seen, ["My name is Ada.", "Nice to meet you, Ada.", "What is my name?"]);
      assert.equal(a.model.calls, 0);

      // A message without `wait` is still finished before the function returns.
      const d = instance("Goodbye.");
      assert.equal((await d.handler(post("/sessions/chat/messages", { content: "Bye" }))).status, 202);
      const stored = await fileStorage(dataDir).load("chat");
      const turnEnds = stored.events.filter((e) => e.type === "turn/end");
      assert.deepEqual(turnEnds.map((e) => e.type === "turn/end" && e.data.reason.kind), [
        "completed",
        "completed",
        "completed",
      ]);

      const events = await instance("unused").handler(
        new Request("https://fn.example/sessions/chat/events?follow=false", { headers }),
      );
      assert.equal(events.headers.get("content-type"), "text/event-stream");
      const text = await events.text();
      assert.match(text, /event: end/);
      const ids = [...text.matchAll(/^id: [0-9a-z]+:(\d+)$/gm)].map((m) => Number(m[1]));
      assert.deepEqual(ids, ids.map((_, i) => i));
      assert.equal(ids.length, stored.events.length, "catching up reads the log without resuming it");

      const unauthorized = await createServerlessHandler({ dataDir, token: "fn-token" })(
        new Request("https://fn.example/sessions/chat"),
      );
      assert.equal(unauthorized.status, 401);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("refuses to answer for a session that another instance is serving at the same time", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "dsh-fn-"));
    try {
      const options = (model: LlmAdapter): ServerlessOptions => ({
        dataDir,
        token: "fn-token",
        adapters: () => [model],
      });
      // The route must be one the instance serves: POST /sessions refuses an unknown provider or model.
      const idle = scriptedAdapter([], { provider: "echo", models: [{ id: "echo-1" }] });
      assert.equal((await createServerlessHandler(options(idle))(post("/sessions", { id: "chat" }))).status, 201);

      const reached = gate();
      const release = gate();
      const slow = scriptedAdapter(async () => {
        reached.open();
        await release.promise;
        return textResponse("First!");
      }, { provider: "echo", models: [{ id: "echo-1" }] });
      const first = createServerlessHandler(options(slow))(
        post("/sessions/chat/messages", { content: "A", wait: true }),
      );
      await reached.promise; // instance A is inside its turn and holds the session's writer lease

      const other = scriptedAdapter(textResponse("Second!"), { provider: "echo", models: [{ id: "echo-1" }] });
      const second = await createServerlessHandler(options(other))(
        post("/sessions/chat/messages", { content: "B", wait: true }),
      );
      assert.equal(second.status, 409);
      assert.equal(second.headers.get("content-type"), "application/problem+json");
      assert.equal((await second.json()).code, "SESSION_WRITER_BUSY"); // resuming a log another writer holds

      release.open();
      const answered = await first;
      assert.equal(answered.status, 200);
      assert.equal((await answered.json()).result.text, "First!");
      const stored = await fileStorage(dataDir).load("chat");
      const said = stored.events.flatMap((e) =>
        e.type === "user/message" ? e.data.content.map((b) => (b.type === "text" ? b.text : "")) : []
      );
      assert.deepEqual(said, ["A"], "nothing of the refused request reached storage");
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("exports a fetch entry that reads its options from the environment", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "dsh-fn-"));
    const saved = { token: process.env.HARNESS_TOKEN, dir: process.env.HARNESS_DATA_DIR };
    try {
      process.env.HARNESS_TOKEN = "env-token";
      process.env.HARNESS_DATA_DIR = dataDir;
      const listed = await serverless.fetch(
        new Request("https://fn.example/sessions", { headers: { authorization: "Bearer env-token" } }),
      );
      assert.deepEqual(await listed.json(), { sessions: [] });
      delete process.env.HARNESS_TOKEN;
      await assert.rejects(serverless.fetch(new Request("https://fn.example/sessions")), /HARNESS_TOKEN/);
    } finally {
      for (const [key, value] of [["HARNESS_TOKEN", saved.token], ["HARNESS_DATA_DIR", saved.dir]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
