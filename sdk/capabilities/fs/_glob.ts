// Internal: glob patterns (`*`, `**`, `?`, `[...]`, `{a,b}`) as regular expressions over `/` paths.

import { HarnessError } from "../../kernel/harness_error.ts";

const ESCAPE = /[.+^${}()|\\]/;

/** Compile a glob into a regular expression matching whole relative paths. */
export function globToRegExp(glob: string): RegExp {
  if (typeof glob !== "string" || glob === "") throw new HarnessError("INVALID_ARGS", "The glob pattern is empty");
  let out = "";
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*") {
      if (glob[i + 1] === "*") {
        const atStart = i === 0 || glob[i - 1] === "/";
        i++;
        if (atStart && glob[i + 1] === "/") {
          i++;
          out += "(?:[^/]*/)*"; // `**/`: any number of directories
        } else out += ".*";
      } else out += "[^/]*";
    } else if (c === "?") out += "[^/]";
    else if (c === "[") {
      // A `]` right after `[` or `[!` (`[^`) is a member; a class never matches `/` (a path separator).
      const negated = glob[i + 1] === "!" || glob[i + 1] === "^";
      const first = i + (negated ? 2 : 1);
      const end = glob.indexOf("]", first + 1);
      if (end === -1) out += "\\[";
      else {
        const body = glob.slice(first, end).replaceAll("/", "").replace(/[\\\]\[^]/g, (m) => `\\${m}`);
        out += negated ? `[^/${body}]` : body === "" ? "(?!)" : `[${body}]`;
        i = end;
      }
    } else if (c === "{") {
      braces++;
      out += "(?:";
    } else if (c === "}" && braces > 0) {
      braces--;
      out += ")";
    } else if (c === "," && braces > 0) out += "|";
    else out += ESCAPE.test(c) ? `\\${c}` : c;
  }
  if (braces > 0) throw new HarnessError("INVALID_ARGS", `The glob pattern "${glob}" has an unclosed brace`);
  return new RegExp(`^${out}$`, "s");
}
