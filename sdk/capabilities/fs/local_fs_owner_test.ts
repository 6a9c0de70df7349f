import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { childCommand, runToEnd } from "../../kernel/_test_child_command.ts";
import { duringWriteForTests, localFs, processUidForTests } from "./local_fs.ts";

const root = process.getuid?.() === 0;
const childScript = fileURLToPath(new URL("./_test_unprivileged_child.ts", import.meta.url));
const AS_NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"];

/**
 * How the child runs. Not root: as the tests' own user. Root (who ignores file modes): as nobody when nobody can run
 * it — a clone inside a directory only root may enter (a `mktemp -d`) cannot be read by nobody —, else as root without
 * any capability (`setpriv --inh-caps=-all --bounding-set=-all`), whom the modes of root's own files bind.
 */
const childMode: "self" | "nobody" | "capless" = !root ? "self" : await (async () => {
  const dir = await mkdtemp(join(tmpdir(), "dsh-fs-probe-"));
  try {
    await chmod(dir, 0o777);
    const [cmd, args] = childCommand(childScript, JSON.stringify([dir, "write:probe.txt"]));
    const child = spawn("setpriv", [...AS_NOBODY, cmd, ...args], { stdio: "ignore" });
    const code = await new Promise<number | null>((resolve) => {
      child.once("error", () => resolve(-1));
      child.once("close", resolve);
    });
    return code === 0 ? "nobody" : "capless";
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
})();
/** The user the child runs as. */
const childUid = childMode === "nobody" ? 65534 : process.getuid?.() ?? -1;

/** Run `_test_unprivileged_child.ts` over `dir` with `ops`, as `childUid`; its error codes. */
async function asChild(dir: string, ...ops: string[]): Promise<(string | null)[]> {
  const [cmd, args] = childCommand(childScript, JSON.stringify([dir, ...ops]));
  const [program, argv]: [string, string[]] = childMode === "nobody"
    ? ["setpriv", [...AS_NOBODY, cmd, ...args]]
    : childMode === "capless"
    ? ["setpriv", ["--inh-caps=-all", "--bounding-set=-all", cmd, ...args]]
    : [cmd, args];
  const { code, stdout, stderr } = await runToEnd(program, argv);
  assert.equal(code, 0, stderr);
  return JSON.parse(stdout.trim().split("\n").pop()!);
}

/** A directory every user may write, with files of `mode`, owned by the child's user. */
async function sharedDir(files: Record<string, number>): Promise<string> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-fs-")));
  await chmod(dir, 0o777);
  for (const [name, mode] of Object.entries(files)) {
    await writeFile(join(dir, name), "old\n");
    await chmod(join(dir, name), mode);
    if (childMode === "nobody") await chown(join(dir, name), childUid, childUid);
  }
  return dir;
}

