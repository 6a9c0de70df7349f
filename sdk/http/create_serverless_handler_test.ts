import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../kernel/harness_error.ts";
import { memoryStorage } from "../persistence/memory_storage.ts";
import { withFaults } from "../persistence/_test_storage_faults.ts";
import type { SessionStorage } from "../persistence/session_storage.ts";
import type { SessionEvent } from "../session/session_events.ts";
import { scriptedAdapter, textResponse } from "../../testing/scripted_adapter.ts";
import { createHarness } from "../harness.ts";
import { createServerlessHandler } from "./create_serverless_handler.ts";

/** A handler over `storage` whose appends fail with `code` once `armed()` is true. */
function handlerFailingWith(storage: SessionStorage, code: string, armed: () => boolean) {
  return handlerFailing(
    storage,
    (id) => armed() ? new HarnessError(code, `Cannot append to ${id} (${code})`) : undefined,
  );
}

/** A handler over `storage` whose appends fail with what `failure` gives for them (nothing: the append is made). */
function handlerFailing(
  storage: SessionStorage,
  failure: (id: string, events: readonly SessionEvent[]) => Error | undefined,
) {
  const faulty = withFaults(storage, {
    append: (append) => (id, events, options) => {
      const error = failure(id, events);
      return error !== undefined ? Promise.reject(error) : append(id, events, options);
    },
  });
  return createServerlessHandler({
    harness: () =>
      createHarness({
        adapters: [scriptedAdapter(textResponse("Hello!"))],
        model: { provider: "scripted", model: "scripted-model" },
        storage: faulty,
      }),
    // Without auth, a host name other than localhost must be named (HOST_NOT_ALLOWED otherwise).
    app: { auth: false, log: false, allowedHosts: ["fn.test"] },
  });
}

const message = (content: string, wait = true) =>
  new Request("http://fn.test/sessions/chat/messages", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ content, wait }),
  });

