// Internal: glob patterns (`*`, `**`, `?`, `[...]`, `{a,b}`) matched against whole `/` paths, in time linear in the
// path for a given pattern (a set of pattern positions is advanced one character at a time, as a Thompson NFA is).
// A regular expression would do the same matching by backtracking: `*a*a*a*a*a*a*a*b`, a glob a model may send, takes
// seconds to fail on a 60-character name, with the event loop blocked.

import { HarnessError } from "../../kernel/harness_error.ts";

/** What a glob is made of: one character, a run of characters, `**\/` (whole directories), or a `{a,b}` choice. */
type Node =
  | { readonly kind: "one"; readonly test: (c: string) => boolean }
  | { readonly kind: "run"; readonly test: (c: string) => boolean }
  | { readonly kind: "dirs" }
  | { readonly kind: "choice"; readonly options: Node[][] };

const notSlash = (c: string) => c !== "/";
const any = () => true;

/** The members of a class body (`a-z0-9_`), as a test of one character; `/` is never a member. */
function classTest(glob: string, body: string, negated: boolean): (c: string) => boolean {
  const ranges: [number, number][] = [];
  for (let k = 0; k < body.length; k++) {
    const from = body.charCodeAt(k);
    if (body[k + 1] === "-" && k + 2 < body.length) {
      const to = body.charCodeAt(k + 2);
      if (to < from) throw new HarnessError("INVALID_ARGS", `The glob pattern "${glob}" has a range out of order`);
      ranges.push([from, to]);
      k += 2;
    } else ranges.push([from, from]);
  }
  const member = (c: string) => {
    const code = c.charCodeAt(0);
    return ranges.some(([from, to]) => code >= from && code <= to);
  };
  return negated ? (c) => c !== "/" && !member(c) : (c) => c !== "/" && member(c);
}

/** Parse a glob into its nodes. */
function parse(glob: string): Node[] {
  const groups: Node[][][] = []; // the options of each open `{`
  let current: Node[] = [];
  const top: Node[] = current;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*") {
      if (glob[i + 1] === "*") {
        const atStart = i === 0 || glob[i - 1] === "/";
        i++;
        if (atStart && glob[i + 1] === "/") {
          i++;
          current.push({ kind: "dirs" }); // `**/`: any number of directories
        } else current.push({ kind: "run", test: any });
      } else current.push({ kind: "run", test: notSlash });
    } else if (c === "?") current.push({ kind: "one", test: notSlash });
    else if (c === "[") {
      // A `]` right after `[` or `[!` (`[^`) is a member; a class never matches `/` (a path separator).
      const negated = glob[i + 1] === "!" || glob[i + 1] === "^";
      const first = i + (negated ? 2 : 1);
      const end = glob.indexOf("]", first + 1);
      if (end === -1) current.push({ kind: "one", test: (x) => x === "[" });
      else {
        const body = glob.slice(first, end).replaceAll("/", "");
        current.push({ kind: "one", test: classTest(glob, body, negated) });
        i = end;
      }
    } else if (c === "{") {
      const options: Node[][] = [[]];
      groups.push(options);
      current = options[0];
    } else if (c === "}" && groups.length > 0) {
      const options = groups.pop()!;
      current = groups.length === 0 ? top : groups[groups.length - 1][groups[groups.length - 1].length - 1];
      current.push({ kind: "choice", options });
    } else if (c === "," && groups.length > 0) {
      const options = groups[groups.length - 1];
      current = [];
      options.push(current);
    } else current.push({ kind: "one", test: (x) => x === c });
  }
  if (groups.length > 0) throw new HarnessError("INVALID_ARGS", `The glob pattern "${glob}" has an unclosed brace`);
  return top;
}

/** A state of the automaton: consume one character, or move on without one (`next`), or accept. */
type State =
  | { kind: "char"; test: (c: string) => boolean; out: number }
  | { kind: "split"; next: number[] }
  | { kind: "match" };

/** Build the automaton of `nodes`, each node's states leading on to `next`; returns the first state. */
function build(states: State[], nodes: readonly Node[], next: number): number {
  for (let k = nodes.length - 1; k >= 0; k--) {
    const node = nodes[k];
    if (node.kind === "one") {
      states.push({ kind: "char", test: node.test, out: next });
      next = states.length - 1;
    } else if (node.kind === "run") {
      // loop: either one more character (and back), or on.
      const loop: State = { kind: "split", next: [] };
      states.push(loop);
      const at = states.length - 1;
      states.push({ kind: "char", test: node.test, out: at });
      loop.next.push(states.length - 1, next);
      next = at;
    } else if (node.kind === "dirs") {
      // (?:[^/]*\/)*: loop: on, or a directory name then `/` and back.
      const loop: State = { kind: "split", next: [] };
      states.push(loop);
      const at = states.length - 1;
      states.push({ kind: "char", test: (c) => c === "/", out: at });
      const slash = states.length - 1;
      const name: State = { kind: "split", next: [] };
      states.push(name);
      const nameAt = states.length - 1;
      states.push({ kind: "char", test: notSlash, out: nameAt });
      name.next.push(states.length - 1, slash);
      loop.next.push(nameAt, next);
      next = at;
    } else {
      states.push({ kind: "split", next: node.options.map((option) => build(states, option, next)) });
      next = states.length - 1;
    }
  }
  return next;
}

/**
 * Compile a glob into a test of whole relative paths: `*` any run of characters but `/`, `**` any run (`**\/` at
 * the start of a segment: any number of whole directories), `?` one character but `/`, `[abc]` `[a-z]` `[!x]`
 * (`[^x]`) one of (or none of) a class, never `/`, `{a,b}` either. The time is linear in the path's length.
 *
 * @throws {HarnessError} `INVALID_ARGS` for an empty pattern, an unclosed brace or a class range out of order.
 */
export function globMatcher(glob: string): (path: string) => boolean {
  if (typeof glob !== "string" || glob === "") throw new HarnessError("INVALID_ARGS", "The glob pattern is empty");
  const states: State[] = [{ kind: "match" }];
  const start = build(states, parse(glob), 0);
  const seen = new Uint32Array(states.length);
  let generation = 0;
  /** Add `state` and every state reached from it without a character. */
  const add = (into: number[], state: number) => {
    const stack = [state];
    while (stack.length > 0) {
      const s = stack.pop()!;
      if (seen[s] === generation) continue;
      seen[s] = generation;
      const st = states[s];
      if (st.kind === "split") { for (let k = st.next.length - 1; k >= 0; k--) stack.push(st.next[k]); }
      else into.push(s);
    }
  };
  const bump = () => {
    if (++generation === 0xffff_ffff) {
      seen.fill(0);
      generation = 1;
    }
  };
  return (path) => {
    bump();
    let current: number[] = [];
    add(current, start);
    for (let i = 0; i < path.length && current.length > 0; i++) {
      const c = path[i];
      bump();
      const next: number[] = [];
      for (const s of current) {
        const st = states[s];
        if (st.kind === "char" && st.test(c)) add(next, st.out);
      }
      current = next;
    }
    return current.includes(0);
  };
}
