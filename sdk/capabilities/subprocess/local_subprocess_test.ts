// localSubprocess() against the subprocess contract: the assertions are the contract's
// (`_test_subprocess_contract.ts`), shared by every implementation of the seam.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { localSubprocess } from "./local_subprocess.ts";
import { groupHasLiveMember } from "./_process_group.ts";
import { subprocessContract, survivors } from "./_test_subprocess_contract.ts";
import { asWindowsHost } from "./_test_windows_host.ts";
import { childCommand } from "../../kernel/_test_child_command.ts";

subprocessContract({ name: "localSubprocess()", make: () => localSubprocess() });

/** Run `_test_escaped_child.ts` and wait for it to exit, at most `ms`: its output, or a timeout. */
function runEscapedChild(mode: string, ms: number): Promise<{ exited: boolean; stdout: string; stderr: string }> {
  const script = fileURLToPath(new URL("./_test_escaped_child.ts", import.meta.url));
  const [cmd, args] = childCommand(script, mode);
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      resolve({ exited: false, stdout, stderr });
    }, ms);
    child.on("close", () => {
      clearTimeout(timer);
      resolve({ exited: true, stdout, stderr });
    });
  });
}

describe("localSubprocess() and the environment", () => {
  it("on Windows, a variable of env replaces the host's of another case (one variable there)", async () => {
    const shown = 'printf "%s|%s" "${DSH_TEST_CASE-unset}" "${DSH_TEST_Case-unset}"';
    const { stdout } = await asWindowsHost(
      { DSH_TEST_CASE: "host" },
      () => localSubprocess().run(["sh", "-c", shown], { env: { DSH_TEST_Case: "mine" } }),
    );
    // Given both spellings, a Windows child gets the first in sort order (Node's rule): the host's here.
    assert.equal(stdout, "unset|mine");
  });
});

describe("localSubprocess() and a program that leaves the process group", () => {
  for (const mode of ["run", "shell"]) {
    it(`lets the host exit while the escaped program still holds the pipes (${mode})`, async () => {
      // The escaped program sleeps 30 s: the host must exit long before, once the call has returned.
      const { exited, stdout, stderr } = await runEscapedChild(mode, 10_000);
      const line = stdout.trim().split("\n").pop() ?? "";
      const { pid, started } = line.startsWith("{") ? JSON.parse(line) : { pid: 0, started: "" };
      if (pid > 0) {
        try {
          process.kill(pid, "SIGKILL");
        } catch { /* gone already */ }
      }
      assert.equal(exited, true, `the host process did not exit within 10 s: ${stderr}`);
      assert.equal(started, "started", `the output gathered before the call returned is kept: ${stdout}${stderr}`);
    });
  }
});

describe("localSubprocess({ stopOnExit: true })", () => {
  // Deno emits no `exit` on an uncaught exception (the option's documentation says so): there the crash is not covered.
  const ways = (globalThis as { Deno?: unknown }).Deno === undefined ? ["exit", "throw"] : ["exit"];
  for (const how of ways) {
    it(`stops the process groups of the runs still going when the host exits (${how})`, async () => {
      const dir = await mkdtemp(join(tmpdir(), "dsh-sub-"));
      const pidFile = join(dir, "pid");
      let pid = 0;
      try {
        const script = fileURLToPath(new URL("./_test_exit_child.ts", import.meta.url));
        const [cmd, args] = childCommand(script, pidFile, how);
        const child = spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"] });
        let stderr = "";
        child.stderr.on("data", (d) => (stderr += d));
        const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
        pid = Number((await readFile(pidFile, "utf8").catch(() => "")).trim());
        assert.ok(pid > 0, `the run did not start (exit code ${code}): ${stderr}`);
        assert.equal(code, how === "exit" ? 0 : 1, stderr);
        assert.deepEqual(await survivors([pid], 3000), [], "the run's program outlived the host");
      } finally {
        if (pid > 0) {
          try {
            process.kill(-pid, "SIGKILL");
          } catch { /* gone, as it should be */ }
        }
        await rm(dir, { recursive: true, force: true });
      }
    });
  }
});

