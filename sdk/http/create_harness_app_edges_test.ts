// createHarnessApp() at its edges: bad input, bearer auth, storage errors,
// methods, CORS, image URLs, and the app mounted under a sub-path. The main
// flows are in create_harness_app_test.ts.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../kernel/harness_error.ts";
import { memoryStorage } from "../persistence/memory_storage.ts";
import { slowWrites, withFaults } from "../persistence/_test_storage_faults.ts";
import { scriptedAdapter, textResponse } from "../../testing/scripted_adapter.ts";
import { createHarness } from "../harness.ts";
import { createHarnessApp } from "./create_harness_app.ts";
import { agentOf, gate, lookupTool, serveHarness, withServer } from "./_test_client.ts";
import { Inbox } from "../agent/inbox.ts";
import { programmaticApprover } from "../tools/approval_service.ts";
import { settle } from "../tools/_test_util.ts";

describe("createHarnessApp() with bad input", () => {
  async function badInputServer() {
    const storage = memoryStorage();
    const served = await serveHarness(
      { adapters: [scriptedAdapter(textResponse("Hi"))], tools: [lookupTool()], storage },
      { maxBodyBytes: 1024 },
    );
    await served.call("POST", "/sessions", { id: "s1" });
    await (await served.call("POST", "/sessions/s1/messages", { content: "Hello", wait: true })).json();
    return { served, storage };
  }

  async function expectProblem(response: Response, status: number, code: string): Promise<Record<string, unknown>> {
    assert.equal(response.headers.get("content-type"), "application/problem+json");
    const body = await response.json();
    assert.deepEqual([response.status, body.code, body.status], [status, code, status], JSON.stringify(body));
    assert.equal(body.type, `urn:dsh-harness:problem:${code}`);
    assert.equal(typeof body.title, "string");
    assert.equal(typeof body.detail, "string");
    assert.equal(body.requestId, response.headers.get("x-request-id"));
    return body;
  }

  it("answers each bad request with a problem+json and leaves the session log unchanged", async () => {
    const { served, storage } = await badInputServer();
    await withServer(served, async ({ harness, call, url, token }) => {
      const session = agentOf(harness, "s1").session;
      const seqBefore = session.seq;
      const storedBefore = (await storage.list()).map((h) => h.id);
      const raw = (path: string, init: RequestInit) => fetch(url + path, init);
      const json = { authorization: `Bearer ${token}`, "content-type": "application/json" };

      // malformed JSON, wrong types, unknown fields, wrong media type
      await expectProblem(
        await raw("/sessions/s1/messages", { method: "POST", headers: json, body: "{not json" }),
        400,
        "INVALID_JSON",
      );
      const wrongType = await expectProblem(
        await call("POST", "/sessions/s1/messages", { content: 42 }),
        422,
        "INVALID_BODY",
      );
      assert.deepEqual((wrongType.errors as { path: string }[]).map((e) => e.path), ["content"]);
      await expectProblem(
        await call("POST", "/sessions/s1/messages", { content: "x", mode: "shout" }),
        422,
        "INVALID_BODY",
      );
      await expectProblem(await call("POST", "/sessions/s1/messages", { content: "x", extra: 1 }), 422, "INVALID_BODY");
      await expectProblem(
        await call("POST", "/sessions/s1/messages", { content: [{ type: "tool-call" }] }),
        422,
        "INVALID_BODY",
      );
      await expectProblem(await call("POST", "/sessions", { tools: "lookup" }), 422, "INVALID_BODY");
      await expectProblem(await call("POST", "/sessions", { tools: ["nope"] }), 422, "UNKNOWN_TOOL");
      await expectProblem(await call("POST", "/sessions/s1/fork", { boundary: -1 }), 422, "INVALID_BODY");
      await expectProblem(await call("POST", "/sessions/s1/approvals/c1", { decision: "maybe" }), 422, "INVALID_BODY");
      await expectProblem(
        await raw("/sessions/s1/messages", {
          method: "POST",
          headers: { ...json, "content-type": "text/plain" },
          body: "hi",
        }),
        415,
        "UNSUPPORTED_MEDIA_TYPE",
      );

      // oversized body
      const big = JSON.stringify({ content: "x".repeat(2048) });
      await expectProblem(await call("POST", "/sessions/s1/messages", big), 413, "BODY_TOO_LARGE");
      const chunks = [`{"content":"${"x".repeat(600)}`, "x".repeat(600), '"}'];
      const streamed = new ReadableStream<Uint8Array>({
        pull(controller) {
          const next = chunks.shift();
          if (next === undefined) controller.close();
          else controller.enqueue(new TextEncoder().encode(next));
        },
      });
      const chunked = await raw("/sessions/s1/messages", {
        method: "POST",
        headers: json,
        body: streamed,
        duplex: "half",
      } as RequestInit);
      await expectProblem(chunked, 413, "BODY_TOO_LARGE");

      // unknown session, unknown route
      await expectProblem(await call("POST", "/sessions/nope/messages", { content: "x" }), 404, "SESSION_NOT_FOUND");
      await expectProblem(await call("GET", "/sessions/nope/events"), 404, "SESSION_NOT_FOUND");
      await expectProblem(await call("GET", "/sessions/nope"), 404, "SESSION_NOT_FOUND");
      await expectProblem(await call("GET", "/nowhere"), 404, "NOT_FOUND");
      await expectProblem(await call("POST", "/sessions", { id: "s1" }), 409, "SESSION_ALREADY_EXISTS");
      await expectProblem(
        await call("GET", "/sessions/s1/events", undefined, { "last-event-id": "x" }),
        400,
        "INVALID_LAST_EVENT_ID",
      );
      await expectProblem(await call("GET", `/sessions/s1/events?from=${seqBefore + 1}`), 400, "INVALID_QUERY");
      await expectProblem(await call("GET", "/sessions/s1/events?from=-1"), 400, "INVALID_QUERY");
      await expectProblem(await call("POST", "/sessions", { reasoningEffort: "extreme" }), 422, "INVALID_BODY");

      // missing, malformed and wrong tokens
      const missing = await raw("/sessions/s1", {});
      assert.equal(missing.headers.get("www-authenticate"), 'Bearer realm="dsh-harness"');
      await expectProblem(missing, 401, "AUTH_REQUIRED");
      await expectProblem(
        await raw("/sessions/s1", { headers: { authorization: `Basic ${token}` } }),
        401,
        "MALFORMED_AUTHORIZATION",
      );
      const wrong = await raw("/sessions/s1/messages", {
        method: "POST",
        headers: { ...json, authorization: `Bearer ${token}x` },
        body: JSON.stringify({ content: "x" }),
      });
      assert.match(wrong.headers.get("www-authenticate") ?? "", /error="invalid_token"/);
      await expectProblem(wrong, 401, "INVALID_TOKEN");
      await expectProblem(
        await raw("/sessions/s1/cancel", { method: "POST", headers: { authorization: "Bearer " } }),
        401,
        "MALFORMED_AUTHORIZATION",
      );

      // path-like session ids never reach the harness or storage
      for (
        const id of [
          "..%2F..%2Fetc",
          "..%2fs1",
          "a.",
          ".s1",
          "x%5Cy",
          "s1%00",
          "%2e%2e%2fs1",
          "-s1",
          "s".repeat(129),
          "S".repeat(86),
        ]
      ) {
        await expectProblem(
          await call("POST", `/sessions/${id}/messages`, { content: "x" }),
          400,
          "INVALID_SESSION_ID",
        );
        await expectProblem(await call("GET", `/sessions/${id}`), 400, "INVALID_SESSION_ID");
        await expectProblem(await call("DELETE", `/sessions/${id}`), 400, "INVALID_SESSION_ID");
      }
      const pathId = await expectProblem(await call("POST", "/sessions", { id: "../s1" }), 422, "INVALID_BODY");
      assert.deepEqual((pathId.errors as { path: string }[]).map((e) => e.path), ["id"]);

      assert.equal(session.seq, seqBefore, "the session log is unchanged");
      assert.equal(agentOf(harness, "s1").session, session);
      assert.deepEqual((await storage.list()).map((h) => h.id), storedBefore, "storage is unchanged");
      assert.deepEqual(harness.ctx.service("agents").list().map((a) => a.id), ["s1"]);
    });
  });
});

