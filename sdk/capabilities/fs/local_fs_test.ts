import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  chmod,
  link,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rm,
  stat,
  symlink,
  writeFile,
} from "node:fs/promises";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEditWriteForTests, localFs } from "./local_fs.ts";
import { fsContract } from "./_test_fs_contract.ts";
import { selectLines, toFsError } from "./_fs_errors.ts";
import { childCommand, runToEnd } from "../../kernel/_test_child_command.ts";

fsContract({
  name: "localFs()",
  make: async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-fs-"));
    return { fs: localFs({ root: dir }), after: () => rm(dir, { recursive: true, force: true }) };
  },
});

describe("localFs()", () => {
  it("lists a file whose name holds a backslash, which no path can then name (a backslash is a separator)", async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-fs-")));
    try {
      await writeFile(join(dir, "a\\b.txt"), "on disk");
      const fs = localFs({ root: dir });
      assert.deepEqual(await fs.list("."), [{ name: "a\\b.txt", kind: "file" }]);
      await assert.rejects(fs.readText("a\\b.txt"), { code: "FILE_NOT_FOUND" });
      await fs.writeFile("a\\b.txt", "through the seam");
      assert.equal(await readFile(join(dir, "a", "b.txt"), "utf8"), "through the seam");
      assert.equal(await readFile(join(dir, "a\\b.txt"), "utf8"), "on disk");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("reads a range of lines of a large file in chunks, with the same answer as a whole read", async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-fs-")));
    try {
      const fs = localFs({ root: dir });
      // 200,000 lines of ~90 bytes (18 MB: above the size from which files are read in chunks), é and 🙂 included.
      const line = (i: number) => `${i} ${"é🙂".repeat(3)} ${"x".repeat(64)}`;
      const text = Array.from({ length: 200_000 }, (_, i) => line(i + 1)).join("\n");
      for (const ending of ["", "\n"]) {
        await fs.writeFile("big.txt", text + ending);
        for (const [startLine, lineCount] of [[1, 2], [150_000, 3], [199_999, 5], [200_001, 2], [7, 0], [250_000, 1]]) {
          const read = await fs.readText("big.txt", { startLine, lineCount });
          const whole = selectLines(text + ending, startLine, lineCount);
          assert.deepEqual(read, whole, `${startLine}+${lineCount}${JSON.stringify(ending)}`);
        }
      }
      assert.equal((await fs.readText("big.txt", { startLine: 150_000, lineCount: 1 })).text, `${line(150_000)}\n`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("accepts absolute paths inside the root and follows links that stay inside", async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-fs-")));
    try {
      const fs = localFs({ root: dir });
      await fs.writeFile(`${dir}/a.txt`, "abs");
      assert.equal((await fs.readText("a.txt")).text, "abs");
      await symlink("a.txt", join(dir, "link.txt"));
      assert.equal((await fs.readText("link.txt")).text, "abs");
      await fs.writeFile("link.txt", "through");
      assert.equal((await fs.readText("a.txt")).text, "through");
      assert.deepEqual(await fs.list("."), [{ name: "a.txt", kind: "file" }, { name: "link.txt", kind: "symlink" }]);
      await fs.remove("link.txt");
      assert.equal((await fs.readText("a.txt")).text, "through");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("serialises edits of one file across every localFs of the process, through links too", async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-fs-")));
    try {
      // Two harnesses over one root each have their own localFs; one edits through a link to the file.
      await writeFile(join(dir, "f.ts"), "const A = 1;\nconst B = 1;\nconst C = 1;\n" + "// filler\n".repeat(20_000));
      await symlink("f.ts", join(dir, "link.ts"));
      const [one, two] = [localFs({ root: dir }), localFs({ root: dir })];
      await Promise.all([
        one.edit("f.ts", "const A = 1;", "const A = 2;"),
        two.edit("f.ts", "const B = 1;", "const B = 2;"),
        two.edit("link.ts", "const C = 1;", "const C = 2;"),
      ]);
      const text = await readFile(join(dir, "f.ts"), "utf8");
      assert.ok(text.startsWith("const A = 2;\nconst B = 2;\nconst C = 2;\n"), text.slice(0, 60));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("fails an edit with FILE_CHANGED when another process wrote the file after the edit read it", async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-fs-")));
    const restore = beforeEditWriteForTests((abs) => writeFile(abs, "const A = 1;\nconst B = 99;\n"));
    try {
      await writeFile(join(dir, "f.ts"), "const A = 1;\nconst B = 1;\n");
      const fs = localFs({ root: dir });
      await assert.rejects(fs.edit("f.ts", "const A = 1;", "const A = 2;"), { code: "FILE_CHANGED" });
      assert.equal(await readFile(join(dir, "f.ts"), "utf8"), "const A = 1;\nconst B = 99;\n");
      restore();
      assert.equal(await fs.edit("f.ts", "const A = 1;", "const A = 2;"), 1);
      assert.equal(await readFile(join(dir, "f.ts"), "utf8"), "const A = 2;\nconst B = 99;\n");
    } finally {
      restore();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("leaves the old content, and no temporary file, when a write fails part way (a full disk, a size limit)", {
    skip: process.platform === "win32",
  }, async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-fs-")));
    try {
      const original = "const keep = 1;\n".repeat(300) + "MARKER\n" + "const keep = 1;\n".repeat(300); // ~10 KB
      await writeFile(join(dir, "main.ts"), original);
      await writeFile(join(dir, "cfg.json"), original);
      // A child process whose files may not grow past 20 KB (40 blocks of 512 bytes, or 40 KB where a block is
      // 1 KiB): its writes of 100 KB fail with EFBIG part way (SIGXFSZ ignored, as Node does by itself).
      const script = fileURLToPath(new URL("./_test_write_limit_child.ts", import.meta.url));
      const [cmd, args] = childCommand(script, dir);
      const limited = ["-c", 'trap "" XFSZ; ulimit -f 40 && exec "$@"', "sh", cmd, ...args];
      const { code, stdout, stderr } = await runToEnd("sh", limited);
      assert.equal(code, 0, stderr);
      assert.deepEqual(JSON.parse(stdout.trim().split("\n").pop()!), ["FILE_TOO_LARGE", "FILE_TOO_LARGE"], stderr);
      assert.equal(await readFile(join(dir, "main.ts"), "utf8"), original);
      assert.equal(await readFile(join(dir, "cfg.json"), "utf8"), original);
      assert.deepEqual((await readdir(dir)).sort(), ["cfg.json", "main.ts"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("names a write the disk refuses with a stable code", () => {
    const codes = ["ENOSPC", "EDQUOT", "EFBIG", "EROFS"].map((errno) =>
      toFsError(Object.assign(new Error(errno), { code: errno }), "a.txt").code
    );
    assert.deepEqual(codes, ["FS_NO_SPACE", "FS_NO_SPACE", "FILE_TOO_LARGE", "FS_READ_ONLY"]);
  });

  it("replaces a file whole, keeping its mode, leaving nothing beside it, and writing a link's target", async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-fs-")));
    try {
      const fs = localFs({ root: dir });
      await writeFile(join(dir, "run.sh"), "echo 1\n");
      await chmod(join(dir, "run.sh"), 0o750);
      await symlink("run.sh", join(dir, "link.sh"));
      await fs.writeFile("link.sh", "echo 2\n");
      await fs.edit("run.sh", "2", "3");
      assert.equal(await readFile(join(dir, "run.sh"), "utf8"), "echo 3\n");
      if (process.platform !== "win32") assert.equal((await stat(join(dir, "run.sh"))).mode & 0o777, 0o750);
      assert.deepEqual((await fs.list(".")).map((e) => `${e.name}:${e.kind}`), ["link.sh:symlink", "run.sh:file"]);
      // The new content is a new file: another hard link to the old one keeps the old content.
      await link(join(dir, "run.sh"), join(dir, "hard.sh"));
      await fs.writeFile("run.sh", "echo 4\n");
      assert.equal(await readFile(join(dir, "hard.sh"), "utf8"), "echo 3\n");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a name too long for the file system is INVALID_PATH, not a missing file", async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-fs-")));
    try {
      const fs = localFs({ root: dir });
      const long = "x".repeat(300);
      await assert.rejects(fs.readText(long), { code: "INVALID_PATH" });
      await assert.rejects(fs.writeFile(long, "long"), { code: "INVALID_PATH" });
      await assert.rejects(fs.writeFile(`${long}/a.txt`, "long"), { code: "INVALID_PATH" });
      await assert.rejects(fs.stat(long), { code: "INVALID_PATH" });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("globs regular files only: not a link to a directory, nor a FIFO", {
    skip: process.platform === "win32",
  }, async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-fs-")));
    try {
      await mkdir(join(dir, "sub"));
      await writeFile(join(dir, "sub/b.txt"), "B\n");
      await writeFile(join(dir, "a.txt"), "A\n");
      await symlink("sub", join(dir, "in_dir"));
      await symlink("a.txt", join(dir, "in_file"));
      execFileSync("mkfifo", [join(dir, "fifo")]);
      assert.deepEqual(await localFs({ root: dir }).glob("**"), ["a.txt", "in_file", "sub/b.txt"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses a root that does not exist", async () => {
    await assert.rejects(localFs({ root: "/nonexistent-dsh-root" }).stat("."), { code: "FILE_NOT_FOUND" });
  });
});
