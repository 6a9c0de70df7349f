import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, truncate, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionEvent } from "../session/session_events.ts";
import { fileStorage, type FileStorageOptions } from "./file_storage.ts";
import { memoryStorage } from "./memory_storage.ts";
import type { SessionStorage } from "./session_storage.ts";
import { fsOps, pidNamespace } from "./_fs.ts";
import { lockTimingForTests } from "./_writer_lease.ts";
import { frameEnd, zstd } from "./_zstd.ts";
import { storageContract } from "./_test_storage_contract.ts";
import { deleteTreeSuite } from "./_test_delete_tree.ts";
import { LogBuilder } from "./_test_log.ts";
import { loadUnderLease } from "./_test_lease.ts";
import { openLine, sealLine } from "./_record_checksum.ts";
import { cachedLogLimitForTests, cachedLogStates, openFileStorage } from "./_file_session_storage.ts";

/** The record of a stored line (its checksum checked). */
function recordOf(line: string) {
  const { json, verified } = openLine(line);
  assert.equal(verified, true, `the line checks out: ${line}`);
  return JSON.parse(json);
}

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "dsh-file-storage-"));
  dirs.push(dir);
  return dir;
}

const code = (c: string) => (error: unknown) => HarnessError.isInstance(error, c);

for (const compression of ["none", "zstd"] as const) {
  storageContract({
    name: `fileStorage(dir, { compression: "${compression}" })`,
    make: async () => {
      const dir = await tempDir();
      return { storage: fileStorage(dir, { compression }), after: () => rm(dir, { recursive: true, force: true }) };
    },
  });
}
deleteTreeSuite({
  name: "fileStorage(dir)",
  make: async () => {
    const dir = await tempDir();
    return { storage: fileStorage(dir), after: () => rm(dir, { recursive: true, force: true }) };
  },
});

function realisticLog(turns: number): SessionEvent[] {
  const log = new LogBuilder();
  for (let turn = 1; turn <= turns; turn++) log.completeTurn(turn);
  return log.events;
}

/** A session written in batches, plus where its file is. */
async function written(options: FileStorageOptions, events: SessionEvent[], batch = 7) {
  const dir = await tempDir();
  const storage = fileStorage(dir, options);
  await storage.create({ id: "s", createdAt: 5, incarnation: "i5" });
  for (let i = 0; i < events.length; i += batch) {
    await storage.append("s", events.slice(i, i + batch), { expectedSeq: i });
  }
  const file = join(dir, "s", options.compression === "zstd" ? "session.v1.jsonl.zstd" : "session.v1.jsonl");
  return { dir, storage, file };
}

async function plainLines(file: string): Promise<string[]> {
  return (await readFile(file, "utf8")).split("\n");
}

