#!/usr/bin/env node
// The benchmarks, as `npm run bench` / `deno task bench` run them: bundle
// sizes (esbuild), cold start (one fresh process per sample), loop overhead
// (T = 200 and T = 1000), memory per idle agent, and every other bench/*.ts,
// on Deno, Bun and Node (through tsx). Writes bench/RESULTS.md with the
// machine, the runtime versions, the date and every table.
//
// Options: `--quick` (small sizes, to try the runner), `--only bundle,cold,loop,memory,other`,
// `--out <file>` (default bench/RESULTS.md). Figures are printed, never asserted: a benchmark
// fails only when its correctness checks fail (a run that skips work).

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release, tmpdir, totalmem } from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { builtinModules } from "node:module";
import { gzipSync } from "node:zlib";
import * as esbuild from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name) => join(root, "node_modules", ".bin", name);
const argv = process.argv.slice(2);
const quick = argv.includes("--quick");
const onlyArg = argv.find((a, i) => argv[i - 1] === "--only" || a.startsWith("--only="));
const only = new Set((onlyArg?.replace(/^--only=/, "") ?? "").split(",").filter(Boolean));
const outArg = argv.find((_a, i) => argv[i - 1] === "--out");
const outFile = resolve(root, outArg ?? "bench/RESULTS.md");
const want = (section) => only.size === 0 || only.has(section);
const work = mkdtempSync(join(tmpdir(), "dsh-bench-"));
const MINE = new Set(["loop_overhead.ts", "cold_start.ts", "memory.ts", "bundle_size.ts"]);

const SIZES = quick
  ? { turns: 40, growthTurns: 100, repeat: 1, agents: 50, samples: 3 }
  : { turns: 200, growthTurns: 1000, repeat: 3, agents: 1000, samples: 10 };

/** How each runtime runs a TypeScript file (`gc`: expose a forced GC). */
const RUNTIMES = {
  deno: (file, { gc = false } = {}) => [bin("deno"), ["run", "-A", ...(gc ? ["--v8-flags=--expose-gc"] : []), file]],
  bun: (file) => [bin("bun"), [file]],
  node: (file, { gc = false } = {}) => [process.execPath, [...(gc ? ["--expose-gc"] : []), "--import", "tsx", file]],
};
/** How each runtime runs a plain JavaScript file (a bundle). */
const JS_RUNTIMES = {
  deno: (file) => [bin("deno"), ["run", "-A", file]],
  bun: (file) => [bin("bun"), [file]],
  node: (file) => [process.execPath, [file]],
};

// ---------------------------------------------------------------- helpers

function run(cmd, args, { timeoutMs = 30 * 60_000, echo = true } = {}) {
  return new Promise((done) => {
    const started = performance.now();
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, NO_COLOR: "1" } });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.stdout.on("data", (d) => {
      stdout += d;
      if (echo) process.stdout.write(d);
    });
    child.stderr.on("data", (d) => {
      stderr += d;
      if (echo) process.stderr.write(d);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr, ms: performance.now() - started });
    });
  });
}

function resultOf(out) {
  const line = out.stdout.split("\n").reverse().find((l) => l.startsWith("BENCH_RESULT "));
  return line ? JSON.parse(line.slice("BENCH_RESULT ".length)) : undefined;
}

// Every benchmark that failed (each is also written into RESULTS.md); the run exits 1 when there is one.
const failedRuns = [];

function failure(what, out) {
  failedRuns.push(what);
  const tail = (out.stderr || out.stdout).trim().split("\n").slice(-6).join("\n");
  return `${what} failed (exit ${out.code ?? out.signal}):\n\n\`\`\`\n${tail}\n\`\`\``;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const fmt = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : "—");