describe("createServerlessHandler()", () => {
  it("a write that fails after the request's first is reported: 409 for a lost lease, 500 else; part may be stored", async () => {
    // The first write of the request is stored, the next ones are refused: the lease was lost in between, or storage
    // went away for longer than the retries wait.
    for (
      const [code, status, answer] of [
        ["SESSION_LEASE_LOST", 409, "SESSION_LEASE_LOST"],
        ["STORAGE_DOWN", 500, "SESSION_NOT_SAVED"],
      ] as const
    ) {
      const storage = memoryStorage();
      await storage.create({ id: "chat", createdAt: 1 });
      let appends = 0;
      const handler = handlerFailingWith(storage, code, () => ++appends > 1);
      const response = await handler(message("Hi"));
      assert.equal(response.status, status, code);
      const problem = await response.json();
      assert.equal(problem.code, answer);
      assert.match(problem.detail, /may be partly stored; read the session before sending it again/);
      assert.doesNotMatch(problem.detail, /nothing of this request was saved/);
      assert.ok((await storage.load("chat")).events.length > 0, "part of the request is stored");
    }
  });

  it("a write that fails once, then passes, answers as if it had not failed, and the turn is stored once", async () => {
    // With wait: true the route's own wait meets the failure; without it, the handler's wait for the turn does.
    for (const wait of [true, false]) {
      const storage = memoryStorage();
      await storage.create({ id: "chat", createdAt: 1 });
      // The turn's last batch (its answer and turn/end) fails once, as a dropped connection would.
      let failed = 0;
      const handler = handlerFailing(
        storage,
        (_id, events) =>
          failed === 0 && events.some((e) => e.type === "turn/end")
            ? (failed++, new Error("connection reset"))
            : undefined,
      );
      const response = await handler(message("Hi", wait));
      assert.equal(failed, 1, `wait: ${wait}`);
      assert.equal(response.status, wait ? 200 : 202, `wait: ${wait}`);
      if (wait) assert.equal((await response.json()).result.text, "Hello!");
      const stored = (await storage.load("chat")).events;
      assert.deepEqual(stored.filter((e) => e.type === "turn/end").length, 1);
      assert.deepEqual(stored.filter((e) => e.type === "user/message").length, 1);
    }
  });

  it("a harness factory that throws is a 503 HARNESS_UNAVAILABLE problem, not a rejected handler", async () => {
    const handler = createServerlessHandler({
      harness: () => Promise.reject(new Error("postgres://db:5432 refused")),
      app: { auth: false, log: false, allowedHosts: ["fn.test"] },
    });
    const logged: unknown[][] = [];
    const error = console.error;
    console.error = (...args: unknown[]) => void logged.push(args);
    let response: Response;
    try {
      response = await handler(message("Hi"));
    } finally {
      console.error = error;
    }
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("content-type"), "application/problem+json");
    const body = await response.json();
    assert.equal(body.code, "HARNESS_UNAVAILABLE");
    assert.doesNotMatch(body.detail, /postgres/, "the factory's error stays in the function's log");
    assert.match(String(logged[0]?.[1]), /refused/);
  });

  it("a write refused because another instance holds the session is a 409 that says nothing was stored", async () => {
    const storage = memoryStorage();
    await storage.create({ id: "chat", createdAt: 1 });
    const handler = handlerFailingWith(storage, "SESSION_WRITER_BUSY", () => true);
    const response = await handler(message("Hi"));
    assert.equal(response.status, 409);
    const problem = await response.json();
    assert.ok(["SESSION_WRITER_BUSY", "SESSION_NOT_SAVED"].includes(problem.code), problem.code);
    assert.doesNotMatch(problem.detail, /partly stored/);
    assert.equal((await storage.load("chat")).events.length, 0);
  });

  it("refuses a request without the token, or with a wrong one, before it makes a harness; a good one is served", async () => {
    const storage = memoryStorage();
    let made = 0;
    const handler = createServerlessHandler({
      harness: () => {
        made++;
        return createHarness({
          adapters: [scriptedAdapter(textResponse("Hello!"))],
          model: { provider: "scripted", model: "scripted-model" },
          storage,
        });
      },
      app: { token: "secret-token", log: false },
    });
    const create = (authorization?: string) =>
      handler(
        new Request("https://fn.test/sessions", {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...(authorization !== undefined ? { authorization } : {}),
          },
          body: JSON.stringify({ id: "chat" }),
        }),
      );
    for (
      const [authorization, code] of [
        [undefined, "AUTH_REQUIRED"],
        ["Bearer wrong-token", "INVALID_TOKEN"],
        ["Basic c2VjcmV0", "MALFORMED_AUTHORIZATION"],
      ] as const
    ) {
      const refused = await create(authorization);
      assert.equal(refused.status, 401, code);
      assert.equal(refused.headers.get("content-type"), "application/problem+json");
      assert.equal((await refused.json()).code, code);
      assert.match(refused.headers.get("www-authenticate") ?? "", /^Bearer realm="dsh-harness"/);
    }
    // A timeline page holds no data: served without the token, and without a harness either.
    assert.equal((await handler(new Request("https://fn.test/view"))).status, 200);
    assert.equal(made, 0, "no harness was made for a request the app refuses before any route");
    assert.deepEqual(await storage.list(), []);
    const created = await create("Bearer secret-token");
    assert.equal(created.status, 201);
    assert.equal((await created.json()).id, "chat");
    assert.equal(made, 1);
    // Options the app would refuse at every request are refused once, when the handler is made.
    const factory = () => Promise.reject(new Error("never called"));
    assert.throws(() => createServerlessHandler({ harness: factory }), { code: "INVALID_ARGS" });
    assert.throws(() => createServerlessHandler({ harness: factory, app: { token: "no spaces" } }), {
      code: "INVALID_ARGS",
    });
  });

  it("gives a request one id: the app serving a request the token check let through logs and answers with it", async () => {
    let made = 0;
    const logged: { requestId: string; status: number }[] = [];
    const handler = createServerlessHandler({
      harness: () =>
        createHarness({
          adapters: [scriptedAdapter(textResponse("Hello!"))],
          model: { provider: "scripted", model: "scripted-model" },
          storage: memoryStorage(),
        }),
      app: {
        token: "secret-token",
        newRequestId: () => `req-${++made}`,
        log: ({ requestId, status }) => void logged.push({ requestId, status }),
      },
    });
    const get = (path: string, headers: Record<string, string> = {}) =>
      handler(new Request(`https://fn.test${path}`, { headers }));
    const auth = { authorization: "Bearer secret-token" };
    const refused = await get("/sessions");
    assert.equal(refused.headers.get("x-request-id"), "req-1");
    const listed = await get("/sessions", auth);
    assert.equal(listed.headers.get("x-request-id"), "req-2");
    const missing = await get("/sessions/nowhere", auth);
    assert.equal(missing.headers.get("x-request-id"), "req-3");
    assert.equal((await missing.json()).requestId, "req-3");
    const named = await get("/sessions", { ...auth, "x-request-id": "client-7" });
    assert.equal(named.headers.get("x-request-id"), "client-7");
    assert.equal(made, 3, "one id made per request that did not bring its own");
    assert.deepEqual(logged, [
      { requestId: "req-1", status: 401 },
      { requestId: "req-2", status: 200 },
      { requestId: "req-3", status: 404 },
      { requestId: "client-7", status: 200 },
    ]);
  });

  it("refuses every app option the app would refuse when the handler is made, not at each request", () => {
    const factory = () => Promise.reject(new Error("never called"));
    for (
      const app of [
        { maxBodyBytes: 0 },
        { keepAliveMs: -1 },
        { maxBufferedEvents: 1.5 },
        { tailPollMs: 0 },
        { cancelWaitMs: -1 },
      ]
    ) {
      assert.throws(() => createServerlessHandler({ harness: factory, app: { token: "t", ...app } }), {
        code: "INVALID_ARGS",
      }, JSON.stringify(app));
    }
  });
});
