// Test support (not a test): damaged session files, generated — truncations,
// one or two flipped bytes, duplicated and reordered lines (plain) or frames
// (zstd). Every read either gives a log that passes checkInvariants — each
// stored event unchanged, and every event stored before the first damaged byte
// kept — or fails with a coded HarnessError and leaves the file as it was.
// 1,000 cases per encoding by default, in tests of 250 (each with its own time
// budget); DSH_PROPERTY_RUNS raises it. One test file per encoding
// (file_storage_fuzz_test.ts, file_storage_fuzz_zstd_test.ts): Node's runner
// gives each file one time budget, which both encodings together came near on
// a loaded two-core machine.
//
// Each case is read with inspect() (no write); a failed case is then loaded
// (the file must not change), and every 16th good case is loaded too (the
// repair is written, and a reload finds nothing left to repair).

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import fc from "fast-check";
import { HarnessError } from "../kernel/harness_error.ts";
import { checkInvariants } from "../invariants/check_invariants.ts";
import type { SessionEvent } from "../session/session_events.ts";
import { fileStorage } from "./file_storage.ts";
import { LogBuilder } from "./_test_log.ts";
import { loadUnderLease } from "./_test_lease.ts";
import { frameEnd } from "./_zstd.ts";

const RUNS = Math.max(1000, Number(process.env.DSH_PROPERTY_RUNS ?? 0) || 0);

type Mutation =
  | { kind: "truncate"; at: number }
  | { kind: "flip"; at: readonly number[]; xor: readonly number[] }
  | { kind: "duplicate"; unit: number }
  | { kind: "swap"; a: number; b: number };

/** The file cut into units (lines with their newline, or zstd frames), with the events each unit holds. */
interface Layout {
  readonly bytes: Uint8Array;
  /** Byte offset where each unit ends. */
  readonly ends: readonly number[];
  /** Events stored up to the end of each unit. */
  readonly eventsUpTo: readonly number[];
}

function unitsOf(bytes: Uint8Array, zstd: boolean): number[] {
  const ends: number[] = [];
  for (let at = 0; at < bytes.length;) {
    const end = zstd ? frameEnd(bytes, at) : bytes.indexOf(10, at) + 1;
    if (end <= at) break;
    ends.push(end);
    at = end;
  }
  return ends;
}

function apply(layout: Layout, m: Mutation): { bytes: Uint8Array; firstDamage: number } {
  const { bytes, ends } = layout;
  const starts = [0, ...ends.slice(0, -1)];
  const unit = (i: number) => bytes.subarray(starts[i], ends[i]);
  const join = (parts: Uint8Array[]) => {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  };
  switch (m.kind) {
    case "truncate":
      return { bytes: bytes.slice(0, m.at), firstDamage: m.at };
    case "flip": {
      const out = bytes.slice();
      m.at.forEach((at, i) => (out[at] ^= m.xor[i]));
      return { bytes: out, firstDamage: Math.min(...m.at) };
    }
    case "duplicate": {
      const parts = ends.map((_, i) => unit(i));
      parts.splice(m.unit + 1, 0, unit(m.unit));
      return { bytes: join(parts), firstDamage: ends[m.unit] };
    }
    case "swap": {
      const [a, b] = m.a < m.b ? [m.a, m.b] : [m.b, m.a];
      const parts = ends.map((_, i) => unit(i));
      [parts[a], parts[b]] = [parts[b], parts[a]];
      return { bytes: join(parts), firstDamage: starts[a] };
    }
  }
}

function mutation(layout: Layout): fc.Arbitrary<Mutation> {
  const size = layout.bytes.length;
  const units = layout.ends.length;
  const byte = fc.integer({ min: 0, max: size - 1 });
  return fc.oneof(
    fc.record({ kind: fc.constant("truncate" as const), at: fc.integer({ min: 0, max: size - 1 }) }),
    fc.integer({ min: 1, max: 2 }).chain((n) =>
      fc.record({
        kind: fc.constant("flip" as const),
        at: fc.uniqueArray(byte, { minLength: n, maxLength: n }),
        xor: fc.array(fc.integer({ min: 1, max: 255 }), { minLength: n, maxLength: n }),
      })
    ),
    // Unit 0 is the header: duplicating or moving it is covered by flips and swaps of others.
    fc.record({ kind: fc.constant("duplicate" as const), unit: fc.integer({ min: 1, max: units - 1 }) }),
    fc.record({
      kind: fc.constant("swap" as const),
      a: fc.integer({ min: 1, max: units - 1 }),
      b: fc.integer({ min: 1, max: units - 1 }),
    }).filter((s) => s.a !== s.b),
  );
}

function sessionLog(): SessionEvent[] {
  const log = new LogBuilder();
  log.completeTurn(1);
  log.completeTurn(2);
  // A third turn, open: a cut anywhere in the file leaves something to repair.
  log.push({ type: "turn/start", data: { turn: 3 } });
  log.push({ type: "step/start", data: { turn: 3, step: 1 } });
  return log.events;
}

const plain = (v: unknown) => JSON.parse(JSON.stringify(v));

/**
 * The suite of damaged files of one encoding: each test runs its slice of cases through the property, then hands
 * the count of outcomes (`read`, or the error code) to `expectOutcomes`, the test file's own check of the slice.
 */
