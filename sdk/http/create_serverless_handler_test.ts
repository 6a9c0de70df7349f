import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../kernel/harness_error.ts";
import { memoryStorage } from "../persistence/memory_storage.ts";
import { withFaults } from "../persistence/_test_storage_faults.ts";
import type { SessionStorage } from "../persistence/session_storage.ts";
import { scriptedAdapter, textResponse } from "../../testing/scripted_adapter.ts";
import { createHarness } from "../harness.ts";
import { createServerlessHandler } from "./create_serverless_handler.ts";

/** A handler over `storage` whose appends fail with `code` once `armed()` is true. */
function handlerFailingWith(storage: SessionStorage, code: string, armed: () => boolean) {
  const faulty = withFaults(storage, {
    append: (append) => (id, events, options) =>
      armed()
        ? Promise.reject(new HarnessError(code, `Cannot append to ${id} (${code})`))
        : append(id, events, options),
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

const message = (content: string) =>
  new Request("http://fn.test/sessions/chat/messages", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ content, wait: true }),
  });

describe("createServerlessHandler()", () => {
  it("a writer lease lost mid-request is 409 SESSION_LEASE_LOST: part of the input may be stored", async () => {
    const storage = memoryStorage();
    await storage.create({ id: "chat", createdAt: 1 });
    let appends = 0;
    // The first write of the request is stored, the next ones are refused: the lease was lost in between.
    const handler = handlerFailingWith(storage, "SESSION_LEASE_LOST", () => ++appends > 1);
    const response = await handler(message("Hi"));
    assert.equal(response.status, 409);
    const problem = await response.json();
    assert.equal(problem.code, "SESSION_LEASE_LOST");
    assert.match(problem.detail, /may be partly stored; read the session before sending it again/);
    assert.doesNotMatch(problem.detail, /nothing of this request was saved/);
    assert.ok((await storage.load("chat")).events.length > 0, "part of the request is stored");
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
});
