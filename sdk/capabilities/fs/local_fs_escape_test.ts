// Hostile paths against localFs: nothing outside the root is read, written,
// listed, created or removed. Symbolic links, device files, FIFOs and a
// directory swapped for a link while calls are in flight.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HarnessError } from "../../kernel/harness_error.ts";
import { localFs } from "./local_fs.ts";
import { localSubprocess } from "../subprocess/local_subprocess.ts";
import type { FsService } from "./fs_service.ts";

const SECRET = "SECRET-OUTSIDE";

async function setup(): Promise<{ base: string; root: string; out: string; fs: FsService }> {
  const base = await realpath(await mkdtemp(join(tmpdir(), "dsh-escape-")));
  const root = join(base, "root");
  const out = join(base, "out");
  await mkdir(join(root, "sub"), { recursive: true });
  await mkdir(out);
  await writeFile(join(out, "secret.txt"), SECRET);
  await writeFile(join(out, "f.txt"), SECRET);
  await writeFile(join(root, "inside.txt"), "inside");
  await symlink("../out", join(root, "esc"));
  await symlink("../out/secret.txt", join(root, "escfile"));
  await symlink(out, join(root, "abs"));
  await symlink("../out/new.txt", join(root, "dangling"));
  await symlink("loop", join(root, "loop"));
  await symlink("chain2", join(root, "chain1"));
  await symlink("../out", join(root, "chain2"));
  await symlink("../..", join(root, "sub", "up"));
  await symlink(".", join(root, "self"));
  await symlink("/dev/zero", join(root, "zero"));
  await symlink("/", join(root, "slash"));
  execFileSync("mkfifo", [join(root, "fifo")]);
  return { base, root, out, fs: localFs({ root }) };
}

async function snapshot(dir: string): Promise<string> {
  const names = (await readdir(dir)).sort();
  const parts = await Promise.all(names.map(async (n) => `${n}=${await readFile(join(dir, n), "utf8")}`));
  return parts.join("|");
}

/** Every hostile path and the code a read of it must fail with. */
function hostile(root: string, out: string): [string, string][] {
  return [
    ["../out/secret.txt", "PATH_OUTSIDE_ROOT"],
    ["../../etc/passwd", "PATH_OUTSIDE_ROOT"],
    ["..", "PATH_OUTSIDE_ROOT"],
    ["./..", "PATH_OUTSIDE_ROOT"],
    ["sub/../../out/secret.txt", "PATH_OUTSIDE_ROOT"],
    ["sub/../..", "PATH_OUTSIDE_ROOT"],
    ["..\\out\\secret.txt", "PATH_OUTSIDE_ROOT"],
    ["/etc/passwd", "PATH_OUTSIDE_ROOT"],
    ["/", "PATH_OUTSIDE_ROOT"],
    [`${out}/secret.txt`, "PATH_OUTSIDE_ROOT"],
    [`${root}/../out/secret.txt`, "PATH_OUTSIDE_ROOT"],
    [`${root}x/secret.txt`, "PATH_OUTSIDE_ROOT"],
    [`${root}/esc/secret.txt`, "PATH_OUTSIDE_ROOT"],
    ["esc/secret.txt", "PATH_OUTSIDE_ROOT"],
    ["esc", "PATH_OUTSIDE_ROOT"],
    ["esc/", "PATH_OUTSIDE_ROOT"],
    ["esc/.", "PATH_OUTSIDE_ROOT"],
    ["esc/../esc/secret.txt", "PATH_OUTSIDE_ROOT"],
    ["escfile", "PATH_OUTSIDE_ROOT"],
    ["abs/secret.txt", "PATH_OUTSIDE_ROOT"],
    ["abs/new.txt", "PATH_OUTSIDE_ROOT"],
    ["dangling", "PATH_OUTSIDE_ROOT"],
    ["dangling/x", "PATH_OUTSIDE_ROOT"],
    ["loop", "PATH_OUTSIDE_ROOT"],
    ["loop/x", "PATH_OUTSIDE_ROOT"],
    ["chain1/secret.txt", "PATH_OUTSIDE_ROOT"],
    ["sub/up/out/secret.txt", "PATH_OUTSIDE_ROOT"],
    ["sub/up", "PATH_OUTSIDE_ROOT"],
    ["self/esc/secret.txt", "PATH_OUTSIDE_ROOT"],
    ["sub/up/root/../out/secret.txt", "PATH_OUTSIDE_ROOT"],
    ["zero", "PATH_OUTSIDE_ROOT"],
    ["slash/etc/passwd", "PATH_OUTSIDE_ROOT"],
    ["fifo", "NOT_A_REGULAR_FILE"],
    ["/proc/self/root/etc/passwd", "PATH_OUTSIDE_ROOT"],
    ["esc\0/secret.txt", "INVALID_PATH"],
  ];
}

