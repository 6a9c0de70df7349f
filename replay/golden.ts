/**
 * Golden files: compare a rendered transcript with a committed `.golden.md`,
 * print a unified diff on mismatch, rewrite the file on request.
 *
 * @module
 */

import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import process from "node:process";
import { HarnessError, renderTranscript, type SessionEvent, type TranscriptOptions } from "../mod.ts";
import { unifiedDiff } from "./_line_diff.ts";
import { toPath } from "./_read_fixture_file.ts";

/** Options of {@linkcode assertGolden}. */
export interface GoldenOptions {
  /**
   * Rewrite the golden file with `actual` instead of comparing.
   *
   * @default {process.env.DSH_GOLDEN === "update"}
   */
  readonly update?: boolean;
  /**
   * Normalise `actual` first with {@linkcode normalizeText}.
   *
   * @default {true}
   */
  readonly normalize?: boolean;
}

/** What {@linkcode assertGolden} did. */
export type GoldenOutcome = "matched" | "updated";

const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const RETRY_DELAY = /(\); retrying after )\d+ ms_/g;
const ISO_TIME = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})\b/g;

/**
 * Normalise generated values in a text: UUIDs become `<uuid-n>` (numbered by
 * first appearance), ISO timestamps `<time>`, a transcript's retry delays
 * (`retrying after <delay> ms`: the retry policy's jitter makes them differ
 * between runs), and line endings `\n`.
 *
 * @param text The text.
 * @returns The normalised text.
 *
 * @example
 * ```ts
 * import { normalizeText } from "@dsh/harness/replay";
 * import assert from "node:assert/strict";
 *
 * const text = "session 0b6f1b52-33c8-4d8e-9a57-2a1c2d3e4f50 at 2026-11-30T08:00:00.000Z";
 * assert.equal(normalizeText(text), "session <uuid-1> at <time>");
 * ```
 */
export function normalizeText(text: string): string {
  const uuids = new Map<string, string>();
  return text
    .replace(/\r\n/g, "\n")
    .replace(UUID, (uuid) => {
      const key = uuid.toLowerCase();
      if (!uuids.has(key)) uuids.set(key, `<uuid-${uuids.size + 1}>`);
      return uuids.get(key)!;
    })
    .replace(ISO_TIME, "<time>")
    .replace(RETRY_DELAY, "$1<delay> ms_");
}

/** A lone surrogate: half of a UTF-16 pair, which UTF-8 cannot encode. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Compare a text with a golden file.
 *
 * With `update` (or `DSH_GOLDEN=update` in the environment) the file is
 * written instead (directories created). Otherwise a missing file or any
 * difference fails with a message that ends with a unified diff
 * (`-` golden, `+` actual). The file is UTF-8, which cannot hold a lone
 * surrogate (half of an emoji a model's answer was cut off in): the text is
 * compared, and written, with each one as U+FFFD, as the file holds it.
 *
 * @param actual The text produced now (e.g. by `renderTranscript`).
 * @param path The golden file, e.g. `examples/fixtures/weather.golden.md`.
 * @param options Update and normalisation.
 * @returns `"matched"` or `"updated"`.
 * @throws {HarnessError} `GOLDEN_MISMATCH` with the diff; `GOLDEN_MISSING` when the file does not exist;
 *   `GOLDEN_UNREADABLE` when it exists but cannot be read (a directory, no permission).
 *
 * @example
 * ```ts
 * import { assertGolden } from "@dsh/harness/replay";
 * import { mkdtemp } from "node:fs/promises";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 * import assert from "node:assert/strict";
 *
 * const path = join(await mkdtemp(join(tmpdir(), "dsh-")), "hello.golden.md");
 * assert.equal(await assertGolden("Hello\n", path, { update: true }), "updated");
 * assert.equal(await assertGolden("Hello\n", path, { update: false }), "matched");
 * await assert.rejects(assertGolden("Goodbye\n", path, { update: false }), /-Hello\n\+Goodbye/);
 * ```
 */
export async function assertGolden(
  actual: string,
  path: string | URL,
  options: GoldenOptions = {},
): Promise<GoldenOutcome> {
  const file = toPath(path);
  // As the file holds the text: UTF-8 writes a lone surrogate as U+FFFD, so a text with one would never match its own
  // golden file.
  const text = (options.normalize === false ? actual : normalizeText(actual)).replace(LONE_SURROGATE, "\uFFFD");
  const update = options.update ?? process.env.DSH_GOLDEN === "update";
  if (update) {
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, text);
    return "updated";
  }
  let golden: string;
  try {
    golden = (await readFile(file, "utf8")).replace(/\r\n/g, "\n");
  } catch (cause) {
    if ((cause as { code?: unknown }).code !== "ENOENT") {
      throw new HarnessError("GOLDEN_UNREADABLE", `Golden file ${file} cannot be read: ${String(cause)}`, {
        cause,
        details: { file },
      });
    }
    throw new HarnessError(
      "GOLDEN_MISSING",
      `Golden file ${file} does not exist; run with DSH_GOLDEN=update to create it`,
      { cause, details: { file } },
    );
  }
  // Line endings are not content: the file was read with \n, the text is compared the same way.
  const compared = text.replace(/\r\n/g, "\n");
  if (golden === compared) return "matched";
  const diff = unifiedDiff(golden, compared, { expectedLabel: `${file} (golden)`, actualLabel: "actual" });
  throw new HarnessError(
    "GOLDEN_MISMATCH",
    `Output differs from golden file ${file}; review the diff and run with DSH_GOLDEN=update to accept it\n${diff}`,
    { details: { file, diff } },
  );
}

/**
 * Render a session log as a transcript and compare it with a golden file:
 * `assertGolden(renderTranscript(events, options), path, options)`, where the
 * transcript shows the system prompt and the tool schemas on the first request
 * header and wherever they change (`system` and `toolSchemas` default to
 * `"changes"` here), so that a changed prompt, tool schema or model shows in
 * the diff even when the replay is not strict.
 *
 * @param events The log.
 * @param path The golden file.
 * @param options Transcript and golden options.
 * @returns `"matched"` or `"updated"`.
 * @throws {HarnessError} `GOLDEN_MISMATCH`, `GOLDEN_MISSING` or `GOLDEN_UNREADABLE` (see {@linkcode assertGolden}).
 */
export function assertGoldenTranscript(
  events: readonly SessionEvent[],
  path: string | URL,
  options: GoldenOptions & TranscriptOptions = {},
): Promise<GoldenOutcome> {
  const transcript = renderTranscript(events, { system: "changes", toolSchemas: "changes", ...options });
  return assertGolden(transcript, path, options);
}
