// A unified line diff for strict-replay divergences and golden-file mismatches, computed by the `diff`
// package (Myers' algorithm) and printed with our labels and without its file-header line.

import { structuredPatch } from "diff";

/** Options of `unifiedDiff`. */
export interface UnifiedDiffOptions {
  /** Label of the `---` side. */
  readonly expectedLabel?: string;
  /** Label of the `+++` side. */
  readonly actualLabel?: string;
  /** Unchanged lines shown around each change. */
  readonly context?: number;
}

/**
 * A unified diff of two texts, line by line, or `""` when they are equal.
 *
 * @param expected The `-` side.
 * @param actual The `+` side.
 * @param options Labels and context size.
 * @returns The diff text, with `---`/`+++` labels and `@@` hunk headers; a text that lacks the other's final
 *   newline is marked `\ No newline at end of file`.
 */
export function unifiedDiff(expected: string, actual: string, options: UnifiedDiffOptions = {}): string {
  if (expected === actual) return "";
  const patch = structuredPatch("expected", "actual", expected, actual, undefined, undefined, {
    context: options.context ?? 3,
  });
  const out = [`--- ${options.expectedLabel ?? "expected"}`, `+++ ${options.actualLabel ?? "actual"}`];
  for (const hunk of patch.hunks) {
    // An empty side starts at line 0, as in GNU diff (structuredPatch counts it from 1).
    const oldStart = hunk.oldLines === 0 ? hunk.oldStart - 1 : hunk.oldStart;
    const newStart = hunk.newLines === 0 ? hunk.newStart - 1 : hunk.newStart;
    out.push(`@@ -${oldStart},${hunk.oldLines} +${newStart},${hunk.newLines} @@`, ...hunk.lines);
  }
  return out.join("\n") + "\n";
}
