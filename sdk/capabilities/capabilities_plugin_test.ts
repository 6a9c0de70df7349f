import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHarness } from "../harness.ts";
import { programmaticApprover } from "../tools/mod.ts";
import { resolveConfig } from "../config/mod.ts";
import { scriptedAdapter, textResponse, toolCallResponse } from "../../testing/scripted_adapter.ts";
import { counterClock, counterIds } from "../agent/_test_support.ts";
import { type CapabilitiesOptions, capabilitiesPlugin } from "./capabilities_plugin.ts";
import { memoryFs } from "./fs/memory_fs.ts";
import { localFs } from "./fs/local_fs.ts";
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { localSubprocess } from "./subprocess/local_subprocess.ts";
import { bashShell } from "./shell/bash_shell.ts";
import { httpWeb } from "./web/http_web.ts";
import type { SessionEvent } from "../session/mod.ts";
import { serveOnLoopback } from "../http/_test_server.ts";

const resultsOf = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => {
    if (e.type !== "tool/result") return [];
    const block = e.data.message.content[0];
    const text = block.type === "tool-result" && block.content[0]?.type === "text" ? block.content[0].text : "";
    return [{ code: e.data.error?.code ?? "ok", text }];
  });

const calls = [
  { id: "c1", name: "read_file", arguments: '{"path":"a.txt"}' },
  { id: "c2", name: "write_file", arguments: '{"path":"b.txt","content":"new"}' },
  { id: "c3", name: "bash", arguments: '{"command":"echo hi"}' },
  { id: "c4", name: "bash", arguments: '{"command":"git --version >/dev/null; echo git"}' },
];

type Rule = { tool: string; action: "allow" | "deny" | "ask"; reason?: string };

/** A harness whose model makes `toolCalls` in one step and then answers, under `permissions`, with these capabilities. */
function harnessUnderRules(
  toolCalls: Parameters<typeof toolCallResponse>[0],
  permissions: readonly Rule[],
  capabilities: CapabilitiesOptions,
) {
  return createHarness({
    adapters: [scriptedAdapter([toolCallResponse(toolCalls), textResponse("done")], { provider: "local" })],
    model: { provider: "local", model: "scripted-model" },
    config: resolveConfig([{
      name: "p",
      value: {
        model: { provider: "local", model: "scripted-model" },
        adapters: { deepseek: null },
        permissions,
      },
    }]),
    plugins: [[capabilitiesPlugin, capabilities]],
    now: counterClock(),
    newId: counterIds(),
  });
}

/**
 * A model that fetches `urlsOf(base)` in one step under `rulesOf(base)`, against a loopback server at `base` that
 * redirects `/go?<target>` to the target and answers any other path with `page <route(path)>`; the results, and the
 * paths the server was asked for.
 */
async function fetchesUnderRules(
  urlsOf: (base: string) => string[],
  rulesOf: (base: string) => Rule[],
  route: (path: string) => string = (path) => path,
) {
  const requested: string[] = [];
  const server = await serveOnLoopback((request) => {
    const url = new URL(request.url);
    requested.push(url.pathname);
    if (url.pathname === "/go") {
      return new Response(null, { status: 302, headers: { location: decodeURIComponent(url.search.slice(1)) } });
    }
    return new Response(`page ${route(url.pathname)}`, { headers: { "content-type": "text/plain" } });
  });
  try {
    const base = server.url;
    const fetches = urlsOf(base).map((url, i) => ({
      id: `w${i}`,
      name: "web_fetch",
      arguments: JSON.stringify({ url }),
    }));
    const harness = await harnessUnderRules(fetches, rulesOf(base), { web: httpWeb({ allowHosts: ["127.0.0.1"] }) });
    const agent = await harness.createAgent();
    await agent.run("go");
    const results = resultsOf(agent.session.events);
    await harness.dispose();
    return { results, requested };
  } finally {
    await server.close();
  }
}

