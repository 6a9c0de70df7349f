#!/usr/bin/env node
// Install-time half of the pack check (run by `pretest`, after `npm install`): puts the registry documents of
// every package a consumer project resolves into the npm cache, so that the pack step of `npm test` can install
// the tarball with `--offline`. `npm install` from a lockfile caches the packages' tarballs but not these
// documents, and npm 11 asks for them when it adds a package to a project. `--prefer-offline` leaves what the
// cache already holds alone (no request at all on a second run).

import { execFileSync } from "node:child_process";
import { consumerSpecs, read, root } from "./_pack_deps.mjs";

const specs = consumerSpecs(read("package.json"), read("package-lock.json"));
try {
  execFileSync("npm", ["cache", "add", "--prefer-offline", ...specs], { cwd: root, stdio: "inherit" });
} catch (error) {
  console.error(`pack_cache: npm cache add failed (${error.message}); the pack step of npm test needs these packages`);
  process.exit(1);
}
console.log(`pack_cache: ${specs.length} packages in the npm cache`);
