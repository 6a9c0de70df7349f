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
      const end = glob.indexOf("]", i + 2);
      if (end === -1) out += "\\[";
      else {
        let body = glob.slice(i + 1, end).replaceAll("\\", "\\\\");
        if (body.startsWith("!")) body = "^" + body.slice(1);
        out += `[${body}]`;
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
