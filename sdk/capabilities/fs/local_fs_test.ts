import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, realpath, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { localFs } from "./local_fs.ts";
import { fsContract } from "./_test_fs_contract.ts";

fsContract({
  name: "localFs()",
  make: async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-fs-"));
    return { fs: localFs({ root: dir }), after: () => rm(dir, { recursive: true, force: true }) };
  },
});

describe("localFs()", () => {
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
