// Appended by scripts/pack_check.mjs to the README's first agent (which prints "2 + 3 is 5."), as a consumer
// project runs it from the packed tarball (valid as JavaScript and TypeScript): the HTTP app mounted under a
// sub-path of the user's own Hono app (one hono copy: a peer dependency).
import { createHarnessApp } from "@dsh/harness/http";
import { Hono } from "hono";

const served = await createHarness({ adapters: [scriptedAdapter(textResponse("Hi"))] });
const api = new Hono().route("/api", createHarnessApp(served, { auth: false, log: false }));
const created = await api.request("/api/sessions", {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: "{}",
});
console.log(`http: ${created.status} ${created.headers.get("content-type")}`);
await served.dispose();
