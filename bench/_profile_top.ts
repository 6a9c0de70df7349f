/**
 * Summarise a V8 `.cpuprofile` (from `node --cpu-prof` or `_profile_loop.ts`):
 * the top functions by self time and by total time, and — when the profile
 * was taken on an esbuild bundle (non-minified, with its `// path` module
 * comments) — self time grouped by source module or package.
 *
 * Usage: `node --import tsx bench/_profile_top.ts <file.cpuprofile> [count]`
 * (also `deno run -A` or `bun`).
 *
 * @module
 */

import { readFile } from "node:fs/promises";
import process from "node:process";
import { fileURLToPath } from "node:url";

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}
interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const [file, countArg] = process.argv.slice(2);
if (file === undefined) throw new Error("Usage: _profile_top.ts <file.cpuprofile> [count]");
const count = Number(countArg ?? 30);
const profile = JSON.parse(await readFile(file, "utf8")) as CpuProfile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const sampled = new Map<number, number>();
let all = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  all += dt;
  sampled.set(id, (sampled.get(id) ?? 0) + dt);
});

const label = (f: CallFrame): string =>
  `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/(?=[^/]+$)/, "")}:${f.lineNumber + 1}`;
const self = new Map<string, number>();
const total = new Map<string, number>();
for (const [id, t] of sampled) {
  const node = byId.get(id)!;
  self.set(label(node.callFrame), (self.get(label(node.callFrame)) ?? 0) + t);
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const key = label(byId.get(cur)!.callFrame);
    if (seen.has(key)) continue;
    seen.add(key);
    total.set(key, (total.get(key) ?? 0) + t);
  }
}

const pct = (t: number): string => `${((100 * t) / all).toFixed(1).padStart(5)}%`;
const top = (m: Map<string, number>): string[] =>
  [...m].sort((a, b) => b[1] - a[1]).slice(0, count).map(([k, t]) => `${pct(t)}  ${k}`);
console.log(`${(all / 1000).toFixed(0)} ms sampled\n\nself time:\n${top(self).join("\n")}`);
console.log(`\ntotal time (self + callees):\n${top(total).join("\n")}`);

// Group by module when the frames come from one esbuild bundle with `// path` comments.
const bundleUrl = [...sampled.keys()].map((id) => byId.get(id)!.callFrame.url).find((u) => u.endsWith(".mjs"));
if (bundleUrl !== undefined) {
  const lines = (await readFile(bundleUrl.startsWith("file:") ? fileURLToPath(bundleUrl) : bundleUrl, "utf8"))
    .split("\n");
  const marks: [number, string][] = [];
  lines.forEach((line, i) => {
    const m = line.match(/^\/\/ (\S+\.[cm]?[jt]s)$/);
    if (m) marks.push([i, m[1].replace(/^.*node_modules\/((?:@[^/]+\/)?[^/]+).*$/, "$1")]);
  });
  if (marks.length > 0) {
    const moduleAt = (line: number): string => {
      let found = "(bundle prologue)";
      for (const [at, name] of marks) {
        if (at > line) break;
        found = name;
      }
      return found;
    };
    const modules = new Map<string, number>();
    for (const [id, t] of sampled) {
      const f = byId.get(id)!.callFrame;
      const key = f.url === bundleUrl ? moduleAt(f.lineNumber) : f.url ? "(runtime internals)" : f.functionName;
      modules.set(key, (modules.get(key) ?? 0) + t);
    }
    console.log(`\nself time by module:\n${top(modules).join("\n")}`);
  }
}
