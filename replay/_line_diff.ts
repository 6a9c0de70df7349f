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
  const context = options.context ?? 3;
  const patch = structuredPatch("expected", "actual", expected, actual, undefined, undefined, {
    context,
    maxEditLength: MAX_EDITS,
  });
  const hunks = patch?.hunks ?? [wholeHunk(expected, actual, context)];
  const out = [`--- ${options.expectedLabel ?? "expected"}`, `+++ ${options.actualLabel ?? "actual"}`];
  for (const hunk of hunks) {
    // An empty side starts at line 0, as in GNU diff (structuredPatch counts it from 1).
    const oldStart = hunk.oldLines === 0 ? hunk.oldStart - 1 : hunk.oldStart;
    const newStart = hunk.newLines === 0 ? hunk.newStart - 1 : hunk.newStart;
    out.push(`@@ -${oldStart},${hunk.oldLines} +${newStart},${hunk.newLines} @@`, ...hunk.lines);
  }
  return out.join("\n") + "\n";
}

/**
 * Edits past which no shortest diff is searched for: Myers' algorithm costs
 * O(lines × edits), seconds for two texts of thousands of lines that differ
 * throughout. Past it, {@linkcode wholeHunk} gives a correct, longer diff.
 */
const MAX_EDITS = 1000;

interface Line {
  readonly text: string;
  /** Whether a newline ends it (only the last line of a text may lack one). */
  readonly ended: boolean;
}

function linesOf(text: string): Line[] {
  if (text === "") return [];
  const parts = text.split("\n");
  const ended = parts[parts.length - 1] === "";
  if (ended) parts.pop();
  return parts.map((line, i) => ({ text: line, ended: ended || i < parts.length - 1 }));
}

const same = (a: Line, b: Line) => a.text === b.text && a.ended === b.ended;

// One hunk from the first line that differs to the last: all of `expected`'s lines between are removed, then all of
// `actual`'s added. Linear in the texts' length.
function wholeHunk(expected: string, actual: string, context: number) {
  const a = linesOf(expected);
  const b = linesOf(actual);
  let head = 0;
  while (head < a.length && head < b.length && same(a[head], b[head])) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && same(a[a.length - 1 - tail], b[b.length - 1 - tail])) {
    tail++;
  }
  const from = Math.max(0, head - context);
  const before = a.slice(from, head);
  const after = a.slice(a.length - tail, a.length - tail + Math.min(tail, context));
  const lines: string[] = [];
  const put = (mark: string, line: Line) => {
    lines.push(mark + line.text);
    if (!line.ended) lines.push("\\ No newline at end of file");
  };
  for (const line of before) put(" ", line);
  for (const line of a.slice(head, a.length - tail)) put("-", line);
  for (const line of b.slice(head, b.length - tail)) put("+", line);
  for (const line of after) put(" ", line);
  const kept = before.length + after.length;
  return {
    oldStart: from + 1,
    oldLines: kept + a.length - tail - head,
    newStart: from + 1,
    newLines: kept + b.length - tail - head,
    lines,
  };
}
