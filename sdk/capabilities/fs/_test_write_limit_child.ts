// Test child: under a file size limit (`ulimit -f`, set by the parent), an edit and a write past it fail; prints the
// error codes as JSON.

import process from "node:process";
import { localFs } from "./local_fs.ts";

const fs = localFs({ root: process.argv[process.argv.length - 1] });
const codes: (string | undefined)[] = [];
for (
  const op of [
    () => fs.edit("main.ts", "MARKER", "x".repeat(100_000)),
    () => fs.writeFile("cfg.json", "y".repeat(100_000)),
  ]
) {
  try {
    await op();
    codes.push(undefined);
  } catch (error) {
    codes.push((error as { code?: string }).code);
  }
}
console.log(JSON.stringify(codes));
