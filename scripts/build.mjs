#!/usr/bin/env node
// Builds the npm package: compiled ESM and .d.ts files under dist/, one per
// source module reachable from the entry points of deno.json (the same list
// JSR publishes). TypeScript type-checks while it emits (with
// erasableSyntaxOnly, so the sources stay runnable by Node's type stripping)
// and rewrites the `.ts` extensions of relative imports to `.js`. Run by
// `npm run build` and by `npm pack` / `npm publish` (prepack).

import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const deno = JSON.parse(readFileSync(join(root, "deno.json"), "utf8"));
const entries = Object.values(deno.exports);

rmSync(join(root, "dist"), { recursive: true, force: true });
mkdirSync(join(root, ".tmp"), { recursive: true });
const config = join(root, ".tmp", "tsconfig.build.json");
writeFileSync(
  config,
  JSON.stringify({ extends: "../tsconfig.build.json", files: entries.map((path) => join("..", path)) }, null, 2),
);
execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", config], {
  cwd: root,
  stdio: "inherit",
});
