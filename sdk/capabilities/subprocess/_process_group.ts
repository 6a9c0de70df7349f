// Internal: whether a process group still has a member that runs, on Linux, from /proc. `kill(-pgid, 0)` also counts
// zombies: a member that ended but that its parent has not reaped (a parent that never waits, or, in a PID namespace,
// a PID 1 that does not reap orphans). Waiting on such a group lasts the whole kill grace for nothing.

import process from "node:process";

/**
 * Whether process group `pgid` has a member that is not a zombie: `true` when one runs, `false` when every member
 * found is a zombie, `undefined` when /proc cannot tell (not Linux, no /proc of this PID namespace, no member found,
 * as when another user's processes are hidden from this one) — the caller then keeps to what `kill(-pgid, 0)` says.
 */
export async function groupHasLiveMember(pgid: number): Promise<boolean | undefined> {
  if (process.platform !== "linux") return undefined;
  const { readdir, readFile, readlink } = await import("node:fs/promises");
  let names: string[];
  try {
    // A /proc of another PID namespace names other processes by these numbers.
    if (await readlink("/proc/self") !== String(process.pid)) return undefined;
    names = await readdir("/proc");
  } catch {
    return undefined;
  }
  let zombie = false;
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = await readFile(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // ended meanwhile
    }
    // `pid (comm) state ppid pgrp …`: the command may hold spaces and parentheses, the last ")" ends it.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(pgrp) !== pgid) continue;
    if (state !== "Z" && state !== "X") return true;
    zombie = true;
  }
  return zombie ? false : undefined;
}
