// Child process of the HTTP crash test (not published): serves a harness on
// fileStorage(<dir>) over loopback, prints `URL <url>`, and runs until it is
// killed with SIGKILL. Every model call answers at once with one short text.

import process from "node:process";
import { createHarness } from "../harness.ts";
import { fileStorage } from "../persistence/file_storage.ts";
import { scriptedAdapter, textResponse } from "../../testing/scripted_adapter.ts";
import { createHarnessApp } from "./create_harness_app.ts";
import { serveOnLoopback } from "./_test_server.ts";

const dir = process.argv[process.argv.length - 1];
const harness = await createHarness({
  adapters: [scriptedAdapter((_request, n) => textResponse(`Answer ${n}`))],
  model: { provider: "scripted", model: "scripted-model" },
  storage: fileStorage(dir),
});
const app = createHarnessApp(harness, { auth: false, log: false });
const server = await serveOnLoopback(app.fetch);
process.stdout.write(`URL ${server.url}\n`);
setInterval(() => {}, 1000);
