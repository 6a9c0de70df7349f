// The packages a consumer project of the pack check (scripts/pack_check.mjs) starts with: the package's runtime
// and peer dependencies with their closure in package-lock.json, at the versions locked there, and the lowest
// supported peers (the `<peer>-lowest` devDependencies, npm aliases). Shared by the pack check and by
// scripts/pack_cache.mjs, which puts their registry documents into the npm cache at install time.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("..", import.meta.url));
export const read = (path) => JSON.parse(readFileSync(join(root, path), "utf8"));

/** The names of the dependencies' closure, as `package-lock.json` records it. */
export function dependencyClosure(pkg, lock) {
  const seen = new Set();
  const todo = Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies });
  while (todo.length) {
    const name = todo.pop();
    if (seen.has(name)) continue;
    const entry = lock.packages[`node_modules/${name}`];
    if (!entry) throw new Error(`${name} is not in package-lock.json`);
    seen.add(name);
    todo.push(...Object.keys({ ...entry.dependencies, ...entry.optionalDependencies }));
  }
  return seen;
}

/** `name@version` of every package a consumer project may resolve: the closure and the lowest peers. */
export function consumerSpecs(pkg, lock) {
  const specs = [...dependencyClosure(pkg, lock)].map((name) =>
    `${name}@${lock.packages[`node_modules/${name}`].version}`
  );
  for (const [name, range] of Object.entries(pkg.devDependencies ?? {})) {
    if (name.endsWith("-lowest")) specs.push(String(range).replace(/^npm:/, ""));
  }
  return specs.sort();
}
