// The SubprocessService contract, as one suite every provider runs. The
// process-group checks read /proc (Linux), where the suite runs in CI.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HarnessError } from "../../kernel/harness_error.ts";
import type { SubprocessService } from "./subprocess_service.ts";

export interface SubprocessTarget {
  readonly name: string;
  make(): SubprocessService;
}

const code = (c: string) => (error: unknown) => HarnessError.isInstance(error, c);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether a process is alive: present in /proc and not a zombie. */
export async function alive(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/** Wait until `pids` are all gone, up to `ms`; returns the ones still alive. */
export async function survivors(pids: readonly number[], ms: number): Promise<number[]> {
  const until = Date.now() + ms;
  for (;;) {
    const left: number[] = [];
    for (const pid of pids) if (await alive(pid)) left.push(pid);
    if (left.length === 0 || Date.now() >= until) return left;
    await sleep(20);
  }
}

/** Read pids a script wrote, one per line, once `count` are there. */
async function pidsIn(file: string, count: number): Promise<number[]> {
  for (let i = 0; i < 250; i++) {
    const text = await readFile(file, "utf8").catch(() => "");
    const pids = text.split("\n").filter((l) => l.trim() !== "").map(Number);
    if (pids.length >= count) return pids;
    await sleep(20);
  }
  throw new Error(`the script did not write ${count} pids to ${file}`);
}

export function subprocessContract(target: SubprocessTarget): void {
  describe(`${target.name} (subprocess contract)`, () => {
    it("returns the exit code, stdout and stderr", async () => {
      const r = await target.make().run(["sh", "-c", "echo out; echo err >&2; exit 7"]);
      assert.equal(r.exitCode, 7);
      assert.equal(r.signal, null);
      assert.equal(r.stdout, "out\n");
      assert.equal(r.stderr, "err\n");
      assert.equal(r.timedOut, false);
      assert.equal(r.aborted, false);
      assert.equal(r.stdoutTruncated, false);
    });

    it("passes argv without a shell", async () => {
      const r = await target.make().run(["printf", "%s|", "a b", "$HOME", "*"]);
      assert.equal(r.stdout, "a b|$HOME|*|");
    });

    it("runs in cwd with env over the inherited environment, or alone", async () => {
      const dir = await mkdtemp(join(tmpdir(), "dsh-sub-"));
      try {
        const service = target.make();
        const r = await service.run(["sh", "-c", 'pwd; echo "$DSH_X"; echo "${PATH:+has-path}"'], {
          cwd: dir,
          env: { DSH_X: "x1" },
        });
        const [pwd, x, path] = r.stdout.trim().split("\n");
        assert.equal(pwd.endsWith(dir.split("/").pop()!), true);
        assert.equal(x, "x1");
        assert.equal(path, "has-path");
        const bare = await service.run(["/bin/sh", "-c", 'echo "[${HOME}]"'], { inheritEnv: false, env: {} });
        assert.equal(bare.stdout, "[]\n");
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it("refuses an inheritEnv that is not a boolean rather than pass the whole environment", async () => {
      const service = target.make();
      for (const inheritEnv of [["PATH"], [], "PATH", 0, null]) {
        await assert.rejects(
          service.run(["true"], { inheritEnv: inheritEnv as never }),
          code("INVALID_ARGS"),
          JSON.stringify(inheritEnv),
        );
      }
    });

    it("writes stdin and closes it", async () => {
      const r = await target.make().run(["sh", "-c", "cat; echo done"], { stdin: '{"a":1}\n' });
      assert.equal(r.stdout, '{"a":1}\ndone\n');
      const bytes = await target.make().run(["wc", "-c"], { stdin: new Uint8Array(1000) });
      assert.equal(bytes.stdout.trim(), "1000");
      const none = await target.make().run(["cat"]);
      assert.equal(none.stdout, "");
      assert.equal(none.exitCode, 0);
    });

    it("caps each stream and counts what it dropped, never splitting a character", async () => {
      const r = await target.make().run([
        "sh",
        "-c",
        "head -c 100000 /dev/zero | tr '\\0' a; printf 'é%.0s' $(seq 1000) >&2",
      ], {
        maxOutputBytes: 1001,
      });
      assert.equal(r.stdout.length, 1001);
      assert.equal(r.stdoutTruncated, true);
      assert.equal(r.stdoutBytes, 100000);
      assert.equal(r.stderr, "é".repeat(500));
      assert.equal(r.stderrTruncated, true);
      assert.equal(r.stderrBytes, 2000);
      assert.equal(r.exitCode, 0);
    });

    it("reports a program killed by a signal", async () => {
      const r = await target.make().run(["sh", "-c", "kill -9 $$"]);
      assert.equal(r.exitCode, null);
      assert.equal(r.signal, "SIGKILL");
    });

    it("rejects a program that cannot start, and bad arguments", async () => {
      const service = target.make();
      await assert.rejects(service.run(["dsh-no-such-program-xyz"]), code("SPAWN_FAILED"));
      // A missing working directory is named as such, not as a missing program.
      await assert.rejects(
        service.run(["pwd"], { cwd: "/dsh-no-such-dir/x" }),
        (e: Error) => code("SPAWN_FAILED")(e) && /working directory "\/dsh-no-such-dir\/x"/.test(e.message),
      );
      await assert.rejects(service.run([]), code("INVALID_ARGS"));
      await assert.rejects(service.run(["sh"], { timeoutMs: -1 }), code("INVALID_ARGS"));
      // A timer fires at once past 2^31 - 1 ms: such a timeout would be none.
      for (const timeoutMs of [2 ** 31, Infinity]) {
        await assert.rejects(service.run(["sh"], { timeoutMs }), code("INVALID_ARGS"), String(timeoutMs));
      }
      // No argument or variable carries a NUL, and a variable name with "=" would set another variable (A=B=c is A).
      await assert.rejects(service.run(["echo", "a\0b"]), code("INVALID_ARGS"));
      await assert.rejects(service.run(["sh", "-c", "echo $X"], { env: { X: "a\0b" } }), code("INVALID_ARGS"));
      for (const name of ["A=B", "", "A\0"]) {
        await assert.rejects(
          service.run(["true"], { env: { [name]: "c" } }),
          code("INVALID_ARGS"),
          JSON.stringify(name),
        );
      }
    });

    it("stops the whole process group on timeout: no descendant survives", async () => {
      const dir = await mkdtemp(join(tmpdir(), "dsh-sub-"));
      const file = join(dir, "pids");
      try {
        const script =
          `sleep 30 & echo $! >> ${file}; (sleep 30; echo late) & echo $! >> ${file}; echo $$ >> ${file}; ` +
          `echo started; wait`;
        const started = Date.now();
        const r = await target.make().run(["sh", "-c", script], { timeoutMs: 300 });
        assert.equal(r.timedOut, true);
        assert.equal(r.aborted, false);
        assert.equal(r.stdout, "started\n");
        assert.ok(Date.now() - started < 5000);
        const pids = await pidsIn(file, 3);
        assert.deepEqual(await survivors(pids, 1000), []);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it("stops the whole process group on abort, within a second, even when the leader ignores SIGTERM", async () => {
      const dir = await mkdtemp(join(tmpdir(), "dsh-sub-"));
      const file = join(dir, "pids");
      try {
        const script = `trap '' TERM; sleep 30 & echo $! >> ${file}; echo $$ >> ${file}; while :; do sleep 0.05; done`;
        const controller = new AbortController();
        const running = target.make().run(["sh", "-c", script], { signal: controller.signal });
        const pids = await pidsIn(file, 2);
        const abortedAt = Date.now();
        controller.abort();
        const r = await running;
        assert.equal(r.aborted, true);
        assert.equal(r.timedOut, false);
        assert.deepEqual(await survivors(pids, 1000 - (Date.now() - abortedAt)), []);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it("does not let background children outlive a normal exit", async () => {
      const dir = await mkdtemp(join(tmpdir(), "dsh-sub-"));
      const file = join(dir, "pids");
      try {
        const r = await target.make().run(["sh", "-c", `sleep 30 & echo $! >> ${file}; echo ok`]);
        assert.equal(r.exitCode, 0);
        assert.equal(r.stdout, "ok\n");
        const pids = await pidsIn(file, 1);
        assert.deepEqual(await survivors(pids, 1000), []);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it("returns at once for a signal aborted before the start", async () => {
      const r = await target.make().run(["sh", "-c", "echo never"], { signal: AbortSignal.abort() });
      assert.equal(r.aborted, true);
      assert.equal(r.stdout, "");
      assert.equal(r.exitCode, null);
    });

    it("does not lose an abort that arrives just after the call, before the program has started", async () => {
      for (const cwd of [undefined, tmpdir()]) {
        const controller = new AbortController();
        const started = Date.now();
        const running = target.make().run(["sh", "-c", "echo started; sleep 5; echo finished"], {
          signal: controller.signal,
          cwd,
        });
        controller.abort();
        const r = await running;
        assert.equal(r.aborted, true, `cwd ${cwd}`);
        assert.equal(r.stdout.includes("finished"), false, `cwd ${cwd}`);
        assert.ok(Date.now() - started < 2000, `cwd ${cwd}: ${Date.now() - started} ms`);
      }
    });
  });
}
