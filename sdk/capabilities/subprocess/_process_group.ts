// Internal: whether a process group still has a member that runs, on Linux, from /proc. `kill(-pgid, 0)` also counts
// zombies: a member that ended but that its parent has not reaped (a parent that never waits, or, in a PID namespace,
// a PID 1 that does not reap orphans). Waiting on such a group lasts the whole kill grace for nothing.

import process from "node:process";

/**
 * Whether process group `pgid` has a member that is not a zombie: `true` when one runs, `false` when every member
 * found is a zombie, `undefined` when /proc cannot tell (not Linux, no /proc of this PID namespace, no member found,
 * as when another user's processes are hidden from this one) — the caller then keeps to what `kill(-pgid, 0)` says.
 * A process whose main thread ended (`pthread_exit`) while other threads run shows `Z` too: it runs.
 */
export async function groupHasLiveMember(pgid: number): Promise<boolean | undefined> {
  if (process.platform !== "linux") return undefined;
  return await groupHasLiveMemberIn("/proc", pgid, process.pid);
}

/** The state letter of a `stat` file of /proc (`R`, `S`, `Z`…) and the process group it names. */
function parseStat(stat: string): { state: string; pgrp: number } {
  // `pid (comm) state ppid pgrp …`: the command may hold spaces and parentheses, the last ")" ends it.
  const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { state, pgrp: Number(pgrp) };
}

const ended = (state: string): boolean => state === "Z" || state === "X";

/**
 * {@linkcode groupHasLiveMember} read from the proc file system at `proc`, where this process is `selfPid` (its
 * `self` must lead there, or the /proc is another PID namespace's).
 */
export async function groupHasLiveMemberIn(proc: string, pgid: number, selfPid: number): Promise<boolean | undefined> {
  const { readdir, readFile, readlink } = await import("node:fs/promises");
  let names: string[];
  try {
    // A /proc of another PID namespace names other processes by these numbers.
    if (await readlink(`${proc}/self`) !== String(selfPid)) return undefined;
    names = await readdir(proc);
  } catch {
    return undefined;
  }
  /**
   * Whether process `pid`, whose stat says it ended, has a thread that runs: the stat of a process is its main
   * thread's, which shows `Z` once it called `pthread_exit`, while the others go on (the process ends with its last).
   */
  const threadRuns = async (pid: string): Promise<boolean> => {
    let tasks: string[];
    try {
      tasks = await readdir(`${proc}/${pid}/task`);
    } catch (error) {
      // Reaped meanwhile, or never had a task directory to read; one that cannot be read errs on waiting.
      return (error as { code?: unknown }).code !== "ENOENT";
    }
    for (const task of tasks) {
      if (!/^\d+$/.test(task)) continue;
      try {
        if (!ended(parseStat(await readFile(`${proc}/${pid}/task/${task}/stat`, "utf8")).state)) return true;
      } catch {
        continue; // ended meanwhile
      }
    }
    return false;
  };
  let zombie = false;
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = await readFile(`${proc}/${name}/stat`, "utf8");
    } catch {
      continue; // ended meanwhile
    }
    const { state, pgrp } = parseStat(stat);
    if (pgrp !== pgid) continue;
    if (!ended(state) || await threadRuns(name)) return true;
    zombie = true;
  }
  return zombie ? false : undefined;
}
