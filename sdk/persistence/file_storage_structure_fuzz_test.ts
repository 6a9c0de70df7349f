// A property that damages a log's structure instead of its bytes: valid logs
// with one invariant broken (testing/mutate_log.ts), cut at a random event and
// stored with good checksums. A prefix of the valid log always loads, repaired
// to a log that passes checkInvariants; a log with a structural violation is
// refused (SESSION_CORRUPT naming the invariant, file unchanged); a loop
// convention broken alone (turn numbering, bookkeeping outside a turn) loads
// (see _check_stored_log.ts). DSH_PROPERTY_RUNS raises the count (a quarter of
// it per encoding, 250 by default).

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import fc from "fast-check";
import { HarnessError } from "../kernel/harness_error.ts";
import { checkInvariants } from "../invariants/check_invariants.ts";
import { fileStorage } from "./file_storage.ts";
import { loadUnderLease } from "./_test_lease.ts";
import { arbMutatedLog } from "../../testing/mutate_log.ts";
import { CONVENTION_CODES } from "./_check_stored_log.ts";

const RUNS = Math.max(1000, Number(process.env.DSH_PROPERTY_RUNS ?? 0) || 0);

const plain = (v: unknown) => JSON.parse(JSON.stringify(v));

describe("fileStorage() refuses logs with a broken structure (fast-check)", () => {
  let root = "";
  before(async () => {
    root = await mkdtemp(join(tmpdir(), "dsh-fuzz-logic-"));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const runs = Math.ceil(RUNS / 4);
  for (const compression of ["none", "zstd"] as const) {
    it(`${runs} ${compression === "none" ? "plain" : "zstd"} logs with one invariant broken, cut anywhere: loaded and valid, or refused with the invariant named`, async () => {
      const outcomes: Record<string, number> = {};
      let n = 0;
      await fc.assert(
        fc.asyncProperty(arbMutatedLog({ maxTurns: 3, maxSteps: 3 }), fc.nat(), async (mutated, at) => {
          const cut = at % (mutated.events.length + 1);
          const events = mutated.events.slice(0, cut);
          const dir = join(root, `${compression}-${n++}`);
          const storage = fileStorage(dir, { compression });
          await storage.create({ id: "s", createdAt: 5 });
          try {
            if (events.length > 0) await storage.append("s", events, { expectedSeq: 0 });
          } catch (error) {
            assert.ok(HarnessError.isInstance(error, "SESSION_SEQ_MISMATCH"), `${mutated.kind}: ${error}`);
            assert.ok(cut > mutated.fromSeq, `${mutated.kind}: a valid prefix was refused`);
            outcomes.appendRefused = (outcomes.appendRefused ?? 0) + 1;
            return;
          }
          const file = join(dir, "s", compression === "zstd" ? "session.v1.jsonl.zstd" : "session.v1.jsonl");
          const bytes = new Uint8Array(await readFile(file));
          const violated = mutated.events.length === cut && !CONVENTION_CODES.has(mutated.code);
          try {
            const loaded = await loadUnderLease(fileStorage(dir), "s");
            outcomes.read = (outcomes.read ?? 0) + 1;
            assert.ok(!violated, `${mutated.kind} (${mutated.code}) was loaded`);
            assert.deepEqual(plain(loaded.events.slice(0, cut)), plain(events), "no event changed");
            const codes = checkInvariants(loaded.events).map((v) => v.code);
            if (cut <= mutated.fromSeq) assert.deepEqual(codes, [], `a repaired valid prefix: ${mutated.kind}`);
            else assert.ok(codes.every((c) => CONVENTION_CODES.has(c)), `${mutated.kind}: ${codes}`);
          } catch (error) {
            assert.ok(HarnessError.isInstance(error, "SESSION_CORRUPT"), `${mutated.kind}: ${error}`);
            assert.ok(cut > mutated.fromSeq, `${mutated.kind}: a valid prefix was refused: ${error.message}`);
            if (violated) assert.equal(error.details?.invariant, mutated.code, error.message);
            assert.deepEqual(new Uint8Array(await readFile(file)), bytes, "a refused load changes nothing");
            outcomes.refused = (outcomes.refused ?? 0) + 1;
          } finally {
            await rm(dir, { recursive: true, force: true });
          }
        }),
        { numRuns: runs },
      );
      assert.ok((outcomes.read ?? 0) > 0 && (outcomes.refused ?? 0) > 0, JSON.stringify(outcomes));
    });
  }
});
