#!/usr/bin/env node
// `npx dsh-view <dir>` (Node): the timeline of a folder of stored sessions. An installed
// package runs its built dist/view/mod.js; a checkout (no dist/) loads view/mod.ts through
// tsx. Deno and Bun run view/mod.ts directly.

import { existsSync } from "node:fs";
import process from "node:process";

const built = new URL("../dist/view/mod.js", import.meta.url);
let runView;
if (existsSync(built)) ({ runView } = await import(built.href));
else {
  const { register } = await import("tsx/esm/api");
  register();
  ({ runView } = await import("./mod.ts"));
}
try {
  const server = await runView(process.argv.slice(2));
  const stop = () => void server.close().then(() => process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(2);
}
