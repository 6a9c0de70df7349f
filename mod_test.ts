import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";

const read = (path: string) => JSON.parse(readFileSync(new URL(path, import.meta.url), "utf8"));

describe("package entry points", () => {
  it("every export of deno.json can be imported", async () => {
    const deno = read("./deno.json");
    for (const [name, path] of Object.entries<string>(deno.exports)) {
      const mod = await import(new URL(path, import.meta.url).href);
      assert.equal(typeof mod, "object", `entry ${name}`);
    }
  });

  it("the root entry exports the kernel and the error class", async () => {
    const mod = await import("./mod.ts");
    assert.equal(typeof mod.createKernel, "function");
    assert.equal(typeof mod.createScope, "function");
    assert.equal(typeof mod.HarnessError, "function");
  });

  it("deno.json and jsr.json agree on name, version and exports", () => {
    const deno = read("./deno.json");
    const jsr = read("./jsr.json");
    const pkg = read("./package.json");
    assert.equal(jsr.name, deno.name);
    assert.equal(jsr.version, deno.version);
    assert.deepEqual(jsr.exports, deno.exports);
    assert.equal(pkg.name, deno.name);
    assert.equal(pkg.version, deno.version);
    assert.equal(deno.name, "@dsh/harness");
  });

  it("every dependency in package.json is pinned to an exact version", () => {
    const pkg = read("./package.json");
    for (const deps of [pkg.dependencies, pkg.devDependencies]) {
      for (const [name, version] of Object.entries<string>(deps)) {
        assert.match(version, /^(npm:[\w@/.-]+@)?\d+\.\d+\.\d+(-[\w.]+)?$/, `${name}@${version}`);
      }
    }
    assert.equal(pkg.dependencies.cordis, "4.0.0-rc.10");
  });
});

describe("deno.json imports", () => {
  // A Deno project that links this package (deno.json "links") or JSR resolves the package's bare imports
  // through deno.json alone: without these entries it fails with `Import "cordis" not a dependency`.
  it("map every npm package the published files import, at package.json's version or range", () => {
    const deno = read("./deno.json");
    const pkg = read("./package.json");
    // @hono/node-server: imported by ./view only when it serves on Node (a devDependency the user installs).
    const wanted = {
      "@hono/node-server": pkg.devDependencies["@hono/node-server"],
      ...pkg.dependencies,
      ...pkg.peerDependencies,
    };
    // `>=4.2.0 <5` in package.json is `^4.2.0` in an npm: specifier (which takes no spaces).
    const asSpecifierRange = (range: string) =>
      range.replace(
        /^>=(\d+)\.(\d+\.\d+) <(\d+)$/,
        (all, major, rest, next) => Number(next) === Number(major) + 1 ? `^${major}.${rest}` : all,
      );
    const seen = new Set<string>();
    for (const file of publishedFiles()) {
      const text = readFileSync(new URL(file, import.meta.url), "utf8");
      const statics = text.matchAll(/^(?:import|export)\b[^;]*?\sfrom\s+"([^"]+)"/gm);
      const dynamics = text.matchAll(/\bimport\("([^"]+)"\)/g);
      for (const [, specifier] of [...statics, ...dynamics]) {
        if (/^(\.|node:|@dsh\/harness)/.test(specifier)) continue;
        const name = specifier.match(/^(@[^/]+\/)?[^/]+/)![0];
        const key = specifier === name ? name : `${name}/`;
        seen.add(key);
        assert.ok(name in wanted, `${file} imports ${specifier}, which package.json does not list`);
        const range = asSpecifierRange(wanted[name]);
        const expected = key === name ? `npm:${name}@${range}` : `npm:/${name}@${range}/`;
        assert.equal(deno.imports[key], expected, `deno.json imports["${key}"] (imported by ${file})`);
      }
    }
    assert.ok(seen.has("cordis") && seen.has("zod") && seen.has("hono/"), [...seen].join(", "));
  });
});

/** The published TypeScript files (deno.json publish.include, minus tests and test support). */
function publishedFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(new URL(dir, import.meta.url), { withFileTypes: true })) {
      const path = `${dir}${entry.name}`;
      if (entry.isDirectory()) {
        if (entry.name !== "testdata") walk(`${path}/`);
      } else if (
        path.endsWith(".ts") && !path.endsWith("_test.ts") && !entry.name.startsWith("_test_")
      ) out.push(path);
    }
  };
  out.push("./mod.ts");
  for (const dir of ["./sdk/", "./adapters/", "./replay/", "./testing/", "./view/"]) walk(dir);
  return out;
}

describe("HarnessError across package copies", () => {
  it("isInstance() recognises an error branded by another copy", async () => {
    const { HarnessError } = await import("./mod.ts");
    const foreign = Object.assign(new Error("x"), {
      code: "OPEN_TURN",
      [Symbol.for("@dsh/harness/HarnessError")]: true,
    });
    assert.equal(HarnessError.isInstance(foreign), true);
    assert.equal(HarnessError.isInstance(foreign, "OPEN_TURN"), true);
    assert.equal(HarnessError.isInstance(foreign, "OTHER"), false);
    assert.equal(HarnessError.isInstance(new Error("plain")), false);
    const cause = new Error("root");
    const own = new HarnessError("X", "Failed", { cause, details: { a: 1 } });
    assert.equal(own.cause, cause);
    assert.deepEqual(own.details, { a: 1 });
    assert.ok(own instanceof Error);
  });
});
