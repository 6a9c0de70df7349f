import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHarness } from "../harness.ts";
import { checkInvariants } from "../invariants/mod.ts";
import { scriptedAdapter, textResponse } from "../../testing/scripted_adapter.ts";
import { fileStorage } from "./file_storage.ts";
import { loadUnderLease } from "./_test_lease.ts";
import { LOG_FORMAT_VERSION, migrateLog } from "./_log_migrations.ts";

// Real v0 logs, written by fileStorage before format versions moved into file names (see testdata/v0/README.md).
const V0 = new URL("./testdata/v0/", import.meta.url);
const SESSIONS = [
  { id: "v0-plain", file: "session.jsonl", successor: "session.v1.jsonl" },
  { id: "v0-zstd", file: "session.jsonl.zstd", successor: "session.v1.jsonl.zstd" },
];

/** A scratch copy of the committed v0 fixture (the fixture itself is never opened for writing). */
async function copyOfV0(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "dsh-v0-"));
  for (const { id, file } of SESSIONS) {
    await mkdir(join(root, id));
    await writeFile(join(root, id, file), await readFile(new URL(`${id}/${file}`, V0)));
  }
  return root;
}

describe("format versions in file names, and the migration chain", () => {
  it("this build writes v1 as session.v1.jsonl; the chain has one step per version", async () => {
    assert.equal(LOG_FORMAT_VERSION, 1);
    const root = await mkdtemp(join(tmpdir(), "dsh-v1-"));
    try {
      await fileStorage(root).create({ id: "s" });
      await fileStorage(root, { compression: "zstd" }).create({ id: "z" });
      assert.deepEqual(await readdir(join(root, "s")), ["session.v1.jsonl"]);
      assert.deepEqual(await readdir(join(root, "z")), ["session.v1.jsonl.zstd"]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
    const log = { header: { version: 1, id: "x", createdAt: 0 }, events: [] };
    assert.deepEqual(migrateLog(log, 0), log);
    assert.equal(migrateLog(log, LOG_FORMAT_VERSION), log, "a current log is not touched");
  });

  for (const { id, file, successor } of SESSIONS) {
    it(`reads a real v0 log (${file}); opening it for writing publishes ${successor} beside the untouched source`, async () => {
      const root = await copyOfV0();
      try {
        const source = await readFile(join(root, id, file));
        const loaded = await fileStorage(root).load(id);
        assert.equal(loaded.header.id, id);
        assert.equal(loaded.repair.repaired, false);
        assert.deepEqual(loaded.events.filter((e) => e.type === "turn/end").length, 2);
        assert.deepEqual(checkInvariants(loaded.events), []);
        assert.equal((await fileStorage(root).stat(id))?.nextSeq, loaded.events.length);
        assert.ok((await fileStorage(root).list()).some((h) => h.id === id));
        assert.deepEqual(await readdir(join(root, id)), [file], "reading publishes nothing");

        const harness = await createHarness({
          adapters: [scriptedAdapter(textResponse("Anything else?"))],
          model: { provider: "scripted", model: "scripted-model" },
          storage: fileStorage(root),
        });
        const agent = await harness.resumeAgent(id);
        await agent.run("One more thing");
        await harness.dispose();

        assert.deepEqual((await readdir(join(root, id))).filter((n) => !n.startsWith(".")).sort(), [file, successor]);
        assert.deepEqual(await readFile(join(root, id, file)), source, "the v0 generation is untouched");
        const reread = await fileStorage(root).load(id);
        assert.deepEqual(reread.events.slice(0, loaded.events.length), loaded.events);
        assert.equal(reread.events.filter((e) => e.type === "turn/end").length, 3);
        assert.deepEqual(checkInvariants(reread.events), []);
      } finally {
        await rm(root, { recursive: true, force: true });
      }
    });
  }

  it("a load that repairs an older log writes the repair into the successor, not into the source", async () => {
    const root = await copyOfV0();
    try {
      const file = join(root, "v0-plain", "session.jsonl");
      const before = await fileStorage(root).load("v0-plain");
      await appendFile(
        file,
        `{"type":"turn/start","seq":${before.events.length},"time":1,"data":{"turn":3}}\n{"type":"ste`,
      );
      const torn = await readFile(file);
      const repaired = await loadUnderLease(fileStorage(root), "v0-plain");
      assert.equal(repaired.repair.committed, true);
      assert.equal(repaired.events.at(-1)?.type, "turn/end");
      assert.deepEqual(await readFile(file), torn, "the source keeps its bytes, torn tail included");
      const again = await fileStorage(root).load("v0-plain");
      assert.equal(again.repair.repaired, false);
      assert.deepEqual(again.events, repaired.events);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("refuses a newer version with SESSION_FORMAT_UNSUPPORTED, even beside an older generation", async () => {
    const root = await copyOfV0();
    try {
      await writeFile(
        join(root, "v0-plain", "session.v2.jsonl"),
        '{"type":"session","version":1,"id":"v0-plain","createdAt":0}\n',
      );
      const refused = (error: Error & { code?: string; details?: Record<string, unknown> }) => {
        assert.equal(error.code, "SESSION_FORMAT_UNSUPPORTED");
        assert.equal(error.details?.version, 2);
        assert.equal(error.details?.supported, 1);
        return true;
      };
      await assert.rejects(fileStorage(root).load("v0-plain"), refused);
      await assert.rejects(fileStorage(root).stat("v0-plain"), refused);
      await assert.rejects(
        fileStorage(root).append("v0-plain", [], { expectedSeq: 0 }),
        refused,
      );
      assert.deepEqual((await fileStorage(root).list()).map((h) => h.id), ["v0-zstd"]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
