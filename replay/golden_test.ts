import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { defineTool, HarnessError } from "../mod.ts";
import { assertGolden, assertGoldenTranscript, normalizeText } from "./golden.ts";
import { unifiedDiff } from "./_line_diff.ts";
import { recordConversation } from "./_test_support.ts";
import { normalizeLog } from "./normalize_log.ts";
import type { SessionEvent } from "../sdk/session/mod.ts";

async function withDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "dsh-golden-"));
  try {
    await body(dir);
  } finally {
    await rm(dir, { recursive: true });
  }
}

describe("assertGolden()", () => {
  it("writes the file with update, then matches it", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "nested", "a.golden.md");
      assert.equal(await assertGolden("one\ntwo\n", path, { update: true }), "updated");
      assert.equal(await readFile(path, "utf8"), "one\ntwo\n");
      assert.equal(await assertGolden("one\ntwo\n", path, { update: false }), "matched");
    });
  });

  it("fails with a unified diff naming the golden file on mismatch", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "a.golden.md");
      const before = ["a", "b", "c", "d", "e", "f", "g", "h"].join("\n") + "\n";
      await assertGolden(before, path, { update: true });
      const after = before.replace("e\n", "E!\n");
      await assert.rejects(assertGolden(after, path, { update: false }), (error: unknown) => {
        assert.ok(HarnessError.isInstance(error, "GOLDEN_MISMATCH"));
        assert.equal(
          error.message,
          `Output differs from golden file ${path}; review the diff and run with DSH_GOLDEN=update to accept it\n` +
            `--- ${path} (golden)\n+++ actual\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E!\n f\n g\n h\n`,
        );
        return true;
      });
      assert.equal(await readFile(path, "utf8"), before, "a mismatch leaves the golden file alone");
    });
  });

  it("rewrites the golden file when DSH_GOLDEN=update is set, and compares otherwise", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "env.golden.md");
      const saved = process.env.DSH_GOLDEN;
      try {
        process.env.DSH_GOLDEN = "update";
        assert.equal(await assertGolden("old\n", path), "updated");
        assert.equal(await assertGolden("new\n", path), "updated");
        assert.equal(await readFile(path, "utf8"), "new\n");
        delete process.env.DSH_GOLDEN;
        await assert.rejects(assertGolden("old\n", path), /-new\n\+old\n/);
      } finally {
        if (saved === undefined) delete process.env.DSH_GOLDEN;
        else process.env.DSH_GOLDEN = saved;
      }
    });
  });

  it("fails when the golden file is missing, telling how to create it; one that cannot be read is not missing", async () => {
    await withDir(async (dir) => {
      await assert.rejects(
        assertGolden("x", join(dir, "missing.golden.md"), { update: false }),
        (error: unknown) => HarnessError.isInstance(error, "GOLDEN_MISSING") && /DSH_GOLDEN=update/.test(error.message),
      );
      await assert.rejects(
        assertGolden("x", dir, { update: false }), // a directory
        (error: unknown) => HarnessError.isInstance(error, "GOLDEN_UNREADABLE"),
      );
    });
  });

  it("normalises UUIDs and timestamps before comparing, unless told not to", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "ids.golden.md");
      await assertGolden("id 3f0c6d6e-8a9b-4c1d-9e2f-0a1b2c3d4e5f\n", path, { update: true });
      assert.equal(await readFile(path, "utf8"), "id <uuid-1>\n");
      assert.equal(await assertGolden("id 11111111-2222-4333-8444-555555555555\n", path, { update: false }), "matched");
      await assert.rejects(
        assertGolden("id 11111111-2222-4333-8444-555555555555\n", path, { update: false, normalize: false }),
        /GOLDEN_MISMATCH|differs/,
      );
    });
  });

  it("renders a session as a transcript for assertGoldenTranscript()", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "s.golden.md");
      const events = await recordConversation();
      await assertGoldenTranscript(events, path, { update: true, title: "Shout" });
      const text = await readFile(path, "utf8");
      assert.match(text, /^# Shout\n\n## Turn 1\n\n\*\*User\*\*\n\nShout hi\n/);
      assert.match(text, /\*\*Tool result\*\* `shout` \(`call-1`\)\n\n```\nHI!\n```/);
      assert.equal(await assertGoldenTranscript(events, path, { update: false, title: "Shout" }), "matched");
    });
  });
});