async function run(options: { approve?: boolean; permissions?: { tool: string; action: "allow" | "deny" | "ask" }[] }) {
  const fs = memoryFs({ files: { "a.txt": "alpha\n" } });
  const model = scriptedAdapter([toolCallResponse(calls), textResponse("done")], { provider: "local" });
  const harness = await createHarness({
    adapters: [model],
    model: { provider: "local", model: "scripted-model" },
    ...(options.permissions
      ? {
        config: resolveConfig([{
          name: "p",
          value: {
            model: { provider: "local", model: "scripted-model" },
            adapters: { deepseek: null },
            permissions: options.permissions,
          },
        }]),
      }
      : {}),
    plugins: [[capabilitiesPlugin, {
      fs,
      subprocess: localSubprocess(),
      shell: bashShell({ subprocess: localSubprocess(), cwd: "/" }),
    }]],
    now: counterClock(),
    newId: counterIds(),
  });
  if (options.approve) harness.ctx.service("approvals").register(programmaticApprover(() => true));
  const agent = await harness.createAgent();
  await agent.run("go");
  const events = agent.session.events;
  const b = await fs.stat("b.txt").then(() => true, () => false);
  await harness.dispose();
  return { results: resultsOf(events), events, wroteB: b };
}

describe("capabilitiesPlugin", () => {
  it("provides the services and registers the tools, with their access and scheduling", async () => {
    const fs = memoryFs();
    const harness = await createHarness({
      plugins: [[capabilitiesPlugin, {
        fs,
        shell: bashShell({ subprocess: localSubprocess(), cwd: "/" }),
        web: httpWeb(),
        webSearch: { search: () => Promise.resolve([]) },
      }]],
    });
    assert.equal(harness.ctx.fs, fs);
    const tools = harness.ctx.service("tools");
    const names = tools.schemas().map((t) => t.name);
    assert.deepEqual([...names].sort(), [
      "bash",
      "edit_file",
      "glob",
      "grep",
      "list_dir",
      "read_file",
      "web_fetch",
      "web_search",
      "write_file",
    ]);
    const access = Object.fromEntries(names.map((n) => [n, tools.get(n)!.access]));
    assert.deepEqual(access, {
      read_file: "read",
      write_file: "write",
      edit_file: "write",
      list_dir: "read",
      glob: "read",
      grep: "read",
      bash: "write",
      web_fetch: "read",
      web_search: "read",
    });
    const safe = (n: string, args: object) => tools.get(n)!.isConcurrencySafe?.(args) === true;
    assert.equal(safe("read_file", { path: "a" }), true);
    assert.equal(safe("grep", { pattern: "a" }), true);
    assert.equal(safe("write_file", { path: "a", content: "" }), false);
    assert.equal(safe("bash", { command: "ls" }), false);
    await harness.dispose();
    assert.equal(harness.ctx.fs, undefined);
  });

  it("allows reads and asks for writes and shell by default; every call lands in the log", async () => {
    const denied = await run({});
    assert.deepEqual(denied.results.map((r) => r.code), ["ok", "DENIED", "DENIED", "DENIED"]);
    assert.equal(denied.results[0].text, "     1\talpha");
    assert.equal(denied.wroteB, false);
    assert.equal(denied.events.filter((e) => e.type === "tool/call").length, 4);

    const approved = await run({ approve: true });
    assert.deepEqual(approved.results.map((r) => r.text), [
      "     1\talpha",
      "Wrote 3 bytes to b.txt",
      "hi",
      "git",
    ]);
    assert.equal(approved.wroteB, true);
  });

  it("lets configured rules decide per tool and per argument pattern", async () => {
    const r = await run({
      permissions: [
        { tool: "bash(echo *)", action: "allow" },
        { tool: "read_file", action: "deny" },
      ],
    });
    assert.deepEqual(r.results.map((x) => x.code), ["DENIED", "DENIED", "ok", "DENIED"]);
    assert.equal(r.results[2].text, "hi");
  });

  it("a path rule holds for what a call reaches beyond its own path: files a search finds, where a link leads", async () => {
    const root = await mkdtemp(join(tmpdir(), "dsh-reach-"));
    try {
      await mkdir(join(root, "secret"));
      await mkdir(join(root, "src"));
      await writeFile(join(root, "secret/key"), "TOKEN=hunter2\n");
      await writeFile(join(root, "src/a.ts"), "const TOKEN = 1;\n");
      await symlink("secret", join(root, "docs")); // a link inside the root, to the denied folder
      await symlink("secret/key", join(root, "note.txt"));
      const search = [
        { id: "c1", name: "grep", arguments: '{"pattern":"TOKEN"}' },
        { id: "c2", name: "grep", arguments: '{"pattern":"TOKEN","path":"secret"}' },
        { id: "c3", name: "glob", arguments: '{"pattern":"**"}' },
        { id: "c4", name: "list_dir", arguments: '{"path":"docs"}' },
        { id: "c5", name: "read_file", arguments: '{"path":"docs/key"}' },
        { id: "c6", name: "read_file", arguments: '{"path":"note.txt"}' },
        { id: "c7", name: "write_file", arguments: '{"path":"docs/new","content":"x"}' },
        { id: "c8", name: "read_file", arguments: '{"path":"src/a.ts"}' },
      ];
      const rules = (action: "deny" | "ask") => [
        { tool: "write_file", action: "allow" as const },
        { tool: "*(secret/*)", action },
      ];
      for (const action of ["deny", "ask"] as const) {
        const harness = await harnessUnderRules(search, rules(action), { fs: localFs({ root }) });
        const agent = await harness.createAgent();
        await agent.run("go");
        const results = resultsOf(agent.session.events);
        await harness.dispose();
        assert.equal(results[0].text, "src/a.ts:1: const TOKEN = 1;", action);
        assert.match(results[1].text, /^No matches for \/TOKEN\/ in 0 files/, action);
        // Neither the link to the folder (glob lists regular files only) nor note.txt, a link to secret/key.
        assert.equal(results[2].text, "src/a.ts", action);
        assert.match(results[3].text, /is empty/, action);
        assert.deepEqual(results.slice(4, 7).map((r) => r.code), ["DENIED", "DENIED", "DENIED"], action);
        assert.equal(results[7].code, "ok", action);
        assert.doesNotMatch(results.map((r) => r.text).join("\n"), /hunter2/, action);
      }
      assert.deepEqual((await readdir(join(root, "secret"))).sort(), ["key"]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("a write allowed for the path it names does not carry that allow through a link to a path no rule allows", async () => {
    const root = await mkdtemp(join(tmpdir(), "dsh-reach-"));
    try {
      for (const dir of ["src", "hooks", "lib"]) await mkdir(join(root, dir));
      await symlink("../hooks", join(root, "src/x")); // write_file(src/*) must not reach hooks/ through it
      await symlink("../lib", join(root, "src/l")); // lib/ has its own allow
      await symlink("hooks", join(root, "other")); // no rule: the call asks, and the approved call runs
      const writes = ["src/x/pre-commit", "src/a.ts", "src/l/b.ts", "other/c", "hooks/d"].map((path, i) => ({
        id: `c${i}`,
        name: "write_file",
        arguments: JSON.stringify({ path, content: "x" }),
      }));
      const asked: string[] = [];
      const harness = await harnessUnderRules(writes, [
        { tool: "write_file(src/*)", action: "allow" },
        { tool: "write_file(lib/*)", action: "allow" },
      ], { fs: localFs({ root }) });
      harness.ctx.service("approvals").register(programmaticApprover((r) => {
        asked.push((r.args as { path: string }).path);
        return true;
      }));
      const agent = await harness.createAgent();
      await agent.run("go");
      const results = resultsOf(agent.session.events);
      await harness.dispose();
      assert.deepEqual(results.map((r) => r.code), ["DENIED", "ok", "ok", "ok", "ok"]);
      assert.match(results[0].text, /src\/x\/pre-commit leads to hooks\/pre-commit/);
      assert.deepEqual(asked, ["other/c", "hooks/d"]);
      assert.deepEqual((await readdir(join(root, "hooks"))).sort(), ["c", "d"]);
      assert.deepEqual(await readdir(join(root, "lib")), ["b.ts"]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("web_fetch's rules judge each redirect it follows: a denied or asking target is refused before it is fetched", async () => {
    const go = (base: string, to: string) => `${base}/go?${encodeURIComponent(to)}`;
    const { results, requested } = await fetchesUnderRules(
      (base) => [go(base, "/private/key"), go(base, "/asked/x"), go(base, "/public/a"), `${base}/private/key`],
      (base) => [
        { tool: `web_fetch(${base}/private/*)`, action: "deny" },
        { tool: `web_fetch(${base}/asked/*)`, action: "ask" },
      ],
    );
    assert.deepEqual(results.map((r) => r.code), ["WEB_REDIRECT_DENIED", "WEB_REDIRECT_DENIED", "ok", "DENIED"]);
    assert.match(results[0].text, /redirected to .*\/private\/key/);
    assert.match(results[2].text, /page \/public\/a/);
    // The refused targets were never requested: only the three redirecting pages and the public one were.
    assert.deepEqual(requested.sort(), ["/go", "/go", "/go", "/public/a"]);
  });

  it("web_fetch's deny rules hold for a path that reaches the denied one through %2F, directly or by a redirect", async () => {
    const { results, requested } = await fetchesUnderRules(
      (base) => [
        `${base}/private%2Fkey`,
        `${base}/public/..%2Fprivate/key`,
        `${base}/go?${encodeURIComponent("/public/..%5Cprivate/key")}`,
        `${base}/public%2Fa`,
      ],
      (base) => [{ tool: "web_fetch", action: "allow" }, { tool: `web_fetch(${base}/private/*)`, action: "deny" }],
      // A server that decodes escaped separators before routing, as some do: /private%2Fkey is its /private/key.
      (path) => new URL(path.replace(/%2F|%5C/gi, "/"), "http://x").pathname,
    );
    assert.deepEqual(results.map((r) => r.code), ["DENIED", "DENIED", "WEB_REDIRECT_DENIED", "ok"]);
    assert.match(results[3].text, /page \/public\/a/);
    // Nothing under /private was requested in any spelling: only the redirecting page and the allowed one were.
    assert.deepEqual(requested.sort(), ["/go", "/public%2Fa"]);
  });

  it("gives permission rules normalised paths and simple commands only", async () => {
    const harness = await createHarness({
      plugins: [[capabilitiesPlugin, {
        fs: memoryFs(),
        shell: bashShell({ subprocess: localSubprocess(), cwd: "/" }),
      }]],
    });
    const tools = harness.ctx.service("tools");
    const subject = (name: string, args: object) => tools.get(name)!.permissionSubject?.(args);
    assert.equal(subject("edit_file", { path: "src/../secrets/key", old_string: "a", new_string: "b" }), "secrets/key");
    assert.equal(subject("write_file", { path: "./src//a.ts", content: "" }), "src/a.ts");
    // A backslash is a separator to the rules as to the file system: `secrets\key` is secrets/key to both.
    assert.equal(subject("read_file", { path: "secrets\\key" }), "secrets/key");
    assert.equal(subject("read_file", { path: "../x" }), "../x");
    assert.equal(subject("list_dir", {}), ".");
    assert.equal(subject("bash", { command: " git status " }), "git status");
    for (const command of ["git status; rm -rf x", "git log | sh", "git x && y", "git $(rm x)", "git `x`", "git > f"]) {
      assert.equal(subject("bash", { command }), undefined, command);
    }
    await harness.dispose();
  });
});
