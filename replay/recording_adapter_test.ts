import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { HarnessError, type SessionEvent } from "../mod.ts";
import { scriptedAdapter, textResponse } from "../testing/mod.ts";
import { loadFixture } from "./fixture.ts";
import { normalizeLog } from "./normalize_log.ts";
import { openFixture } from "./open_fixture.ts";
import { recordingAdapter, writeFixture } from "./recording_adapter.ts";
import { conversation, runSession } from "./_test_support.ts";

async function withDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "dsh-record-"));
  try {
    await body(dir);
  } finally {
    await rm(dir, { recursive: true });
  }
}

describe("recordingAdapter()", () => {
  it("passes calls through and saves the session log as a fixture that replays", async () => {
    await withDir(async (dir) => {
      const inner = scriptedAdapter(conversation());
      const recorder = recordingAdapter(inner);
      assert.equal(recorder.provider, "scripted");
      const { session } = await runSession([recorder], { id: "rec" });
      assert.equal(inner.calls, 3);
      assert.deepEqual(recorder.sessionIds, ["rec"]);
      await recorder.save(join(dir, "fx"), session);
      const fixture = await loadFixture(join(dir, "fx"));
      assert.deepEqual(fixture.sessions.map((s) => [s.id, s.calls.length]), [["rec", 3]]);
      assert.deepEqual(fixture.sessions[0].events, session.events);
    });
  });

  it("refuses to save without every session that called the model", async () => {
    await withDir(async (dir) => {
      const recorder = recordingAdapter(scriptedAdapter(conversation()));
      await runSession([recorder], { id: "one" });
      const other = await runSession([scriptedAdapter(conversation())], { id: "two" });
      await assert.rejects(
        recorder.save(join(dir, "fx"), other.session),
        (error: unknown) =>
          HarnessError.isInstance(error, "RECORD_INCOMPLETE") && /sessions one called/.test(error.message),
      );
    });
  });

  it("writeFixture() replaces the sessions already in the directory", async () => {
    await withDir(async (dir) => {
      const first = await runSession([scriptedAdapter(conversation())], { id: "old" });
      await writeFixture(dir, [first.session]);
      const second = await runSession([scriptedAdapter(conversation())], { id: "new" });
      await writeFixture(dir, [second.session], { compression: "zstd" });
      const fixture = await loadFixture(dir);
      assert.deepEqual(fixture.sessions.map((s) => s.id), ["new"]);
    });
  });

  it("writeFixture() puts a .gitattributes with '* -text' in the fixture, and keeps one the directory has", async () => {
    await withDir(async (dir) => {
      const { session } = await runSession([scriptedAdapter(conversation())], { id: "s" });
      const fresh = join(dir, "fresh");
      await writeFixture(fresh, [session]);
      assert.match(await readFile(join(fresh, ".gitattributes"), "utf8"), /^\* -text$/m);
      await writeFile(join(fresh, ".gitattributes"), "* binary\n");
      await writeFixture(fresh, [session]);
      assert.equal(await readFile(join(fresh, ".gitattributes"), "utf8"), "* binary\n");
      assert.deepEqual((await loadFixture(fresh)).sessions.map((s) => s.id), ["s"]);
    });
  });

  it("writeFixture() checks everything before it replaces anything, and keeps the directory's other files", async () => {
    await withDir(async (dir) => {
      const fx = join(dir, "fx");
      const old = await runSession([scriptedAdapter(conversation())], { id: "old" });
      await writeFixture(fx, [old.session]);
      await writeFile(join(fx, "replay.override.json"), JSON.stringify([{ hang: true }]));
      const made = await runSession([scriptedAdapter(conversation())], { id: "new" });
      // An id no storage takes, a session given twice, a path that is a file: refused, the old fixture untouched.
      const { session: bad } = await runSession([scriptedAdapter(conversation())], { id: "a/b" });
      await assert.rejects(writeFixture(fx, [made.session, bad]), { code: "INVALID_SESSION_ID" });
      await assert.rejects(writeFixture(fx, [made.session, made.session]), { code: "INVALID_ARGS" });
      await writeFile(join(dir, "file.jsonl"), "");
      await assert.rejects(writeFixture(join(dir, "file.jsonl"), [made.session]), { code: "INVALID_ARGS" });
      assert.deepEqual((await loadFixture(fx)).sessions.map((s) => s.id), ["old"]);
      // A replacement that goes through keeps the sidecar, and leaves nothing beside the directory.
      await writeFixture(fx, [made.session]);
      const fixture = await loadFixture(fx);
      assert.deepEqual(fixture.sessions.map((s) => s.id), ["new"]);
      assert.deepEqual(fixture.overrides, [{ hang: true }]);
      assert.deepEqual((await readdir(dir)).sort(), ["file.jsonl", "fx"]);
      // A session folder whose log is damaged (so that loading refuses the fixture) is replaced by a new recording.
      await writeFile(join(fx, "new", "session.v1.jsonl"), "not a log\n");
      await writeFixture(fx, [made.session]);
      assert.deepEqual((await loadFixture(fx)).sessions.map((s) => s.id), ["new"]);
    });
  });

  it("writeFixture() refuses with FIXTURE_CONFLICT when another write made the missing directory meanwhile", async () => {
    await withDir(async (dir) => {
      const fx = join(dir, "fx");
      const one = await runSession([scriptedAdapter(conversation())], { id: "one" });
      const two = await runSession([scriptedAdapter(conversation())], { id: "two" });
      // Both see no directory; the first to finish puts its own in place, the second finds it there.
      const results = await Promise.allSettled([writeFixture(fx, [one.session]), writeFixture(fx, [two.session])]);
      const fulfilled = results.filter((r) => r.status === "fulfilled");
      const rejected = results.flatMap((r) => r.status === "rejected" ? [r.reason] : []);
      assert.equal(fulfilled.length, 1);
      assert.equal(rejected.length, 1);
      assert.ok(HarnessError.isInstance(rejected[0], "FIXTURE_CONFLICT"), String(rejected[0]));
      assert.equal(rejected[0].details?.path, fx);
      assert.match(rejected[0].message, /fx/);
      // The winner's fixture is whole, and no staging directory is left beside it.
      const ids = (await loadFixture(fx)).sessions.map((s) => s.id);
      assert.equal(ids.length, 1);
      assert.ok(ids[0] === "one" || ids[0] === "two");
      assert.deepEqual(await readdir(dir), ["fx"]);
      // Two replacements of the existing fixture at once: each succeeds or fails FIXTURE_CONFLICT, never with a raw
      // file system error, and the directory holds one run whole.
      const again = await Promise.allSettled([writeFixture(fx, [one.session]), writeFixture(fx, [two.session])]);
      for (const result of again) {
        if (result.status === "rejected") {
          assert.ok(HarnessError.isInstance(result.reason, "FIXTURE_CONFLICT"), String(result.reason));
        }
      }
      assert.equal((await loadFixture(fx)).sessions.length, 1);
      assert.deepEqual(await readdir(dir), ["fx"]);
    });
  });
});