const kb = (bytes) => (bytes / 1024).toFixed(1);
const table = (head, rows) =>
  [`| ${head.join(" | ")} |`, `| ${head.map(() => "---").join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)]
    .join("\n");
const verdict = (
  value,
  limit,
) => (Number.isFinite(value) ? (value <= limit ? "met" : `missed (${fmt(value, 2)})`) : "—");

function version(cmd, args) {
  const out = spawnSync(cmd, args, { encoding: "utf8" });
  return (out.stdout || out.stderr).trim().split("\n")[0];
}

const sections = [];
const started = new Date();
const commitAtStart = version("git", ["-C", root, "rev-parse", "--short", "HEAD"]);
const dirtyAtStart =
  spawnSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: root, encoding: "utf8" })
    .stdout.trim() !== "";
const loadStart = loadavg();

function header() {
  const cpu = cpus();
  const load = loadavg();
  return [
    "# Benchmark results",
    "",
    "Written by `scripts/bench.mjs` (`npm run bench` / `deno task bench`); do not edit by hand.",
    quick ? "\n**Quick run (`--quick`): small sizes, figures only indicative.**" : "",
    "",
    `- Date: ${started.toISOString()}`,
    `- Machine: ${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ` +
    `${process.platform} ${release()}`,
    `- Load average (1/5/15 min) at start: ${loadStart.map((x) => x.toFixed(2)).join(" / ")}; at end: ${
      load.map((x) => x.toFixed(2)).join(" / ")
    } — other processes were running; wall figures on a loaded machine are inflated, the CPU-time columns ` +
    `(process user + system time) less so`,
    `- Runtimes: ${version(bin("deno"), ["--version"])}; bun ${
      version(bin("bun"), ["--version"])
    }; node ${process.versions.node} (TypeScript through tsx ${
      version(process.execPath, [join(root, "node_modules/tsx/dist/cli.mjs"), "--version"])
    })`,
    `- esbuild ${esbuild.version}`,
    `- Code: commit ${commitAtStart}${
      dirtyAtStart ? " plus uncommitted changes in the checkout" : ""
    } at the start of the run (other work may land while it runs; \`--only\` re-runs say when they ran)`,
    "",
  ].join("\n");
}

/**
 * Write the results. With `--only`, the sections run replace the sections of
 * the same title in the existing file (the rest of it, header included, is
 * kept, with a note of the re-run); otherwise the file is rewritten.
 */
function writeResults() {
  if (only.size === 0 || !existsSync(outFile)) {
    writeFileSync(outFile, [header(), ...sections].join("\n") + "\n");
    return;
  }
  let text = readFileSync(outFile, "utf8");
  for (const section of sections) {
    const title = section.split("\n", 1)[0];
    const note = `\n_This section was re-run alone on ${started.toISOString()} at commit ${commitAtStart}${
      dirtyAtStart ? " plus uncommitted changes" : ""
    } (load average ${loadavg().map((x) => x.toFixed(2)).join(" / ")})._\n`;
    const start = text.indexOf(title + "\n");
    if (start < 0) {
      text = text.trimEnd() + "\n\n" + section + note;
      continue;
    }
    const next = text.indexOf("\n## ", start + title.length);
    text = text.slice(0, start) + section + note + (next < 0 ? "" : text.slice(next));
  }
  writeFileSync(outFile, text.trimEnd() + "\n");
}

// ---------------------------------------------------------------- bundle size

const BUNDLES = [
  ["mod.ts", "@dsh/harness"],
  ["replay/mod.ts", "@dsh/harness/replay"],
  ["testing/mod.ts", "@dsh/harness/testing"],
  ["sdk/http/mod.ts", "@dsh/harness/http"],
  ["sdk/config/mod.ts", "@dsh/harness/config"],
  ["sdk/capabilities/mod.ts", "@dsh/harness/tools"],
  ["sdk/subagents/mod.ts", "@dsh/harness/subagents"],
  ["sdk/hooks/mod.ts", "@dsh/harness/hooks"],
  ["adapters/mod.ts", "@dsh/harness/adapters"],
];
/** Package name of a bare specifier (`zod/mini` → `zod`, `@a/b/c` → `@a/b`). */
const packageName = (spec) => spec.split("/").slice(0, spec.startsWith("@") ? 2 : 1).join("/");

/**
 * Mark as external every module the `mod.ts` bundle already holds (its files
 * and its packages), so that a subpath bundle shows what it adds.
 */
function beyondMod(modMetafile) {
  const files = new Set(Object.keys(modMetafile.inputs).map((p) => resolve(root, p)));
  const packages = new Set(
    Object.keys(modMetafile.inputs).flatMap((p) => {
      const m = p.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
      return m ? [m[1]] : [];
    }),
  );
  return {
    name: "beyond-mod",
    setup(build) {
      build.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === "entry-point" || args.path.startsWith("node:")) return undefined;
        if (args.path.startsWith(".")) {
          const path = resolve(args.resolveDir, args.path);
          return files.has(path) ? { path, external: true } : undefined;
        }
        if (args.importer.includes("/node_modules/")) return undefined;
        return packages.has(packageName(args.path)) ? { path: args.path, external: true } : undefined;
      });
    },
  };
}