describe("createHarnessApp() bearer auth (Hono's bearer-auth)", () => {
  async function statusesFor(token: string, headers: readonly (string | undefined)[]) {
    const harness = await createHarness({ adapters: [scriptedAdapter(textResponse("ok"))] });
    try {
      const app = createHarnessApp(harness, { token, log: false });
      const out: [number, string, string | null][] = [];
      for (const authorization of headers) {
        const response = await app.request(
          "/sessions",
          authorization === undefined ? {} : { headers: { authorization } },
        );
        const body = response.status === 200 ? { code: "OK" } : await response.json();
        assert.equal(
          response.headers.get("content-type"),
          response.status === 200 ? "application/json" : "application/problem+json",
        );
        out.push([response.status, body.code, response.headers.get("www-authenticate")]);
      }
      return out;
    } finally {
      await harness.dispose();
    }
  }

  it("accepts the token; no header is AUTH_REQUIRED, a malformed one MALFORMED_AUTHORIZATION, a wrong token INVALID_TOKEN", async () => {
    const required = [401, "AUTH_REQUIRED", 'Bearer realm="dsh-harness"'];
    const invalid = [401, "INVALID_TOKEN", 'Bearer realm="dsh-harness", error="invalid_token"'];
    const malformedAnswer = [401, "MALFORMED_AUTHORIZATION", 'Bearer realm="dsh-harness", error="invalid_token"'];
    assert.deepEqual(await statusesFor("s3cr3t-T0k.en~+/=", ["Bearer s3cr3t-T0k.en~+/="]), [[200, "OK", null]]);
    // RFC 6750's grammar: a case-insensitive scheme, then one or more spaces.
    const ok = ["bearer s3cret", "BEARER s3cret", "Bearer  s3cret"];
    assert.deepEqual(await statusesFor("s3cret", ok), ok.map(() => [200, "OK", null]));
    const missing = [undefined, ""];
    assert.deepEqual(await statusesFor("s3cret", missing), missing.map(() => required));
    // Credentials given but unusable, whatever the token: another scheme, no token, a token no token can be.
    const malformed = [
      "s3cret",
      "Basic s3cret",
      "Basic czNjcmV0Og==",
      "Bearers3cret",
      "Bearer",
      "Bearer ",
      "Bearer a b",
      "Bearer s3cret!",
      "Bearer s3cr\u00e9t",
      "Bearer s3cret, Bearer s3cret",
    ];
    assert.deepEqual(await statusesFor("s3cret", malformed), malformed.map(() => malformedAnswer));
    const wrong = ["Bearer s3cre", "Bearer S3CRET", "Bearer x", "Bearer s3crets"];
    assert.deepEqual(await statusesFor("s3cret", wrong), wrong.map(() => invalid));
  });

  it("says why a malformed Authorization header is unusable, without echoing it", async () => {
    const harness = await createHarness({});
    try {
      const app = createHarnessApp(harness, { token: "s3cret", log: false });
      const detail = async (authorization: string) =>
        (await (await app.request("/sessions", { headers: { authorization } })).json()).detail as string;
      assert.match(await detail("Basic czNjcmV0Og=="), /not a bearer credential/);
      assert.match(await detail("Bearer"), /no token after Bearer/);
      assert.match(await detail("Bearer s3cr\u00e9t"), /malformed/);
      assert.doesNotMatch(await detail("Bearer hunter2!"), /hunter2/);
    } finally {
      await harness.dispose();
    }
  });

  it("refuses a token that no Authorization header could carry", async () => {
    const harness = await createHarness({});
    for (const token of ["has space", "tab\t", "ünïcode", "a=b"]) {
      assert.throws(() => createHarnessApp(harness, { token }), { code: "INVALID_ARGS" }, token);
    }
    await harness.dispose();
  });
});