describe("fileStorage() loads its implementation on first use", () => {
  it("refuses bad arguments synchronously before it is loaded, and runs the first calls in call order", async () => {
    const dir = await tempDir();
    try {
      const storage = fileStorage(dir);
      assert.throws(() => storage.create({ id: "a/b" }), code("INVALID_SESSION_ID"));
      assert.throws(() => storage.create({ id: "s", createdAt: -1 }), code("INVALID_ARGS"));
      assert.throws(() => storage.append("s", [], { expectedSeq: -1 }), code("INVALID_ARGS"));
      assert.throws(() => storage.load(".."), code("INVALID_SESSION_ID"));
      // Upper case and non-ASCII bytes take three characters each in the directory name, which takes 255 bytes.
      // A lone surrogate is written U+FFFD by drivers and file names: "a\uD800" and "a\uDC00" would share one log.
      for (const id of ["A".repeat(86), "é".repeat(43), "a\uD800", "a\uDC00", "\uDC00\uD800"]) {
        assert.throws(() => storage.create({ id }), code("INVALID_SESSION_ID"), id);
        assert.throws(() => memoryStorage().create({ id }), code("INVALID_SESSION_ID"), id);
      }
      // Issued in one tick while the implementation loads: they must run in this order.
      const event: SessionEvent = { type: "turn/start", seq: 0, time: 1, data: { turn: 1 } };
      const created = storage.create({ id: "s", createdAt: 1 });
      const appended = storage.append("s", [event], { expectedSeq: 0 });
      const loaded = storage.inspect("s");
      assert.equal((await created).id, "s");
      assert.deepEqual(await appended, { nextSeq: 1 });
      assert.deepEqual((await loaded).events.slice(0, 1), [event]);
      // Loaded: the same checks, now made by the implementation.
      assert.throws(() => storage.stat("a/b"), code("INVALID_SESSION_ID"));
      assert.throws(() => storage.stat("A".repeat(100)), code("INVALID_SESSION_ID"));
      for (const id of ["A".repeat(85), "a".repeat(128), "é".repeat(42), "a😀"]) {
        assert.equal((await storage.create({ id })).id, id);
        assert.equal((await storage.load(id)).header.id, id);
      }
      assert.equal(storage.kind, "file");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("fileStorage() format", () => {
  it("writes a header line, event lines and packed chunk rows", async () => {
    const events = realisticLog(2);
    const { file, storage } = await written({}, events, 1000);
    const lines = await plainLines(file);
    assert.deepEqual(recordOf(lines[0]), { type: "session", version: 1, id: "s", createdAt: 5, incarnation: "i5" });
    assert.equal(lines[lines.length - 1], "");
    const types = lines.slice(1, -1).map((line) => recordOf(line).type);
    assert.ok(
      types.includes("text-chunks") && types.includes("reasoning-chunks") && types.includes("tool-call-chunks"),
    );
    assert.ok(types.length < events.length);
    assert.deepEqual((await storage.load("s")).events, events);
  });

  it("round-trips through zstd frames, one per batch, that decompress to the plain lines", async () => {
    const events = realisticLog(3);
    const zipped = await written({ compression: "zstd" }, events, 10);
    const plain = await written({}, events, 10);
    assert.deepEqual((await zipped.storage.load("s")).events, events);
    const bytes = new Uint8Array(await readFile(zipped.file));
    const z = await zstd();
    // Frames are independent: decompressing each in turn gives the plain file.
    let text = "";
    let frames = 0;
    for (let at = 0; at < bytes.length; frames++) {
      const end = frameEnd(bytes, at);
      assert.notEqual(end, -1);
      text += new TextDecoder().decode(z.decompress(bytes.subarray(at, end)));
      at = end;
    }
    assert.equal(frames, 1 + Math.ceil(events.length / 10));
    assert.equal(text, await readFile(plain.file, "utf8"));
    assert.ok(bytes.length < (await stat(plain.file)).size / 2);
  });

  it("stores without rows when packChunks is false, and reads either", async () => {
    const events = realisticLog(1);
    const { file, dir } = await written({ packChunks: false }, events);
    const lines = await plainLines(file);
    assert.equal(lines.length, events.length + 2);
    assert.deepEqual((await fileStorage(dir).load("s")).events, events);
  });

  it("an existing session keeps its encoding whatever the options", async () => {
    const events = realisticLog(1);
    const { dir } = await written({ compression: "zstd" }, events);
    const plainOptions = fileStorage(dir);
    assert.deepEqual((await plainOptions.load("s")).events, events);
    await plainOptions.append("s", [{ type: "todo/write", seq: events.length, time: 1, data: { todos: [] } }], {
      expectedSeq: events.length,
    });
    assert.deepEqual(await readdir(join(dir, "s")), ["session.v1.jsonl.zstd"]);
    assert.equal((await fileStorage(dir, { compression: "zstd" }).load("s")).events.length, events.length + 1);
  });

  it("escapes ids into safe directory names", async () => {
    const dir = await tempDir();
    const storage = fileStorage(dir);
    for (const id of ["Abc", "a:b", "CON", ".x", "日本"]) await storage.create({ id });
    assert.deepEqual((await readdir(dir)).sort(), ["%2Ex", "%41bc", "%43%4F%4E", "%E6%97%A5%E6%9C%AC", "a%3Ab"]);
  });

  it("leaves no temp files after publishing", async () => {
    const { dir } = await written({}, realisticLog(1));
    assert.deepEqual(await readdir(join(dir, "s")), ["session.v1.jsonl"]);
  });
});

describe("fileStorage() validates every record on load", () => {
  for (const where of ["middle", "end"] as const) {
    it(`a malformed record (${where}) is SESSION_CORRUPT naming file and line; the file is unchanged`, async () => {
      const events = realisticLog(1);
      const { storage, file, dir } = await written({ compression: "none" }, events, 5);
      const lines = await plainLines(file);
      // Line 1 is the header; event seq n is on line n + 2 (this log has no packed rows at its ends).
      const target = where === "middle" ? 2 : lines.length - 2;
      const record = recordOf(lines[target]);
      // Sealed with a good checksum: only the append validator can tell it is wrong.
      lines[target] = sealLine(
        JSON.stringify({ type: "assistant/message", seq: record.seq, time: record.time, data: {} }),
      );
      await writeFile(file, lines.join("\n"));
      const before = await readFile(file);
      for (
        const read of [
          () => fileStorage(dir).load("s"),
          () => storage.inspect("s"),
        ]
      ) {
        await assert.rejects(read(), (error: unknown) => {
          assert.ok(HarnessError.isInstance(error, "SESSION_CORRUPT"), String(error));
          assert.equal(error.details?.file, file);
          assert.equal(error.details?.line, target + 1);
          return true;
        });
      }
      assert.deepEqual(await readFile(file), before, "a failed load changes nothing");
    });
  }
});

describe("fileStorage() checksums", () => {
  it("keeps a last record that is complete and checks out but lost its newline; load writes the newline", async () => {
    const events = realisticLog(1);
    const { storage, file, dir } = await written({ compression: "none" }, events, 5);
    const bytes = await readFile(file);
    await writeFile(file, bytes.subarray(0, bytes.length - 1));
    assert.deepEqual((await storage.inspect("s")).events, events);
    // stat() counts that record as load and inspect do; the tail awaits load's repair, so appends wait for it.
    const before = await fileStorage(dir).stat("s");
    assert.deepEqual([before?.nextSeq, before?.torn], [events.length, true]);
    const early = { type: "todo/write", seq: events.length, time: 1, data: { todos: [] } } as SessionEvent;
    await assert.rejects(
      fileStorage(dir).append("s", [early], { expectedSeq: events.length }),
      code("SESSION_REPAIR_REQUIRED"),
    );
    const loaded = await loadUnderLease(fileStorage(dir), "s");
    assert.deepEqual(loaded.events, events);
    assert.equal(loaded.repair.repaired, true);
    assert.deepEqual(await readFile(file), bytes, "the newline is back");
    const after = await fileStorage(dir).stat("s");
    assert.deepEqual([after?.nextSeq, after?.torn], [events.length, false]);
    const next = { type: "todo/write", seq: events.length, time: 1, data: { todos: [] } } as SessionEvent;
    const again = fileStorage(dir);
    await again.append("s", [next], { expectedSeq: events.length });
    assert.deepEqual((await fileStorage(dir).load("s")).events, [...events, next]);
  });

  it("a copy to another storage from a crashed log loads it under the source's lease (the SessionStorage example)", async () => {
    // The copy of the `SessionStorage` JSDoc example.
    async function copySession(from: SessionStorage, to: SessionStorage, id: string): Promise<number> {
      await using source = await from.acquireWriter(id);
      const { header, events } = await from.load(id, { writer: source });
      await using writer = await to.acquireWriter(id);
      await to.create(header, { writer });
      const { nextSeq } = await to.append(id, events, { expectedSeq: 0, writer });
      return nextSeq;
    }
    const log = new LogBuilder(realisticLog(1));
    log.push({ type: "turn/start", data: { turn: 2 } });
    const { file, dir } = await written({ compression: "none" }, log.events, 5);
    await truncate(file, (await stat(file)).size - 3); // the crash cut the last record short
    const from = fileStorage(dir);
    await assert.rejects(from.load("s"), code("SESSION_REPAIR_REQUIRED"), "a load without the lease is refused");
    const to = memoryStorage();
    const copied = await copySession(from, to, "s");
    const repaired = await from.load("s");
    assert.equal(copied, repaired.events.length);
    const copy = await to.load("s");
    assert.deepEqual([copy.header, copy.events], [repaired.header, repaired.events]);
    assert.equal(copy.events.at(-1)!.type, "turn/end", "the repair closed the open turn, and the copy has it");
  });

  it("reads a log written before checksums (lines without them) as before", async () => {
    const events = realisticLog(1);
    const { file, dir } = await written({ compression: "none" }, events, 5);
    const legacy = (await plainLines(file)).map((line) => line.replace(/\t[0-9a-f]{8}$/, "")).join("\n");
    await writeFile(file, legacy);
    assert.deepEqual((await fileStorage(dir).load("s")).events, events);
  });

  it("a flipped byte inside a JSON string is caught by the line's checksum", async () => {
    const events = realisticLog(2);
    const { file, dir } = await written({ compression: "none" }, events, 5);
    const lines = await plainLines(file);
    const at = lines[3].indexOf('"text"');
    lines[3] = lines[3].slice(0, at + 9) + "X" + lines[3].slice(at + 10);
    assert.equal(openLine(lines[3]).verified, false);
    await writeFile(file, lines.join("\n"));
    await assert.rejects(fileStorage(dir).load("s"), (error: unknown) => {
      assert.ok(HarnessError.isInstance(error, "SESSION_CORRUPT"));
      assert.equal(error.details?.line, 4);
      assert.match(error.message, /checksum/);
      return true;
    });
  });
});

describe("fileStorage() crash repair", () => {
  for (const compression of ["none", "zstd"] as const) {
    it(`truncates a torn tail and closes the open turn (${compression})`, async () => {
      const log = new LogBuilder(realisticLog(1));
      log.push({ type: "turn/start", data: { turn: 2 } });
      log.push({ type: "step/start", data: { turn: 2, step: 1 } });
      const { storage, file, dir } = await written({ compression }, log.events, 5);
      const committed = (await stat(file)).size;
      const next = { type: "todo/write", seq: log.events.length, time: 1, data: { todos: [] } } as SessionEvent;
      // The next batch was cut short by the crash.
      const other = fileStorage(dir, { compression });
      await other.append("s", [next, { ...next, seq: next.seq + 1 }], { expectedSeq: next.seq });
      const full = (await stat(file)).size;
      await truncate(file, committed + Math.floor((full - committed) / 2) + 1);

      const stat1 = await storage.stat("s");
      assert.equal(stat1?.torn, true);
      await assert.rejects(
        storage.append("s", [next], { expectedSeq: next.seq }),
        code("SESSION_REPAIR_REQUIRED"),
      );
      const inspected = await storage.inspect("s");
      assert.ok(inspected.repair.truncatedBytes > 0);
      assert.equal((await stat(file)).size > committed, true, "inspect writes nothing");
      // Only the lease holder repairs: a load without it is refused, and writes nothing either.
      const tornSize = (await stat(file)).size;
      await assert.rejects(storage.load("s"), code("SESSION_REPAIR_REQUIRED"));
      assert.equal((await stat(file)).size, tornSize, "a load without the lease writes nothing");

      const loaded = await loadUnderLease(storage, "s");
      const kept = loaded.events.length - loaded.repair.syntheticEvents.length;
      // Plain files keep the complete first line of the torn batch; a torn zstd frame goes whole.
      assert.equal(kept, compression === "none" ? log.events.length + 1 : log.events.length);
      assert.deepEqual(loaded.events.slice(0, log.events.length), log.events);
      assert.deepEqual(loaded.repair.syntheticEvents.map((e) => e.type), ["step/end", "turn/end"]);
      assert.equal(loaded.repair.tornTail?.file, file);
      assert.ok((loaded.repair.tornTail?.line ?? 0) > 1);
      if (compression === "zstd") assert.equal(loaded.repair.tornTail?.offset, committed);
      else assert.ok((loaded.repair.tornTail?.offset ?? 0) > committed);
      assert.equal(loaded.repair.committed, true);
      assert.equal((await storage.stat("s"))?.torn, false);

      const reread = await fileStorage(dir).load("s");
      assert.equal(reread.repair.repaired, false);
      assert.deepEqual(reread.events, loaded.events);
      await storage.append("s", [{ ...next, seq: loaded.events.length }], { expectedSeq: loaded.events.length });
    });

    it(`refuses a defect followed by committed records as corruption, naming file and line (${compression})`, async () => {
      const events = realisticLog(2);
      const { storage, file } = await written({ compression }, events, 5);
      const bytes = new Uint8Array(await readFile(file));
      if (compression === "none") {
        const lines = await plainLines(file);
        lines[3] = lines[3].slice(0, 10);
        await writeFile(file, lines.join("\n"));
      } else {
        bytes[Math.floor(bytes.length / 2)] ^= 0xff;
        bytes[Math.floor(bytes.length / 2) + 1] ^= 0xff;
        await writeFile(file, bytes);
      }
      const check = (error: unknown) => {
        assert.ok(HarnessError.isInstance(error, "SESSION_CORRUPT"), String(error));
        assert.equal(error.details?.file, file);
        assert.equal(typeof error.details?.line, "number");
        assert.match(error.message, /corrupt at line \d+/);
        if (compression === "none") assert.equal(error.details?.line, 4);
        return true;
      };
      await assert.rejects(storage.load("s"), check);
      await assert.rejects(storage.inspect("s"), check);
    });

    it(`refuses a newer format version before any other check (${compression})`, async () => {
      const dir = await tempDir();
      await fileStorage(dir).create({ id: "s" });
      const header = JSON.stringify({ type: "session", version: 2, id: "s", createdAt: 0, shape: "new" });
      const body = `${header}\nnot json at all\n{"type":"future/event","seq":0}\n{"torn`;
      const z = await zstd();
      if (compression === "none") await writeFile(join(dir, "s", "session.v1.jsonl"), body);
      else {
        await rm(join(dir, "s", "session.v1.jsonl"));
        const enc = (text: string) => z.compress(new TextEncoder().encode(text), 3);
        const frames = [enc(header + "\n"), enc("garbage\n")];
        await writeFile(join(dir, "s", "session.v1.jsonl.zstd"), new Uint8Array([...frames[0], ...frames[1], 1, 2]));
      }
      await assert.rejects(fileStorage(dir).load("s"), (error: unknown) => {
        assert.ok(HarnessError.isInstance(error, "SESSION_FORMAT_UNSUPPORTED"));
        assert.equal(error.details?.version, 2);
        return true;
      });
      assert.deepEqual(await fileStorage(dir).list(), []);
    });

    it(`persists a plugin event type without registration; a strict reader refuses it unless ignorable (${compression})`, async () => {
      const events = realisticLog(1);
      const dir = await tempDir();
      const storage = fileStorage(dir, { compression });
      const note = { type: "app/note", seq: events.length, time: 1, data: {} } as unknown as SessionEvent;
      const aside = {
        type: "app/aside",
        seq: events.length + 1,
        time: 1,
        data: {},
        ignorable: true,
      } as unknown as SessionEvent;
      await storage.create({ id: "s" }, { events: [...events, note] });
      await storage.append("s", [aside], { expectedSeq: events.length + 1 });
      assert.deepEqual((await fileStorage(dir).load("s")).events.slice(-2), [note, aside]);
      // A strict reader that knows neither type refuses the required one, naming the line.
      await assert.rejects(fileStorage(dir, { eventTypes: [] }).load("s"), (error: unknown) => {
        assert.ok(HarnessError.isInstance(error, "SESSION_UNKNOWN_EVENT_TYPE"));
        assert.equal(error.details?.type, "app/note");
        assert.equal(typeof error.details?.line, "number");
        return true;
      });
      // A strict reader that knows app/note loads both, app/aside because it is ignorable.
      const loaded = await fileStorage(dir, { eventTypes: ["app/note"] }).load("s");
      assert.deepEqual(loaded.events.slice(-2), [note, aside]);
    });
  }

  it("reads a batch that an encoder split across frames, and cuts back a torn split batch", async () => {
    const dir = await tempDir();
    const events = realisticLog(1);
    const storage = fileStorage(dir, { compression: "zstd" });
    await storage.create({ id: "s", createdAt: 0 });
    const file = join(dir, "s", "session.v1.jsonl.zstd");
    const z = await zstd();
    const enc = (text: string) => z.compress(new TextEncoder().encode(text), 3);
    const header = new Uint8Array(await readFile(file));
    const lines = events.map((e) => JSON.stringify(e) + "\n").join("");
    const half = Math.floor(lines.length / 2) + 3;
    const parts = [header, enc(lines.slice(0, half)), enc(""), enc(lines.slice(half))];
    await writeFile(file, new Uint8Array(parts.flatMap((p) => [...p])));
    const loaded = await fileStorage(dir).load("s");
    assert.deepEqual(loaded.events, events);
    assert.equal(loaded.repair.repaired, false);

    await writeFile(file, new Uint8Array([...header, ...parts[1]]));
    const torn = await loadUnderLease(fileStorage(dir), "s");
    assert.equal(torn.repair.tornTail?.offset, header.length);
    assert.deepEqual(torn.events, []);
  });

  it("refuses a repeated record followed by others (a seq defect) as corruption", async () => {
    const events = realisticLog(1);
    const { storage, file } = await written({ packChunks: false }, events, 100);
    const lines = await plainLines(file);
    lines.splice(4, 0, lines[3]);
    await writeFile(file, lines.join("\n"));
    await assert.rejects(storage.load("s"), (error: unknown) => {
      assert.ok(HarnessError.isInstance(error, "SESSION_CORRUPT"));
      assert.equal(error.details?.line, 5);
      assert.match(error.message, /has seq 2, not 3/);
      return true;
    });
  });

  it("reads a header from before incarnation tokens, and refuses a malformed incarnation", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "s"), { recursive: true });
    const file = join(dir, "s", "session.v1.jsonl");
    await writeFile(file, '{"type":"session","version":1,"id":"s","createdAt":36}\n');
    const loaded = await fileStorage(dir).load("s");
    assert.deepEqual(loaded.header, { version: 1, id: "s", createdAt: 36 });
    await writeFile(file, '{"type":"session","version":1,"id":"s","createdAt":36,"incarnation":"a:b"}\n');
    await assert.rejects(fileStorage(dir).load("s"), code("SESSION_CORRUPT"));
  });

  it("refuses a header naming another session", async () => {
    const dir = await tempDir();
    await fileStorage(dir).create({ id: "s" });
    await writeFile(join(dir, "s", "session.v1.jsonl"), '{"type":"session","version":1,"id":"t","createdAt":0}\n');
    await assert.rejects(fileStorage(dir).load("s"), code("SESSION_CORRUPT"));
  });
});

describe("fileStorage() durability", () => {
  it("rolls a failed write back to the previous length", async () => {
    const events = realisticLog(1);
    const { storage, file } = await written({}, events);
    const before = await readFile(file);
    const open = fsOps.open;
    fsOps.open = async (path, flags) => {
      const handle = await open(path, flags);
      return {
        ...handle,
        read: handle.read.bind(handle),
        truncate: handle.truncate.bind(handle),
        sync: handle.sync.bind(handle),
        stat: handle.stat.bind(handle),
        close: handle.close.bind(handle),
        write: async (buffer, offset, _length, position) => {
          await handle.write(buffer, offset, 5, position);
          throw Object.assign(new Error("no space left on device"), { code: "ENOSPC" });
        },
      };
    };
    const next = { type: "todo/write", seq: events.length, time: 1, data: { todos: [] } } as SessionEvent;
    try {
      await assert.rejects(storage.append("s", [next], { expectedSeq: events.length }), (error: unknown) => {
        assert.ok(HarnessError.isInstance(error, "SESSION_WRITE_FAILED"));
        assert.equal((error.cause as { code?: string }).code, "ENOSPC");
        return true;
      });
    } finally {
      fsOps.open = open;
    }
    assert.deepEqual(await readFile(file), before);
    await storage.append("s", [next], { expectedSeq: events.length });
    assert.deepEqual((await storage.load("s")).events, [...events, next]);
  });

  it("create() and acquireWriter() on a full disk: SESSION_WRITE_FAILED with the cause, no temp file left", async () => {
    const dir = await tempDir();
    const storage = fileStorage(dir);
    const enospc = () => Object.assign(new Error("no space left on device"), { code: "ENOSPC" });
    const full = (error: unknown) => {
      assert.ok(HarnessError.isInstance(error, "SESSION_WRITE_FAILED"), String(error));
      assert.equal((error.cause as { code?: string }).code, "ENOSPC");
      return true;
    };
    const { open, writeFile } = fsOps;
    fsOps.open = async (path, flags) => {
      const handle = await open(path, flags);
      if (flags !== "wx") return handle;
      return {
        ...handle,
        read: handle.read.bind(handle),
        truncate: handle.truncate.bind(handle),
        sync: handle.sync.bind(handle),
        stat: handle.stat.bind(handle),
        close: handle.close.bind(handle),
        write: async (buffer, offset, _length, position) => {
          await handle.write(buffer, offset, 3, position);
          throw enospc();
        },
      };
    };
    fsOps.writeFile = () => Promise.reject(enospc());
    const seed = [{ type: "todo/write", seq: 0, time: 1, data: { todos: [] } }] as SessionEvent[];
    try {
      await assert.rejects(storage.create({ id: "s", createdAt: 1 }, { events: seed }), full);
      await assert.rejects(storage.acquireWriter("s"), full);
    } finally {
      fsOps.open = open;
      fsOps.writeFile = writeFile;
    }
    assert.deepEqual(await readdir(join(dir, "s")), [], "no temp file, no lock");
    assert.equal(await storage.stat("s"), undefined);
    // Space again: both work (the failed lease was not kept reserved in this process).
    const writer = await storage.acquireWriter("s");
    await storage.create({ id: "s", createdAt: 1 }, { events: seed, writer });
    await writer.release();
    assert.deepEqual((await storage.load("s")).events, seed);
  });

  it("create() never overwrites a published file", async () => {
    const dir = await tempDir();
    await fileStorage(dir).create({ id: "s", createdAt: 1 });
    await assert.rejects(fileStorage(dir).create({ id: "s", createdAt: 2 }), code("SESSION_ALREADY_EXISTS"));
    await assert.rejects(
      fileStorage(dir, { compression: "zstd" }).create({ id: "s", createdAt: 2 }),
      code("SESSION_ALREADY_EXISTS"),
    );
    assert.equal((await fileStorage(dir).load("s")).header.createdAt, 1);
  });

  it("sees appends made by another instance (stale cache)", async () => {
    const dir = await tempDir();
    const a = fileStorage(dir);
    const b = fileStorage(dir);
    const ev = (seq: number) => ({ type: "todo/write", seq, time: seq, data: { todos: [] } }) as SessionEvent;
    await a.create({ id: "s" });
    await a.append("s", [ev(0)], { expectedSeq: 0 });
    await b.append("s", [ev(1)], { expectedSeq: 1 });
    await assert.rejects(a.append("s", [ev(1)], { expectedSeq: 1 }), code("SESSION_SEQ_MISMATCH"));
    await a.append("s", [ev(2)], { expectedSeq: 2 });
    assert.equal((await b.load("s")).events.length, 3);
  });

  it("a session another instance deleted, or deleted and created again, is located again, not cached", async () => {
    const dir = await tempDir();
    const a = fileStorage(dir);
    const b = fileStorage(dir, { compression: "zstd" });
    const ev = (seq: number) => ({ type: "todo/write", seq, time: seq, data: { todos: [] } }) as SessionEvent;
    // Deleted by B after A cached where it was: gone for A too.
    await a.create({ id: "d", createdAt: 1 }, { events: [ev(0)] });
    await b.delete("d");
    assert.equal(await a.stat("d"), undefined);
    await assert.rejects(a.load("d"), code("SESSION_NOT_FOUND"));
    await a.create({ id: "d", createdAt: 1 });
    await b.delete("d");
    assert.equal(await a.delete("d"), false, "it no longer existed");
    // A delete of what is not stored makes nothing: no folder, no lease another writer would meet, no root.
    assert.equal(await a.delete("ghost"), false);
    assert.deepEqual((await readdir(dir)).filter((name) => name.startsWith("ghost")), []);
    const missingRoot = join(dir, "not-yet");
    assert.equal(await fileStorage(missingRoot).delete("x"), false);
    await assert.rejects(stat(missingRoot), { code: "ENOENT" });
    // Deleted and created again by B, now zstd (another file name): every call of A answers about the new log.
    const calls = {
      stat: async (id: string) => assert.equal((await a.stat(id))?.nextSeq, 1),
      load: async (id: string) => assert.equal((await a.load(id)).header.createdAt, 2),
      inspect: async (id: string) => assert.equal((await a.inspect(id)).events.length, 1),
      append: async (id: string) => assert.equal((await a.append(id, [ev(1)], { expectedSeq: 1 })).nextSeq, 2),
      list: async (id: string) => assert.equal((await a.list()).find((h) => h.id === id)?.createdAt, 2),
    };
    for (const [name, call] of Object.entries(calls)) {
      const id = `r-${name}`;
      await a.create({ id, createdAt: 1 }, { events: [ev(0), ev(1)] });
      await a.stat(id);
      await b.delete(id);
      await b.create({ id, createdAt: 2 }, { events: [ev(0)] });
      await call(id);
    }
    assert.equal((await b.load("r-append")).events.length, 2);
    // Deleted under a lease (the folder and the lock stay): A's list and stat leave it out.
    await a.create({ id: "w", createdAt: 3 });
    const writer = await b.acquireWriter("w");
    await b.delete("w", { writer });
    assert.deepEqual((await a.list()).map((h) => h.id).includes("w"), false);
    assert.equal(await a.stat("w"), undefined);
    await writer.release();
  });

  it("a session deleted by another process while it is listed, stat'ed or loaded is not there; nothing throws", async () => {
    const dir = await tempDir();
    const storage = fileStorage(dir);
    await storage.create({ id: "keep", createdAt: 1 });
    const original = fsOps.readdir;
    // The other process deletes the session right after this one found its log file, before it reads it.
    const victim = join(dir, "victim");
    let armed = false;
    fsOps.readdir = async (path) => {
      const names = await original(path);
      if (armed && path === victim) await rm(victim, { recursive: true, force: true });
      return names;
    };
    try {
      for (
        const [name, call] of Object.entries({
          list: async () => assert.deepEqual((await storage.list()).map((h) => h.id), ["keep"]),
          stat: async () => assert.equal(await storage.stat("victim"), undefined),
          load: () => assert.rejects(storage.load("victim"), code("SESSION_NOT_FOUND")),
          inspect: () => assert.rejects(storage.inspect("victim"), code("SESSION_NOT_FOUND")),
        })
      ) {
        await fileStorage(dir).create({ id: "victim", createdAt: 2 });
        armed = true;
        await call();
        armed = false;
        assert.equal(await fileStorage(dir).stat("victim"), undefined, name);
      }
    } finally {
      fsOps.readdir = original;
    }
  });

  it("a writer lease is seen by other instances through its lock file, and a dead owner's lock is taken over", async () => {
    const dir = await tempDir();
    const a = fileStorage(dir);
    await a.create({ id: "s" });
    const writer = await a.acquireWriter("s");
    const lock = JSON.parse(await readFile(join(dir, "s", "writer.lock"), "utf8"));
    assert.equal(lock.token, writer.token);
    await writer.release();
    assert.deepEqual(await readdir(join(dir, "s")), ["session.v1.jsonl"]);

    // Another live process holds the lease (this process's parent stands in for it).
    const alive = { token: "other", pid: (globalThis as { process: { ppid: number } }).process.ppid, acquiredAt: 0 };
    await writeFile(join(dir, "s", "writer.lock"), JSON.stringify(alive));
    const ev = { type: "todo/write", seq: 0, time: 1, data: { todos: [] } } as SessionEvent;
    await assert.rejects(a.acquireWriter("s"), code("SESSION_WRITER_BUSY"));
    await assert.rejects(a.append("s", [ev], { expectedSeq: 0 }), code("SESSION_WRITER_BUSY"));

    // Its owner died without releasing it (a crash): the lock is stale.
    await writeFile(join(dir, "s", "writer.lock"), JSON.stringify({ ...alive, pid: 2 ** 22 + 12345 }));
    await a.append("s", [ev], { expectedSeq: 0 });
    const taken = await a.acquireWriter("s");
    assert.equal(JSON.parse(await readFile(join(dir, "s", "writer.lock"), "utf8")).token, taken.token);
    await taken.release();

    // A damaged lock file proves nobody's lease.
    await writeFile(join(dir, "s", "writer.lock"), "{");
    const again = await a.acquireWriter("s");
    await again.release();
    assert.deepEqual(await readdir(join(dir, "s")), ["session.v1.jsonl"]);
  });

  it("a lock naming this process is live while a thread of it holds it: its own token, or renewed lately", async () => {
    const dir = await tempDir();
    const a = fileStorage(dir);
    await a.create({ id: "s" });
    const pid = (globalThis as { process: { pid: number } }).process.pid;
    const lock = join(dir, "s", "writer.lock");
    const ev = { type: "todo/write", seq: 0, time: 1, data: { todos: [] } } as SessionEvent;
    // Another thread's (a worker's: this pid, a token this thread does not hold), renewed lately: live.
    await writeFile(lock, JSON.stringify({ token: "a-worker", pid, acquiredAt: 0 }));
    await assert.rejects(a.acquireWriter("s"), code("SESSION_WRITER_BUSY"));
    await assert.rejects(a.append("s", [ev], { expectedSeq: 0 }), code("SESSION_WRITER_BUSY"));
    // Left by an earlier process that had this pid (a container's first process has the same one on every start):
    // nobody renewed it for longer than a holder's renewals are apart.
    await writeFile(lock, JSON.stringify({ token: "earlier-run", pid, acquiredAt: 0 }));
    const past = new Date(Date.now() - 60_000);
    await utimes(lock, past, past);
    await a.append("s", [ev], { expectedSeq: 0 });
    const writer = await a.acquireWriter("s");
    assert.equal(JSON.parse(await readFile(join(dir, "s", "writer.lock"), "utf8")).token, writer.token);
    // Another instance that reaches the folder by another path (its own lease table key) sees this one as live.
    await symlink(join(dir, "s"), join(dir, "t"));
    const b = fileStorage(dir);
    await assert.rejects(b.acquireWriter("t"), code("SESSION_WRITER_BUSY"));
    await writer.release();
    const next = await b.acquireWriter("t");
    await next.release();
  });

  it("a lock from another pid namespace (container, machine) is judged by its renewals, not by its pid", async () => {
    const here = await pidNamespace();
    const dir = await tempDir();
    const a = fileStorage(dir);
    await a.create({ id: "s" });
    const mine = await a.acquireWriter("s");
    const written = JSON.parse(await readFile(join(dir, "s", "writer.lock"), "utf8"));
    assert.equal(written.host, here); // a lock says where its pid means something
    await mine.release();

    const lock = join(dir, "s", "writer.lock");
    const ev = { type: "todo/write", seq: 0, time: 1, data: { todos: [] } } as SessionEvent;
    // A holder in another container: its pid exists nowhere here, but it renewed its lock lately.
    const foreign = { token: "elsewhere", pid: 2 ** 22 + 12345, host: "another-boot/pid:[1]", acquiredAt: 0 };
    await writeFile(lock, JSON.stringify(foreign));
    await assert.rejects(a.acquireWriter("s"), code("SESSION_WRITER_BUSY"));
    await assert.rejects(a.append("s", [ev], { expectedSeq: 0 }), code("SESSION_WRITER_BUSY"));
    // Its pid being alive here says nothing either: it is some other process of this namespace.
    await writeFile(
      lock,
      JSON.stringify({ ...foreign, pid: (globalThis as { process: { pid: number } }).process.pid }),
    );
    await assert.rejects(a.acquireWriter("s"), code("SESSION_WRITER_BUSY"));
    // Not renewed for longer than the staleness period: that holder is gone.
    const past = new Date(Date.now() - 60_000);
    await utimes(lock, past, past);
    await a.append("s", [ev], { expectedSeq: 0 });
    const taken = await a.acquireWriter("s");
    assert.equal(JSON.parse(await readFile(lock, "utf8")).token, taken.token);
    await taken.release();
    // A lock of this namespace with a dead pid is stale at once, renewed or not (a crash on this machine).
    if (here !== undefined) {
      await writeFile(lock, JSON.stringify({ ...foreign, host: here }));
      const again = await a.acquireWriter("s");
      await again.release();
    }
  });

  it("a held lock is renewed, so another thread of this process (its own globals) keeps seeing it live", async () => {
    const restore = lockTimingForTests(20, 150);
    try {
      const dir = await tempDir();
      const a = fileStorage(dir);
      await a.create({ id: "s" });
      await symlink(join(dir, "s"), join(dir, "t")); // the other thread reaches the folder under its own lease key
      const writer = await a.acquireWriter("s");
      // Seen from a thread that does not hold the token (a worker has its own globals).
      const held = (globalThis as unknown as Record<symbol, Set<string>>)[Symbol.for("@dsh/harness/held-lock-tokens")];
      held.delete(writer.token);
      await new Promise((resolve) => setTimeout(resolve, 400)); // well past the staleness period: renewed meanwhile
      await assert.rejects(fileStorage(dir).acquireWriter("t"), code("SESSION_WRITER_BUSY"));
      held.add(writer.token);
      await writer.release();
    } finally {
      restore();
    }
  });

  it("a delete holds the lease while it removes the folder: another process's writer cannot take it meanwhile", async () => {
    // delete() checked that no lock was live, then removed the folder: a writer of another process (here another
    // instance reaching the folder through a symlinked root: another lease key) that took the lease in between
    // loaded the log the delete then removed, and answered true for.
    const dir = await tempDir();
    const a = fileStorage(dir);
    const b = fileStorage(`${dir}-link`);
    await symlink(dir, `${dir}-link`);
    await a.create({ id: "s" }, { events: [{ type: "todo/write", seq: 0, time: 1, data: { todos: [] } }] });
    const rmOriginal = fsOps.rm;
    let meanwhile: Promise<unknown> | undefined;
    fsOps.rm = async (path) => {
      meanwhile ??= (async () => {
        const writer = await b.acquireWriter("s");
        try {
          return await b.load("s", { writer });
        } finally {
          await writer.release();
        }
      })();
      await meanwhile.catch(() => {});
      return rmOriginal(path);
    };
    try {
      assert.equal(await a.delete("s"), true);
    } finally {
      fsOps.rm = rmOriginal;
      await rm(`${dir}-link`);
    }
    await assert.rejects(meanwhile!, code("SESSION_WRITER_BUSY"), "nobody holds the log a delete answered true for");
    assert.equal(await b.stat("s"), undefined);
    // The lease is free again: the id can be taken (and created) anew.
    const writer = await b.acquireWriter("s");
    await writer.release();
  });

  it("two takers of one stale lock never both get the lease, and the loser never removes the winner's lock", async () => {
    const dir = await tempDir();
    const storage = fileStorage(dir);
    await storage.create({ id: "s" });
    await symlink(join(dir, "s"), join(dir, "t")); // a second lease key for the same folder: another process's view
    const dead = { token: "dead", pid: 2 ** 22 + 12345, acquiredAt: 0 };
    let contested = 0;
    for (let round = 0; round < 120; round++) {
      await writeFile(join(dir, "s", "writer.lock"), JSON.stringify({ ...dead, token: `dead-${round}` }));
      // Every other round, a takeover guard left by a taker that died too: clearing it must not let both through.
      if (round % 2 === 1) {
        await writeFile(join(dir, "s", "writer.lock.takeover"), JSON.stringify({ ...dead, token: `guard-${round}` }));
      }
      const taken = await Promise.allSettled([storage.acquireWriter("s"), storage.acquireWriter("t")]);
      const won = taken.flatMap((r) => r.status === "fulfilled" ? [r.value] : []);
      for (const r of taken) if (r.status === "rejected") assert.ok(code("SESSION_WRITER_BUSY")(r.reason));
      assert.ok(won.length <= 1, `round ${round}: both took the lease`);
      if (won.length === 1) {
        if (taken.some((r) => r.status === "rejected")) contested++;
        assert.equal(JSON.parse(await readFile(join(dir, "s", "writer.lock"), "utf8")).token, won[0].token);
        await won[0].release();
      }
      // Nothing of the dead holders is left. A taker that moved a fresh guard aside puts it back, which can outlive
      // its owner by a few seconds (then it is stale): cleared here so that each round starts from the same state.
      const left = (await readdir(join(dir, "s"))).sort();
      if (left.includes("writer.lock.takeover")) {
        const guard = JSON.parse(await readFile(join(dir, "s", "writer.lock.takeover"), "utf8"));
        assert.ok(!String(guard.token).startsWith("guard-"), `round ${round}: the dead guard was left`);
        await rm(join(dir, "s", "writer.lock.takeover"));
      }
      assert.deepEqual(left.filter((name) => name !== "writer.lock.takeover"), ["session.v1.jsonl"]);
    }
    assert.ok(contested > 0, "the takers never met");
  });

  it("a takeover guard left by a dead process is cleared; a live one makes the lease busy", async () => {
    const dir = await tempDir();
    const storage = fileStorage(dir);
    await storage.create({ id: "s" });
    const lock = join(dir, "s", "writer.lock");
    await writeFile(lock, JSON.stringify({ token: "dead", pid: 2 ** 22 + 12345, acquiredAt: 0 }));
    const ppid = (globalThis as { process: { ppid: number } }).process.ppid;
    await writeFile(`${lock}.takeover`, JSON.stringify({ token: "taking", pid: ppid, acquiredAt: 0 }));
    await assert.rejects(storage.acquireWriter("s"), code("SESSION_WRITER_BUSY"));
    await writeFile(`${lock}.takeover`, JSON.stringify({ token: "crashed", pid: 2 ** 22 + 12346, acquiredAt: 0 }));
    const writer = await storage.acquireWriter("s");
    assert.deepEqual((await readdir(join(dir, "s"))).sort(), ["session.v1.jsonl", "writer.lock"]);
    await writer.release();
  });

  it("stat() reads the tail of large lines and of zstd files", async () => {
    for (const compression of ["none", "zstd"] as const) {
      const dir = await tempDir();
      const storage = fileStorage(dir, { compression });
      await storage.create({ id: "s" });
      const big = "x".repeat(300_000);
      const events = [0, 1].map((seq) => ({
        type: "todo/write",
        seq,
        time: seq,
        data: { todos: [{ content: big, status: "pending" }] },
      })) as SessionEvent[];
      await storage.append("s", events, { expectedSeq: 0 });
      const fresh = await fileStorage(dir).stat("s");
      assert.equal(fresh?.nextSeq, 2);
      assert.equal(fresh?.torn, false);
      await fileStorage(dir).append("s", [{ ...events[0], seq: 2 }], { expectedSeq: 2 });
    }
  });

  it("stat() of a zstd file reads from its last frame on, and sees what others append, tear and rewrite", async () => {
    const events = realisticLog(400);
    const { dir, storage, file } = await written({ compression: "zstd" }, events.slice(0, 2000), 20);
    const other = () => fileStorage(dir, { compression: "zstd" });
    // What stat() said before it kept marks: a fresh instance walks the whole file.
    const expectSame = async (what: string) => {
      const fresh = await other().stat("s");
      const seen = await counted(() => storage.stat("s"));
      assert.deepEqual(seen.result, fresh, what);
      return seen.bytes;
    };
    let bytesRead = 0;
    const counted = async <T>(fn: () => Promise<T>): Promise<{ result: T; bytes: number }> => {
      bytesRead = 0;
      return { result: await fn(), bytes: bytesRead };
    };
    const open = fsOps.open;
    fsOps.open = async (path, flags) => {
      const handle = await open(path, flags);
      return {
        write: handle.write.bind(handle),
        truncate: handle.truncate.bind(handle),
        sync: handle.sync.bind(handle),
        stat: handle.stat.bind(handle),
        close: handle.close.bind(handle),
        read: async (buffer, offset, length, position) => {
          const read = await handle.read(buffer, offset, length, position);
          bytesRead += read.bytesRead;
          return read;
        },
      };
    };
    try {
      const size = (await stat(file)).size;
      assert.ok(await expectSame("first stat") >= size, "the first stat() walks the whole file");
      await other().append("s", events.slice(2000, 2005), { expectedSeq: 2000 });
      const tail = await expectSame("after another instance appended");
      assert.ok(tail < size / 10, `read ${tail} bytes of ${size}`);
      assert.ok(await expectSame("unchanged") < size / 10);

      const whole = new Uint8Array(await readFile(file));
      const frame = await zstd().then((z) => z.compress(new TextEncoder().encode("{}\n"), 3));
      await writeFile(file, frame.subarray(0, 5), { flag: "a" });
      assert.equal((await storage.stat("s"))?.torn, true, "a torn last frame");
      await expectSame("torn");
      await writeFile(file, whole);
      await expectSame("repaired");

      // Cut back into the marked frame, then grown past it again with other frames.
      const ends: number[] = [];
      for (let at = 0; at < whole.length; at = frameEnd(whole, at)) ends.push(frameEnd(whole, at));
      await writeFile(file, whole.subarray(0, ends.at(-3)!));
      await expectSame("cut back");
      const kept = (await other().stat("s"))!.nextSeq;
      await other().append("s", events.slice(kept, kept + 30), { expectedSeq: kept });
      await expectSame("regrown");

      await other().delete("s");
      await other().create({ id: "s", createdAt: 9, incarnation: "i9" });
      for (let i = 0; i < 2100; i += 30) await other().append("s", events.slice(i, i + 30), { expectedSeq: i });
      await expectSame("deleted and written again by another instance");
    } finally {
      fsOps.open = open;
    }
  });

  it("refuses bad arguments at once", () => {
    assert.throws(() => fileStorage(""), code("INVALID_ARGS"));
    assert.throws(() => fileStorage("x", { compressionLevel: 1.5 }), code("INVALID_ARGS"));
  });
});

describe("fileStorage() memory", () => {
  it("forgets what it cached about a session's log once its writer lease is given up, and keeps a bounded number", async () => {
    const storage = openFileStorage(await tempDir(), {});
    for (let i = 0; i < 20; i++) {
      const id = `s${i}`;
      const lease = await storage.acquireWriter(id);
      await storage.create({ id, createdAt: 0 }, { writer: lease });
      await storage.append(id, [{ type: "todo/write", seq: 0, time: 0, data: { todos: [] } }] as never, {
        expectedSeq: 0,
        writer: lease,
      });
      await lease.release();
    }
    await storage.list(); // what the queued forgets wait for has run
    assert.equal(cachedLogStates(storage), 0);
    // Read again afresh: the logs are all there.
    assert.equal((await storage.load("s7")).events.length, 1);
    // A reader, which holds no lease to give up, keeps the states of the sessions it used last only.
    const restore = cachedLogLimitForTests(5);
    try {
      for (let i = 0; i < 20; i++) assert.equal((await storage.load(`s${i}`)).events.length, 1);
      await storage.stat("s3");
      assert.equal(cachedLogStates(storage), 5);
      const lease = await storage.acquireWriter("s0"); // forgotten long ago: read afresh
      await storage.append("s0", [{ type: "todo/write", seq: 1, time: 0, data: { todos: [] } }] as never, {
        expectedSeq: 1,
        writer: lease,
      });
      await lease.release();
      assert.equal((await storage.load("s0")).events.length, 2);
    } finally {
      restore();
    }
  });
});