describe("normalizeText()", () => {
  it("numbers distinct UUIDs by first appearance, case-insensitively, and hides ISO times", () => {
    const a = "3f0c6d6e-8a9b-4c1d-9e2f-0a1b2c3d4e5f";
    const b = "11111111-2222-4333-8444-555555555555";
    assert.equal(
      normalizeText(`${a} ${b} ${a.toUpperCase()} at 2026-01-02T03:04:05Z\r\n`),
      "<uuid-1> <uuid-2> <uuid-1> at <time>\n",
    );
  });
});

describe("golden texts across runs", () => {
  it("normalizeLog tokenises generated session ids: a child's <parent>.<callId> keeps its call id", () => {
    const run = (own: string): SessionEvent[] =>
      [
        {
          type: "subagent/spawned",
          seq: 0,
          time: 0,
          data: { turn: 1, step: 1, callId: "call_1", session: `${own}.call_1`, mode: "in-process", agent: "w" },
        },
        {
          type: "tool/result",
          seq: 1,
          time: 0,
          data: {
            turn: 1,
            step: 1,
            message: {
              id: `m-${own}`,
              role: "user",
              content: [{ type: "tool-result", toolCallId: "call_1", content: [{ type: "text", text: "ok" }] }],
              source: { kind: "tool", callId: "call_1" },
            },
            meta: { childSession: `${own}.call_1` },
          },
          surfaceOp: "append",
        },
      ] as SessionEvent[];
    const [spawned, result] = normalizeLog(run("86be9bd5"));
    assert.deepEqual(normalizeLog(run("c011cc82")), [spawned, result]);
    assert.equal(spawned.type === "subagent/spawned" && spawned.data.session, "<id-1>.call_1");
    assert.deepEqual(result.type === "tool/result" && result.data.meta, { childSession: "<id-1>.call_1" });
  });

  it("a transcript's retry delay (jittered) is normalised; so is a retry's delayMs in normalizeLog", () => {
    const line = (ms: number) => `_Attempt 1 failed (SERVER: Down); retrying after ${ms} ms_\n`;
    assert.equal(normalizeText(line(472)), normalizeText(line(521)));
    assert.equal(normalizeText(line(472)), "_Attempt 1 failed (SERVER: Down); retrying after <delay> ms_\n");
    const retry = (delayMs: number) =>
      ({
        type: "llm/retry",
        seq: 0,
        time: 5,
        data: { turn: 1, step: 1, attempt: 1, delayMs, failure: { code: "SERVER", message: "Down" } },
      }) as SessionEvent;
    assert.deepEqual(normalizeLog([retry(472)]), normalizeLog([retry(521)]));
  });

  it("a text with a lone surrogate (an answer cut off inside an emoji) matches the file written from it", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "cut.golden.md");
      for (const normalize of [true, false]) {
        const cut = "Done \ud83d\n\udc4d twice \ud83d\udc4d\n";
        assert.equal(await assertGolden(cut, path, { update: true, normalize }), "updated");
        assert.equal(await readFile(path, "utf8"), "Done \ufffd\n\ufffd twice \ud83d\udc4d\n");
        assert.equal(await assertGolden(cut, path, { update: false, normalize }), "matched");
      }
    });
  });

  it("without normalisation, a text with CRLF line endings matches the file written from it", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "crlf.golden.md");
      await assertGolden("one\r\ntwo\r\n", path, { update: true, normalize: false });
      assert.equal(await assertGolden("one\r\ntwo\r\n", path, { update: false, normalize: false }), "matched");
    });
  });
});