describe("localSubprocess({ killGraceMs })", () => {
  /** A background process that needs 100 ms to clean up on SIGTERM: it writes `file` when it has. */
  const cleaner = (file: string, redirect = "") =>
    `(trap 'sleep 0.1; echo cleaned > ${file}; exit 0' TERM; while :; do sleep 0.02; done) ${redirect} &`;

  for (const mode of ["normal exit", "normal exit, pipes not held", "timeout", "abort"]) {
    it(`gives what is left of the group SIGTERM, then the grace (${mode})`, async () => {
      const dir = await mkdtemp(join(tmpdir(), "dsh-sub-"));
      const file = join(dir, "cleaned");
      try {
        const controller = new AbortController();
        const script = mode.startsWith("normal exit")
          ? `${cleaner(file, mode.endsWith("not held") ? ">/dev/null 2>&1" : "")} sleep 0.2; echo leader-exits`
          : `${cleaner(file)} wait`;
        if (mode === "abort") setTimeout(() => controller.abort(), 200);
        const r = await localSubprocess({ killGraceMs: 1000 }).run(["sh", "-c", script], {
          signal: controller.signal,
          ...(mode === "timeout" ? { timeoutMs: 200 } : {}),
        });
        assert.equal(r.timedOut, mode === "timeout");
        assert.equal(r.aborted, mode === "abort");
        assert.equal(
          await readFile(file, "utf8").catch(() => "(none)"),
          "cleaned\n",
          "the background process was killed before it could clean up",
        );
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }

  it("returns at once when the program leaves nothing behind, however long the grace", async () => {
    const service = localSubprocess({ killGraceMs: 10_000 });
    let started = Date.now();
    assert.equal((await service.run(["sh", "-c", "echo hi"])).stdout, "hi\n");
    assert.ok(Date.now() - started < 1000, `${Date.now() - started} ms`);
    started = Date.now();
    assert.equal((await service.run(["sleep", "5"], { timeoutMs: 100 })).timedOut, true);
    assert.ok(Date.now() - started < 1000, `${Date.now() - started} ms`);
  });

  it("kills after the grace what ignores SIGTERM", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-sub-"));
    const file = join(dir, "pid");
    try {
      const r = await localSubprocess({ killGraceMs: 300 }).run([
        "sh",
        "-c",
        `trap '' TERM; sleep 30 & echo $! > ${file}`,
      ]);
      assert.equal(r.exitCode, 0);
      const pid = Number((await readFile(file, "utf8")).trim());
      assert.deepEqual(await survivors([pid], 1000), []);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("localSubprocess() and a group left with zombies only", () => {
  it("does not wait the grace for members that ended and that no one reaps (Linux: read from /proc)", async () => {
    if (process.platform !== "linux") {
      // No /proc to read: kill(-pgid, 0) alone decides, and a zombie is waited for (until the grace is over).
      assert.equal(await groupHasLiveMember(process.pid), undefined);
      return;
    }
    const dir = await mkdtemp(join(tmpdir(), "dsh-sub-"));
    let parent = 0;
    try {
      // A subshell forks a sleep in the run's group, then leaves the group (setsid) and never waits for it: SIGTERM
      // ends the sleep, a zombie while the subshell lives (3 s), as orphans are in a PID namespace whose PID 1 does
      // not reap them.
      const script = "(sleep 30 >/dev/null 2>&1 & echo $! > zombie; " +
        "exec setsid sh -c 'echo $$ > parent; exec sleep 3' >/dev/null 2>&1) & " +
        "while [ ! -s parent ]; do sleep 0.01; done";
      const started = Date.now();
      const r = await localSubprocess({ killGraceMs: 5000 }).run(["sh", "-c", script], { cwd: dir });
      const took = Date.now() - started;
      parent = Number((await readFile(join(dir, "parent"), "utf8")).trim());
      const zombie = Number((await readFile(join(dir, "zombie"), "utf8")).trim());
      assert.equal(r.exitCode, 0);
      const stat = await readFile(`/proc/${zombie}/stat`, "utf8");
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      assert.equal(state, "Z", "the sleep was not left a zombie in the run's group");
      assert.equal(await groupHasLiveMember(Number(pgrp)), false);
      assert.equal(await groupHasLiveMember(parent), true, "the subshell's own group runs");
      assert.ok(took < 2000, `the run waited ${took} ms for a group of zombies`);
    } finally {
      if (parent > 0) {
        try {
          process.kill(parent, "SIGKILL");
        } catch { /* gone */ }
      }
      await rm(dir, { recursive: true, force: true });
    }
  });
});
