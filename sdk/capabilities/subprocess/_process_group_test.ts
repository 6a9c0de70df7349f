import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { groupHasLiveMemberIn } from "./_process_group.ts";

/** A /proc holding `processes`: each its pid, group, state and the states of its threads (none: no task directory). */
async function fakeProc(
  processes: { pid: number; pgrp: number; state: string; threads?: Record<number, string> }[],
): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "dsh-proc-"));
  await symlink("4242", join(root, "self"));
  const stat = (pid: number, state: string, pgrp: number) => `${pid} (a (b) c) ${state} 1 ${pgrp} ${pgrp} 0 -1 0\n`;
  for (const { pid, pgrp, state, threads } of processes) {
    await mkdir(join(root, String(pid)));
    await writeFile(join(root, String(pid), "stat"), stat(pid, state, pgrp));
    for (const [tid, threadState] of Object.entries(threads ?? {})) {
      await mkdir(join(root, String(pid), "task", tid), { recursive: true });
      await writeFile(join(root, String(pid), "task", tid, "stat"), stat(Number(tid), threadState, pgrp));
    }
  }
  return root;
}

describe("groupHasLiveMemberIn()", () => {
  it("counts a process whose main thread ended (Z) while another thread runs as live, and a zombie as not", async () => {
    const proc = await fakeProc([
      // The main thread called pthread_exit: the process's stat shows Z, a thread of it still runs.
      { pid: 100, pgrp: 100, state: "Z", threads: { 100: "Z", 101: "S" } },
      // Zombies: every thread ended, or no task directory left.
      { pid: 200, pgrp: 200, state: "Z", threads: { 200: "Z" } },
      { pid: 201, pgrp: 200, state: "Z" },
      { pid: 202, pgrp: 200, state: "X", threads: { 202: "Z", 203: "X" } },
      { pid: 300, pgrp: 300, state: "Z", threads: { 300: "Z" } },
      { pid: 301, pgrp: 300, state: "R" },
    ]);
    try {
      assert.equal(await groupHasLiveMemberIn(proc, 100, 4242), true, "a thread of the process runs");
      assert.equal(await groupHasLiveMemberIn(proc, 200, 4242), false, "zombies only");
      assert.equal(await groupHasLiveMemberIn(proc, 300, 4242), true, "another member runs");
      assert.equal(await groupHasLiveMemberIn(proc, 400, 4242), undefined, "no member found");
      assert.equal(await groupHasLiveMemberIn(proc, 100, 4243), undefined, "another PID namespace's /proc");
    } finally {
      await rm(proc, { recursive: true, force: true });
    }
  });
});
