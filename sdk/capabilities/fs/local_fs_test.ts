import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { localFs } from "./local_fs.ts";
import { fsContract } from "./_test_fs_contract.ts";
import { selectLines } from "./_fs_errors.ts";

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

  it("refuses a root that does not exist", async () => {
    await assert.rejects(localFs({ root: "/nonexistent-dsh-root" }).stat("."), { code: "FILE_NOT_FOUND" });
  });
});