describe("unifiedDiff()", () => {
  it("is empty for equal texts and reports insertions, deletions and a missing final newline", () => {
    assert.equal(unifiedDiff("a\n", "a\n"), "");
    assert.equal(unifiedDiff("a\nb\n", "a\nx\nb\n"), "--- expected\n+++ actual\n@@ -1,2 +1,3 @@\n a\n+x\n b\n");
    assert.equal(unifiedDiff("a\nb\n", "b\n"), "--- expected\n+++ actual\n@@ -1,2 +1,1 @@\n-a\n b\n");
    assert.equal(unifiedDiff("", "new\n"), "--- expected\n+++ actual\n@@ -0,0 +1,1 @@\n+new\n");
    assert.equal(
      unifiedDiff("a", "a\n"),
      "--- expected\n+++ actual\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+a\n",
    );
  });

  it("splits distant changes into separate hunks", () => {
    const before = Array.from({ length: 20 }, (_, i) => `line ${i}`).join("\n") + "\n";
    const after = before.replace("line 2\n", "LINE 2\n").replace("line 17\n", "LINE 17\n");
    const hunks = unifiedDiff(before, after).split("\n").filter((l) => l.startsWith("@@"));
    assert.deepEqual(hunks, ["@@ -1,6 +1,6 @@", "@@ -15,6 +15,6 @@"]);
  });

  it("texts too far apart for a shortest diff get one hunk from the first change to the last, still a correct diff", () => {
    // 40 blocks of 10 common lines then 40 changed ones: 3,200 edits, past the search's limit.
    const block = (side: string, n: number) => [
      ...Array.from({ length: 10 }, (_, i) => `same ${n}.${i}`),
      ...Array.from({ length: 40 }, (_, i) => `${side} ${n}.${i}`),
    ];
    const expected = Array.from({ length: 40 }, (_, n) => block("old", n)).flat().join("\n") + "\n";
    const actual = Array.from({ length: 40 }, (_, n) => block("new", n)).flat().join("\n");
    const diff = unifiedDiff(expected, actual).split("\n");
    assert.deepEqual(diff.filter((l) => l.startsWith("@@")), ["@@ -8,1993 +8,1993 @@"]);
    // Applying the hunk to the expected text gives the actual one.
    const body = diff.slice(3, -1).filter((l) => !l.startsWith("\\"));
    const kept = expected.split("\n").slice(0, 7);
    const rebuilt = [...kept, ...body.filter((l) => !l.startsWith("-")).map((l) => l.slice(1))];
    assert.equal(rebuilt.join("\n"), actual);
    assert.equal(diff.at(-2), "\\ No newline at end of file");
    // Small changes are still diffed line by line.
    assert.equal(unifiedDiff("a\nb\n", "a\nx\nb\n"), "--- expected\n+++ actual\n@@ -1,2 +1,3 @@\n a\n+x\n b\n");
  });

  it("a changed system prompt or tool schema shows in the golden diff, without strict replay", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "conversation.golden.md");
      await assertGoldenTranscript(await recordConversation(), path, { update: true });
      const golden = await readFile(path, "utf8");
      assert.equal(golden.split("Be loud.").length, 2, "the system prompt shows once, on the first header");
      assert.equal(golden.split('"description": "Shout a text"').length, 2, "the tool schemas show once");

      const quiet = assertGoldenTranscript(await recordConversation({ system: "Be quiet." }), path, { update: false });
      await assert.rejects(quiet, (e: unknown) => {
        assert.ok(HarnessError.isInstance(e, "GOLDEN_MISMATCH"));
        assert.match(e.message, /\n-Be loud\.\n\+Be quiet\.\n/);
        return true;
      });

      const louder = defineTool({
        name: "shout",
        description: "Shout a text loudly",
        parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
        output: { schema: { type: "string" }, render: (_args, value) => String(value) },
        execute: (args) => `${String((args as { text: string }).text).toUpperCase()}!`,
      });
      const retooled = assertGoldenTranscript(await recordConversation({ tools: [louder] }), path, { update: false });
      await assert.rejects(retooled, (e: unknown) => {
        assert.ok(HarnessError.isInstance(e, "GOLDEN_MISMATCH"));
        assert.match(e.message, /\n-\s*"description": "Shout a text",\n\+\s*"description": "Shout a text loudly",\n/);
        return true;
      });
    });
  });
});
