// fileStorage() when the file system fails otherwise than with a full disk (too many open files, no permission, an
// I/O error): every operation rejects with the storage contract's codes, the file system's error as the cause.

import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionEvent } from "../session/session_events.ts";
import { createHarness } from "../harness.ts";
import { scriptedAdapter, textResponse } from "../../testing/scripted_adapter.ts";
import { fileStorage } from "./file_storage.ts";
import { fsOps } from "./_fs.ts";

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "dsh-file-faults-"));
  dirs.push(dir);
  return dir;
}

const emfile = () => Object.assign(new Error("EMFILE: too many open files"), { code: "EMFILE" });

/** Run `fn` while every file the storage opens, reads whole, lists or removes fails with EMFILE. */
async function withoutFileHandles<T>(fn: () => Promise<T>): Promise<T> {
  const { open, readFile, readdir, rm: remove } = fsOps;
  fsOps.open = () => Promise.reject(emfile());
  fsOps.readFile = () => Promise.reject(emfile());
  fsOps.readdir = () => Promise.reject(emfile());
  fsOps.rm = () => Promise.reject(emfile());
  try {
    return await fn();
  } finally {
    Object.assign(fsOps, { open, readFile, readdir, rm: remove });
  }
}

/** An assertion that `error` is `code`, for session `sessionId` when given, caused by the EMFILE. */
const failed = (code: string, sessionId?: string) => (error: unknown) => {
  assert.ok(HarnessError.isInstance(error, code), `${code} expected, got ${String(error)}`);
  assert.equal((error.cause as { code?: string } | undefined)?.code, "EMFILE");
  if (sessionId !== undefined) assert.equal(error.details?.sessionId, sessionId);
  return true;
};

const note = (seq: number) => ({ type: "todo/write", seq, time: 1, data: { todos: [] } }) as SessionEvent;

describe("fileStorage() when the file system fails (EMFILE)", () => {
  it("reads reject with SESSION_READ_FAILED and writes with SESSION_WRITE_FAILED, the error as the cause", async () => {
    const dir = await tempDir();
    const storage = fileStorage(dir);
    await storage.create({ id: "s", createdAt: 1 }, { events: [note(0)] });
    await withoutFileHandles(async () => {
      await assert.rejects(storage.load("s"), failed("SESSION_READ_FAILED", "s"));
      await assert.rejects(storage.inspect("s"), failed("SESSION_READ_FAILED", "s"));
      await assert.rejects(storage.stat("s"), failed("SESSION_READ_FAILED", "s"));
      await assert.rejects(storage.list(), failed("SESSION_READ_FAILED"));
      await assert.rejects(storage.append("s", [note(1)], { expectedSeq: 1 }), failed("SESSION_WRITE_FAILED", "s"));
      await assert.rejects(storage.create({ id: "t", createdAt: 1 }), failed("SESSION_WRITE_FAILED", "t"));
      await assert.rejects(storage.delete("s"), failed("SESSION_WRITE_FAILED", "s"));
    });
    // Nothing was written or removed: with file handles again, every operation goes on from where it was.
    assert.equal((await storage.stat("s"))?.nextSeq, 1);
    await storage.append("s", [note(1)], { expectedSeq: 1 });
    assert.equal((await storage.load("s")).events.length, 2);
  });

  it("a delete under the lease whose folder cannot be listed fails, and removes nothing", async () => {
    const storage = fileStorage(await tempDir());
    const writer = await storage.acquireWriter("s");
    await storage.create({ id: "s", createdAt: 1 }, { events: [note(0)], writer });
    // The log is found (one listing), then the folder cannot be listed to remove its files (no file handle left).
    const { readdir } = fsOps;
    let listings = 0;
    fsOps.readdir = (path) => ++listings === 1 ? readdir(path) : Promise.reject(emfile());
    try {
      await assert.rejects(storage.delete("s", { writer }), failed("SESSION_WRITE_FAILED", "s"));
    } finally {
      fsOps.readdir = readdir;
    }
    // It had answered true (deleted) with the log still there.
    assert.equal((await storage.stat("s"))?.nextSeq, 1);
    assert.equal(await storage.delete("s", { writer }), true);
    assert.equal(await storage.stat("s"), undefined);
    await writer.release();
  });

  it("a harness's last write that fails so rejects dispose() with SESSION_WRITE_FAILED, not a bare Error", async () => {
    const harness = await createHarness({
      adapters: [scriptedAdapter(textResponse("hi"))],
      model: { provider: "scripted", model: "scripted-model" },
      storage: fileStorage(await tempDir()),
    });
    const agent = await harness.createAgent({ id: "a" });
    await agent.run("hello");
    agent.inject("a note"); // written at disposal
    await withoutFileHandles(async () => {
      await assert.rejects(harness.dispose(), failed("SESSION_WRITE_FAILED", "a"));
    });
  });
});
