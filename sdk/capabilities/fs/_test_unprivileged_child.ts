// Test child, run as an unprivileged user (setpriv, when the tests run as root): given `[root, ...ops]` as JSON in its
// last argument, writes (`write:path`) and edits (`edit:path`, replacing "old" with "new") files of the root; prints
// each one's error code (null when it succeeded) as JSON.

import process from "node:process";
import { localFs } from "./local_fs.ts";

const [root, ...ops] = JSON.parse(process.argv[process.argv.length - 1]) as string[];
const fs = localFs({ root });
const codes: (string | null)[] = [];
for (const op of ops) {
  const [kind, path] = [op.slice(0, op.indexOf(":")), op.slice(op.indexOf(":") + 1)];
  try {
    if (kind === "edit") await fs.edit(path, "old", "new");
    else await fs.writeFile(path, `written by ${process.getuid?.()}\n`);
    codes.push(null);
  } catch (error) {
    codes.push((error as { code?: string }).code ?? String(error));
  }
}
console.log(JSON.stringify(codes));
