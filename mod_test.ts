import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

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
