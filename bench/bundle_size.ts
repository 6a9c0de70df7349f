/**
 * Bundle sizes for the edge and for a minimal program, next to their goals:
 *
 * - the Workers-style handler of examples/edge_worker.ts (harness + HTTP app +
 *   memory storage + OpenAI-compatible adapter), goal ≤ 100 KB gzip (issue
 *   #16): everything bundled (zod and hono included, as a worker ships them),
 *   and with zod left external;
 * - the minimal one-agent program (bench/_minimal_agent.ts), zod left
 *   external as in the peers' figures, goal ≤ 77 KB gzip (issue #18);
 *
 * each as one file and, with code splitting, as the chunks loaded at start
 * (what a program that defines no raw JSON Schema tool loads: the validator
 * is a lazy chunk). esbuild, minified, ESM, es2022; gzip level 9.
 * Correctness check: the minimal program's bundle is run once and must print
 * `ok`. Run: `node --import tsx bench/bundle_size.ts` (`npm run bench` does).
 *
 * @module
 */

import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import * as esbuild from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const KB = 1024;

interface Case {
  readonly label: string;
  readonly entry: string;
  readonly platform: "neutral" | "browser" | "node";
  readonly external: readonly string[];
  readonly goalKb?: number;
}

const CASES: readonly Case[] = [
  { label: "worker handler, all bundled", entry: "examples/edge_worker.ts", platform: "neutral", external: [] },
  {
    label: "worker handler, zod external",
    entry: "examples/edge_worker.ts",
    platform: "neutral",
    external: ["zod"],
    goalKb: 100,
  },
  {
    label: "minimal one-agent program, zod external",
    entry: "bench/_minimal_agent.ts",
    platform: "node",
    external: ["zod"],
    goalKb: 77,
  },
];

const gzip = (bytes: Uint8Array): number => gzipSync(bytes, { level: 9 }).length;
const kb = (n: number): string => (n / KB).toFixed(1);

async function build(c: Case, splitting: boolean): Promise<esbuild.BuildResult & { metafile: esbuild.Metafile }> {
  return await esbuild.build({
    entryPoints: [join(root, c.entry)],
    absWorkingDir: root,
    bundle: true,
    minify: true,
    format: "esm",
    target: "es2022",
    platform: c.platform,
    external: [...c.external],
    splitting,
    outdir: join(root, "dist-bundle-size"),
    write: false,
    metafile: true,
    logLevel: "silent",
  }) as esbuild.BuildResult & { metafile: esbuild.Metafile };
}

/** gzip bytes of the entry chunk plus the chunks it imports statically, and of every chunk. */
function initialAndAll(result: esbuild.BuildResult & { metafile: esbuild.Metafile }): { initial: number; all: number } {
  const files = new Map(result.outputFiles!.map((f) => [f.path, f.contents]));
  const outputs = result.metafile.outputs;
  const entry = Object.keys(outputs).find((p) => outputs[p].entryPoint !== undefined)!;
  const initial = new Set<string>();
  const visit = (path: string) => {
    if (initial.has(path)) return;
    initial.add(path);
    for (const i of outputs[path]?.imports ?? []) if (i.kind === "import-statement" && !i.external) visit(i.path);
  };
  visit(entry);
  const size = (path: string) => gzip(files.get(join(root, path)) ?? new Uint8Array());
  const chunks = Object.keys(outputs).filter((p) => p.endsWith(".js"));
  return {
    initial: [...initial].reduce((sum, p) => sum + size(p), 0),
    all: chunks.reduce((sum, p) => sum + size(p), 0),
  };
}

function largest(metafile: esbuild.Metafile, top = 6): string {
  const sizes = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [path, { bytesInOutput }] of Object.entries(output.inputs)) {
      const m = path.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
      const name = m ? m[1] : path.startsWith("sdk/") ? `sdk/${path.split("/")[1]}` : path.split("/")[0];
      sizes.set(name, (sizes.get(name) ?? 0) + bytesInOutput);
    }
  }
  return [...sizes].sort((a, b) => b[1] - a[1]).slice(0, top).map(([n, b]) => `${n} ${kb(b)}`).join(", ");
}

const rows: string[][] = [];
const notes: string[] = [];
for (const c of CASES) {
  const one = await build(c, false);
  const single = gzip(one.outputFiles![0].contents);
  const { initial } = initialAndAll(await build(c, true));
  const goal = c.goalKb === undefined
    ? "—"
    : `≤ ${c.goalKb} KB: ${
      Math.max(single, initial) <= c.goalKb * KB
        ? "met"
        : initial <= c.goalKb * KB
        ? "met with code splitting only"
        : "missed"
    }`;
  rows.push([c.label, c.platform, kb(one.outputFiles![0].contents.length), kb(single), kb(initial), goal]);
  notes.push(`${c.label}, largest parts (minified KB, one file): ${largest(one.metafile)}`);
  if (c.entry === "bench/_minimal_agent.ts") {
    // Correctness: the bundle runs (zod resolves from the repository's node_modules).
    const dir = mkdtempSync(join(root, "node_modules", ".bundle-size-"));
    try {
      const file = join(dir, "minimal.mjs");
      writeFileSync(file, one.outputFiles![0].contents);
      const out = execFileSync(process.execPath, [file], { encoding: "utf8", timeout: 30_000 }).trim();
      if (out !== "ok") throw new Error(`the minimal program's bundle printed ${JSON.stringify(out)}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
await esbuild.stop?.();

const header = ["bundle", "platform", "raw KB", "gzip KB (one file)", "gzip KB (initial chunks, splitting)", "goal"];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells: string[]) => "| " + cells.map((c, i) => c.padEnd(widths[i])).join(" | ") + " |";
console.log(line(header));
console.log("| " + widths.map((w) => "-".repeat(w)).join(" | ") + " |");
for (const row of rows) console.log(line(row));
console.log("");
for (const note of notes) console.log(note);
console.log(`esbuild ${esbuild.version}; gzip level 9`);