describe("createHarnessApp() edges", () => {
  it("maps storage errors to statuses with their codes", async () => {
    const storage = memoryStorage();
    const broken = {
      ...storage,
      kind: "broken",
      list: () => storage.list(),
      stat: (id: string) => storage.stat(id),
      inspect: () =>
        Promise.reject(new HarnessError("SESSION_CORRUPT", "Session log x is corrupt at line 3: the line is not JSON")),
    };
    await storage.create({ id: "s1", createdAt: 1 });
    const served = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))], storage: broken });
    await withServer(served, async ({ call }) => {
      const res = await call("GET", "/sessions/s1");
      assert.equal(res.status, 500);
      const problem = await res.json();
      assert.equal(problem.code, "SESSION_CORRUPT");
      // The message names the storage's layout: it stays in the server's log.
      assert.equal(
        problem.detail,
        `The stored log of this session is damaged (the server's log has the details: request ${problem.requestId})`,
      );
    });
  });

  it("a storage upgraded by a newer build is 500 STORAGE_SCHEMA_UNSUPPORTED, a lost lease 409 SESSION_LEASE_LOST", async () => {
    const storage = memoryStorage();
    const newer = new HarnessError(
      "STORAGE_SCHEMA_UNSUPPORTED",
      'PostgreSQL schema "dsh" was written by a newer version',
    );
    const broken = withFaults(storage, {
      list: () => () => Promise.reject(newer),
      inspect: () => () =>
        Promise.reject(
          new HarnessError("SESSION_LEASE_LOST", "The writer lease of session s1 expired or was taken over"),
        ),
    });
    await storage.create({ id: "s1", createdAt: 1 });
    const served = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))], storage: broken });
    await withServer(served, async ({ call }) => {
      const res = await call("GET", "/sessions");
      assert.equal(res.status, 500);
      const problem = await res.json();
      assert.equal(problem.code, "STORAGE_SCHEMA_UNSUPPORTED");
      assert.equal(
        problem.detail,
        "The storage was upgraded by a newer version of the server, which this one cannot use " +
          `(the server's log has the details: request ${problem.requestId})`,
      );
      const lost = await call("GET", "/sessions/s1");
      assert.equal(lost.status, 409);
      assert.equal((await lost.json()).code, "SESSION_LEASE_LOST");
    });
  });

  it("a session whose writer lost its lease is let go of: its next request resumes it from storage", async () => {
    const storage = memoryStorage();
    // Once armed, the writer of the next append loses its lease: that append and every later one with it are
    // refused, as postgresStorage refuses a writer whose lease expired or was taken over.
    let arm = false;
    const lost = new Set<unknown>();
    const faulty = withFaults(storage, {
      append: (append) => (id, events, options) => {
        if (arm) {
          arm = false;
          lost.add(options.writer);
        }
        if (!lost.has(options.writer)) return append(id, events, options);
        return Promise.reject(
          new HarnessError("SESSION_LEASE_LOST", `The writer lease of session ${id} expired or was taken over`, {
            details: { sessionId: id, action: "append" },
          }),
        );
      },
    });
    const served = await serveHarness({ adapters: [scriptedAdapter(() => textResponse("Hi"))], storage: faulty });
    await withServer(served, async ({ call, harness }) => {
      const send = (content: string) => call("POST", "/sessions/s/messages", { content, wait: true });
      assert.equal((await call("POST", "/sessions", { id: "s" })).status, 201);
      assert.equal((await send("one")).status, 200);
      const before = harness.ctx.service("agents").get("s");
      arm = true;
      const failed = await send("two");
      assert.equal(failed.status, 503);
      assert.equal((await failed.json()).code, "SESSION_FLUSH_FAILED");
      // The agent is gone: the next requests resume the session from storage, with a new lease.
      for (const content of ["three", "four"]) {
        const res = await send(content);
        assert.equal(res.status, 200, await res.clone().text());
        assert.equal((await res.json()).result.text, "Hi");
      }
      assert.notEqual(harness.ctx.service("agents").get("s"), before);
      // Nothing of the failed request was kept: the resumed session is what storage holds.
      const users = (await storage.load("s")).events.flatMap((e) =>
        e.type === "user/message" ? e.data.content.map((b) => (b.type === "text" ? b.text : "")) : []
      );
      assert.deepEqual(users, ["one", "three", "four"]);
    });
  });

  it("a body that fails mid-upload (the client went away) is 400 BODY_INCOMPLETE, not a server fault", async () => {
    const harness = await createHarness({
      adapters: [scriptedAdapter([textResponse("ok")])],
      storage: memoryStorage(),
    });
    const records: { status: number; code?: string }[] = [];
    const app = createHarnessApp(harness, { token: "t", log: (r) => void records.push(r as never) });
    const headers = { authorization: "Bearer t", "content-type": "application/json" };
    await app.fetch(new Request("http://x/sessions", { method: "POST", headers, body: '{"id":"s1"}' }));
    const body = new ReadableStream({
      start: (c) => c.enqueue(new TextEncoder().encode('{"content":"hal')),
      pull: (c) => c.error(new Error("connection reset by peer")),
    });
    const res = await app.fetch(
      new Request("http://x/sessions/s1/messages", { method: "POST", headers, body, duplex: "half" } as RequestInit),
    );
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, "BODY_INCOMPLETE");
    assert.equal(records.at(-1)?.status, 400);
    await harness.dispose();
  });

  it("refuses an unknown provider or model at once, leaving nothing stored", async () => {
    const storage = memoryStorage();
    const served = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))], storage });
    await withServer(served, async ({ harness, call }) => {
      const provider = await call("POST", "/sessions", { id: "p", provider: "nowhere" });
      assert.equal(provider.status, 422);
      assert.equal((await provider.json()).code, "UNKNOWN_PROVIDER");
      const model = await call("POST", "/sessions", { id: "m", model: "no-such-model" });
      assert.equal(model.status, 422);
      assert.equal((await model.json()).code, "UNKNOWN_MODEL");
      assert.deepEqual(await storage.list(), []);
      assert.deepEqual(harness.ctx.service("agents").list(), []);
      assert.equal((await call("POST", "/sessions", { id: "ok" })).status, 201);
    });
  });

  it("answers 201 for a new session or a fork once it is on storage; a lease held elsewhere is 409, not a zombie", async () => {
    const memory = memoryStorage();
    let refuse = false; // another process holds the lease of every session that is not yet live here
    const storage = withFaults(slowWrites(memory), {
      acquireWriter: (acquire) => (id) =>
        refuse
          ? Promise.reject(new HarnessError("SESSION_WRITER_BUSY", `Another writer holds session "${id}"`))
          : acquire(id),
    });
    await memory.create({ id: "stored", createdAt: 1 });
    const served = await serveHarness({
      adapters: [scriptedAdapter([textResponse("Hi"), textResponse("Again")])],
      storage,
    });
    await withServer(served, async ({ harness, call }) => {
      assert.equal((await call("POST", "/sessions", { id: "s1" })).status, 201);
      assert.equal((await memory.stat("s1"))?.nextSeq, agentOf(harness, "s1").session.seq);
      await call("POST", "/sessions/s1/messages", { content: "Hi", wait: true });
      assert.equal((await call("POST", "/sessions/s1/fork", { id: "f1" })).status, 201);
      assert.equal((await memory.stat("f1"))?.nextSeq, agentOf(harness, "f1").session.seq);

      refuse = true;
      const busy = await call("POST", "/sessions/stored/messages", { content: "Hi" });
      assert.equal(busy.status, 409);
      assert.equal((await busy.json()).code, "SESSION_WRITER_BUSY");
      assert.equal((await call("POST", "/sessions", { id: "s2" })).status, 409);
      assert.deepEqual(harness.ctx.service("agents").list().map((a) => a.id).sort(), ["f1", "s1"]);
      refuse = false; // the other process let go: the session resumes here
      assert.equal((await call("POST", "/sessions/stored/messages", { content: "Hi", wait: true })).status, 200);
    });
  });

  it("a followed stored session's stream ends with event: end when the harness goes, and says why when the log fails", async () => {
    const memory = memoryStorage();
    await memory.create({ id: "stored", createdAt: 1 });
    let failing = false;
    const storage = withFaults(memory, {
      stat: (stat) => (id) =>
        failing ? Promise.reject(new HarnessError("SESSION_CORRUPT", `Session log ${id} is corrupt`)) : stat(id),
    });
    const frames = async (response: Response) => (await response.text()).split("\n").filter((l) => l !== "");
    for (const ending of ["dispose", "corrupt"] as const) {
      const harness = await createHarness({ adapters: [scriptedAdapter(textResponse("Hi"))], storage });
      const app = createHarnessApp(harness, { auth: false, log: false, tailPollMs: 5 });
      const response = await app.request("/sessions/stored/events");
      await new Promise((resolve) => setTimeout(resolve, 20)); // the stream tails the stored log
      if (ending === "dispose") await harness.dispose();
      else failing = true;
      const lines = await frames(response);
      const end = lines.indexOf("event: end");
      assert.ok(end >= 0, `${ending}: ${lines.join(" | ")}`);
      const data = JSON.parse(lines[end + 1].slice("data: ".length));
      if (ending === "dispose") assert.deepEqual(data, { id: "stored", seq: 0 });
      else {
        assert.deepEqual(data, {
          id: "stored",
          seq: 0,
          error: { code: "SESSION_CORRUPT", message: "The stored log of this session is damaged" },
        });
      }
      failing = false;
      await harness.dispose();
    }
  });

  it("answers a known path with a wrong method 405 with Allow; every answer says nosniff", async () => {
    const served = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] });
    await withServer(served, async ({ call }) => {
      await call("POST", "/sessions", { id: "s1" });
      const cases: [string, string, string][] = [
        ["PUT", "/sessions", "GET, POST"],
        ["POST", "/sessions/s1", "GET, DELETE"],
        ["GET", "/sessions/s1/messages", "POST"],
        ["DELETE", "/sessions/s1/events", "GET"],
        ["POST", "/sessions/s1/projections", "GET"],
        ["GET", "/sessions/s1/approvals/c1", "POST"],
        ["POST", "/sessions/s1/log", "GET"],
        ["DELETE", "/sessions/s1/surface", "GET"],
        ["PUT", "/sessions/s1/view", "GET"],
        ["POST", "/view", "GET"],
        ["POST", "/view/compare", "GET"],
        ["DELETE", "/view/client.js", "GET"],
      ];
      for (const [method, path, allow] of cases) {
        const res = await call(method, path);
        assert.equal(res.status, 405, `${method} ${path}`);
        assert.equal(res.headers.get("allow"), allow);
        assert.equal((await res.json()).code, "METHOD_NOT_ALLOWED");
      }
      const ok = await call("GET", "/sessions");
      assert.equal(ok.headers.get("x-content-type-options"), "nosniff");
      await ok.body?.cancel();
      const missing = await call("GET", "/nowhere");
      assert.equal(missing.status, 404);
      assert.equal(missing.headers.get("x-content-type-options"), "nosniff");
      await missing.body?.cancel();
    });
  });

  it("serves a subagent child's session (an id with a dot: <parent>.<call id>), which the timeline links to", async () => {
    const storage = memoryStorage();
    const served = await serveHarness({ storage, adapters: [scriptedAdapter(textResponse("child answer"))] });
    await withServer(served, async ({ call, harness }) => {
      const child = await harness.createAgent({ id: "parent.call_0" });
      await child.run("Do it");
      for (const path of ["/sessions/parent.call_0", "/sessions/parent.call_0/log", "/sessions/parent.call_0/view"]) {
        const res = await call("GET", path);
        assert.equal(res.status, 200, path);
        await res.body?.cancel();
      }
      const bad = await call("GET", "/sessions/parent./log");
      assert.equal(bad.status, 400);
      await bad.body?.cancel();
    });
  });

  it("fork and cancel of a stored session with a queued followup run no turn of it (a resume does not wake)", async () => {
    const storage = memoryStorage();
    const writer = await createHarness({ storage, adapters: [scriptedAdapter([{ hang: true }])] });
    const agent = await writer.createAgent({ id: "s" });
    agent.followup("one");
    await new Promise((resolve) => setTimeout(resolve, 20));
    agent.followup("two"); // queued behind the turn that hangs; kept by the disposal
    await agent.flushed();
    await writer.dispose();
    const queued = (events: readonly unknown[]) =>
      Inbox.fromLog(events as never, () => {}).pending("next-turn").map((e) => e.message.content);
    assert.deepEqual(queued((await storage.inspect("s")).events), [[{ type: "text", text: "two" }]]);

    const served = await serveHarness({ storage, adapters: [scriptedAdapter(textResponse("ran"))] });
    await withServer(served, async ({ call }) => {
      const fork = await call("POST", "/sessions/s/fork", {});
      assert.equal(fork.status, 201, await fork.clone().text());
      await fork.body?.cancel();
      const cancel = await call("POST", "/sessions/s/cancel", { keepInbox: true });
      assert.equal(cancel.status, 200);
      assert.equal((await cancel.json()).cancelled, false);
    });
    const stored = (await storage.inspect("s")).events;
    assert.deepEqual(queued(stored), [[{ type: "text", text: "two" }]]);
    assert.equal(stored.filter((e) => e.type === "turn/start").length, 1, "no turn ran for the queued followup");
  });

  it("POST /cancel answers once the discard of queued input is stored", async () => {
    const storage = memoryStorage();
    const writer = await createHarness({ storage, adapters: [scriptedAdapter([{ hang: true }])] });
    const agent = await writer.createAgent({ id: "s" });
    agent.followup("one");
    await new Promise((resolve) => setTimeout(resolve, 20));
    agent.followup("two");
    await agent.flushed();
    await writer.dispose();
    const queued = (events: readonly unknown[]) =>
      Inbox.fromLog(events as never, () => {}).pending("next-turn").map((e) => e.message.content);
    assert.notDeepEqual(queued((await storage.inspect("s")).events), []);
    // A batch window longer than the test: only a flush writes before it.
    const served = await serveHarness({
      storage,
      batchWindowMs: 60_000,
      adapters: [scriptedAdapter(textResponse("x"))],
    });
    await withServer(served, async ({ call }) => {
      const cancel = await call("POST", "/sessions/s/cancel", {});
      assert.equal(cancel.status, 200);
      assert.equal((await cancel.json()).cancelled, true);
      // A crash now must not bring the discarded input back.
      assert.deepEqual(queued((await storage.inspect("s")).events), []);
    });
  });

  /**
   * A session `s` whose turn is assembling its system prompt when the test gets it, served with writes that wait for a
   * flush (a batch window longer than the test): what storage holds after an answer is what a crash right then would
   * leave. The prompt's dynamic section, once the turn is aborted, answers after `afterAbort` resolves: until then
   * the cancelled turn cannot end (prompt assembly is not raced against the abort, as tools are).
   */
  async function turnInSlowPrompt(afterAbort: () => Promise<void>, cancelWaitMs?: number) {
    const storage = memoryStorage();
    const started = gate();
    const served = await serveHarness(
      { storage, batchWindowMs: 60_000, adapters: [scriptedAdapter(textResponse("x"))] },
      cancelWaitMs === undefined ? {} : { cancelWaitMs },
      (harness) =>
        harness.ctx.service("systemPrompt").section({
          name: "slow",
          order: 60,
          text: async ({ signal }) => {
            started.open();
            await new Promise((resolve) => signal?.addEventListener("abort", resolve, { once: true }));
            await afterAbort();
            return "Slow context.";
          },
        }),
    );
    await served.call("POST", "/sessions", { id: "s" });
    assert.equal((await served.call("POST", "/sessions/s/messages", { content: "go" })).status, 202);
    await started.promise;
    // What a restart would read: a turn with no end stored is closed as interrupted.
    const storedEnd = async () => (await storage.inspect("s")).events.find((e) => e.type === "turn/end")?.data;
    return { served, storedEnd };
  }

  it("POST /cancel of a running turn answers 200 once the turn's end is stored: a crash after it loses nothing", async () => {
    // The turn takes a few event-loop turns to stop: its end comes well after the abort.
    const { served, storedEnd } = await turnInSlowPrompt(() => new Promise((resolve) => setTimeout(resolve, 30)));
    await withServer(served, async ({ call }) => {
      const cancel = await call("POST", "/sessions/s/cancel", {});
      assert.deepEqual(
        [cancel.status, await cancel.json()],
        [200, { id: "s", cancelled: true, settled: true, status: "idle" }],
      );
      // What a crash now would leave: the turn ended as cancelled, not interrupted.
      assert.deepEqual(await storedEnd(), { turn: 1, reason: { kind: "aborted", reason: "user" } });
    });
  });

  it("POST /cancel of a turn that does not end within cancelWaitMs answers 202 with settled: false", async () => {
    const release = gate();
    const { served, storedEnd } = await turnInSlowPrompt(() => release.promise, 50);
    // The disposal at the end waits for the turn: it is let go whatever the test finds.
    await withServer({ ...served, close: () => (release.open(), served.close()) }, async ({ call, harness }) => {
      const started = performance.now();
      const cancel = await call("POST", "/sessions/s/cancel", {});
      assert.deepEqual(
        [cancel.status, await cancel.json()],
        [202, { id: "s", cancelled: true, settled: false, status: "running" }],
      );
      assert.ok(performance.now() - started >= 45, "it waited for the turn");
      // As the body says: a crash now would leave the turn interrupted.
      assert.deepEqual(await storedEnd(), { turn: 1, reason: { kind: "interrupted" } });
      release.open();
      await agentOf(harness, "s").whenIdle();
      // A cancel once the turn is over settles at once.
      const again = await call("POST", "/sessions/s/cancel", {});
      assert.deepEqual(
        [again.status, await again.json()],
        [200, { id: "s", cancelled: false, settled: true, status: "idle" }],
      );
      assert.deepEqual(await storedEnd(), { turn: 1, reason: { kind: "aborted", reason: "user" } });
      for (const cancelWaitMs of [-1, Number.NaN, Infinity]) {
        assert.throws(() => createHarnessApp(harness, { token: "t", cancelWaitMs }), { code: "INVALID_ARGS" });
      }
    });
  });

  it("POST /cancel while storage stalls answers once the turn's end is stored: cancelWaitMs bounds the turn, not storage", async () => {
    const base = memoryStorage();
    const stall = gate();
    let stalling = false;
    const storage = withFaults(base, {
      append: (append) => async (id, events, options) => {
        if (stalling) await stall.promise;
        return append(id, events, options);
      },
    });
    const modelCalled = gate();
    // The model call never answers by itself: the cancel is what ends it.
    const model = scriptedAdapter(() => (modelCalled.open(), new Promise(() => {})));
    const served = await serveHarness({ storage, batchWindowMs: 0, adapters: [model] }, { cancelWaitMs: 20 });
    await withServer({ ...served, close: () => (stall.open(), served.close()) }, async ({ call, harness }) => {
      await call("POST", "/sessions", { id: "s" });
      assert.equal((await call("POST", "/sessions/s/messages", { content: "go" })).status, 202);
      await modelCalled.promise;
      stalling = true;
      let answered = false;
      const cancel = call("POST", "/sessions/s/cancel", {}).then((response) => (answered = true, response));
      // The turn ends at once (the model call is left); its end cannot be stored while storage stalls.
      await agentOf(harness, "s").whenIdle();
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(answered, false, "no answer before storage holds what it acknowledges");
      stalling = false;
      stall.open();
      const response = await cancel;
      assert.deepEqual(
        [response.status, await response.json()],
        [200, { id: "s", cancelled: true, settled: true, status: "idle" }],
      );
      const stored = await base.inspect("s");
      assert.deepEqual(stored.events.findLast((e) => e.type === "turn/end")?.data, {
        turn: 1,
        reason: { kind: "aborted", reason: "user" },
      });
    });
  });

  it("DELETE of a session this app is resuming waits for the resume, then deletes it (not 409)", async () => {
    const base = memoryStorage();
    const writer = await createHarness({ storage: base, adapters: [scriptedAdapter(textResponse("Hi"))] });
    await (await writer.createAgent({ id: "s" })).run("hello");
    await writer.dispose();
    let loading!: () => void;
    const loadStarted = new Promise<void>((resolve) => loading = resolve);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => open = resolve);
    const storage = withFaults(base, {
      // The resume's load under its lease waits here, the lease held.
      load:
        (load) => async (id, options) => (options?.writer !== undefined && (loading(), await gate), load(id, options)),
      // The old code deleted at once (and, the lease held, answered 409 once the resume made the agent live).
      delete: (remove) => (id, options) => (open(), remove(id, options)),
    });
    const served = await serveHarness({ storage, adapters: [scriptedAdapter(textResponse("ran"))] });
    await withServer(served, async ({ call, harness }) => {
      const message = call("POST", "/sessions/s/messages", { content: "more" });
      await loadStarted;
      const deleting = call("DELETE", "/sessions/s");
      setTimeout(open, 100); // the fixed delete waits for the resume, which waits for this
      const deleted = await deleting;
      assert.equal(deleted.status, 204, await deleted.clone().text());
      await (await message).body?.cancel();
      assert.equal(await base.stat("s"), undefined);
      assert.equal(harness.ctx.service("agents").get("s"), undefined);
    });
  });

  async function afterFailedWrites(code: "SESSION_LEASE_LOST" | "SESSION_WRITE_FAILED") {
    // A turn acknowledged while the writes worked, whose events are then committed in memory and never stored
    // (another instance took the session over, or the database refuses): storage counts another writer's log, longer.
    const base = memoryStorage();
    let failing = false;
    const storage = withFaults(base, {
      append: (append) => (id, events, options) =>
        failing
          ? Promise.reject(new HarnessError(code, "refused", { details: { sessionId: id } }))
          : append(id, events, options),
      stat: (stat) => async (id) => {
        const stored = await stat(id);
        return failing && stored !== undefined ? { ...stored, nextSeq: stored.nextSeq + 50 } : stored;
      },
    });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => open = resolve);
    let calls = 0;
    const model = scriptedAdapter(async () => {
      if (++calls === 2) await gate;
      return textResponse(`said ${calls}`);
    });
    const served = await serveHarness({ storage, batchWindowMs: 5, adapters: [model] });
    await served.call("POST", "/sessions", { id: "s" });
    assert.equal((await served.call("POST", "/sessions/s/messages", { content: "one", wait: true })).status, 200);
    assert.equal((await served.call("POST", "/sessions/s/messages", { content: "two" })).status, 202);
    const inspected = await base.inspect("s"); // its in-memory repair (the open turn closed) left out
    const stored = inspected.events.slice(0, inspected.events.length - inspected.repair.syntheticEvents.length);
    failing = true;
    open();
    const agent = agentOf(served.harness, "s");
    for (const deadline = Date.now() + 10_000; agent.status !== "idle"; await new Promise((r) => setTimeout(r, 10))) {
      assert.ok(Date.now() < deadline, "the turn ends");
    }
    await agent.flushed().catch(() => {}); // the failed writes are reported
    assert.ok(agent.session.seq > stored.length, "events past the stored prefix are in memory");
    return { served, stored };
  }

  const sessionFrames = async (response: Response) =>
    (await response.text()).split("\n\n").filter((f) => f.includes("event: session")).map((f) =>
      JSON.parse(f.split("\n").find((l) => l.startsWith("data:"))!.slice(5))
    );

  it("a live session whose writes fail streams only what it stored, not up to storage's count", async () => {
    const { served, stored } = await afterFailedWrites("SESSION_WRITE_FAILED");
    try {
      const frames = await sessionFrames(await served.call("GET", "/sessions/s/events?follow=false&deltas=false"));
      assert.deepEqual(frames, JSON.parse(JSON.stringify(stored)));
    } finally {
      // The agent's last write fails as the others did, and disposal reports it.
      await assert.rejects(served.close());
    }
  });

  it("a live session whose writer lost its lease in the background is let go by a read: not live, storage served", async () => {
    const { served, stored } = await afterFailedWrites("SESSION_LEASE_LOST");
    await withServer(served, async ({ call, harness }) => {
      const summary = await (await call("GET", "/sessions/s")).json();
      assert.deepEqual([summary.live, summary.status], [false, "stored"]);
      assert.equal(harness.ctx.service("agents").get("s"), undefined);
      const frames = await sessionFrames(await call("GET", "/sessions/s/events?follow=false&deltas=false"));
      assert.deepEqual(frames.map((e) => e.seq), stored.map((e) => e.seq));
    });
  });

  it("readOnly answers every POST and DELETE 405 before it reaches a session: nothing resumed, leased or written", async () => {
    const storage = memoryStorage();
    const writer = await createHarness({ storage, adapters: [scriptedAdapter(textResponse("Hi"))] });
    const stored = await writer.createAgent({ id: "s1" });
    await stored.run("hello");
    await writer.dispose();
    const before = (await storage.inspect("s1")).events;
    const served = await serveHarness({ storage }, { readOnly: true });
    await withServer(served, async ({ call, harness }) => {
      const cases: [string, string, unknown, string][] = [
        ["POST", "/sessions", { id: "s2" }, "GET"],
        ["DELETE", "/sessions/s1", undefined, "GET"],
        ["POST", "/sessions/s1/messages", { text: "more" }, ""],
        ["POST", "/sessions/s1/cancel", undefined, ""],
        ["POST", "/sessions/s1/fork", {}, ""],
        ["POST", "/sessions/s1/approvals/c1", { decision: "allow" }, ""],
        ["PUT", "/sessions/s1/events", undefined, "GET"],
      ];
      for (const [method, path, body, allow] of cases) {
        const res = await call(method, path, body);
        assert.equal(res.status, 405, `${method} ${path}`);
        assert.equal(res.headers.get("allow"), allow, `${method} ${path}`);
        assert.equal((await res.json()).code, "METHOD_NOT_ALLOWED");
      }
      const read = await call("GET", "/sessions/s1");
      assert.equal(read.status, 200);
      await read.body?.cancel();
      assert.equal(harness.sessions.get("s1"), undefined, "no agent was resumed");
    });
    assert.deepEqual((await storage.inspect("s1")).events, before);
    assert.equal(await storage.stat("s2"), undefined);
    const lease = await storage.acquireWriter("s1"); // nobody kept it
    await lease.release();
  });

  it("readOnly checks the token before the method: without it a write is 401 like any request, not 405", async () => {
    const harness = await createHarness({ storage: memoryStorage() });
    try {
      const app = createHarnessApp(harness, { token: "reader", log: false, readOnly: true });
      const writes: [string, string][] = [
        ["POST", "/sessions"],
        ["DELETE", "/sessions/s1"],
        ["POST", "/sessions/s1/messages"],
        ["POST", "/sessions/s1/cancel"],
        ["POST", "/sessions/s1/approvals/c1"],
        ["PUT", "/sessions/s1/events"],
        ["POST", "/nowhere"],
      ];
      const answers = async (authorization: string | undefined) => {
        const out: [number, string, string | null][] = [];
        for (const [method, path] of writes) {
          const res = await app.request(path, { method, headers: authorization ? { authorization } : {} });
          out.push([res.status, (await res.json()).code, res.headers.get("allow")]);
        }
        return out;
      };
      // Nothing tells a caller without the token which routes exist or that the app only reads.
      assert.deepEqual(await answers(undefined), writes.map(() => [401, "AUTH_REQUIRED", null]));
      assert.deepEqual(await answers("Bearer wrong"), writes.map(() => [401, "INVALID_TOKEN", null]));
      const allowed = ["GET", "GET", "", "", "", "GET", null];
      assert.deepEqual(
        await answers("Bearer reader"),
        writes.map((_, i) => [i === 6 ? 404 : 405, i === 6 ? "NOT_FOUND" : "METHOD_NOT_ALLOWED", allowed[i]]),
      );
    } finally {
      await harness.dispose();
    }
  });

  it("answers an approval of a session only in storage 404 without resuming it or taking its lease", async () => {
    const storage = memoryStorage();
    const writer = await createHarness({ storage, adapters: [scriptedAdapter(textResponse("Hi"))] });
    await (await writer.createAgent({ id: "s1" })).run("hello");
    await writer.dispose();
    const before = (await storage.inspect("s1")).events;
    const served = await serveHarness({ storage });
    await withServer(served, async ({ call, harness }) => {
      const answered = await call("POST", "/sessions/s1/approvals/c1", { decision: "allow" });
      assert.equal(answered.status, 404);
      assert.equal((await answered.json()).code, "APPROVAL_NOT_FOUND");
      const missing = await call("POST", "/sessions/nope/approvals/c1", { decision: "allow" });
      assert.equal((await missing.json()).code, "SESSION_NOT_FOUND");
      assert.equal(harness.sessions.get("s1"), undefined, "no agent was resumed");
      const lease = await storage.acquireWriter("s1"); // nobody took it
      await lease.release();
    });
    assert.deepEqual((await storage.inspect("s1")).events, before);
  });

  it("readOnly registers no approval queue (it could never answer), and refuses approvals: true", async () => {
    const harness = await createHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] });
    const approvals = harness.ctx.service("approvals");
    // Registered first, so asked after any queue an app registers later.
    approvals.register(programmaticApprover(() => true));
    createHarnessApp(harness, { token: "reader", log: false, readOnly: true });
    createHarnessApp(harness, { token: "reader", log: false, readOnly: true, approvals: false });
    assert.throws(
      () => createHarnessApp(harness, { token: "reader", log: false, readOnly: true, approvals: true }),
      { code: "INVALID_ARGS" },
    );
    const asking = new AbortController();
    const outcome = approvals.request({ callId: "c1", toolName: "w", args: {}, signal: asking.signal });
    await settle();
    // A read-only queue would hold the question until the call is cancelled.
    asking.abort();
    assert.equal(await outcome, "allowed-once");
    await harness.dispose();
  });

  it("without auth, refuses a POST or DELETE a browser sends from another site (CROSS_SITE_REQUEST)", async () => {
    const served = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] }, {
      auth: false,
      cors: { origin: "https://app.example" },
    });
    await withServer(served, async ({ call, url }) => {
      const host = new URL(url).host;
      const refused: Record<string, string>[] = [
        { "sec-fetch-site": "cross-site" },
        { "sec-fetch-site": "same-site", origin: "http://other.localhost" },
        { origin: "https://evil.example" },
        { origin: "null" },
      ];
      for (const headers of refused) {
        const res = await call("POST", "/sessions", undefined, headers);
        assert.equal(res.status, 403, JSON.stringify(headers));
        assert.equal((await res.json()).code, "CROSS_SITE_REQUEST");
      }
      const deleted = await call("DELETE", "/sessions/x", undefined, { "sec-fetch-site": "cross-site" });
      assert.equal(deleted.status, 403);
      await deleted.body?.cancel();
      const allowed: Record<string, string>[] = [
        {}, // not a browser
        { "sec-fetch-site": "same-origin", origin: `http://${host}` },
        { "sec-fetch-site": "none" }, // typed by the user
        { origin: `http://${host}` },
        { "sec-fetch-site": "cross-site", origin: "https://app.example" }, // cors.origin
      ];
      for (const [i, headers] of allowed.entries()) {
        const res = await call("POST", "/sessions", { id: `ok${i}` }, headers);
        assert.equal(res.status, 201, JSON.stringify(headers));
        await res.body?.cancel();
      }
      const read = await call("GET", "/sessions", undefined, { "sec-fetch-site": "cross-site" });
      assert.equal(read.status, 200, "reads are not refused (CORS keeps their answers from the other site)");
      await read.body?.cancel();
    });
  });

  it("without auth, answers only localhost, an IP address or allowedHosts: not a rebound name (HOST_NOT_ALLOWED)", async () => {
    const harness = await createHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] });
    try {
      const open = createHarnessApp(harness, { auth: false, log: false, approvals: false });
      const listed = createHarnessApp(harness, {
        auth: false,
        log: false,
        approvals: false,
        allowedHosts: ["Tools.Corp", ".team.example"],
      });
      const reader = createHarnessApp(harness, { auth: false, log: false, readOnly: true });
      const withToken = createHarnessApp(harness, { token: "t0ken", log: false, approvals: false });
      // The Host header, as a browser sends it; without one (an in-process request), the URL's host.
      const get = (app: typeof open, host: string, path = "/sessions", headers: Record<string, string> = {}) =>
        app.request(new Request(`http://127.0.0.1${path}`, { headers: { host, ...headers } }));
      const refused = [
        "attacker.example:8080",
        "attacker.example",
        "localhost.attacker.example",
        "127.0.0.1.nip.io:80",
        "intranet",
        "tools.corp.evil",
        "a@127.0.0.1",
        "",
      ];
      for (const host of refused) {
        for (const path of ["/sessions", "/view", "/sessions/s/log"]) {
          const res = await get(open, host, path, { "sec-fetch-site": "same-origin" });
          assert.equal(res.status, 403, `${host} ${path}`);
          const problem = await res.json();
          assert.equal(problem.code, "HOST_NOT_ALLOWED");
        }
        assert.equal((await get(reader, host)).status, 403, `read-only: ${host}`);
      }
      const posted = await open.request("http://attacker.example:8080/sessions", {
        method: "POST",
        headers: { "content-type": "application/json", "sec-fetch-site": "same-origin" },
        body: "{}",
      });
      assert.equal(posted.status, 403);
      assert.equal((await posted.json()).code, "HOST_NOT_ALLOWED");
      assert.deepEqual(harness.ctx.service("agents").list(), []);
      const allowed = [
        "localhost:8080",
        "LOCALHOST",
        "localhost.",
        "app.localhost:3000",
        "127.0.0.1:8080",
        "127.5.6.7",
        "[::1]:8080",
        "192.168.1.20",
      ];
      for (const host of allowed) {
        assert.equal((await get(open, host)).status, 200, host);
        assert.equal((await get(reader, host)).status, 200, `read-only: ${host}`);
      }
      for (const host of ["tools.corp:443", "team.example", "ci.team.example:8080"]) {
        assert.equal((await get(listed, host)).status, 200, host);
        assert.equal((await get(open, host)).status, 403, `${host} is not listed there`);
      }
      assert.equal((await listed.request("http://attacker.example/sessions")).status, 403, "the URL's host");
      assert.equal((await open.request("/sessions")).status, 200, "app.request() is for localhost");
      // With a token, the name is not what keeps another site out.
      const authed = await get(withToken, "api.example.com", "/sessions", { authorization: "Bearer t0ken" });
      assert.equal(authed.status, 200);
    } finally {
      await harness.dispose();
    }
  });

  it("answers the timeline's paths 404, not 405, when the app has no timeline (view: false)", async () => {
    const served = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] }, { view: false });
    await withServer(served, async ({ call }) => {
      await call("POST", "/sessions", { id: "s1" });
      for (const [method, path] of [["GET", "/sessions/s1/log"], ["POST", "/sessions/s1/log"], ["POST", "/view"]]) {
        const res = await call(method, path);
        assert.equal(res.status, 404, `${method} ${path}`);
        assert.equal((await res.json()).code, "NOT_FOUND");
      }
      const wrong = await call("PUT", "/sessions/s1/events");
      assert.equal(wrong.status, 405);
      await wrong.body?.cancel();
    });
  });

  it("answers cross-origin requests only when cors is given", async () => {
    const preflight = {
      origin: "https://app.example",
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type",
    };
    const off = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] });
    await withServer(off, async ({ url }) => {
      const res = await fetch(`${url}/sessions`, { method: "OPTIONS", headers: preflight });
      assert.equal(res.headers.get("access-control-allow-origin"), null);
      await res.body?.cancel();
    });
    const on = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] }, {
      cors: { origin: "https://app.example" },
    });
    await withServer(on, async ({ url, call }) => {
      const res = await fetch(`${url}/sessions`, { method: "OPTIONS", headers: preflight });
      assert.equal(res.status, 204);
      assert.equal(res.headers.get("access-control-allow-origin"), "https://app.example");
      assert.match(res.headers.get("access-control-allow-headers") ?? "", /authorization/i);
      await res.body?.cancel();
      const listed = await call("GET", "/sessions", undefined, { origin: "https://app.example" });
      assert.equal(listed.headers.get("access-control-allow-origin"), "https://app.example");
      await listed.body?.cancel();
    });
  });

  it("accepts image blocks only with https:, http: or data: URLs", async () => {
    const served = await serveHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] });
    await withServer(served, async ({ call }) => {
      await call("POST", "/sessions", { id: "s1" });
      const image = (url: string) => ({
        mode: "inject",
        content: [{ type: "image", mediaType: "image/png", url }],
      });
      for (const url of ["file:///etc/passwd", "javascript:alert(1)", "ftp://host/x.png"]) {
        const res = await call("POST", "/sessions/s1/messages", image(url));
        assert.equal(res.status, 422, url);
        assert.equal((await res.json()).code, "INVALID_BODY");
      }
      for (const url of ["https://example.com/x.png", "data:image/png;base64,AAAA"]) {
        assert.equal((await call("POST", "/sessions/s1/messages", image(url))).status, 202, url);
      }
    });
  });
});