describe("localFs() and file permissions", { skip: process.platform === "win32" }, () => {
  it("refuses to write or edit a read-only file in a writable directory (PERMISSION_DENIED), as before", async () => {
    const dir = await sharedDir({ "locked.txt": 0o444, "locked2.txt": 0o444, "open.txt": 0o644 });
    try {
      // The directory may be written: a new file renamed over the old one would replace it whatever its mode.
      assert.deepEqual(await asChild(dir, "write:locked.txt", "edit:locked2.txt", "write:open.txt"), [
        "PERMISSION_DENIED",
        "PERMISSION_DENIED",
        null,
      ]);
      assert.equal(await readFile(join(dir, "locked.txt"), "utf8"), "old\n");
      assert.equal(await readFile(join(dir, "locked2.txt"), "utf8"), "old\n");
      assert.equal((await stat(join(dir, "locked.txt"))).mode & 0o777, 0o444);
      assert.equal(await readFile(join(dir, "open.txt"), "utf8"), `written by ${childUid}\n`);
      assert.deepEqual((await readdir(dir)).sort(), ["locked.txt", "locked2.txt", "open.txt"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("localFs() and the temporary file of a write", { skip: process.platform === "win32" }, () => {
  it("lets no one else read the new content of a file before it is the file (a 0600 secret stays 0600)", async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-fs-")));
    const modes: number[] = [];
    const restore = duringWriteForTests(async (temp) => void modes.push((await stat(temp)).mode & 0o777));
    try {
      await chmod(dir, 0o755);
      await writeFile(join(dir, ".env"), "SECRET=old\n", { mode: 0o600 });
      await writeFile(join(dir, "notes.txt"), "old\n", { mode: 0o640 });
      const fs = localFs({ root: dir });
      await fs.writeFile(".env", "SECRET=new\n");
      await fs.edit("notes.txt", "old", "new");
      await fs.writeFile("fresh.txt", "new file\n");
      assert.equal(modes.length, 3);
      // Owner only while the content is written; the old mode once it is in place.
      assert.deepEqual(modes.slice(0, 2), [0o600, 0o600]);
      assert.equal((await stat(join(dir, ".env"))).mode & 0o777, 0o600);
      assert.equal((await stat(join(dir, "notes.txt"))).mode & 0o777, 0o640);
      assert.equal(await readFile(join(dir, ".env"), "utf8"), "SECRET=new\n");
      assert.equal(await readFile(join(dir, "notes.txt"), "utf8"), "new\n");
    } finally {
      restore();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("localFs() and a file another user owns", { skip: process.platform === "win32" }, () => {
  it("writes it in place, keeping its owner, group and inode (and in a sticky directory, as /tmp)", async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-fs-")));
    try {
      await chmod(dir, 0o777);
      await mkdir(join(dir, "sticky"));
      await chmod(join(dir, "sticky"), 0o1777);
      const files = { "shared.txt": 0o664, "sticky/shared.txt": 0o666, "group.txt": 0o664 };
      for (const [name, mode] of Object.entries(files)) {
        await writeFile(join(dir, name), "old\n");
        await chmod(join(dir, name), mode);
      }
      const ops = ["write:shared.txt", "write:sticky/shared.txt", "edit:group.txt"];
      let expected: Record<string, { uid: number; gid: number }>;
      if (childMode === "nobody") {
        // Owned by root, written by nobody: a group-writable file; a world-writable one in a sticky directory (which
        // lets only its owner replace it); nobody's own file in a group nobody is not in (the new file cannot have it).
        await chown(join(dir, "shared.txt"), 0, 65534);
        await chown(join(dir, "sticky/shared.txt"), 0, 0);
        await chown(join(dir, "group.txt"), 65534, 0);
        expected = { "shared.txt": { uid: 0, gid: 65534 }, "sticky/shared.txt": { uid: 0, gid: 0 } };
        expected["group.txt"] = { uid: 65534, gid: 0 };
      } else {
        // Not able to run a child as another user, the test cannot give a file to another user: it takes itself for
        // another user instead.
        const st = await stat(join(dir, "shared.txt"));
        expected = Object.fromEntries(Object.keys(files).map((name) => [name, { uid: st.uid, gid: st.gid }]));
      }
      const inodes = await Promise.all(Object.keys(files).map(async (name) => (await stat(join(dir, name))).ino));
      if (childMode === "nobody") assert.deepEqual(await asChild(dir, ...ops), [null, null, null]);
      else {
        const restore = processUidForTests(childUid + 1);
        try {
          const fs = localFs({ root: dir });
          await fs.writeFile("shared.txt", `written by ${childUid}\n`);
          await fs.writeFile("sticky/shared.txt", `written by ${childUid}\n`);
          await fs.edit("group.txt", "old", "new");
        } finally {
          restore();
        }
      }
      for (const [i, [name, mode]] of Object.entries(files).entries()) {
        const st = await stat(join(dir, name));
        assert.deepEqual({ uid: st.uid, gid: st.gid }, expected[name], name);
        assert.equal(st.mode & 0o7777, mode, name);
        assert.equal(st.ino, inodes[i], name);
        assert.equal(
          await readFile(join(dir, name), "utf8"),
          name === "group.txt" ? "new\n" : `written by ${childUid}\n`,
        );
      }
      assert.deepEqual((await readdir(dir)).sort(), ["group.txt", "shared.txt", "sticky"]);
      assert.deepEqual(await readdir(join(dir, "sticky")), ["shared.txt"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
