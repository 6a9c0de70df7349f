import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { memoryFs } from "./memory_fs.ts";
import { fsContract } from "./_test_fs_contract.ts";

fsContract({ name: "memoryFs()", make: () => Promise.resolve({ fs: memoryFs(), after: () => Promise.resolve() }) });

describe("memoryFs()", () => {
  it("starts with the given files and reads absolute paths from its virtual root", async () => {
    const fs = memoryFs({ files: { "/src/a.txt": "a", "b.txt": new Uint8Array([98]) }, now: () => 5 });
    assert.equal((await fs.readText("/src/a.txt")).text, "a");
    assert.equal((await fs.readText("b.txt")).text, "b");
    assert.deepEqual(await fs.stat("src/a.txt"), { kind: "file", size: 1, mtimeMs: 5 });
  });
});