describe("createHarnessApp() mounted under a sub-path", () => {
  it("builds Location from the mount path and answers unknown routes with problem+json", async () => {
    const served = await serveHarness({ adapters: [scriptedAdapter([textResponse("Hi.")])] });
    await withServer(served, async ({ harness }) => {
      const { Hono } = await import("hono");
      const parent = new Hono();
      parent.get("/", (c) => c.text("home"));
      parent.route("/api/v1", createHarnessApp(harness, { auth: false, log: false }));
      const json = { "content-type": "application/json" };
      const created = await parent.request("/api/v1/sessions", { method: "POST", headers: json, body: '{"id":"m1"}' });
      assert.equal(created.status, 201);
      assert.equal(created.headers.get("location"), "/api/v1/sessions/m1");
      assert.equal((await parent.request("/api/v1/sessions/m1")).status, 200);

      const unknown = await parent.request("/api/v1/nothing-here");
      assert.equal(unknown.status, 404);
      assert.match(unknown.headers.get("content-type") ?? "", /^application\/problem\+json/);
      assert.equal((await unknown.json()).code, "NOT_FOUND");
      const wrongMethod = await parent.request("/api/v1/sessions/m1", { method: "PUT" });
      assert.equal(wrongMethod.status, 405);
      assert.equal((await wrongMethod.json()).code, "METHOD_NOT_ALLOWED");
      assert.equal(await (await parent.request("/")).text(), "home", "the parent's own routes are untouched");
      // The timeline's pages link to the app under its mount path.
      for (const page of ["/api/v1/view", "/api/v1/view/compare", "/api/v1/sessions/m1/view"]) {
        const html = await (await parent.request(page)).text();
        assert.match(html, /data-base="\/api\/v1"/, page);
        assert.match(html, /src="\/api\/v1\/view\/client\.js"/, page);
      }
    });
  });
});
