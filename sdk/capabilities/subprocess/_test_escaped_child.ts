// Child process of the escaped-program test (not published): runs a command whose background program leaves the
// process group (`setsid`) and keeps the pipes, through localSubprocess() or, with the argument "shell", through
// bashShell(); prints that program's pid and the output, then returns. The test checks this process exits.

import process from "node:process";
import { localSubprocess } from "./local_subprocess.ts";
import { bashShell } from "../shell/bash_shell.ts";

// `$!` is setsid's pid, which it keeps when it executes sleep (a background job of `sh -c` leads no group).
const command = "setsid sleep 30 & echo $!; sleep 0.2; echo started";
const viaShell = process.argv[process.argv.length - 1] === "shell";
const result = viaShell
  ? await bashShell({ subprocess: localSubprocess(), cwd: "/" }).exec(command)
  : await localSubprocess().run(["sh", "-c", command]);
const [pid, started] = result.stdout.trim().split("\n");
console.log(JSON.stringify({ pid: Number(pid), started }));
