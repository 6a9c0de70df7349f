import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { toolCaller } from "../_test_tool_caller.ts";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { memoryFs } from "./memory_fs.ts";
import { localFs } from "./local_fs.ts";
import { fsTools, type FsToolsOptions } from "./fs_tools.ts";
import type { FsService } from "./fs_service.ts";
import type { ToolSubjectGuard } from "../../tools/tool_runtime.ts";

/** Call the file tools by name; `subjectGuard` stands for the permission rules that judge what a call reaches. */
function setup(fs: FsService, options?: FsToolsOptions, subjectGuard?: ToolSubjectGuard) {
  const call = toolCaller(fsTools(fs, options), subjectGuard === undefined ? {} : { subjectGuard });
  return async (name: string, args: object) => {
    const { text, code } = await call(name, args);
    return { text, code };
  };
}

describe("fsTools()", () => {
  it("read_file numbers lines, reads ranges and says how to read on", async () => {
    const call = setup(memoryFs({ files: { "a.txt": "l1\nl2\nl3\nl4\n", "e.txt": "", "b.bin": "a\u0000b" } }), {
      defaultReadLines: 2,
    });
    assert.deepEqual(await call("read_file", { path: "a.txt" }), {
      text: "     1\tl1\n     2\tl2\n[showing lines 1-2 of 4; read on with offset 3]",
      code: undefined,
    });
    assert.equal((await call("read_file", { path: "a.txt", offset: 3, limit: 5 })).text, "     3\tl3\n     4\tl4");
    assert.equal((await call("read_file", { path: "e.txt" })).text, "(e.txt is empty)");
    assert.equal(
      (await call("read_file", { path: "a.txt", offset: 9 })).text,
      "(a.txt has 4 lines; nothing at line 9)",
    );
    assert.equal((await call("read_file", { path: "b.bin" })).text, "(b.bin is a binary file; it is not shown)");
    assert.deepEqual(await call("read_file", { path: "nope.txt" }), {
      text: 'No file or directory at "nope.txt"',
      code: "FILE_NOT_FOUND",
    });
    assert.equal((await call("read_file", { path: "../x" })).code, "PATH_OUTSIDE_ROOT");
  });

  it("caps output with an explicit note and cuts long lines", async () => {
    const long = Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n");
    const call = setup(memoryFs({ files: { "long.txt": long, "wide.txt": "x".repeat(50) } }), {
      maxOutputChars: 60,
      maxLineChars: 10,
    });
    // Whole lines up to the cap, and the note reads on from the first line not shown (not from the range's end).
    const r = await call("read_file", { path: "long.txt" });
    assert.equal(
      r.text,
      "     1\tline 0\n     2\tline 1\n     3\tline 2\n     4\tline 3\n" +
        "[showing lines 1-4 of 100 (cut at 60 characters); read on with offset 5]",
    );
    assert.equal((await call("read_file", { path: "wide.txt" })).text, "     1\txxxxxxxxxx… [line cut]");
  });

  it("cuts lines and output between characters, never inside a surrogate pair (a lone half is not text)", async () => {
    const b = (n: number) => "b".repeat(n);
    const files = { "a.txt": `${"a".repeat(9)}😀tail\n`, [`d/${b(17)}😀.txt`]: "x", [`e/${b(19)}😀.txt`]: "x" };
    // 😀 is two UTF-16 units: cut at 10 (or 20), 9 (or 19) units are kept, not 9 and the first half.
    const lines = setup(memoryFs({ files }), { maxLineChars: 10 });
    assert.equal((await lines("read_file", { path: "a.txt" })).text, `     1\t${"a".repeat(9)}… [line cut]`);
    assert.equal((await lines("grep", { pattern: "tail" })).text, `a.txt:1: ${"a".repeat(9)}… [line cut]`);
    const output = setup(memoryFs({ files }), { maxOutputChars: 20 });
    assert.equal(
      (await output("glob", { pattern: "d/*" })).text,
      `d/${b(17)}\n[output truncated: showing 19 of 25 characters]`,
    );
    assert.equal(
      (await output("list_dir", { path: "e" })).text,
      `${b(19)}\n[output truncated: showing 19 of 25 characters]`,
    );
  });

  it("write_file and edit_file change files; a missing or repeated match is a coded error", async () => {
    const fs = memoryFs();
    const call = setup(fs);
    assert.equal(
      (await call("write_file", { path: "src/x.ts", content: "a = 1;\na = 1;\n" })).text,
      "Wrote 14 bytes to src/x.ts",
    );
    assert.deepEqual(await call("edit_file", { path: "src/x.ts", old_string: "a = 2", new_string: "b" }), {
      text: 'The text to replace does not occur in "src/x.ts"',
      code: "EDIT_NO_MATCH",
    });
    assert.equal(
      (await call("edit_file", { path: "src/x.ts", old_string: "a = 1", new_string: "b" })).code,
      "EDIT_NOT_UNIQUE",
    );
    assert.equal(
      (await call("edit_file", { path: "src/x.ts", old_string: "a = 1", new_string: "b", replace_all: true })).text,
      "Edited src/x.ts: 2 replacements",
    );
    assert.equal((await fs.readText("src/x.ts")).text, "b;\nb;\n");
    assert.equal((await call("edit_file", { path: "src/x.ts", old_string: "", new_string: "b" })).code, "INVALID_ARGS");
  });

  it("list_dir, glob and grep find things", async () => {
    const call = setup(
      memoryFs({ files: { "src/a.ts": "const x = 1;\nTODO: y\n", "src/b.ts": "todo z\n", "README.md": "TODO\n" } }),
    );
    assert.equal((await call("list_dir", {})).text, "README.md\nsrc/");
    assert.equal((await call("glob", { pattern: "**/*.ts" })).text, "src/a.ts\nsrc/b.ts");
    assert.equal((await call("glob", { pattern: "*.py" })).text, "No files match *.py");
    assert.equal((await call("grep", { pattern: "TODO" })).text, "README.md:1: TODO\nsrc/a.ts:2: TODO: y");
    assert.equal(
      (await call("grep", { pattern: "todo", ignore_case: true, glob: "**/*.ts" })).text,
      "src/a.ts:2: TODO: y\nsrc/b.ts:1: todo z",
    );
    assert.equal(
      (await call("grep", { pattern: "o", max_matches: 1 })).text,
      "src/a.ts:1: const x = 1;\n[stopped after 1 matches; narrow the search]",
    );
    assert.equal((await call("grep", { pattern: "(" })).code, "INVALID_ARGS");
  });

  it("write_file reads a backslash as a separator: back\\slash.txt is the file slash.txt in back/", async () => {
    const fs = memoryFs();
    const call = setup(fs);
    assert.equal((await call("write_file", { path: "back\\slash.txt", content: "x" })).code, undefined);
    assert.deepEqual(await fs.list("."), [{ name: "back", kind: "directory" }]);
    assert.equal((await call("read_file", { path: "back/slash.txt" })).text, "     1\tx");
  });

  it("grep names a pattern that is not a regular expression once, with the runtime's reason", async () => {
    const call = setup(memoryFs({ files: { "a.txt": "x\n" } }));
    for (const pattern of ["(", "[a", "a{2,1}"]) {
      for (const ignore_case of [false, true]) {
        const { text, code } = await call("grep", { pattern, ignore_case });
        assert.equal(code, "INVALID_ARGS");
        // V8 says "Unterminated group", JavaScriptCore "missing )": the reason is the runtime's, the rest is ours.
        const prefix = `The pattern /${pattern}/ is not a valid regular expression: `;
        assert.ok(text.startsWith(prefix), text);
        const reason = text.slice(prefix.length);
        assert.match(reason, /^[a-z\\]/, text);
        assert.ok(!/invalid regular expression/i.test(reason), text);
        assert.ok(!reason.includes(`/${pattern}/`), text);
      }
    }
  });

  it("grep says which files it could not read instead of leaving them out silently", async () => {
    const fs = memoryFs({ files: { "a.txt": "ERROR one\n", "b.txt": "ERROR two\n" } });
    // A file system whose read of one file fails (as a file too large for a string does on Node).
    const failing: FsService = {
      ...fs,
      glob: (pattern, options) => fs.glob(pattern, options),
      readText: (path, options) =>
        path === "b.txt"
          ? Promise.reject(
            Object.assign(new Error("Cannot create a string longer than 0x1fffffe8"), { code: "FS_ERROR" }),
          )
          : fs.readText(path, options),
    };
    const call = setup(failing);
    assert.equal(
      (await call("grep", { pattern: "ERROR" })).text,
      "a.txt:1: ERROR one\n[1 file could not be read and was not searched: b.txt (FS_ERROR)]",
    );
    assert.equal(
      (await call("grep", { pattern: "nothing" })).text,
      "No matches for /nothing/ in 1 files\n[1 file could not be read and was not searched: b.txt (FS_ERROR)]",
    );
  });

  it("grep that reaches its cap on files says the search was cut, never that it was complete", async () => {
    const files: Record<string, string> = { "src/app.ts": "const NEEDLE = 42;\n" }; // sorts after lib/
    for (let i = 0; i < 4; i++) files[`lib/p${i}.js`] = "module.exports = 1;\n";
    const call = setup(memoryFs({ files }), { maxGrepFiles: 3 });
    const note = "[only the first 3 files (by path) were searched; the files after them were not: narrow path or glob]";
    assert.equal((await call("grep", { pattern: "NEEDLE" })).text, `No matches for /NEEDLE/ in 3 files\n${note}`);
    assert.equal(
      (await call("grep", { pattern: "exports" })).text,
      `${[0, 1, 2].map((i) => `lib/p${i}.js:1: module.exports = 1;`).join("\n")}\n${note}`,
    );
    // At the cap exactly nothing is left out; stopping at max_matches says that instead.
    assert.equal((await call("grep", { pattern: "NEEDLE", path: "src" })).text, "src/app.ts:1: const NEEDLE = 42;");
    assert.equal(
      (await call("grep", { pattern: "exports", max_matches: 1 })).text,
      "lib/p0.js:1: module.exports = 1;\n[stopped after 1 matches; narrow the search]",
    );
    const [, , , , , grep] = fsTools(memoryFs({ files }), { maxGrepFiles: 3 });
    const value = await grep.execute({ pattern: "NEEDLE" }, { signal: new AbortController().signal } as never);
    assert.deepEqual(value, { matches: [], filesSearched: 3, truncated: true, filesCapped: true });
  });

  it("glob cut at its 1000 paths says so even when the rules hide some of them", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 1010; i++) files[`f${String(i).padStart(4, "0")}.txt`] = "x";
    // The rules hide f0000-f0009: 991 of the first 1001 paths are left, and f1001-f1009 were never looked at.
    const call = setup(memoryFs({ files }), {}, (_exec, subject) => subject.startsWith("f000") ? "hidden" : undefined);
    const lines = (await call("glob", { pattern: "*.txt" })).text.split("\n");
    assert.equal(lines.length, 991);
    assert.deepEqual([lines[0], lines[989]], ["f0010.txt", "f0999.txt"]);
    assert.equal(lines[990], "[the search stopped at the first 1000 matching paths; narrow the pattern]");
    // The rules hide all of the first 1000 (f0000-f0999): the result is cut, not empty.
    const hideAll = setup(memoryFs({ files }), {}, (_exec, subject) => subject.startsWith("f0") ? "hidden" : undefined);
    const none = await hideAll("glob", { pattern: "*.txt" });
    assert.equal(
      none.text,
      "[no path shown: the search stopped at the first 1000 paths matching *.txt, and the permission rules hide all of " +
        "them; narrow the pattern]",
    );
    assert.equal((await hideAll("glob", { pattern: "f0*.txt" })).text, "No files match f0*.txt");
    // Below the cap nothing is cut, hidden paths or not.
    assert.equal(
      (await call("glob", { pattern: "f00[01]*.txt" })).text,
      [10, 11, 12, 13, 14, 15, 16, 17, 18, 19].map((i) => `f00${i}.txt`).join("\n"),
    );
  });

  it("grep refuses a pattern that repeats a repeated group (exponential backtracking that would block the process)", async () => {
    const call = setup(memoryFs({ files: { "a.txt": `${"a".repeat(34)}!\n`, "v.txt": "version 1.2.3\n" } }));
    const hidden = ["(?:[]|(a+)+$)", "[^]?(a+)+$"]; // a class that closes at once ([] or [^]) hid the rest
    for (const pattern of ["^(a+)+$", "(\\w*)*!", "(?:a|b+)*c", "(x{2,})+", "^(a+){1,10}$", ...hidden]) {
      const result = await call("grep", { pattern });
      assert.equal(result.code, "INVALID_ARGS", pattern);
      assert.match(result.text, /bound the outer one to at most 3/);
    }
    assert.equal((await call("grep", { pattern: "(\\d+\\.){1,3}\\d+" })).text, "v.txt:1: version 1.2.3");
    assert.equal((await call("grep", { pattern: "[(+)]*a+!" })).text, `a.txt:1: ${"a".repeat(34)}!`);
  });

  it("grep lets a cancel stop it between the lines of a file, not only between files", async () => {
    // Each line costs the pattern quadratic time (a* backtracks over 3000 a's); the only match is on the last line.
    const slow = `${"a".repeat(3000)}\n`.repeat(200) + "ax\n";
    const grep = fsTools(memoryFs({ files: { "slow.txt": slow } })).find((t) => t.name === "grep")!;
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 0);
    const found = await grep.execute({ pattern: "a*x" } as never, { signal: controller.signal } as never) as {
      matches: unknown[];
    };
    assert.ok(controller.signal.aborted);
    assert.deepEqual(found.matches, [], "stopped before the last line");
  });

  it("grep refuses a pattern that repeats a choice whose alternatives can match the same text", async () => {
    const call = setup(memoryFs({ files: { "ids.txt": `${"1".repeat(30)}\n`, "w.txt": "foobarfoo baz\n" } }));
    const refused = ["(\\w|\\d)*x", "(a|a)*b", "(?:a|aa)*c", "((a|aa))*c", "(a|)+b", "(?:A|a){4,}b", "(x|[xy])+z"];
    for (const pattern of refused) {
      const result = await call("grep", { pattern });
      assert.equal(result.code, "INVALID_ARGS", pattern);
      assert.match(result.text, /repeats a choice whose alternatives can match the same text/, pattern);
    }
    // Plain texts none of which begins another split a line one way only; a bounded repeat is polynomial.
    assert.equal((await call("grep", { pattern: "^(foo|bar)+" })).text, "w.txt:1: foobarfoo baz");
    assert.equal((await call("grep", { pattern: "(1|11){1,3}$" })).text, `ids.txt:1: ${"1".repeat(30)}`);
    assert.equal((await call("grep", { pattern: "(\\.|x|[|])+" })).code, "INVALID_ARGS");
    assert.equal((await call("grep", { pattern: "(baz|qux) *$" })).text, "w.txt:1: foobarfoo baz");
    assert.equal((await call("grep", { pattern: "[(|)]*baz|\\(a|b\\)*" })).text, "w.txt:1: foobarfoo baz");
  });

  it("grep's guard compares alternatives as ignore_case does: σ and ς (β and ϐ, µ and μ) are the same there", async () => {
    // Their lower cases differ, but the i flag compares upper cases (Σ): (σ|ς)+ can take either at every σ.
    const call = setup(memoryFs({ files: { "g.txt": `${"σ".repeat(12)}!\n`, "w.txt": "σαςβ\n" } }));
    for (const pattern of ["^(σ|ς)+$", "(β|ϐ)+x", "(?:µ|μ)*x", "(Σ|ς)+$", "(ab|AB)+c"]) {
      for (const ignore_case of [false, true]) {
        const result = await call("grep", { pattern, ignore_case });
        assert.equal(result.code, "INVALID_ARGS", `${pattern} ${ignore_case}`);
        assert.match(result.text, /repeats a choice whose alternatives can match the same text/, pattern);
      }
    }
    // Texts that differ past a shared case-folded first letter still split a line one way only.
    assert.equal((await call("grep", { pattern: "^(σα|ςβ)+$", ignore_case: true })).text, "w.txt:1: σαςβ");
  });

  it("grep reads lines as read_file counts them: no \\r of a CRLF ending, no line after the final newline", async () => {
    const call = setup(memoryFs({
      files: {
        "win.ts": "let a = 1;\r\nlet b = 2;\r\n",
        "unix.ts": "let c = 3;\n\nlet d;\n",
        "noeol.txt": "x",
        "e.txt": "",
      },
    }));
    assert.equal(
      (await call("grep", { pattern: ";$" })).text,
      "unix.ts:1: let c = 3;\nunix.ts:3: let d;\nwin.ts:1: let a = 1;\nwin.ts:2: let b = 2;",
    );
    assert.equal((await call("grep", { pattern: "^$" })).text, "unix.ts:2: ");
    assert.equal((await call("grep", { pattern: "^x$" })).text, "noeol.txt:1: x");
  });

  it("list_dir, glob and grep refuse a directory whose link leads where the rules do not let them reach", async () => {
    const root = await mkdtemp(join(tmpdir(), "dsh-fs-tools-"));
    try {
      for (const dir of ["secret", "src"]) await mkdir(join(root, dir));
      await writeFile(join(root, "secret/passwords.txt"), "hunter2\n");
      await writeFile(join(root, "src/a.ts"), "hunter\n");
      await symlink("secret", join(root, "pub"));
      await symlink("src", join(root, "code"));
      // As the rule `*(secret)` would: the folder is denied, the files in it are not named by the rule.
      const call = setup(localFs({ root }), {}, (_exec, subject) => subject === "secret" ? "denied" : undefined);
      for (
        const [name, args] of [
          ["list_dir", { path: "pub" }],
          ["glob", { pattern: "**", path: "pub" }],
          ["grep", { pattern: "hunter", path: "pub" }],
        ] as const
      ) {
        assert.deepEqual(await call(name, args), {
          text: `pub leads to secret, which the permission rules do not let ${name} reach`,
          code: "DENIED",
        }, name);
      }
      // A link to a folder the rules let them reach is listed and searched.
      assert.equal((await call("list_dir", { path: "code" })).text, "a.ts");
      assert.equal((await call("glob", { pattern: "*", path: "code" })).text, "code/a.ts");
      assert.equal((await call("grep", { pattern: "hunter", path: "code" })).text, "code/a.ts:1: hunter");
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("takes paths relative to the root only: an absolute one would pass a rule written for the relative form", async () => {
    const call = setup(memoryFs({ files: { "secret/key.txt": "TOPSECRET\n" } }));
    const absolute = ["/secret/key.txt", "\\secret\\key.txt", "C:/secret/key.txt", "c:secret"];
    for (const path of absolute) {
      for (
        const [name, args] of [
          ["read_file", { path }],
          ["write_file", { path, content: "x" }],
          ["edit_file", { path, old_string: "TOP", new_string: "x" }],
          ["list_dir", { path }],
          ["glob", { pattern: "*", path }],
          ["grep", { pattern: "SECRET", path }],
        ] as const
      ) {
        const result = await call(name, args);
        assert.equal(result.code, "INVALID_ARGS", `${name} ${path}`);
        assert.ok(!result.text.includes("TOPSECRET"), `${name} ${path}`);
      }
    }
    assert.match((await call("read_file", { path: "secret/key.txt" })).text, /TOPSECRET/);
  });
});