async function bundle(entry, { platform, modMetafile }) {
  const result = await esbuild.build({
    entryPoints: [join(root, entry)],
    bundle: true,
    minify: true,
    format: "esm",
    platform,
    target: "es2022",
    mainFields: platform === "neutral" ? ["module", "main"] : undefined,
    // `node:` built-ins, and the unprefixed names `@bokuweb/zstd-wasm`'s Node entry requires.
    external: ["node:*", ...builtinModules],
    plugins: modMetafile ? [beyondMod(modMetafile)] : [],
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  const code = result.outputFiles[0].contents;
  return { raw: code.length, gzip: gzipSync(code, { level: 9 }).length, metafile: result.metafile };
}

function packagesOf(metafile) {
  const sizes = new Map();
  for (const output of Object.values(metafile.outputs)) {
    for (const [path, { bytesInOutput }] of Object.entries(output.inputs)) {
      const m = path.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
      const name = m ? m[1] : path.startsWith("sdk/") ? `sdk/${path.split("/")[1]}` : path.split("/")[0];
      sizes.set(name, (sizes.get(name) ?? 0) + bytesInOutput);
    }
  }
  return [...sizes].sort((a, b) => b[1] - a[1]);
}

async function benchBundles() {
  console.log("\n=== bundle sizes");
  const rows = [];
  let modPackages;
  let modMetafile;
  const notes = [];
  for (const [entry, name] of BUNDLES) {
    let platform = "neutral";
    let full;
    try {
      full = await bundle(entry, { platform });
    } catch (error) {
      notes.push(
        `${name}: the neutral build failed (${String(error.errors?.[0]?.text ?? error)}); built for the browser.`,
      );
      platform = "browser";
      try {
        full = await bundle(entry, { platform });
      } catch (error2) {
        rows.push([`\`${name}\``, "—", "—", "—", "—", "—", `build failed: ${error2.errors?.[0]?.text ?? error2}`]);
        continue;
      }
    }
    const increment = entry === "mod.ts" || !modMetafile ? undefined : await bundle(entry, { platform, modMetafile });
    if (entry === "mod.ts") {
      modPackages = packagesOf(full.metafile);
      modMetafile = full.metafile;
    }
    const nodeImports = new Set(
      Object.values(full.metafile.outputs).flatMap((o) => o.imports.filter((i) => i.external).map((i) => i.path)),
    );
    rows.push([
      `\`${name}\` (${entry})`,
      platform,
      kb(full.raw),
      kb(full.gzip),
      increment ? kb(increment.raw) : "—",
      increment ? kb(increment.gzip) : "—",
      [...nodeImports].map((p) => `\`${p}\``).join(", ") || "none",
    ]);
    console.log(rows.at(-1).join("  "));
  }
  // The edge worker and the minimal program, next to their goals (bench/bundle_size.ts prints the table).
  const edge = await run(process.execPath, ["--import", "tsx", "bench/bundle_size.ts"], { timeoutMs: 5 * 60_000 });
  const edgeText = edge.code === 0 ? edge.stdout.trimEnd() : failure("bench/bundle_size.ts", edge);
  const modGzip = Number(rows[0]?.[3]) * 1024;
  sections.push([
    "## Bundle size",
    "",
    "esbuild bundles (minified, ESM, es2022, dependencies included), gzip level 9 (node:zlib). " +
    "Node built-ins are marked external and listed; they are imported only by code paths that need " +
    "files, processes or zstd (in the core, file storage only, lazily: edge_bundle_test.ts). " +
    '"Beyond mod.ts" bundles the subpath with every file and package of the ' +
    "`mod.ts` bundle external, i.e. what the subpath adds to an application that already imports `@dsh/harness`.",
    "",
    table([
      "entry",
      "platform",
      "raw KB",
      "gzip KB",
      "beyond mod.ts raw KB",
      "beyond mod.ts gzip KB",
      "external imports",
    ], rows),
    "",
    `Target: \`mod.ts\` ≤ 100 KB gzip — ${
      Number.isFinite(modGzip) ? (modGzip <= 100 * 1024 ? "met" : "missed") : "—"
    }.`,
    ...notes.map((n) => `\n${n}`),
    "",
    "Largest contributors to the `mod.ts` bundle (minified bytes before gzip):",
    "",
    table(["module", "KB"], (modPackages ?? []).slice(0, 12).map(([n, b]) => [`\`${n}\``, kb(b)])),
    "",
    "### Edge worker and minimal program (bench/bundle_size.ts)",
    "",
    "examples/edge_worker.ts (harness + HTTP app + memory storage + OpenAI-compatible adapter, goal ≤ 100 KB gzip) " +
    "and bench/_minimal_agent.ts (one agent, one zod tool; zod external as in the peers' figures, goal ≤ 77 KB gzip), " +
    "as one file and as the chunks loaded at start with code splitting.",
    "",
    edgeText,
    "",
  ].join("\n"));
  writeResults();
}

// ---------------------------------------------------------------- cold start

async function benchColdStart() {
  console.log("\n=== cold start");
  const fixture = join(work, "cold-start-fixture");
  const rec = await run(process.execPath, ["--import", "tsx", "bench/cold_start.ts", "--record", fixture]);
  if (rec.code !== 0) {
    sections.push(["## Cold start", "", failure("Recording the fixture", rec), ""].join("\n"));
    return writeResults();
  }
  const bundled = {};
  for (const name of ["cold_start", "_empty", "_import_mod"]) {
    const outfile = join(work, `${name}.mjs`);
    await esbuild.build({
      entryPoints: [join(root, "bench", `${name}.ts`)],
      bundle: true,
      format: "esm",
      platform: "node",
      mainFields: ["module", "main"],
      target: "es2022",
      outfile,
      logLevel: "silent",
    });
    bundled[name] = outfile;
  }
  const variants = [
    ["Deno (TypeScript source)", RUNTIMES.deno("bench/cold_start.ts"), RUNTIMES.deno("bench/_empty.ts"), 80],
    ["Bun (TypeScript source)", RUNTIMES.bun("bench/cold_start.ts"), RUNTIMES.bun("bench/_empty.ts"), 80],
    ["Node + tsx (TypeScript source)", RUNTIMES.node("bench/cold_start.ts"), RUNTIMES.node("bench/_empty.ts")],
    ["Deno (esbuild bundle)", JS_RUNTIMES.deno(bundled.cold_start), JS_RUNTIMES.deno(bundled._empty)],
    ["Bun (esbuild bundle)", JS_RUNTIMES.bun(bundled.cold_start), JS_RUNTIMES.bun(bundled._empty)],
    ["Node (esbuild bundle, no tsx)", JS_RUNTIMES.node(bundled.cold_start), JS_RUNTIMES.node(bundled._empty)],
  ];
  const rows = [];
  const failures = [];
  for (const [label, [cmd, args], [ecmd, eargs], target] of variants) {
    const cold = [];
    const empty = [];
    const phases = [];
    let failed;
    // One discarded run of each warms the runtime's own caches (Deno's transpile cache).
    await run(cmd, [...args, fixture], { echo: false });
    await run(ecmd, eargs, { echo: false });
    for (let i = 0; i < SIZES.samples && !failed; i++) {
      const out = await run(cmd, [...args, fixture], { echo: false });
      if (out.code !== 0) failed = out;
      else {
        cold.push(out.ms);
        phases.push(resultOf(out));
      }
      const e = await run(ecmd, eargs, { echo: false });
      empty.push(e.ms);
    }
    if (failed) {
      failures.push(failure(label, failed));
      rows.push([label, "—", "—", "—", "—", "—", "—", "—", "—", "—", "failed"]);
      continue;
    }
    const over = median(cold) - median(empty);
    const ph = (key) => median(phases.map((p) => p[key]));
    rows.push([
      label,
      fmt(median(cold)),
      fmt(median(empty)),
      fmt(over),
      fmt(ph("startMs")),
      fmt(ph("importMs")),
      fmt(ph("fixtureMs")),
      fmt(ph("toolMs")),
      fmt(ph("harnessMs")),
      fmt(ph("turnMs")),
      target ? (over <= target ? `met (≤ ${target} ms)` : `missed by ${fmt(over - target)} ms`) : "—",
    ]);
    console.log(rows.at(-1).join("  "));
  }
  // Import only: `import "../mod.ts"` and exit, against the empty script, alternating.
  const importVariants = [
    ["Deno (TypeScript source)", RUNTIMES.deno("bench/_import_mod.ts"), RUNTIMES.deno("bench/_empty.ts"), 80],
    ["Bun (TypeScript source)", RUNTIMES.bun("bench/_import_mod.ts"), RUNTIMES.bun("bench/_empty.ts"), 80],
    ["Node + tsx (TypeScript source)", RUNTIMES.node("bench/_import_mod.ts"), RUNTIMES.node("bench/_empty.ts")],
    ["Deno (esbuild bundle)", JS_RUNTIMES.deno(bundled._import_mod), JS_RUNTIMES.deno(bundled._empty), 40],
    ["Bun (esbuild bundle)", JS_RUNTIMES.bun(bundled._import_mod), JS_RUNTIMES.bun(bundled._empty), 40],
    ["Node (esbuild bundle, no tsx)", JS_RUNTIMES.node(bundled._import_mod), JS_RUNTIMES.node(bundled._empty)],
  ];
  const importRows = [];
  for (const [label, [cmd, args], [ecmd, eargs], target] of importVariants) {
    const cold = [];
    const empty = [];
    let failed;
    await run(cmd, args, { echo: false });
    await run(ecmd, eargs, { echo: false });
    for (let i = 0; i < SIZES.samples && !failed; i++) {
      const out = await run(cmd, args, { echo: false });
      if (out.code !== 0) failed = out;
      else cold.push(out.ms);
      empty.push((await run(ecmd, eargs, { echo: false })).ms);
    }
    if (failed) {
      failures.push(failure(`${label} (import only)`, failed));
      importRows.push([label, "—", "—", "—", "failed"]);
      continue;
    }
    const over = median(cold) - median(empty);
    importRows.push([
      label,
      fmt(median(cold)),
      fmt(median(empty)),
      fmt(over),
      target ? (over <= target ? `met (≤ ${target} ms)` : `missed by ${fmt(over - target)} ms`) : "—",
    ]);
    console.log(`import only: ${importRows.at(-1).join("  ")}`);
  }
  sections.push([
    "## Cold start",
    "",
    `One fresh process per sample, median of ${SIZES.samples} (after one discarded run), empty script and cold ` +
    "start alternating. The cold-start script imports `mod.ts` and `replay/mod.ts`, loads a one-turn fixture " +
    "(recorded at the start of the run), runs `createHarness()` and one replayed turn with a tool call. " +
    '"Process" is spawn-to-exit wall time seen by the driver; the phases are measured inside the process ' +
    "(`performance.now()`, whose origin is the process start): *start* = until the script's first line " +
    "(runtime boot, and for Node + tsx the loader's own start-up), *import* = dynamic import of the SDK, " +
    "*fixture* = `loadFixture()` + `replayAdapter()`, *tool* = `defineTool()` of `add` (zod to JSON Schema), " +
    "*harness* = `createHarness()` + `createAgent()`, *turn* = the replayed turn.",
    "",
    "The Node + tsx row includes tsx's transpilation of every source file on each start (tsx's start-up is " +
    "also in its empty-script time); the bundle rows run one esbuild output (`platform: node`, dependencies " +
    "included) and show the cost without any transpiler.",
    "",
    table(
      [
        "runtime",
        "process ms",
        "empty script ms",
        "above empty ms",
        "start ms",
        "import ms",
        "fixture ms",
        "tool ms",
        "harness ms",
        "turn ms",
        "target",
      ],
      rows,
    ),
    "",
    "### Import only",
    "",
    "`bench/_import_mod.ts` imports `mod.ts` and exits: what loading the SDK's module graph costs, against the " +
    `empty script on the same runtime (same sampling: median of ${SIZES.samples}, alternating, after one ` +
    "discarded run of each).",
    "",
    table(["runtime", "process ms", "empty script ms", "above empty ms", "target"], importRows),
    ...failures.map((f) => `\n${f}`),
    "",
  ].join("\n"));
  writeResults();
}

// ---------------------------------------------------------------- loop overhead

async function benchLoop() {
  const results = [];
  const failures = [];
  for (
    const [turns, repeat, extra] of [
      [SIZES.turns, SIZES.repeat, ["--invariants-on"]],
      // Growth with the runtime invariants on too (the defaults): the request check must stay O(new events).
      [SIZES.growthTurns, 1, ["--invariants-on"]],
    ]
  ) {
    for (const [runtime, how] of Object.entries(RUNTIMES)) {
      // Each subject in its own process: a session must not run on a heap that earlier large sessions grew.
      let merged;
      for (const subject of ["bare", "scripted", "replay", "invariants-on", "listen"]) {
        console.log(`\n=== loop overhead: ${runtime}, T = ${turns}, ${subject}`);
        const [cmd, args] = how("bench/loop_overhead.ts", { gc: true });
        const out = await run(cmd, [
          ...args,
          "--turns",
          String(turns),
          "--repeat",
          String(repeat),
          ...extra,
          "--subject",
          subject,
        ]);
        const result = resultOf(out);
        if (out.code !== 0 || !result) {
          failures.push(failure(`loop_overhead (${subject}) on ${runtime}, T = ${turns}`, out));
          merged = undefined;
          break;
        }
        merged = merged === undefined ? result : { ...merged, subjects: { ...merged.subjects, ...result.subjects } };
      }
      if (merged !== undefined) results.push({ runtime, ...merged });
    }
  }
  const rows = [];
  const targets = [];
  for (const r of results) {
    const bare = r.subjects.bare;
    for (const [subject, f] of Object.entries(r.subjects)) {
      rows.push([
        r.runtime,
        String(r.turns),
        subject,
        fmt(f.perChunkUs, 2),
        fmt(f.perStepUs, 1),
        fmt(f.perStepUs / bare.perStepUs, 2),
        fmt(f.cpuPerStepUs, 1),
        fmt(f.cpuPerStepUs / bare.cpuPerStepUs, 2),
        fmt(f.first20Us, 1),
        fmt(f.last20Us, 1),
        fmt(f.last20Us / f.first20Us, 2),
        fmt(f.last20CpuUs / f.first20CpuUs, 2),
        Number.isFinite(f.heapBytes) ? kb(f.heapBytes) : "—",
      ]);
      if (subject === "harness-scripted" || subject === "harness-replay") {
        const ratio = f.perStepUs / bare.perStepUs;
        targets.push([
          r.runtime,
          String(r.turns),
          subject,
          verdict(ratio, 4),
          verdict(ratio, 5),
          r.turns >= 1000 ? verdict(f.last20Us / f.first20Us, 1.3) : "(T = 1000 only)",
          r.turns >= 1000 ? verdict(f.last20CpuUs / f.first20CpuUs, 1.3) : "(T = 1000 only)",
        ]);
      }
    }
  }
  sections.push([
    "## Loop overhead",
    "",
    "The standard scripted conversation (`bench/_conversation.ts`): each turn is 2 model steps, 100 chunks (90 " +
    "deltas), one `add` tool call and 4 history messages; the scripted model yields fresh chunk objects from an " +
    "async generator with one `await` per chunk. *harness-scripted* runs it through `createHarness()` " +
    "(invariants off) with that model as its adapter; *harness-replay* through `replayAdapter()` on a fixture " +
    "recorded from the same conversation (`loadFixture(events)`, not strict); *bare* is plain code folding the " +
    "same generator's chunks into messages. The application counts deltas with a `for await` over " +
    "`agent.subscribe()`, except in the *listen()* row (invariants on, as in the row above it), where it counts " +
    "them with the synchronous `agent.listen()`. " +
    "Each subject runs in its own process (a session timed after other large sessions in the same process ran " +
    "on their grown heap) — a 20-turn warm-up session, then fresh sessions of T turns (a replay process first " +
    `records its fixture, untimed); T = ${SIZES.turns} figures are ` +
    `medians of ${SIZES.repeat} runs, T = ${SIZES.growthTurns} of one run. Every run is checked (history 4·T ` +
    "messages, 90·T deltas seen, T correct tool results) and fails otherwise.",
    "",
    "µs/chunk = wall / (100·T), µs/step = wall / (2·T) — so the ratio to bare is the same for both; " +
    "cpu µs/step uses the process's user + system CPU time instead of wall time; first-20 / last-20 are " +
    "medians of per-turn wall time over the first and last 20 turns, per step (cpu last/first: the same " +
    "with per-turn CPU time); heap = heap held after forced GC with the session alive (the bare history is " +
    "small enough at T = 200 that GC noise can make it negative).",
    "",
    table(
      [
        "runtime",
        "T",
        "subject",
        "µs/chunk",
        "µs/step",
        "× bare",
        "cpu µs/step",
        "cpu × bare",
        "first-20 µs/step",
        "last-20 µs/step",
        "last/first",
        "cpu last/first",
        "heap KB",
      ],
      rows,
    ),
    "",
    "Targets (per-chunk ≤ 4× bare, per-step ≤ 5× bare, last-20 / first-20 ≤ 1.3 at T = 1000):",
    "",
    table(["runtime", "T", "subject", "chunk ≤ 4×", "step ≤ 5×", "growth ≤ 1.3", "cpu growth ≤ 1.3"], targets),
    "",
    "Where the time goes, with a profile and what to change: `bench/PROFILE.md`.",
    ...failures.map((f) => `\n${f}`),
    "",
  ].join("\n"));
  writeResults();
}

// ---------------------------------------------------------------- memory

async function benchMemory() {
  const rows = [];
  const failures = [];
  for (const [runtime, how] of Object.entries(RUNTIMES)) {
    console.log(`\n=== memory: ${runtime}`);
    const [cmd, args] = how("bench/memory.ts", { gc: true });
    const out = await run(cmd, [...args, "--agents", String(SIZES.agents)]);
    const r = resultOf(out);
    if (out.code !== 0 || !r) {
      failures.push(failure(`memory on ${runtime}`, out));
      continue;
    }
    rows.push([
      runtime,
      String(r.agents),
      String(r.eventsPerAgent),
      kb(r.bytesPerAgent),
      fmt(r.bytesPerEvent, 0),
      kb(r.bareBytesPerConversation),
      fmt(r.bytesPerAgent / r.bareBytesPerConversation, 1),
      fmt(r.firstAgentsStepUs, 0),
      fmt(r.lastAgentsStepUs, 0),
    ]);
  }
  sections.push([
    "## Memory",
    "",
    `Heap per idle agent: ${SIZES.agents} agents in one harness each run a 10-turn history of the standard ` +
    "conversation and stay alive; heap after forced GC (`Bun.gc(true)`, `--expose-gc`, " +
    "`--v8-flags=--expose-gc`) minus the heap before them, divided by the number of agents. *bare* is the same " +
    "histories as plain message arrays built by the bare loop. The last two columns are the median wall time " +
    "per step of the first 10 and of the last 10 agents' turns: whether a step costs more when many agents are " +
    "live in the harness.",
    "",
    table([
      "runtime",
      "agents",
      "log events per agent",
      "KB per agent",
      "bytes per log event",
      "bare KB per conversation",
      "× bare",
      "µs/step, first 10 agents",
      "µs/step, last 10 agents",
    ], rows),
    ...failures.map((f) => `\n${f}`),
    "",
  ].join("\n"));
  writeResults();
}

// ---------------------------------------------------------------- other benchmarks

async function benchOthers() {
  const files = readdirSync(join(root, "bench"))
    .filter((f) => f.endsWith(".ts") && !f.startsWith("_") && !MINE.has(f) && !f.endsWith("_test.ts"))
    .sort();
  const parts = [
    "## Other benchmarks",
    "",
    "Every other `bench/*.ts`, run as is on each runtime; their own output follows.",
  ];
  if (files.length === 0) parts.push("", "(none)");
  for (const file of files) {
    for (const [runtime, how] of Object.entries(RUNTIMES)) {
      console.log(`\n=== ${file}: ${runtime}`);
      const [cmd, args] = how(`bench/${file}`, { gc: true });
      const out = await run(cmd, args);
      // deno-lint-ignore no-control-regex
      const text = out.stdout.replace(/\x1b\[[0-9;]*m/g, "").trimEnd();
      parts.push("", `### ${file} — ${runtime}`, "");
      parts.push(out.code === 0 ? "```\n" + text + "\n```" : failure(`${file} on ${runtime}`, out));
    }
  }
  sections.push(parts.join("\n") + "\n");
  writeResults();
}

// ---------------------------------------------------------------- main

try {
  if (want("bundle")) await benchBundles();
  if (want("cold")) await benchColdStart();
  if (want("loop")) await benchLoop();
  if (want("memory")) await benchMemory();
  if (want("other")) await benchOthers();
  writeResults();
  console.log(`\nwrote ${relative(root, outFile)}`);
  if (failedRuns.length > 0) {
    console.error(`\n${failedRuns.length} benchmark run(s) failed (see ${relative(root, outFile)}):`);
    for (const what of failedRuns) console.error(`  ${what}`);
    process.exitCode = 1;
  }
} finally {
  rmSync(work, { recursive: true, force: true });
  await esbuild.stop?.();
}
