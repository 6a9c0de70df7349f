#!/usr/bin/env node
// Fails when a tracked file (docs excepted) refers to a path outside the
// repository: a relative path that climbs above the repository root, or an
// absolute path that exists on one machine only (a home, the root user's
// folder, a work folder, a Windows user folder; see MACHINE_PATH). The
// repository must stand alone: a clone with nothing beside it passes its own
// tests. A line that must name such a path says `check_paths: allow`.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, normalize, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const DOC = /\.(md|txt)$|(^|\/)LICENSE$/;
const DATA = /(^|\/)(fixtures|testdata)\//;

/** Absolute paths that only exist on one machine. */
const MACHINE_PATH = /(?<![\w.:/])(?:\/work\/|\/root\/|\/home\/[a-z_][\w-]*\/|\/Users\/[\w-]+\/|[A-Z]:\\\\?Users)/;
/** Relative references: `../x` in a string or URL. */
const RELATIVE = /(?:["'`(]|\s)((?:\.\.\/)+[\w.@-][\w./@-]*)/g;

export function outsideRefs(file, text) {
  const found = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.includes("check_paths: allow")) continue;
    if (MACHINE_PATH.test(line)) found.push({ line: i + 1, ref: line.trim().slice(0, 120) });
    for (const m of line.matchAll(RELATIVE)) {
      const target = normalize(join(dirname(file), m[1]));
      if (target === ".." || target.startsWith(".." + sep)) found.push({ line: i + 1, ref: m[1] });
    }
  }
  return found;
}

const tracked = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" }).split("\0").filter(Boolean);
let bad = 0;
for (const file of tracked) {
  if (DOC.test(file) || DATA.test(file) || file === "package-lock.json") continue;
  let text;
  try {
    text = readFileSync(join(root, file), "utf8");
  } catch {
    continue; // deleted in the work tree
  }
  if (text.includes("\0")) continue;
  for (const { line, ref } of outsideRefs(file, text)) {
    bad++;
    console.error(`${relative(root, join(root, file))}:${line}: refers outside the repository: ${ref}`);
  }
}
if (bad) {
  console.error(`${bad} reference(s) to paths outside the repository`);
  process.exit(1);
}
console.log(`paths: ${tracked.length} tracked files refer to nothing outside the repository`);
