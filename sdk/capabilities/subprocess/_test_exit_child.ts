// Child process of the stop-on-exit test (not published): starts `sleep 30` through localSubprocess({ stopOnExit }),
// which writes its pid to the file named by the first argument, then, once it runs, ends the way the second says:
// "exit" (process.exit) or "throw" (an uncaught exception).

import { readFile } from "node:fs/promises";
import process from "node:process";
import { localSubprocess } from "./local_subprocess.ts";

const [pidFile, how] = process.argv.slice(-2);
void localSubprocess({ stopOnExit: true }).run(["sh", "-c", `echo $$ > '${pidFile}'; exec sleep 30`]);
while ((await readFile(pidFile, "utf8").catch(() => "")).trim() === "") {
  await new Promise((resolve) => setTimeout(resolve, 20));
}
if (how === "exit") process.exit(0);
throw new Error("the host crashed");