export function damagedFilesSuite(
  compression: "none" | "zstd",
  expectOutcomes: (outcomes: Readonly<Record<string, number>>) => void,
): void {
  const name = compression === "none" ? "plain" : "zstd";
  describe(`fileStorage() reads damaged ${name} files safely (fast-check)`, () => {
    let root = "";
    before(async () => {
      root = await mkdtemp(join(tmpdir(), "dsh-fuzz-"));
    });
    after(async () => {
      await rm(root, { recursive: true, force: true });
    });

    /** The undamaged file and its layout, made once. */
    let made: Promise<{ layout: Layout; events: SessionEvent[] }> | undefined;
    const layoutOf = () => (made ??= makeLayout());
    async function makeLayout(): Promise<{ layout: Layout; events: SessionEvent[] }> {
      const events = sessionLog();
      const source = join(root, `source-${compression}`);
      const storage = fileStorage(source, { compression });
      await storage.create({ id: "s", createdAt: 5 });
      for (let i = 0; i < events.length; i += 6) {
        await storage.append("s", events.slice(i, i + 6), { expectedSeq: i });
      }
      const file = join(source, "s", compression === "zstd" ? "session.v1.jsonl.zstd" : "session.v1.jsonl");
      const bytes = new Uint8Array(await readFile(file));
      const ends = unitsOf(bytes, compression === "zstd");
      // Events per unit, by loading each prefix of whole units (the header unit holds none).
      const eventsUpTo: number[] = [];
      const probe = join(root, `probe-${compression}`, "s");
      await rm(join(root, `probe-${compression}`), { recursive: true, force: true });
      await fileStorage(join(root, `probe-${compression}`), { compression }).create({ id: "s", createdAt: 5 });
      const probeFile = join(probe, compression === "zstd" ? "session.v1.jsonl.zstd" : "session.v1.jsonl");
      for (const end of ends) {
        await writeFile(probeFile, bytes.subarray(0, end));
        const seen = await fileStorage(join(root, `probe-${compression}`)).inspect("s");
        eventsUpTo.push(seen.events.length - seen.repair.syntheticEvents.length);
      }
      assert.equal(eventsUpTo.at(-1), events.length);
      return { layout: { bytes, ends, eventsUpTo }, events };
    }

    const SLICE = 250;
    for (let slice = 0; slice * SLICE < RUNS; slice++) {
      const runs = Math.min(SLICE, RUNS - slice * SLICE);
      it(`${runs} damaged ${name} logs (${slice * SLICE + 1}–${slice * SLICE + runs} of ${RUNS}): repaired and valid, or a coded error with the file unchanged`, async () => {
        const { layout, events } = await layoutOf();
        const { ends, eventsUpTo } = layout;
        const caseDir = join(root, `case-${compression}-${slice}`);
        const caseFile = join(caseDir, "s", compression === "zstd" ? "session.v1.jsonl.zstd" : "session.v1.jsonl");
        await fileStorage(caseDir, { compression }).create({ id: "s", createdAt: 5 });
        let n = 0;
        const outcomes: Record<string, number> = {};
        await fc.assert(
          fc.asyncProperty(mutation(layout), async (m) => {
            const { bytes: damaged, firstDamage } = apply(layout, m);
            await writeFile(caseFile, damaged);
            let loaded;
            try {
              loaded = await fileStorage(caseDir).inspect("s");
            } catch (error) {
              assert.ok(HarnessError.isInstance(error), `an uncoded throw for ${JSON.stringify(m)}: ${error}`);
              outcomes[error.code] = (outcomes[error.code] ?? 0) + 1;
              await assert.rejects(
                loadUnderLease(fileStorage(caseDir), "s"),
                (e: unknown) => HarnessError.isInstance(e, error.code),
              );
              assert.deepEqual(new Uint8Array(await readFile(caseFile)), damaged, "a failed load changes nothing");
              return;
            }
            outcomes.read = (outcomes.read ?? 0) + 1;
            const kept = loaded.events.length - loaded.repair.syntheticEvents.length;
            assert.deepEqual(checkInvariants(loaded.events), [], `invalid after repair: ${JSON.stringify(m)}`);
            assert.deepEqual(plain(loaded.events.slice(0, kept)), plain(events.slice(0, kept)), "no event changed");
            let intact = 0;
            for (let u = 0; u < ends.length && ends[u] <= firstDamage; u++) intact = eventsUpTo[u];
            assert.ok(
              kept >= intact,
              `events before the damage are kept (${kept} < ${intact}): ${JSON.stringify(m)}`,
            );
            if (n++ % 16 === 0) {
              const written = await loadUnderLease(fileStorage(caseDir), "s");
              // Synthetic tool results get fresh ids; everything else is the same as inspect() said.
              assert.deepEqual(plain(written.events.slice(0, kept)), plain(loaded.events.slice(0, kept)));
              assert.deepEqual(written.events.map((e) => e.type), loaded.events.map((e) => e.type));
              assert.equal((await loadUnderLease(fileStorage(caseDir), "s")).repair.repaired, false);
            }
          }),
          { numRuns: runs },
        );
        expectOutcomes(outcomes);
      });
    }
  });
}
