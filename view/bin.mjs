#!/usr/bin/env node
// `npx dsh-view <dir>` (Node): the timeline of a folder of stored sessions. A checkout
// (view/mod.ts beside this file) loads the source through tsx; an installed package (which
// ships dist/ and this file only) runs its built dist/view/mod.js. Deno and Bun run
// view/mod.ts directly.

import { existsSync } from "node:fs";
import process from "node:process";

let runView;
try {
  if (existsSync(new URL("./mod.ts", import.meta.url))) {
    const { register } = await import("tsx/esm/api");
    register();
    ({ runView } = await import("./mod.ts"));
  } else ({ runView } = await import(new URL("../dist/view/mod.js", import.meta.url).href));
} catch (error) {
  // The timeline is served with hono, an optional peer of the package.
  const missing = /Cannot find (?:package|module) '([^']+)'/.exec(String(error?.message))?.[1];
  console.error(missing ? `The timeline needs ${missing}: npm install ${missing}` : String(error?.message ?? error));
  process.exit(2);
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
