import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileStorage } from "../mod.ts";
import { scriptedAdapter, textResponse } from "../testing/mod.ts";
import serverless, { createServerlessHandler, type ServerlessOptions } from "./serverless.ts";

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
      const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
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
