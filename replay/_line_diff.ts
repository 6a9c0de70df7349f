// A unified line diff (longest common subsequence), for strict-replay
// divergences and golden-file mismatches. Inputs are small (a message's JSON,
// a transcript), so the quadratic table is fine; past a size limit the middle
// is reported as one changed block instead.

const MAX_CELLS = 4_000_000;

/** Options of `unifiedDiff`. */
export interface UnifiedDiffOptions {
  /** Label of the `---` side. */
  readonly expectedLabel?: string;
  /** Label of the `+++` side. */
  readonly actualLabel?: string;
  /** Unchanged lines shown around each change. */
  readonly context?: number;
}

type Op = { readonly kind: " " | "-" | "+"; readonly line: string; readonly a: number; readonly b: number };

function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

function diffOps(a: readonly string[], b: readonly string[]): Op[] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const ops: Op[] = [];
  for (let i = 0; i < start; i++) ops.push({ kind: " ", line: a[i], a: i, b: i });
  const n = endA - start;
  const m = endB - start;
  if (n * m > MAX_CELLS) {
    for (let i = start; i < endA; i++) ops.push({ kind: "-", line: a[i], a: i, b: start });
    for (let j = start; j < endB; j++) ops.push({ kind: "+", line: b[j], a: endA, b: j });
  } else {
    // lcs[i][j]: length of the LCS of a[start+i..endA) and b[start+j..endB).
    const width = m + 1;
    const lcs = new Uint32Array((n + 1) * width);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i * width + j] = a[start + i] === b[start + j]
          ? lcs[(i + 1) * width + j + 1] + 1
          : Math.max(lcs[(i + 1) * width + j], lcs[i * width + j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[start + i] === b[start + j]) {
        ops.push({ kind: " ", line: a[start + i], a: start + i, b: start + j });
        i++;
        j++;
      } else if (i < n && (j === m || lcs[(i + 1) * width + j] >= lcs[i * width + j + 1])) {
        ops.push({ kind: "-", line: a[start + i], a: start + i, b: start + j });
        i++;
      } else {
        ops.push({ kind: "+", line: b[start + j], a: start + i, b: start + j });
        j++;
      }
    }
  }
  for (let i = endA, j = endB; i < a.length; i++, j++) ops.push({ kind: " ", line: a[i], a: i, b: j });
  return ops;
}

/**
 * A unified diff of two texts, line by line, or `""` when they are equal.
 *
 * @param expected The `-` side.
 * @param actual The `+` side.
 * @param options Labels and context size.
 * @returns The diff text, with `---`/`+++` labels and `@@` hunk headers.
 */
export function unifiedDiff(expected: string, actual: string, options: UnifiedDiffOptions = {}): string {
  if (expected === actual) return "";
  const context = options.context ?? 3;
  const ops = diffOps(splitLines(expected), splitLines(actual));
  const out = [`--- ${options.expectedLabel ?? "expected"}`, `+++ ${options.actualLabel ?? "actual"}`];
  let i = 0;
  while (i < ops.length) {
    while (i < ops.length && ops[i].kind === " ") i++;
    if (i >= ops.length) break;
    const from = Math.max(0, i - context);
    let to = i;
    // Extend the hunk while the next change is within 2 * context unchanged lines.
    while (true) {
      while (to < ops.length && ops[to].kind !== " ") to++;
      let next = to;
      while (next < ops.length && ops[next].kind === " ") next++;
      if (next < ops.length && next - to <= 2 * context) {
        to = next;
        continue;
      }
      to = Math.min(ops.length, to + context);
      break;
    }
    const hunk = ops.slice(from, to);
    const aLines = hunk.filter((op) => op.kind !== "+").length;
    const bLines = hunk.filter((op) => op.kind !== "-").length;
    const aStart = aLines === 0 ? hunk[0].a : hunk[0].a + 1;
    const bStart = bLines === 0 ? hunk[0].b : hunk[0].b + 1;
    out.push(`@@ -${aStart},${aLines} +${bStart},${bLines} @@`);
    for (const op of hunk) out.push(`${op.kind}${op.line}`);
    i = to;
  }
  if (expected !== "" && actual !== "" && expected.endsWith("\n") !== actual.endsWith("\n")) {
    out.push("\\ The texts differ in their final newline");
  }
  return out.join("\n") + "\n";
}
