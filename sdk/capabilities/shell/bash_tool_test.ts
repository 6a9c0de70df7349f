import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { toolCaller } from "../_test_tool_caller.ts";
import { localSubprocess } from "../subprocess/local_subprocess.ts";
import { survivors } from "../subprocess/_test_subprocess_contract.ts";
import { recordingSubprocess } from "../subprocess/_test_recording_subprocess.ts";
import { asWindowsHost } from "../subprocess/_test_windows_host.ts";
import type { SubprocessService } from "../subprocess/subprocess_service.ts";
import { HarnessError } from "../../kernel/harness_error.ts";
import { bashShell, SHELL_ENV } from "./bash_shell.ts";
import { bashTool } from "./bash_tool.ts";

async function withTool(
  fn: (
    run: (command: string, extra?: object) => Promise<{ text: string; meta: unknown; code?: string }>,
    dir: string,
  ) => Promise<void>,
  options: Parameters<typeof bashTool>[1] = {},
  signal?: AbortSignal,
) {
  const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-bash-")));
  const call = toolCaller([bashTool(bashShell({ subprocess: localSubprocess(), cwd: dir }), options)], {
    signal,
    sessionId: "s1",
  });
  const run = (command: string, extra: object = {}) => call("bash", { command, ...extra });
  try {
    await fn(run, dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe("bash tool", () => {
  it("shows stdout, stderr and a non-zero exit code as a result, not an error", async () => {
    await withTool(async (run) => {
      assert.deepEqual(await run("echo out; echo err >&2; exit 4"), {
        text: "out\n[stderr]\nerr\n[exit code 4]",
        meta: { exitCode: 4 },
        code: undefined,
      });
      assert.equal((await run("true")).text, "(no output)");
      assert.equal((await run("printf 'no newline'")).text, "no newline");
    });
  });

  it("keeps the working directory of the session across calls", async () => {
    await withTool(async (run, dir) => {
      await run("mkdir -p a/b && cd a/b && export X=1");
      assert.equal((await run("pwd")).text, `${dir}/a/b`);
      assert.equal((await run('echo "[$X]"')).text, "[]");
      await run("cd ..");
      assert.equal((await run("pwd")).text, `${dir}/a`);
      await run("cd /nonexistent-dsh || true");
      assert.equal((await run("pwd")).text, `${dir}/a`);
    });
  });

  it("a session whose working directory was removed goes back to the initial one, and says so", async () => {
    await withTool(async (run, dir) => {
      await run("mkdir gone && cd gone && rmdir ../gone");
      assert.equal(
        (await run("pwd")).text,
        `${dir}\n[stderr]\ndsh: the working directory ${dir}/gone is gone; back in ${dir}`,
      );
      assert.equal((await run("pwd")).text, dir);
    });
  });

  it("stops a command at its timeout and says so", async () => {
    await withTool(async (run) => {
      const started = Date.now();
      const r = await run("echo begun; sleep 20", { timeout_ms: 300 });
      assert.equal(r.text, "begun\n[timed out after 300 ms; the command was stopped]");
      assert.ok(Date.now() - started < 5000);
    });
  });

  it("cancels mid-run: the process group is gone within a second", async () => {
    const controller = new AbortController();
    await withTool(
      async (run, dir) => {
        const file = join(dir, "pids");
        const running = run(`sleep 30 & echo $! >> ${file}; echo $$ >> ${file}; wait`);
        let pids: number[] = [];
        for (let i = 0; i < 250 && pids.length < 2; i++) {
          await new Promise((r) => setTimeout(r, 20));
          pids = (await readFile(file, "utf8").catch(() => "")).split("\n").filter(Boolean).map(Number);
        }
        assert.equal(pids.length, 2);
        const at = Date.now();
        controller.abort();
        const r = await running;
        assert.equal(r.code, "ABORTED");
        assert.deepEqual(await survivors(pids, 1000 - (Date.now() - at)), []);
      },
      {},
      controller.signal,
    );
  });

  it("caps the output with an explicit note", async () => {
    await withTool(async (run) => {
      const r = await run("yes 0123456789 | head -c 100000; echo tail >&2", {});
      assert.ok(r.text.endsWith("[output truncated: showing 2000 of 100014 characters]"), r.text.slice(-120));
      const bytes = await run("head -c 5000 /dev/zero | tr '\\0' x");
      assert.ok(bytes.text.startsWith("x".repeat(100)));
    }, { maxOutputChars: 2000 });
    await withTool(async (run) => {
      const r = await run("head -c 5000 /dev/zero | tr '\\0' x; exit 2");
      assert.equal(r.text, `${"x".repeat(1000)}\n[stdout truncated]\n[exit code 2]`);
      // Output just under the cap is whole: the shell's own directory line does not count against it.
      assert.equal((await run("head -c 995 /dev/zero | tr '\\0' y")).text, "y".repeat(995));
    }, { maxOutputBytes: 1000 });
  });

  it("passes the commands the host's ordinary variables only, not its API keys, unless inheritEnv says otherwise", async () => {
    const host = { DSH_TEST_API_KEY: "sk-secret", DSH_TEST_HOME: "/opt/x", LC_DSH_TEST: "l" };
    Object.assign(process.env, host);
    try {
      const shown = 'echo "${DSH_TEST_API_KEY-unset}|${DSH_TEST_HOME-unset}|$LC_DSH_TEST|${HOME:+home}|$DSH_SET"';
      await withTool(async (run) => {
        assert.equal((await run(shown)).text, "unset|unset|l|home|");
      });
      const shell = (options: Partial<Parameters<typeof bashShell>[0]>) =>
        bashShell({ subprocess: localSubprocess(), cwd: "/", ...options });
      assert.equal((await shell({ inheritEnv: true }).exec(shown)).stdout, "sk-secret|/opt/x|l|home|\n");
      const listed = shell({ inheritEnv: [...SHELL_ENV, "DSH_TEST_HOME"], env: { DSH_SET: "all" } });
      assert.equal((await listed.exec(shown)).stdout, "unset|/opt/x|l|home|all\n");
      // A call's own variables go over the service's.
      assert.equal((await listed.exec(shown, { env: { DSH_SET: "one" } })).stdout, "unset|/opt/x|l|home|one\n");
      assert.equal((await shell({ inheritEnv: false }).exec(shown)).stdout, "unset|unset|||\n");
      // Windows' own ordinary variables (matched in any case there).
      const windows = ["USERNAME", "COMPUTERNAME", "PROCESSOR_ARCHITECTURE", "NUMBER_OF_PROCESSORS", "PROGRAMW6432"];
      for (const name of [...windows, "COMMONPROGRAMFILES"]) assert.ok(SHELL_ENV.includes(name), name);
    } finally {
      for (const name of Object.keys(host)) delete process.env[name];
    }
  });

  it("on Windows, a variable set in another case than the host's replaces it (one variable there)", async () => {
    const recording = recordingSubprocess();
    await asWindowsHost({ DSH_TEST_CASE: "host" }, async () => {
      const shell = bashShell({
        subprocess: recording.service,
        cwd: "/",
        inheritEnv: ["DSH_TEST_CASE"],
        env: { Dsh_Set: "a" },
      });
      await shell.exec("true", { env: { DSH_TEST_Case: "call", DSH_SET: "b" } });
    });
    // Given both spellings, a Windows child gets the first in sort order (Node's rule), not the one set.
    assert.deepEqual(recording.given.map((options) => options.env), [{ DSH_TEST_Case: "call", DSH_SET: "b" }]);
  });

  it("gives a provider written to the boolean inheritEnv exactly the variables it picked, never a list", async () => {
    const host = { DSH_TEST_API_KEY: "sk-secret", DSH_TEST_HOME: "/opt/x" };
    Object.assign(process.env, host);
    try {
      const local = localSubprocess();
      const seen: unknown[] = [];
      // A third-party provider of the old contract: anything but false inherits the whole environment.
      const oldContract: SubprocessService = {
        run: (argv, options = {}) => {
          seen.push(options.inheritEnv);
          return local.run(argv, { ...options, inheritEnv: (options.inheritEnv as unknown) !== false });
        },
      };
      const shown = 'echo "${DSH_TEST_API_KEY-unset}|${DSH_TEST_HOME-unset}|${HOME:+home}|$DSH_SET"';
      const shell = (options: Partial<Parameters<typeof bashShell>[0]>) =>
        bashShell({ subprocess: oldContract, cwd: "/", ...options });
      assert.equal((await shell({}).exec(shown)).stdout, "unset|unset|home|\n");
      const listed = shell({ inheritEnv: ["HOME", "DSH_TEST_H*"], env: { DSH_SET: "s" } });
      assert.equal((await listed.exec(shown)).stdout, "unset|/opt/x|home|s\n");
      assert.equal((await shell({ inheritEnv: false }).exec(shown)).stdout, "unset|unset||\n");
      assert.equal((await shell({ inheritEnv: true }).exec(shown)).stdout, "sk-secret|/opt/x|home|\n");
      assert.deepEqual(seen, [false, false, false, true]);
      for (const inheritEnv of [["A=B"], ["*"], ["A*B"], [""], "PATH", [1]]) {
        assert.throws(
          () => shell({ inheritEnv: inheritEnv as never }),
          (e: unknown) => HarnessError.isInstance(e, "INVALID_ARGS"),
          JSON.stringify(inheritEnv),
        );
      }
    } finally {
      for (const name of Object.keys(host)) delete process.env[name];
    }
  });

  it("bashShell counts the command's bytes without its own directory line, also on a stream the cap cut", async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-bash-")));
    try {
      const shell = bashShell({ subprocess: localSubprocess(), cwd: dir });
      const counts = async (command: string) => {
        const r = await shell.exec(command, { maxOutputBytes: 1000 });
        return [r.stdoutBytes, r.stderrBytes, r.stdoutTruncated, r.stderrTruncated, r.cwd];
      };
      assert.deepEqual(await counts("printf abc; printf de >&2"), [3, 2, false, false, dir]);
      // The directory line fell past the cut: the other stream's copy of it tells how long it was.
      assert.deepEqual(await counts("head -c 100000 /dev/zero; cd /"), [100000, 0, true, false, "/"]);
      assert.deepEqual(await counts("head -c 100000 /dev/zero >&2; printf x"), [1, 100000, false, true, "/"]);
      // Both lines cut inside: the cap keeps 1000 bytes and room for the line (4146 in all), so after 5100 bytes of
      // output, "\n", the marker (44 characters) and the directory "/" are kept but not the newline that ends it.
      // Neither line names the directory, and each began where it shows.
      assert.deepEqual(
        await counts("head -c 5100 /dev/zero; head -c 5100 /dev/zero >&2"),
        [5100, 5100, true, true, "/"],
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("cuts the output between characters, never inside a surrogate pair", async () => {
    await withTool(async (run) => {
      // 9 a's and 😀 (two UTF-16 units) cut at 10: the a's alone, not the first half of the emoji.
      assert.equal(
        (await run("printf 'aaaaaaaaa\\360\\237\\230\\200zz'")).text,
        "aaaaaaaaa\n[output truncated: showing 9 of 13 characters]",
      );
    }, { maxOutputChars: 10 });
  });

  it("keeps a directory the command changed to before it exits", async () => {
    await withTool(async (run, dir) => {
      await run("mkdir -p sub && cd sub && exit 0");
      assert.equal((await run("pwd")).text, `${dir}/sub`);
      assert.equal((await run("cd .. && exit 3")).text, "[exit code 3]");
      assert.equal((await run("pwd")).text, dir);
    });
  });

  it("the command reaches bash as its own text: it cannot read itself or the shell's arguments", async () => {
    await withTool(async (run, dir) => {
      // `${2@P}` prompt-expanded the command's own text, where `\044\050` decodes to a `$(` that ran.
      const command = `git \\044\\050touch ${dir}/pwned\\073 kill \\044\\044\\051 \${2@P}`;
      await run(command);
      await assert.rejects(readFile(join(dir, "pwned")));
      assert.equal((await run("echo [$#] [$1] [$2] [${2@P}] [${__dsh_command-unset}]")).text, "[0] [] [] [] [unset]");
      // The shell's own state still works: the directory is kept, even after the command resets the arguments.
      await run("mkdir -p d && cd d && set -- a b c d");
      assert.equal((await run("pwd")).text, `${dir}/d`);
    });
  });

  it("bash's line numbers are the command's, and the directory survives set -x, IFS and the command's own printf", async () => {
    await withTool(async (run, dir) => {
      assert.match((await run("echo a\nfi")).text, /line 2: syntax error/);
      assert.equal((await run("echo $LINENO")).text, "1");
      await run("mkdir -p d && set -x && cd d");
      assert.equal((await run("pwd")).text, `${dir}/d`);
      assert.equal((await run("IFS=0123456789; exit 42")).text, "[exit code 42]");
      await run("printf(){ :; }; exit(){ builtin exit 0; }; cd ..");
      assert.equal((await run("pwd")).text, dir);
      // The marker cannot be moved by the command.
      await run("unset -v __dsh_marker; cd d");
      assert.equal((await run("pwd")).text, `${dir}/d`);
    });
  });

  it("runs under a POSIX sh too (dash where it is /bin/sh): the directory is kept and nothing is added to stderr", async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "dsh-sh-")));
    try {
      const shell = bashShell({ subprocess: localSubprocess(), cwd: dir, shell: "sh" });
      const moved = await shell.exec("mkdir -p d && cd d && exit 3", { sessionId: "s" });
      assert.deepEqual([moved.exitCode, moved.stderr], [3, ""]);
      const where = await shell.exec("pwd", { sessionId: "s" });
      assert.deepEqual([where.stdout.trim(), where.stderr], [`${dir}/d`, ""]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a command past one process argument's 128 KiB, or with a NUL, is a coded result, not a spawn failure", async () => {
    await withTool(async (run) => {
      const long = await run(`cat > big.txt <<'EOF'\n${"x".repeat(200_000)}\nEOF`);
      assert.equal(long.code, "COMMAND_TOO_LONG");
      assert.match(long.text, /the file tools/);
      assert.equal((await run("echo a\u0000b")).code, "INVALID_ARGS");
      // Just under the limit still runs.
      assert.equal((await run(`: ${"y".repeat(128 * 1024 - 20)}; echo ok`)).text, "ok");
    });
  });

  it("only a command bash reads as the words it shows has a permission subject", () => {
    const tool = bashTool(bashShell({ subprocess: localSubprocess(), cwd: "/" }));
    const subject = (command: string) => tool.permissionSubject?.({ command });
    for (
      const command of [
        "git status",
        "git log --format=%h -n 3",
        'git commit -m "fix: a, b"',
        "ls -la src/x_y.ts",
        "git show HEAD^",
      ]
    ) {
      assert.equal(subject(command), command);
    }
    for (
      const command of [
        "git \\044\\050touch x\\051 ${2@P}",
        "git $HOME",
        "git ${x}",
        'git "$(id)"',
        "git `id`",
        "git status\\;id",
        "git status; rm -rf x",
        "git status && id",
        "git status | sh",
        "git status > x",
        "git diff *",
        "git diff ?",
        "git diff [ab]",
        "git {a,b}",
        "git ~root",
        "git (x)",
        "git status # x",
        "! git status",
        "git status\nid",
        "git status\rid",
        "git status\u00a0x",
        "git st\u0000",
        // A leading assignment runs another command than the subject's first word names.
        "git=1 sh -c 'touch x'",
        "GIT_SSH_COMMAND=x git fetch",
      ]
    ) {
      assert.equal(subject(command), undefined, command);
    }
  });
});