describe("openFixture()", () => {
  const live = () => scriptedAdapter(conversation());

  it("records when the fixture is missing (record), then replays it", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "fx");
      const logs: SessionEvent[][] = [];
      for (const expected of ["record", "replay"] as const) {
        const fixture = await openFixture({ path, live, mode: "record", strict: true });
        assert.equal(fixture.mode, expected);
        assert.equal(fixture.replay === undefined, expected === "record");
        const { session, results } = await runSession(fixture.adapters);
        assert.deepEqual(results.map((r) => r.text), ["Shouted.", "Second answer."]);
        await fixture.finish(session);
        logs.push(session.events.slice());
      }
      assert.deepEqual(normalizeLog(logs[1]), normalizeLog(logs[0]));
    });
  });

  it("records into an empty folder (one a test's setup made, or a recording left unfinished)", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "fx");
      await mkdir(path);
      const fixture = await openFixture({ path, live, mode: "record" });
      assert.equal(fixture.mode, "record");
      const { session } = await runSession(fixture.adapters);
      await fixture.finish(session);
      assert.equal((await loadFixture(path)).sessions.length, 1);
      assert.deepEqual((await readdir(dir)).sort(), ["fx"]);
    });
  });

  it("re-records with refresh and fails in replay mode without a fixture", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "fx");
      await assert.rejects(
        openFixture({ path, live, mode: "replay" }),
        (e: unknown) =>
          HarnessError.isInstance(e, "FIXTURE_NOT_FOUND") && /record it .*DSH_REPLAY=record/.test(e.message),
      );
      const first = await openFixture({ path, live, mode: "refresh" });
      await first.finish((await runSession(first.adapters)).session);
      const changed = () => scriptedAdapter([textResponse("Changed."), textResponse("Also changed.")]);
      const refreshed = await openFixture({ path, live: changed, mode: "refresh" });
      assert.equal(refreshed.mode, "record");
      await refreshed.finish((await runSession(refreshed.adapters)).session);
      const replay = await openFixture({ path, live, mode: "replay" });
      const { results } = await runSession(replay.adapters);
      assert.deepEqual(results.map((r) => r.text), ["Changed.", "Also changed."]);
      await replay.finish([]);
    });
  });

  it("reads the mode from DSH_REPLAY and rejects unknown values", async () => {
    await withDir(async (dir) => {
      const saved = process.env.DSH_REPLAY;
      try {
        process.env.DSH_REPLAY = "record";
        const fixture = await openFixture({ path: join(dir, "fx"), live });
        assert.equal(fixture.mode, "record");
        process.env.DSH_REPLAY = "sometimes";
        await assert.rejects(
          openFixture({ path: join(dir, "fx"), live }),
          /DSH_REPLAY must be replay, record or refresh/,
        );
      } finally {
        if (saved === undefined) delete process.env.DSH_REPLAY;
        else process.env.DSH_REPLAY = saved;
      }
    });
  });

  it("replays strictly by default: a changed system prompt fails the run", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "fx");
      const recording = await openFixture({ path, live, mode: "record" });
      await recording.finish((await runSession(recording.adapters)).session);
      const replay = await openFixture({ path, live, mode: "replay" });
      const { results } = await runSession(replay.adapters, { system: "Be quiet." });
      assert.equal(results[0].reason.kind === "error" && results[0].reason.error.code, "REPLAY_DIVERGED");
      const lenient = await openFixture({ path, live, mode: "replay", strict: false });
      const again = await runSession(lenient.adapters, { system: "Be quiet." });
      assert.deepEqual(again.results.map((r) => r.reason.kind), ["completed", "completed"]);
    });
  });

  it("finish() in replay mode rejects when calls are left unplayed", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "fx");
      const recording = await openFixture({ path, live, mode: "record" });
      await recording.finish((await runSession(recording.adapters)).session);
      const replay = await openFixture({ path, live, mode: "replay" });
      await runSession(replay.adapters, { inputs: ["Shout hi"] });
      await assert.rejects(replay.finish([]), /played 2 of 3 calls/);
    });
  });
});