const codeOf = (error: unknown): string => {
  if (!HarnessError.isInstance(error)) throw error;
  return error.code;
};

describe("localFs() path escapes", () => {
  it("refuses every hostile path for every operation, and nothing outside changes", async () => {
    const { base, root, out, fs } = await setup();
    try {
      const before = await snapshot(out);
      const paths = hostile(root, out);
      assert.ok(paths.length >= 30);
      for (const [path, expected] of paths) {
        const attempts: [string, () => Promise<unknown>][] = [
          ["readText", () => fs.readText(path)],
          ["readBytes", () => fs.readBytes(path)],
          ["writeFile", () => fs.writeFile(path, "pwned")],
          ["edit", () => fs.edit(path, SECRET, "pwned")],
          ["list", () => fs.list(path)],
          ["stat", () => fs.stat(path)],
          ["mkdir", () => fs.mkdir(`${path}/d`, { recursive: true })],
          ["glob", () => fs.glob("**", { cwd: path })],
        ];
        for (const [op, attempt] of attempts) {
          let result: unknown;
          try {
            result = await attempt();
          } catch (error) {
            const code = codeOf(error);
            if (op === "readText" || op === "readBytes") assert.equal(code, expected, `${op} ${path}`);
            continue;
          }
          assert.ok(!JSON.stringify(result ?? null).includes("SECRET"), `${op} ${path} returned outside data`);
          // A FIFO inside the root may be described, never opened.
          if (op === "stat" && expected === "NOT_A_REGULAR_FILE") continue;
          assert.fail(`${op} ${JSON.stringify(path)} succeeded`);
        }
      }
      // Removal last: removing a link (not its target) is allowed and would change the later cases.
      for (const [path] of paths) {
        try {
          await fs.remove(path, { recursive: true });
        } catch (error) {
          codeOf(error);
        }
      }
      assert.equal(await snapshot(out), before);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });

  it("never reads or writes outside while a directory is swapped for a link to the outside", async () => {
    const { base, root, out, fs } = await setup();
    try {
      await mkdir(join(root, "realdir"));
      await writeFile(join(root, "realdir", "f.txt"), "inside");
      await symlink(out, join(root, "lnk"));
      const before = await snapshot(out);
      const controller = new AbortController();
      const swapping = localSubprocess().run([
        "sh",
        "-c",
        "while :; do mv realdir swap; mv swap realdir; mv lnk swap; mv swap lnk; done",
      ], { cwd: root, signal: controller.signal });
      const counts = { ok: 0, refused: 0 };
      try {
        for (let i = 0; i < 300; i++) {
          for (
            const attempt of [
              () => fs.readText("swap/f.txt"),
              () => fs.writeFile("swap/f.txt", "pwned"),
              () => fs.writeFile(`swap/new${i}.txt`, "pwned"),
              () => fs.edit("swap/f.txt", SECRET, "pwned"),
            ]
          ) {
            try {
              const result = await attempt();
              assert.ok(!JSON.stringify(result ?? null).includes("SECRET"), "a read returned outside data");
              counts.ok++;
            } catch (error) {
              codeOf(error);
              counts.refused++;
            }
          }
        }
      } finally {
        controller.abort();
        await swapping;
      }
      assert.ok(counts.ok + counts.refused === 1200);
      assert.equal(await snapshot(out), before);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });
});
