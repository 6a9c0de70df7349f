// The FsService contract, as one suite every provider runs.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../../kernel/harness_error.ts";
import type { FsService } from "./fs_service.ts";

export interface FsTarget {
  readonly name: string;
  /** A fresh, empty file system; `after` cleans up. */
  make(): Promise<{ fs: FsService; after(): Promise<void> }>;
}

const code = (c: string) => (error: unknown) => {
  if (HarnessError.isInstance(error, c)) return true;
  throw new Error(`expected ${c}, got ${(error as { code?: string })?.code}: ${(error as Error)?.message}`);
};

export function fsContract(target: FsTarget): void {
  const withFs = (fn: (fs: FsService) => Promise<void>) => async () => {
    const { fs, after } = await target.make();
    try {
      await fn(fs);
    } finally {
      await after();
    }
  };

  describe(`${target.name} (fs contract)`, () => {
    it(
      "writes and reads bytes and text, creating parents",
      withFs(async (fs) => {
        await fs.writeFile("a/b/c.txt", "hello\n");
        assert.deepEqual(await fs.readText("a/b/c.txt"), { text: "hello\n", startLine: 1, endLine: 1, totalLines: 1 });
        await fs.writeFile("bin", new Uint8Array([0, 255, 1]));
        assert.deepEqual([...await fs.readBytes("bin")], [0, 255, 1]);
        await fs.writeFile("a/b/c.txt", "replaced");
        assert.equal((await fs.readText("./a//b/../b/c.txt")).text, "replaced");
        await assert.rejects(fs.writeFile("x/y.txt", "no", { createParents: false }), code("FILE_NOT_FOUND"));
      }),
    );

    it(
      "reads line ranges",
      withFs(async (fs) => {
        await fs.writeFile("l.txt", "1\n2\n3\n4\n5\n");
        assert.deepEqual(await fs.readText("l.txt", { startLine: 2, lineCount: 2 }), {
          text: "2\n3\n",
          startLine: 2,
          endLine: 3,
          totalLines: 5,
        });
        assert.deepEqual(await fs.readText("l.txt", { startLine: 5 }), {
          text: "5\n",
          startLine: 5,
          endLine: 5,
          totalLines: 5,
        });
        assert.deepEqual(await fs.readText("l.txt", { startLine: 9 }), {
          text: "",
          startLine: 6,
          endLine: 5,
          totalLines: 5,
        });
        await fs.writeFile("n.txt", "a\nb");
        assert.deepEqual(await fs.readText("n.txt", { startLine: 1, lineCount: 1 }), {
          text: "a\n",
          startLine: 1,
          endLine: 1,
          totalLines: 2,
        });
        assert.equal((await fs.readText("n.txt", { startLine: 2 })).text, "b");
        await fs.writeFile("e.txt", "");
        assert.deepEqual(await fs.readText("e.txt"), { text: "", startLine: 1, endLine: 0, totalLines: 0 });
        await assert.rejects(fs.readText("l.txt", { startLine: 0 }), code("INVALID_ARGS"));
      }),
    );

    it(
      "edits by exact unique replacement",
      withFs(async (fs) => {
        await fs.writeFile("e.ts", "const a = 1;\nconst b = 1;\n");
        assert.equal(await fs.edit("e.ts", "a = 1", "a = 2"), 1);
        assert.equal((await fs.readText("e.ts")).text, "const a = 2;\nconst b = 1;\n");
        await assert.rejects(fs.edit("e.ts", "nowhere", "x"), code("EDIT_NO_MATCH"));
        await assert.rejects(fs.edit("e.ts", "const", "let"), code("EDIT_NOT_UNIQUE"));
        assert.equal((await fs.readText("e.ts")).text, "const a = 2;\nconst b = 1;\n");
        assert.equal(await fs.edit("e.ts", "const", "let", { replaceAll: true }), 2);
        assert.equal(await fs.edit("e.ts", "b = 1", "b = $&$1"), 1);
        assert.equal((await fs.readText("e.ts")).text, "let a = 2;\nlet b = $&$1;\n");
        await assert.rejects(fs.edit("e.ts", "", "x"), code("INVALID_ARGS"));
        await assert.rejects(fs.edit("missing.ts", "a", "b"), code("FILE_NOT_FOUND"));
      }),
    );

    it(
      "an edit whose text matches at two overlapping places is not unique; replacing all replaces the ones that do not overlap",
      withFs(async (fs) => {
        await fs.writeFile("o.txt", "ababa");
        await assert.rejects(fs.edit("o.txt", "aba", "X"), (e: unknown) => {
          assert.ok(HarnessError.isInstance(e, "EDIT_NOT_UNIQUE"));
          // occurrences: what replacing all would replace; overlapping: more places match than that.
          assert.deepEqual(e.details, { path: "o.txt", occurrences: 1, overlapping: true });
          return true;
        });
        await fs.writeFile("n.txt", "x = 1;\n\n\n\ny = 2;\n");
        await assert.rejects(fs.edit("n.txt", "\n\n\n", "\n// sep\n"), code("EDIT_NOT_UNIQUE"));
        assert.equal((await fs.readText("o.txt")).text, "ababa");
        assert.equal((await fs.readText("n.txt")).text, "x = 1;\n\n\n\ny = 2;\n");
        assert.equal(await fs.edit("o.txt", "aba", "X", { replaceAll: true }), 1);
        assert.equal((await fs.readText("o.txt")).text, "Xba");
      }),
    );

    it(
      "an edit finds its matches in time linear in the sizes, however they repeat, and counts what replacing all replaces",
      withFs(async (fs) => {
        // 2 MB of "a" and 20,000 "a": 1,980,001 overlapping matches, 100 that replacing all replaces. Stepping indexOf
        // past each match compared ~4e10 units (seconds; minutes at twice the sizes).
        await fs.writeFile("a.txt", "a".repeat(2_000_000));
        await assert.rejects(fs.edit("a.txt", "a".repeat(20_000), "X"), (e: unknown) => {
          assert.ok(HarnessError.isInstance(e, "EDIT_NOT_UNIQUE"));
          assert.deepEqual(e.details, { path: "a.txt", occurrences: 100, overlapping: true });
          assert.match(e.message, /occurs 100 times .*overlap/);
          return true;
        });
        assert.equal(await fs.edit("a.txt", "a".repeat(20_000), "X", { replaceAll: true }), 100);
        assert.equal((await fs.readText("a.txt")).text, "X".repeat(100));
        // A near miss at every place: indexOf compares most of the 20,000 units at each of 2 million places.
        const nearMisses = ("a".repeat(19_999) + "b").repeat(100);
        await fs.writeFile("b.txt", nearMisses + "a".repeat(20_000) + "c");
        assert.equal(await fs.edit("b.txt", "a".repeat(20_000), "X"), 1);
        assert.equal((await fs.readText("b.txt")).text, nearMisses + "Xc");
        // Matches that do not overlap are counted as before.
        await fs.writeFile("c.txt", "ab ab ab");
        await assert.rejects(fs.edit("c.txt", "ab", "X"), (e: unknown) => {
          assert.ok(HarnessError.isInstance(e, "EDIT_NOT_UNIQUE"));
          assert.deepEqual(e.details, { path: "c.txt", occurrences: 3, overlapping: false });
          assert.match(e.message, /occurs 3 times in "c.txt"; give more context or replace all 3$/);
          return true;
        });
      }),
    );

    it(
      "edits only UTF-8 text, and keeps every byte around the replacement (a byte order mark too)",
      withFs(async (fs) => {
        const latin1 = new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x20, 0x6f, 0x6c, 0x64, 0x0a]); // "café old\n" in Latin-1
        await fs.writeFile("l.txt", latin1);
        await assert.rejects(fs.edit("l.txt", "old", "new"), code("FILE_NOT_TEXT"));
        assert.deepEqual([...await fs.readBytes("l.txt")], [...latin1]);
        const bom = [0xef, 0xbb, 0xbf];
        await fs.writeFile("b.txt", new Uint8Array([...bom, ...new TextEncoder().encode("old\n")]));
        assert.equal(await fs.edit("b.txt", "old", "new"), 1);
        assert.deepEqual([...await fs.readBytes("b.txt")], [...bom, ...new TextEncoder().encode("new\n")]);
        // A file with CRLF lines: a text with bare line feeds does not occur, and the error says why.
        await fs.writeFile("w.txt", "one\r\ntwo\r\n");
        await assert.rejects(fs.edit("w.txt", "one\ntwo", "x"), /lines end with \\r\\n/);
      }),
    );

    it(
      "runs parallel edits and writes of one file one after the other: every edit lands",
      withFs(async (fs) => {
        const lines = Array.from({ length: 8 }, (_, i) => `const v${i} = 1;`);
        await fs.writeFile("f.ts", lines.join("\n") + "\n" + "// filler\n".repeat(5000));
        const counts = await Promise.all(lines.map((line, i) => fs.edit("f.ts", line, `const v${i} = 2;`)));
        assert.deepEqual(counts, lines.map(() => 1));
        const text = (await fs.readText("f.ts")).text;
        for (let i = 0; i < lines.length; i++) assert.ok(text.includes(`const v${i} = 2;`), `edit ${i} lost`);
        // An edit and a write in parallel: one after the other, in either order, never mixed.
        const [edited] = await Promise.allSettled([
          fs.edit("f.ts", "const v0 = 2;", "const v0 = 3;"),
          fs.writeFile("f.ts", "whole\n"),
        ]);
        if (edited.status === "rejected") assert.equal(edited.reason?.code, "EDIT_NO_MATCH");
        assert.equal((await fs.readText("f.ts")).text, "whole\n");
      }),
    );

    it(
      "lists, stats, makes and removes directories",
      withFs(async (fs) => {
        await fs.mkdir("d");
        await fs.writeFile("d/z.txt", "zz");
        await fs.mkdir("d/a/b", { recursive: true });
        await fs.mkdir("d/a/b", { recursive: true });
        await assert.rejects(fs.mkdir("d"), code("FILE_EXISTS"));
        await assert.rejects(fs.mkdir("q/r"), code("FILE_NOT_FOUND"));
        assert.deepEqual(await fs.list("d"), [{ name: "a", kind: "directory" }, { name: "z.txt", kind: "file" }]);
        const file = await fs.stat("d/z.txt");
        assert.equal(file.kind, "file");
        assert.equal(file.size, 2);
        assert.equal(typeof file.mtimeMs, "number");
        assert.equal((await fs.stat("d")).kind, "directory");
        assert.equal((await fs.stat(".")).kind, "directory");
        await assert.rejects(fs.stat("nope"), code("FILE_NOT_FOUND"));
        await assert.rejects(fs.list("d/z.txt"), code("NOT_A_DIRECTORY"));
        await assert.rejects(fs.readText("d"), code("IS_A_DIRECTORY"));
        await assert.rejects(fs.writeFile("d", "x"), code("IS_A_DIRECTORY"));
        await assert.rejects(fs.remove("d"), code("DIRECTORY_NOT_EMPTY"));
        await fs.remove("d/z.txt");
        await assert.rejects(fs.remove("d/z.txt"), code("FILE_NOT_FOUND"));
        await fs.remove("d", { recursive: true });
        assert.deepEqual(await fs.list("."), []);
        await assert.rejects(fs.remove("."), code("INVALID_PATH"));
      }),
    );

    it(
      "globs files relative to the root, sorted",
      withFs(async (fs) => {
        for (const p of ["src/a.ts", "src/b.js", "src/lib/c.ts", "src/lib/deep/d.ts", "README.md", "test/a_test.ts"]) {
          await fs.writeFile(p, p);
        }
        assert.deepEqual(await fs.glob("**/*.ts"), ["src/a.ts", "src/lib/c.ts", "src/lib/deep/d.ts", "test/a_test.ts"]);
        assert.deepEqual(await fs.glob("src/*.{ts,js}"), ["src/a.ts", "src/b.js"]);
        assert.deepEqual(await fs.glob("*.md"), ["README.md"]);
        assert.deepEqual(await fs.glob("src/**"), ["src/a.ts", "src/b.js", "src/lib/c.ts", "src/lib/deep/d.ts"]);
        assert.deepEqual(await fs.glob("?rc/[ab].ts"), ["src/a.ts"]);
        // A class never matches the separator, negated or not; `]` first in a class is a member.
        assert.deepEqual(await fs.glob("src[!x]a.ts"), []);
        assert.deepEqual(await fs.glob("src/[!b].ts"), ["src/a.ts"]);
        assert.deepEqual(await fs.glob("src/[^b].ts"), ["src/a.ts"]);
        assert.deepEqual(await fs.glob("*.ts", { cwd: "src/lib" }), ["src/lib/c.ts"]);
        assert.deepEqual(await fs.glob("**/*.ts", { limit: 2 }), ["src/a.ts", "src/lib/c.ts"]);
      }),
    );

    it(
      "reads a backslash in a path as a separator, on every platform",
      withFs(async (fs) => {
        // `src\a.ts` (a model's Windows habit) names src/a.ts, and `..\` is a `..` like any other.
        await fs.writeFile("back\\slash.txt", "x");
        assert.deepEqual(await fs.list("back"), [{ name: "slash.txt", kind: "file" }]);
        assert.equal((await fs.readText("back/slash.txt")).text, "x");
        assert.equal((await fs.readText("back\\..\\back\\slash.txt")).text, "x");
        assert.deepEqual(await fs.glob("**", { cwd: "back\\" }), ["back/slash.txt"]);
        await assert.rejects(fs.readText("..\\x"), code("PATH_OUTSIDE_ROOT"));
      }),
    );

    it(
      "refuses a trailing slash on a file's path: it names a directory",
      withFs(async (fs) => {
        await fs.writeFile("a.txt", "A\n");
        await fs.mkdir("sub");
        for (const path of ["a.txt/", "a.txt\\"]) {
          await assert.rejects(fs.readText(path), code("NOT_A_DIRECTORY"));
          await assert.rejects(fs.readBytes(path), code("NOT_A_DIRECTORY"));
          await assert.rejects(fs.writeFile(path, "B\n"), code("NOT_A_DIRECTORY"));
          await assert.rejects(fs.edit(path, "A", "B"), code("NOT_A_DIRECTORY"));
        }
        await assert.rejects(fs.writeFile("newdir/", "x"), code("NOT_A_DIRECTORY"));
        await assert.rejects(fs.writeFile("new/deep/", "x"), code("NOT_A_DIRECTORY"));
        await assert.rejects(fs.readText("nope/"), code("FILE_NOT_FOUND"));
        await assert.rejects(fs.readText("sub/"), code("IS_A_DIRECTORY"));
        await assert.rejects(fs.writeFile("sub/", "x"), code("IS_A_DIRECTORY"));
        assert.equal((await fs.readText("a.txt")).text, "A\n");
        assert.deepEqual(await fs.list("."), [{ name: "a.txt", kind: "file" }, { name: "sub", kind: "directory" }]);
      }),
    );

    it(
      "refuses paths that leave the root or are malformed",
      withFs(async (fs) => {
        await assert.rejects(fs.readText("../x"), code("PATH_OUTSIDE_ROOT"));
        await assert.rejects(fs.writeFile("a/../../x", "no"), code("PATH_OUTSIDE_ROOT"));
        await assert.rejects(fs.list(".."), code("PATH_OUTSIDE_ROOT"));
        await assert.rejects(fs.readText(""), code("INVALID_PATH"));
        await assert.rejects(fs.readText("a\0b"), code("INVALID_PATH"));
        await assert.rejects(fs.glob("*", { cwd: "../.." }), code("PATH_OUTSIDE_ROOT"));
      }),
    );
  });
}
