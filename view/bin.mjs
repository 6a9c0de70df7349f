#!/usr/bin/env node
// `npx dsh-view <dir>` (Node): the timeline of a folder of stored sessions. A checkout
// (view/mod.ts beside this file) loads the source through tsx; an installed package (which
// ships dist/ and this file only) runs its built dist/view/mod.js. Deno and Bun run
// view/mod.ts directly.

import { existsSync } from "node:fs";
import process from "node:process";

let viewMain;
try {
  if (existsSync(new URL("./mod.ts", import.meta.url))) {
    const { register } = await import("tsx/esm/api");
    register();
    ({ viewMain } = await import("./mod.ts"));
  } else ({ viewMain } = await import(new URL("../dist/view/mod.js", import.meta.url).href));
} catch (error) {
  // The timeline is served with hono, an optional peer of the package.
  const missing = /Cannot find (?:package|module) '([^']+)'/.exec(String(error?.message))?.[1];
  console.error(missing ? `The timeline needs ${missing}: npm install ${missing}` : String(error?.message ?? error));
  process.exit(2);
}
await viewMain(process.argv.slice(2));
