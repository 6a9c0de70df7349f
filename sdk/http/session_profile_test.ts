// A session's own profile (system text, tool allowlist, model route given at
// POST /sessions) travels with the session: another instance resuming it
// from shared storage applies the same profile.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { createHarness } from "../harness.ts";
import { defineTool } from "../tools/define_tool.ts";
import { memoryStorage } from "../persistence/memory_storage.ts";
import type { SessionStorage } from "../persistence/session_storage.ts";
import { scriptedAdapter, textResponse } from "../../testing/scripted_adapter.ts";
import { createHarnessApp } from "./create_harness_app.ts";

const tool = (name: string) =>
  defineTool({
    name,
    description: `The ${name} tool`,
    parameters: z.object({}),
    output: { schema: z.string(), render: (_args: Record<string, never>, value: string) => value },
    execute: () => name,
  });

async function instance(storage: SessionStorage) {
  const model = scriptedAdapter(Array.from({ length: 4 }, () => textResponse("ok")), {
    models: [{ id: "scripted-model" }, { id: "scripted-large" }],
  });
  const harness = await createHarness({
    adapters: [model],
    model: { provider: "scripted", model: "scripted-model" },
    tools: [tool("alpha"), tool("beta"), tool("gamma")],
    system: "Global prompt.",
    storage,
    batchWindowMs: 1,
  });
  const app = createHarnessApp(harness, { auth: false, log: false });
  const call = (method: string, path: string, body?: unknown) =>
    app.request(path, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  return { harness, model, call };
}

/** The route fields of a request (nested in `config` or flat, whichever this build uses). */
function route(request: object): { model?: string; temperature?: number } {
  return ((request as { config?: object }).config ?? request) as { model?: string; temperature?: number };
}

describe("session profile", () => {
  it("is stored with the session and restored by another instance, even before its first turn", async () => {
    const storage = memoryStorage();
    const a = await instance(storage);
    const created = await a.call("POST", "/sessions", {
      id: "p1",
      system: "Answer in French.",
      tools: ["beta"],
      model: "scripted-large",
      temperature: 0.25,
    });
    assert.equal(created.status, 201);
    await a.harness.dispose();
    assert.deepEqual((await storage.stat("p1"))?.header.profile, {
      system: "Answer in French.",
      tools: ["beta"],
      model: "scripted-large",
      temperature: 0.25,
    });

    // The first turn runs on another instance, which never saw the POST.
    const b = await instance(storage);
    const sent = await b.call("POST", "/sessions/p1/messages", { content: "Hello", wait: true });
    assert.equal(sent.status, 200, await sent.clone().text());
    const request = b.model.requests.at(-1)!;
    assert.equal(route(request).model, "scripted-large");
    assert.equal(route(request).temperature, 0.25);
    assert.deepEqual(request.tools?.map((t) => t.name), ["beta"]);
    assert.match(request.system ?? "", /Global prompt\./);
    assert.match(request.system ?? "", /Answer in French\./);
    await b.harness.dispose();

    // And again on a third, after turns were recorded; a fork keeps the profile too.
    const c = await instance(storage);
    assert.equal((await c.call("POST", "/sessions/p1/messages", { content: "Again", wait: true })).status, 200);
    const again = c.model.requests.at(-1)!;
    assert.deepEqual([route(again).model, again.tools?.map((t) => t.name)], ["scripted-large", ["beta"]]);
    assert.match(again.system ?? "", /Answer in French\./);
    assert.equal((await c.call("POST", "/sessions/p1/fork", { id: "p2" })).status, 201);
    await c.harness.dispose();
    assert.equal((await storage.stat("p2"))?.header.profile?.system, "Answer in French.");

    // A session created without a profile has none, and gets the harness defaults.
    const d = await instance(storage);
    await d.call("POST", "/sessions", { id: "plain" });
    await d.call("POST", "/sessions/plain/messages", { content: "Hi", wait: true });
    const plain = d.model.requests.at(-1)!;
    assert.deepEqual([route(plain).model, plain.tools?.map((t) => t.name)], ["scripted-model", [
      "alpha",
      "beta",
      "gamma",
    ]]);
    await d.harness.dispose();
    assert.equal((await storage.stat("plain"))?.header.profile, undefined);
  });
});
