// Internal: a guard for the regular expressions grep is given. JavaScript's engine backtracks, and a pattern that
// repeats a group which itself repeats ((a+)+, (\w*)*) can take exponential time on a line of a few dozen
// characters, with the event loop blocked: no cancel, no timer, no other agent. So can a pattern that repeats a choice
// whose alternatives can match the same text ((a|a)*, (\w|\d)*, (?:a|aa)*): each repetition may take either, and a
// failing match tries every way. An outer repeat of at most 3 ({2}, {1,3}) is polynomial of a low degree and allowed;
// {1,10} is not (about n^10: seconds at 40 characters). A repeated choice of plain texts none of which begins another
// ((foo|bar)+) is allowed: a text splits into them one way only. A heuristic for these shapes, not a proof that a
// pattern is fast: it refuses some safe patterns ((\d|x)+, whose alternatives cannot overlap), and other slow shapes
// pass (an optional part repeated a bounded number of times, (a?){22}a{22}).

/** Whether the alternatives between `bars` of a group's body are plain texts none of which begins another (with ignore_case). */
function plainDistinct(body: string, bars: readonly number[]): boolean {
  const texts: string[] = [];
  let from = 0;
  for (const bar of [...bars, body.length]) {
    let text = "";
    for (let k = from; k < bar; k++) {
      const c = body[k];
      if (c === "\\") {
        const next = body[k + 1] ?? "";
        if (/[0-9A-Za-z]/.test(next) || next === "") return false; // \w, \d, \b, \1, …: not plain text
        text += next;
        k++;
      } else if ("^$.|?*+()[]{}".includes(c)) return false;
      else text += c;
    }
    texts.push(text);
    from = bar + 1;
  }
  return texts.every((a, x) => a !== "" && texts.every((b, y) => x === y || !beginsAsWithIgnoreCase(b, a)));
}

/**
 * How the `i` flag (without `u`) compares a character: by its upper case, unless that is more than one character or
 * turns a non-ASCII character into an ASCII one (ECMAScript's Canonicalize). σ and ς have the same upper case Σ and
 * match each other, though their lower cases differ; so do β and ϐ, µ and μ.
 */
function canonical(char: string): string {
  const upper = char.toUpperCase();
  if (upper.length !== 1) return char;
  return char.charCodeAt(0) >= 128 && upper.charCodeAt(0) < 128 ? char : upper;
}

/**
 * Whether `text` begins with what `prefix` matches with ignore_case (grep's patterns are judged as if it were on):
 * character by character, the same when equal, of the same canonical case or (erring on refusing) of the same lower
 * case.
 */
function beginsAsWithIgnoreCase(text: string, prefix: string): boolean {
  if (prefix.length > text.length) return false;
  for (let k = 0; k < prefix.length; k++) {
    const [a, b] = [prefix[k], text[k]];
    if (a !== b && canonical(a) !== canonical(b) && a.toLowerCase() !== b.toLowerCase()) return false;
  }
  return true;
}

/**
 * Whether `source` repeats (`*`, `+`, `{n,}`, or `{n,m}` with m above 3) a
 * group that contains such a repeat (`"nested"`), or a group with a choice of
 * alternatives that may match the same text (`"alternation"`); `undefined`
 * when neither.
 */
export function riskyRepeat(source: string): "nested" | "alternation" | undefined {
  // Per open group: whether it holds a repeat, whether it holds a risky choice, where its body starts, its `|`s.
  type Frame = { repeat: boolean; choice: boolean; start: number; bars: number[] };
  const frames: Frame[] = [{ repeat: false, choice: false, start: 0, bars: [] }];
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
    if (end !== undefined) frames[frames.length - 1].repeat = true;
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
      i++;
      if (source[i] === "?") {
        const m = /^\?(?::|=|!|<=|<!|<[^>]*>)/.exec(source.slice(i));
        i += m === null ? 1 : m[0].length;
      }
      frames.push({ repeat: false, choice: false, start: i, bars: [] });
    } else if (c === "|") {
      frames[frames.length - 1].bars.push(i);
      i++;
    } else if (c === ")") {
      const inner = frames.length > 1 ? frames.pop()! : { repeat: false, choice: false, start: i, bars: [] };
      const body = source.slice(inner.start, i);
      const bars = inner.bars.map((bar) => bar - inner.start);
      const choice = inner.choice || (bars.length > 0 && !plainDistinct(body, bars));
      const end = repeatAt(i + 1);
      if (end !== undefined && inner.repeat) return "nested";
      if (end !== undefined && choice) return "alternation";
      const outer = frames[frames.length - 1];
      if (inner.repeat || end !== undefined) outer.repeat = true;
      if (choice) outer.choice = true;
      i = end ?? i + 1;
    } else {
      i = afterAtom(i + 1);
    }
  }
  return undefined;
}
