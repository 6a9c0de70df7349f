// Internal: a guard for the regular expressions grep is given. JavaScript's engine backtracks, and a pattern that
// repeats a group which itself repeats ((a+)+, (\w*)*) can take exponential time on a line of a few dozen
// characters, with the event loop blocked: no cancel, no timer, no other agent. An outer repeat of at most 3 ({2},
// {1,3}) is polynomial of a low degree and allowed; {1,10} is not (about n^10: seconds at 40 characters). A heuristic for that one shape, not a proof that a pattern is fast.

/**
 * Whether `source` repeats (`*`, `+`, `{n,}`, or `{n,m}` with m above 3) a
 * group that contains such a repeat.
 */
export function nestedRepeat(source: string): boolean {
  const frames: boolean[] = [false]; // per open group: whether it holds a repeat
  let i = 0;
  // The repeat quantifier at `at` (*, +, {n,} or {n,m} with m > 3), and where it ends; `undefined` when none.
  const repeatAt = (at: number): number | undefined => {
    const c = source[at];
    if (c === "*" || c === "+") return at + 1;
    if (c !== "{") return undefined;
    const m = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(at));
    if (m === null) return undefined;
    const max = m[2] === undefined ? Number(m[1]) : m[3] === "" ? Infinity : Number(m[3]);
    return max > 3 ? at + m[0].length : undefined;
  };
  const afterAtom = (at: number) => {
    const end = repeatAt(at);
    if (end !== undefined) frames[frames.length - 1] = true;
    return end ?? at;
  };
  while (i < source.length) {
    const c = source[i];
    if (c === "\\") {
      i += 2;
      if (/[pPuk]/.test(source[i - 1] ?? "") && source[i] === "{") i = source.indexOf("}", i) + 1 || source.length;
      i = afterAtom(i);
    } else if (c === "[") {
      i++;
      if (source[i] === "^") i++;
      // In a JavaScript pattern `[]` (nothing) and `[^]` (anything) are whole classes: a `]` right after the opening
      // closes it (treating it as a member hid the rest of the pattern from this guard).
      while (i < source.length && source[i] !== "]") i += source[i] === "\\" ? 2 : 1;
      i = afterAtom(i + 1);
    } else if (c === "(") {
      frames.push(false);
      i++;
      if (source[i] === "?") {
        const m = /^\?(?::|=|!|<=|<!|<[^>]*>)/.exec(source.slice(i));
        i += m === null ? 1 : m[0].length;
      }
    } else if (c === ")") {
      const inner = frames.length > 1 ? frames.pop()! : false;
      const end = repeatAt(i + 1);
      if (end !== undefined && inner) return true;
      if (inner || end !== undefined) frames[frames.length - 1] = true;
      i = end ?? i + 1;
    } else {
      i = afterAtom(i + 1);
    }
  }
  return false;
}
