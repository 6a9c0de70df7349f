#!/usr/bin/env node
// The package as its users meet it (the `pack` step of `npm test`):
// package.json exports mirror deno.json's, `npm pack` (which builds dist/
// through prepack) yields a tarball without tests or fixtures, publint and
// arethetypeswrong find nothing, and the tarball installed offline (from the
// npm cache) into fresh projects in a temporary folder outside the repository
// runs a first agent under plain Node, Bun and Deno, and type-checks under
// Deno against the shipped .d.ts files.

import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { dependencyClosure } from "./_pack_deps.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name) => join(root, "node_modules", ".bin", name);
const read = (path) => JSON.parse(readFileSync(join(root, path), "utf8"));
const pkg = read("package.json");
const deno = read("deno.json");

function step(title, fn) {
  const started = Date.now();
  fn();
  console.log(`ok ${title} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
}
function fail(message) {
  console.error(`FAIL ${message}`);
  process.exit(1);
}
function run(cmd, args, cwd, env = {}) {
  try {
    return execFileSync(cmd, args, { cwd, encoding: "utf8", env: { ...process.env, NO_COLOR: "1", ...env } });
  } catch (error) {
    fail(`${cmd} ${args.join(" ")} in ${cwd}\n${error.stdout ?? ""}${error.stderr ?? ""}`);
  }
}

step("package.json exports mirror deno.json exports", () => {
  const expected = Object.entries(deno.exports).map(([name, path]) => {
    const base = path.replace(/^\.\//, "./dist/").replace(/\.ts$/, "");
    return [name, { types: `${base}.d.ts`, default: `${base}.js` }];
  });
  const actual = Object.entries(pkg.exports).filter(([name]) => name !== "./package.json");
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    fail(`package.json exports differ from deno.json:\n${JSON.stringify(Object.fromEntries(expected), null, 2)}`);
  }
});

const work = mkdtempSync(join(tmpdir(), "dsh-pack-"));
let tarball = "";
try {
  step("npm pack (prepack builds dist/)", () => {
    const out = run("npm", ["pack", "--json", "--pack-destination", work], root);
    const [info] = JSON.parse(out.slice(out.indexOf("[")));
    tarball = join(work, info.filename);
    const paths = info.files.map((f) => f.path);
    const stray = paths.filter((p) => /_test\b|_test_|testdata|fixtures|\.golden\.|(^|\/)bench\//.test(p));
    if (stray.length) fail(`the tarball holds test files: ${stray.join(", ")}`);
    for (const entry of Object.values(pkg.exports)) {
      for (const file of typeof entry === "string" ? [entry] : Object.values(entry)) {
        if (!paths.includes(file.replace(/^\.\//, ""))) fail(`the tarball lacks ${file}`);
      }
    }
    console.log(`   ${info.filename}: ${paths.length} files, ${(info.size / 1024).toFixed(0)} KB packed`);
  });

  step("publint", () => {
    const out = run(bin("publint"), ["run", tarball, "--strict"], root);
    if (!/All good/i.test(out)) fail(`publint:\n${out}`);
  });

  step("arethetypeswrong (ESM only)", () => {
    run(bin("attw"), [tarball, "--profile", "esm-only", "--format", "table-flipped"], root);
  });

  // The README's first agent, exactly as printed there, then the mounted HTTP app.
  const readme = readFileSync(join(root, "README.md"), "utf8");
  // The first ts block of the section, after any lines of prose.
  const firstAgent = readme.match(/^## A first agent\n\n(?:[^`\n][^\n]*\n\n?)*```ts\n([^]*?)^```$/m)?.[1];
  if (firstAgent === undefined) fail('README.md has no ts block under "## A first agent"');
  const program = firstAgent + readFileSync(join(root, "scripts", "pack_mounted_app.mjs"), "utf8");
  const printsFirstAgent = (out) => out.split("\n")[0] === "2 + 3 is 5.";
  const subpaths = Object.keys(pkg.exports).filter((name) => name !== "./package.json");
  const importAll = `for (const sub of ${JSON.stringify(subpaths)}) {\n` +
    `  const mod = await import(sub === "." ? "@dsh/harness" : "@dsh/harness" + sub.slice(1));\n` +
    `  if (Object.keys(mod).length === 0) throw new Error("empty entry " + sub);\n}\n`;

  // Tests use no network: each project starts with the package's runtime
  // dependencies (their closure in package-lock.json) copied from this
  // repository's node_modules, as a previous install would have left them, and
  // `npm install --offline <tarball>` keeps them and adds the package. npm 11
  // still reads their registry documents, which `pretest` puts into the npm
  // cache (scripts/pack_cache.mjs).
  const lock = read("package-lock.json");
  const seeded = dependencyClosure(pkg, lock);

  // The peers at their newest (the devDependencies zod, hono) or their lowest
  // supported versions (the devDependencies zod-lowest, hono-lowest).
  const peersAt = (level) =>
    Object.fromEntries(
      Object.keys(pkg.peerDependencies).map((peer) => {
        const lowest = `${peer}-lowest`;
        return [peer, level === "lowest" && pkg.devDependencies[lowest] ? lowest : peer];
      }),
    );
  const project = (name, files, level = "newest") => {
    const dir = join(work, name);
    mkdirSync(dir);
    const peers = peersAt(level);
    const dependencies = Object.fromEntries(
      Object.entries(peers).map(([peer, from]) => [peer, lock.packages[`node_modules/${from}`].version]),
    );
    writeFileSync(
      join(dir, "package.json"),
      JSON.stringify({ name: `consumer-${name}`, private: true, type: "module", dependencies }),
    );
    for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
    for (const dep of seeded) {
      cpSync(join(root, "node_modules", peers[dep] ?? dep), join(dir, "node_modules", dep), { recursive: true });
    }
    try {
      execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", tarball], { cwd: dir, encoding: "utf8" });
    } catch (error) {
      const output = `${error.stdout ?? ""}${error.stderr ?? ""}`;
      const hint = /ENOTCACHED|ERESOLVE/.test(output)
        ? "\nthe npm cache lacks registry documents: run `node scripts/pack_cache.mjs` (npm test's pretest does)"
        : "";
      fail(`npm install --offline ${tarball} in ${dir}\n${output}${hint}`);
    }
    return dir;
  };

  step("Node 20 project, plain node", () => {
    const dir = project("node", { "main.mjs": program + importAll });
    const out = run(process.execPath, ["main.mjs"], dir);
    if (!printsFirstAgent(out)) fail(`node printed:\n${out}`);
    if (!out.includes("http: 201 application/json")) fail(`node printed:\n${out}`);
  });

  step("Node 20 project with the lowest supported zod and hono", () => {
    const dir = project("node-lowest", { "main.mjs": program + importAll }, "lowest");
    const versions = ["zod", "hono"].map((name) =>
      JSON.parse(readFileSync(join(dir, "node_modules", name, "package.json"), "utf8")).version
    );
    console.log(`   zod ${versions[0]}, hono ${versions[1]}`);
    const out = run(process.execPath, ["main.mjs"], dir);
    if (!printsFirstAgent(out)) fail(`node printed:\n${out}`);
    if (!out.includes("http: 201 application/json")) fail(`node printed:\n${out}`);
  });

  step("Bun project", () => {
    const dir = project("bun", { "main.ts": program + importAll });
    const out = run(bin("bun"), ["run", "main.ts"], dir);
    if (!printsFirstAgent(out)) fail(`bun printed:\n${out}`);
  });

  step("Deno project (deno check, then deno run)", () => {
    const dir = project("deno", {
      "main.ts": program + importAll,
      "deno.json": JSON.stringify({ nodeModulesDir: "manual" }),
    });
    run(bin("deno"), ["check", "main.ts"], dir);
    const out = run(bin("deno"), ["run", "-A", "main.ts"], dir);
    if (!printsFirstAgent(out)) fail(`deno printed:\n${out}`);
  });
} finally {
  rmSync(work, { recursive: true, force: true });
}
