import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type Agent,
  checkInvariants,
  createHarness,
  defineTool,
  type GenerateOptions,
  type Harness,
  HarnessError,
  memoryStorage,
  pluginCtx,
  programmaticApprover,
  type SessionEvent,
  type UserMessage,
} from "../../mod.ts";
import { type Script, scriptedAdapter, textResponse, toolCallResponse } from "../../testing/mod.ts";
import { capabilitiesPlugin, localSubprocess, SHELL_ENV } from "../capabilities/mod.ts";
import { loadConfig, resolveConfig } from "../config/mod.ts";
import { inProcessSubagents } from "../subagents/mod.ts";
import { recordingSubprocess } from "../capabilities/subprocess/_test_recording_subprocess.ts";
import { asWindowsHost } from "../capabilities/subprocess/_test_windows_host.ts";
import { writeFile } from "node:fs/promises";
import {
  hookBridge,
  type HookBridgeOptions,
  type HookEvents,
  type HookFunction,
  type HookInput,
  type HookOutput,
  type HookResultInfo,
  type HookTable,
} from "./mod.ts";

const scripts = fileURLToPath(new URL("./testdata/", import.meta.url));
const cmd = (name: string, timeout?: number) => ({
  type: "command" as const,
  command: `bash '${join(scripts, name)}'`,
  ...(timeout !== undefined ? { timeout } : {}),
});

const seenWords: string[] = [];
const lookup = defineTool({
  name: "lookup",
  description: "Look a word up",
  parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
  output: { schema: { type: "string" }, render: (_a, v) => String(v) },
  execute: (args) => {
    const { word } = args as { word: string };
    seenWords.push(word);
    return `definition of ${word}`;
  },
});

const callLookup = (word: string, id = "call_1") =>
  toolCallResponse([{ id, name: "lookup", arguments: JSON.stringify({ word }) }]);

interface Setup {
  harness: Harness;
  agent: Agent;
  requests: GenerateOptions[];
  outcomes: HookResultInfo[];
}

async function setup(
  hooks: HookTable,
  script: Script,
  options: { subprocess?: boolean; preToolUseErrors?: "ignore" | "deny"; bridge?: HookBridgeOptions } = {},
): Promise<Setup> {
  const model = scriptedAdapter(script);
  const outcomes: HookResultInfo[] = [];
  const harness = await createHarness({
    adapters: [model],
    model: { provider: "scripted", model: "scripted-model" },
    tools: [lookup],
    plugins: [
      ...(options.subprocess === false ? [] : [[capabilitiesPlugin, { subprocess: localSubprocess() }] as const]),
      hookBridge({
        hooks,
        ...(options.preToolUseErrors ? { preToolUseErrors: options.preToolUseErrors } : {}),
        ...options.bridge,
      }),
    ],
  });
  pluginCtx<HookEvents>(harness.ctx).on("hooks/result", (info) => void outcomes.push(info));
  const agent = await harness.createAgent({ id: "hooked" });
  return { harness, agent, requests: model.requests, outcomes };
}

/** The hook/result records, joined with their hook/invoked, as [event, outcome, code]. */
function hookLog(events: readonly SessionEvent[]): [string, string, string | undefined][] {
  const invoked = new Map<string, string>();
  const out: [string, string, string | undefined][] = [];
  for (const e of events) {
    if (e.type === "hook/invoked") invoked.set(e.data.handlerId, e.data.event);
    if (e.type === "hook/result") {
      const event = invoked.get(e.data.handlerId);
      assert.ok(event !== undefined, `hook/result ${e.data.handlerId} has its hook/invoked`);
      out.push([event, e.data.outcome, e.data.code]);
    }
  }
  return out;
}

function toolResult(events: readonly SessionEvent[], n = 0) {
  const e = events.filter((x) => x.type === "tool/result")[n];
  assert.ok(e?.type === "tool/result");
  return { code: e.data.error?.code, text: resultText(e.data.message) };
}

/** The text of a tool result message (its first block's text parts, joined). */
function resultText(message: UserMessage): string {
  const block = message.content[0];
  return block.type === "tool-result" ? block.content.map((c) => (c.type === "text" ? c.text : "")).join("") : "";
}

/** The role of each message of a request. */
function roles(request: GenerateOptions | undefined): string[] {
  return (request?.messages ?? []).map((m) => m.role);
}

function texts(request: GenerateOptions | undefined): string[] {
  return (request?.messages ?? []).flatMap((m) =>
    m.content.flatMap((b) =>
      b.type === "text"
        ? [b.text]
        : b.type === "tool-result"
        ? b.content.map((c) => (c.type === "text" ? c.text : ""))
        : []
    )
  );
}

/** `lookup` of "alpha" executed directly (call id "direct"), outside any turn, for session `sessionId`. */
function executeLookup(harness: Harness, sessionId = "hooked") {
  return harness.ctx.service("tools").execute({
    callId: "direct",
    name: "lookup",
    arguments: '{"word":"alpha"}',
    signal: new AbortController().signal,
    sessionId,
  });
}

async function done(s: Setup): Promise<readonly SessionEvent[]> {
  const events = s.agent.session.events;
  assert.deepEqual(checkInvariants(events), []);
  await s.harness.dispose();
  return events;
}

describe("hookBridge: PreToolUse", () => {
  it("exit 0 with permissionDecision allow runs the call", async () => {
    const s = await setup({ PreToolUse: [{ matcher: "lookup", hooks: [cmd("allow.sh")] }] }, [
      callLookup("alpha"),
      textResponse("ok"),
    ]);
    await s.agent.run("go");
    const events = await done(s);
    assert.deepEqual(toolResult(events), { code: undefined, text: "definition of alpha" });
    assert.deepEqual(hookLog(events), [["PreToolUse", "allow", undefined]]);
  });

  it("exit 2 denies the call with stderr as the reason; exit 0 without output goes on", async () => {
    const s = await setup({ PreToolUse: [{ matcher: "look.*", hooks: [cmd("deny_exit2.sh")] }] }, [
      toolCallResponse([
        { id: "c1", name: "lookup", arguments: '{"word":"secret"}' },
        { id: "c2", name: "lookup", arguments: '{"word":"plain"}' },
      ]),
      textResponse("ok"),
    ]);
    await s.agent.run("go");
    const events = await done(s);
    assert.equal(toolResult(events, 0).code, "DENIED");
    assert.match(toolResult(events, 0).text, /lookups of secrets are not allowed/);
    assert.deepEqual(toolResult(events, 1), { code: undefined, text: "definition of plain" });
    assert.deepEqual(hookLog(events), [["PreToolUse", "block", undefined], ["PreToolUse", "continue", undefined]]);
    const result = events.find((e) => e.type === "hook/result");
    assert.equal(result?.type === "hook/result" && result.data.exitCode, 2);
  });

  it("a JSON deny denies; a matcher that does not match runs nothing", async () => {
    const s = await setup({
      PreToolUse: [
        { matcher: "lookup", hooks: [cmd("deny_json.sh")] },
        { matcher: "other", hooks: [cmd("crash.sh")] },
      ],
    }, [callLookup("alpha"), textResponse("ok")]);
    await s.agent.run("go");
    const events = await done(s);
    assert.equal(toolResult(events).code, "DENIED");
    assert.match(toolResult(events).text, /policy says no/);
    assert.deepEqual(hookLog(events), [["PreToolUse", "deny", undefined]]);
  });

  it("ask goes to the approval service", async () => {
    const s = await setup({ PreToolUse: [{ hooks: [cmd("ask.sh")] }] }, [
      toolCallResponse([
        { id: "c1", name: "lookup", arguments: '{"word":"yes"}' },
        { id: "c2", name: "lookup", arguments: '{"word":"no"}' },
      ]),
      textResponse("ok"),
    ]);
    const asked: string[] = [];
    s.harness.ctx.service("approvals").register(programmaticApprover((req) => {
      asked.push(`${(req.args as { word: string }).word}: ${req.reason}`);
      return (req.args as { word: string }).word === "yes";
    }));
    await s.agent.run("go");
    const events = await done(s);
    assert.deepEqual(asked, ["yes: check with a human", "no: check with a human"]);
    assert.equal(toolResult(events, 0).code, undefined);
    assert.equal(toolResult(events, 1).code, "DENIED");
    assert.deepEqual(hookLog(events).map((h) => h[1]), ["ask", "ask"]);
  });

  it("updatedInput rewrites the arguments the tool runs with; the log keeps both", async () => {
    const s = await setup({ PreToolUse: [{ hooks: [cmd("rewrite.sh")] }] }, [
      callLookup("original"),
      textResponse("ok"),
    ]);
    await s.agent.run("go");
    const events = await done(s);
    assert.deepEqual(toolResult(events), { code: undefined, text: "definition of rewritten" });
    const call = events.find((e) => e.type === "tool/call");
    assert.equal(call?.type === "tool/call" && call.data.arguments, '{"word":"original"}');
    const result = events.find((e) => e.type === "hook/result");
    assert.deepEqual(result?.type === "hook/result" && result.data.updatedInput, { word: "rewritten" });
  });

  it("gets Claude Code's input on stdin", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-hook-"));
    try {
      const file = join(dir, "input.json");
      const s = await setup({
        PreToolUse: [{ hooks: [{ type: "command", command: `bash '${join(scripts, "record.sh")}' '${file}'` }] }],
      }, [callLookup("alpha", "call_7"), textResponse("ok")]);
      await s.agent.run("go");
      await done(s);
      assert.deepEqual(JSON.parse(await readFile(file, "utf8")), {
        session_id: "hooked",
        hook_event_name: "PreToolUse",
        tool_name: "lookup",
        tool_input: { word: "alpha" },
        tool_use_id: "call_7",
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("hookBridge: PreToolUse with tools/pre-execute listeners after it", () => {
  const write = defineTool({
    name: "write",
    description: "Write a word",
    access: "write",
    parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
    output: { schema: { type: "string" }, render: (_a, v) => String(v) },
    execute: (args) => `wrote ${(args as { word: string }).word}`,
  });
  const decide = (permissionDecision: "allow" | "ask" | "none", updatedInput?: unknown) => ({
    type: "function" as const,
    name: permissionDecision,
    run: (): HookOutput => ({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        ...(permissionDecision !== "none"
          ? { permissionDecision, permissionDecisionReason: `the hook says ${permissionDecision}` }
          : {}),
        ...(updatedInput !== undefined ? { updatedInput } : {}),
      },
    }),
  });

  /** The code (or "ok") and the questions asked, for `write` or `lookup` under a hook and one later listener. */
  async function outcome(
    verdict: "allow" | "ask" | "none",
    later: "none" | "next" | "deny" | "ask" | "allow" | "rewrite",
    tool = "write",
    updatedInput?: unknown,
  ) {
    const harness = await createHarness({
      adapters: [scriptedAdapter(textResponse("unused"))],
      model: { provider: "scripted", model: "scripted-model" },
      tools: [write, lookup],
      plugins: [hookBridge({ hooks: { PreToolUse: [{ hooks: [decide(verdict, updatedInput)] }] } })],
    });
    const seen: unknown[] = [];
    if (later !== "none") {
      harness.ctx.on("tools/pre-execute", (exec, next) => {
        seen.push(exec.args);
        if (later === "deny") return { kind: "deny", reason: "a later policy says no" };
        if (later === "ask") return { kind: "ask", reason: "an ask rule" };
        if (later === "allow") return { kind: "allow" };
        // Decides nothing: passes the decision on with the arguments rewritten.
        if (later === "rewrite") return next().then((d) => d.kind === "deny" ? d : { ...d, input: { word: "gamma" } });
        return next();
      });
    }
    const asked: string[] = [];
    harness.ctx.service("approvals").register(programmaticApprover((req) => {
      asked.push(req.reason ?? "");
      return true;
    }));
    const result = await harness.ctx.service("tools").execute({
      callId: "c1",
      name: tool,
      arguments: '{"word":"alpha"}',
      signal: new AbortController().signal,
    });
    await harness.dispose();
    return { code: result.error?.code ?? "ok", asked, seen, text: resultText(result.message) };
  }

  it("a later listener still runs after a hook's allow or ask, and its deny wins", async () => {
    for (const verdict of ["allow", "ask"] as const) {
      const denied = await outcome(verdict, "deny");
      assert.deepEqual([denied.code, denied.asked, denied.seen], ["DENIED", [], [{ word: "alpha" }]], verdict);
      assert.match(denied.text, /a later policy says no/);
    }
  });

  it("a hook's allow skips a write tool's default ask, not a later listener's own ask", async () => {
    assert.deepEqual((await outcome("allow", "none")).asked, []);
    assert.deepEqual((await outcome("allow", "next")).asked, []);
    assert.deepEqual((await outcome("allow", "ask")).asked, ["an ask rule"]);
    assert.deepEqual((await outcome("allow", "allow")).asked, []);
    // A later listener that only rewrites the arguments passes the default ask on as a copy: still no question.
    const rewritten = await outcome("allow", "rewrite");
    assert.deepEqual([rewritten.asked, rewritten.text], [[], "wrote gamma"]);
  });

  it("a hook's ask stays an ask whatever a later listener allows", async () => {
    assert.deepEqual((await outcome("ask", "allow", "lookup")).asked, ["the hook says ask"]);
    assert.deepEqual((await outcome("ask", "next", "lookup")).asked, ["the hook says ask"]);
  });

  it("a later listener's allow, which judged the call as the model made it, does not run a hook's rewrite unasked", async () => {
    const rewritten = await outcome("none", "allow", "lookup", { word: "beta" });
    assert.equal(rewritten.asked.length, 1);
    assert.match(rewritten.asked[0], /a hook rewrote the input/);
    assert.equal(rewritten.text, "definition of beta");
    // No listener decided: a read tool's default allow runs the rewrite, a write tool's default ask asks.
    assert.deepEqual((await outcome("none", "next", "lookup", { word: "beta" })).asked, []);
    assert.equal((await outcome("none", "next", "write", { word: "beta" })).asked.length, 1);
  });

  it("a hook's rewritten input is carried past the later listeners, which see the call as the model made it", async () => {
    const rewritten = await outcome("allow", "next", "write", { word: "beta" });
    assert.deepEqual([rewritten.code, rewritten.text, rewritten.seen], ["ok", "wrote beta", [{ word: "alpha" }]]);
  });
});

describe("hookBridge: outside a turn", () => {
  it("a tool executed directly runs its hooks but logs nothing in the idle session", async () => {
    const s = await setup({ PreToolUse: [{ hooks: [cmd("deny_json.sh")] }] }, [textResponse("unused")]);
    const result = await executeLookup(s.harness);
    assert.equal(result.error?.code, "DENIED");
    assert.deepEqual(s.outcomes.map((o) => [o.event, o.verdict.outcome, o.handlerId]), [[
      "PreToolUse",
      "deny",
      undefined,
    ]]);
    const events = await done(s);
    assert.deepEqual(hookLog(events), []);
  });
});

describe("hookBridge: the environment of command hooks", () => {
  // What the hook sees, one line each on stderr (its block reason): the secret, a listed and a set variable, whether
  // HOME is set, PATH, and a program found through it.
  const shown = {
    type: "command" as const,
    command:
      'printf "%s\\n" "${DSH_TEST_API_KEY-unset}" "${DSH_TEST_LISTED-unset}" "${DSH_SET-unset}" "${HOME:+home}" ' +
      '"${PATH-unset}" "$(echo ok | tr a-z A-Z)" >&2; exit 2',
  };
  const seen = async (bridge?: HookBridgeOptions): Promise<string[] | undefined> => {
    const s = await setup({ PreToolUse: [{ hooks: [shown] }] }, [textResponse("unused")], { bridge });
    const result = await executeLookup(s.harness);
    assert.equal(result.error?.code, "DENIED");
    await s.harness.dispose();
    return s.outcomes[0]?.verdict.reason?.split("\n");
  };

  it("passes the host's ordinary variables only, not its API keys, unless inheritEnv says otherwise", async () => {
    const host = { DSH_TEST_API_KEY: "sk-secret", DSH_TEST_LISTED: "listed" };
    const path = process.env.PATH;
    assert.ok(path !== undefined && path !== "");
    Object.assign(process.env, host);
    try {
      // By default SHELL_ENV: PATH finds programs and HOME is there; the secret is not.
      assert.deepEqual(await seen(), ["unset", "unset", "unset", "home", path, "OK"]);
      // The whole environment, on request (as Claude Code gives its hooks).
      assert.deepEqual(await seen({ inheritEnv: true }), ["sk-secret", "listed", "unset", "home", path, "OK"]);
      // Listed names (a prefix too) and set variables.
      const listed = { inheritEnv: [...SHELL_ENV, "DSH_TEST_LIST*"], env: { DSH_SET: "set" } };
      assert.deepEqual(await seen(listed), ["unset", "listed", "set", "home", path, "OK"]);
      // None at all: only what env sets.
      const none = await seen({ inheritEnv: false, env: { PATH: path } });
      assert.deepEqual(none, ["unset", "unset", "unset", "", path, "OK"]);
      // Set variables go over inherited ones.
      const over = await seen({ inheritEnv: true, env: { DSH_TEST_API_KEY: "replaced" } });
      assert.deepEqual(over?.slice(0, 3), ["replaced", "listed", "unset"]);
    } finally {
      for (const name of Object.keys(host)) delete process.env[name];
    }
  });

  it("takes inheritEnv and env from the configuration file's hookBridge, and refuses a bad one with its path", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-hook-env-"));
    const host = { DSH_CFG_FOO_A: "a", DSH_CFG_FOOBAR: "b", DSH_CFG_OTHER: "other", DSH_TEST_API_KEY: "sk-secret" };
    Object.assign(process.env, host);
    try {
      const file = join(dir, "profile.jsonc");
      const profile = (hookBridge: unknown) =>
        JSON.stringify({
          model: { provider: "scripted", model: "scripted-model" },
          adapters: { deepseek: null },
          // The shell's builtin lists what it was given (no PATH: no program could be found).
          hooks: { PreToolUse: [{ hooks: [{ type: "command", command: "export -p >&2; exit 2" }] }] },
          hookBridge,
        });
      await writeFile(file, profile({ inheritEnv: ["DSH_CFG_FOO*"], env: { DSH_CFG_SET: "set" } }));
      const loaded = await loadConfig({ profiles: [file] });
      assert.deepEqual(loaded.config.hookBridge, { inheritEnv: ["DSH_CFG_FOO*"], env: { DSH_CFG_SET: "set" } });
      const harness = await createHarness({
        config: loaded,
        adapters: [scriptedAdapter([])],
        tools: [lookup],
        plugins: [
          [capabilitiesPlugin, { subprocess: localSubprocess() }],
          hookBridge({ hooks: loaded.config.hooks, ...loaded.config.hookBridge }),
        ],
      });
      const outcomes: HookResultInfo[] = [];
      pluginCtx<HookEvents>(harness.ctx).on("hooks/result", (info) => void outcomes.push(info));
      await harness.createAgent({ id: "hooked" });
      assert.equal((await executeLookup(harness)).error?.code, "DENIED");
      await harness.dispose();
      // `export -p` prints `export NAME=…` (dash) or `declare -x NAME=…` (bash); the shell adds its own PWD, OLDPWD
      // and SHLVL.
      const names = (outcomes[0]?.verdict.reason ?? "").split("\n")
        .map((line) => /^(?:export|declare -x) ([^=\s]+)/.exec(line)?.[1])
        .filter((name): name is string => name !== undefined && !["PWD", "OLDPWD", "SHLVL", "_"].includes(name));
      assert.deepEqual(names.sort(), ["DSH_CFG_FOOBAR", "DSH_CFG_FOO_A", "DSH_CFG_SET"]);
      // A bridge made without the configuration's options would run the commands with its defaults: refused.
      const subprocess = [capabilitiesPlugin, { subprocess: localSubprocess() }] as const;
      for (
        const [given, path] of [
          [{}, "hookBridge.inheritEnv"],
          [{ inheritEnv: ["DSH_CFG_FOO*"] }, "hookBridge.env.DSH_CFG_SET"],
          [{ inheritEnv: ["DSH_CFG_FOO*"], env: { DSH_CFG_SET: "other" } }, "hookBridge.env.DSH_CFG_SET"],
        ] as const
      ) {
        await assert.rejects(
          createHarness({
            config: loaded,
            adapters: [scriptedAdapter([])],
            plugins: [subprocess, hookBridge({ hooks: loaded.config.hooks, ...given })],
          }),
          (e: unknown) => HarnessError.isInstance(e, "HOOKS_NOT_INSTALLED") && e.details?.path === path,
          path,
        );
      }
      // Its own variables beside the configuration's are fine.
      const more = await createHarness({
        config: loaded,
        adapters: [scriptedAdapter([])],
        plugins: [
          subprocess,
          hookBridge({
            hooks: loaded.config.hooks,
            inheritEnv: ["DSH_CFG_FOO*"],
            env: { DSH_CFG_SET: "set", MINE: "1" },
          }),
        ],
      });
      await more.dispose();

      // What hookBridge() would refuse is refused with the configuration file's error, naming the field.
      const bad: [unknown, string][] = [
        [{ inheritEnv: ["A=B"] }, "hookBridge.inheritEnv[0]"],
        [{ inheritEnv: ["*"] }, "hookBridge.inheritEnv[0]"],
        [{ inheritEnv: "PATH" }, "hookBridge.inheritEnv"],
        [{ env: { A: 1 } }, "hookBridge.env.A"],
        [{ env: { A: "x\0y" } }, "hookBridge.env.A"],
        [{ env: "A=x" }, "hookBridge.env"],
        [{ inherit: true }, "hookBridge.inherit"],
      ];
      for (const [value, path] of bad) {
        await writeFile(file, profile(value));
        await assert.rejects(
          loadConfig({ profiles: [file] }),
          (e: unknown) => HarnessError.isInstance(e, "CONFIG_SCHEMA") && e.details?.path === path,
          JSON.stringify(value),
        );
      }
      await writeFile(file, profile({ env: { "A=B": "x" } }));
      await assert.rejects(
        loadConfig({ profiles: [file] }),
        (e: unknown) =>
          HarnessError.isInstance(e, "CONFIG_SCHEMA") && String(e.details?.path).startsWith("hookBridge.env"),
      );
    } finally {
      for (const name of Object.keys(host)) delete process.env[name];
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("takes a configuration's inheritEnv false (nothing inherited) passed on as the README wires it", async () => {
    for (const inheritEnv of [false, true, [], ["PATH"]] as const) {
      const loaded = resolveConfig([{
        name: "profile",
        value: {
          model: { provider: "scripted", model: "scripted-model" },
          adapters: { deepseek: null },
          hookBridge: { inheritEnv },
        },
      }]);
      const harness = await createHarness({
        config: loaded,
        adapters: [scriptedAdapter([])],
        plugins: [
          [capabilitiesPlugin, { subprocess: localSubprocess() }],
          hookBridge({ hooks: loaded.config.hooks, ...loaded.config.hookBridge }),
        ],
      });
      await harness.dispose();
    }
  });

  it("refuses an inheritEnv or env no command could run with, at once (a hook failing on it would fail open)", () => {
    const bad: HookBridgeOptions[] = [
      { inheritEnv: ["A=B"] },
      { inheritEnv: ["*"] },
      { inheritEnv: "PATH" as never },
      { env: { "A=B": "x" } },
      { env: { "": "x" } },
      { env: { A: 1 as never } },
      { env: { A: "x\0y" } },
      { env: "A=x" as never },
    ];
    for (const options of bad) {
      assert.throws(
        () => hookBridge({ hooks: { PreToolUse: [{ hooks: [shown] }] }, ...options }),
        (e: unknown) => HarnessError.isInstance(e, "INVALID_ARGS") && /hookBridge's (inheritEnv|env)/.test(e.message),
        JSON.stringify(options),
      );
    }
  });

  it("on Windows, env replaces an inherited variable it names in another case (one variable there)", async () => {
    // A provider that records what it is asked to run with: the bridge gives any provider the same set.
    const recording = recordingSubprocess();
    await asWindowsHost({ DSH_TEST_CASE: "host" }, async () => {
      const harness = await createHarness({
        adapters: [scriptedAdapter([textResponse("unused")])],
        tools: [lookup],
        plugins: [
          [capabilitiesPlugin, { subprocess: recording.service }],
          hookBridge({
            hooks: { PreToolUse: [{ hooks: [{ type: "command", command: "true" }] }] },
            inheritEnv: ["DSH_TEST_CASE"],
            env: { DSH_TEST_Case: "mine" },
          }),
        ],
      });
      await executeLookup(harness, "s");
      await harness.dispose();
    });
    const { given } = recording;
    assert.equal(given.length, 1);
    assert.equal(given[0].inheritEnv, false);
    // Given both, a Windows child gets one of them, the first in sort order (Node's rule): the host's here.
    assert.deepEqual(given[0].env, { DSH_TEST_Case: "mine" });
  });
});

describe("hookBridge: PostToolUse", () => {
  it("a block decision turns the result into BLOCKED with the reason", async () => {
    const s = await setup({ PostToolUse: [{ matcher: "lookup", hooks: [cmd("post_block.sh")] }] }, [
      callLookup("alpha"),
      textResponse("ok"),
    ]);
    await s.agent.run("go");
    const events = await done(s);
    assert.deepEqual(toolResult(events), { code: "BLOCKED", text: "the output leaks a secret" });
    assert.deepEqual(hookLog(events), [["PostToolUse", "block", undefined]]);
  });

  it("additionalContext reaches the model in the next step", async () => {
    const s = await setup({ PostToolUse: [{ hooks: [cmd("post_context.sh")] }] }, [
      callLookup("alpha"),
      textResponse("ok"),
    ]);
    await s.agent.run("go");
    const events = await done(s);
    assert.deepEqual(texts(s.requests[1]).slice(-2), ["definition of alpha", "Lookups are cached for a day"]);
    assert.deepEqual(roles(s.requests[1]).slice(-1), ["system"]);
    assert.deepEqual(hookLog(events), [["PostToolUse", "context", undefined]]);
  });
});

describe("hookBridge: UserPromptSubmit, Stop, SessionStart", () => {
  it("UserPromptSubmit exit 2 blocks the turn before any model call", async () => {
    const s = await setup({ UserPromptSubmit: [{ hooks: [cmd("prompt_block.sh")] }] }, [textResponse("ok")]);
    const result = await s.agent.run("my password is hunter2");
    const events = await done(s);
    assert.deepEqual(result.reason, { kind: "blocked" });
    assert.equal(s.requests.length, 0);
    assert.deepEqual(hookLog(events), [["UserPromptSubmit", "block", undefined]]);
  });

  it("UserPromptSubmit blocking a steered prompt erases it: the next input reaches the model", async () => {
    const seen: string[] = [];
    const gate = {
      type: "function" as const,
      name: "gate",
      run: (input: { prompt?: string }) => {
        seen.push(input.prompt ?? "");
        return input.prompt?.includes("BAD") ? { decision: "block" as const, reason: "bad" } : undefined;
      },
    };
    const s = await setup({ UserPromptSubmit: [{ hooks: [gate as never] }] }, [textResponse("answer")], {
      subprocess: false,
    });
    s.agent.steer("BAD steer");
    await s.agent.whenIdle();
    assert.equal(s.agent.inbox.size, 0, "the blocked prompt does not go back to the inbox");
    const result = await s.agent.run("second");
    assert.equal(result.text, "answer");
    assert.deepEqual(seen, ["BAD steer", "second"]);
    assert.deepEqual(texts(s.requests[0]), ["second"]);
    await done(s);
  });

  it("UserPromptSubmit plain stdout is context entered with the prompt", async () => {
    const s = await setup({ UserPromptSubmit: [{ hooks: [cmd("prompt_context.sh")] }] }, [textResponse("ok")]);
    await s.agent.run("What day is it?");
    const events = await done(s);
    assert.deepEqual(texts(s.requests[0]), ["What day is it?", "Today is Monday"]);
    // The hook's context is the harness speaking, not the user: a system message after the prompt.
    assert.deepEqual(roles(s.requests[0]), ["user", "system"]);
    const entered = events.filter((e) => e.type === "user/message" || e.type === "system/message");
    assert.deepEqual(entered.map((e) => e.type), ["user/message", "system/message"]);
    assert.deepEqual(hookLog(events), [["UserPromptSubmit", "context", undefined]]);
    // The hook pair sits inside the turn, before the step's messages.
    const types = events.map((e) => e.type);
    assert.ok(types.indexOf("turn/start") < types.indexOf("hook/invoked"));
    assert.ok(types.indexOf("hook/result") < types.indexOf("step/start"));
  });

  it("a Stop hook keeps the turn going once, then lets it stop", async () => {
    const s = await setup({ Stop: [{ hooks: [cmd("stop_continue.sh")] }] }, [
      textResponse("Done."),
      textResponse("Tests pass."),
    ]);
    const result = await s.agent.run("Fix it");
    const events = await done(s);
    assert.equal(result.text, "Tests pass.");
    assert.equal(result.turn, 1);
    assert.deepEqual(texts(s.requests[1]).slice(-1), ["Also run the tests"]);
    assert.deepEqual(roles(s.requests[1]).slice(-1), ["system"]);
    assert.equal(events.filter((e) => e.type === "user/message").length, 1, "only the user's prompt is user input");
    assert.deepEqual(hookLog(events), [["Stop", "continue-turn", undefined], ["Stop", "continue", undefined]]);
  });

  it("SessionStart context waits in the inbox for the first turn and logs no hook events", async () => {
    const s = await setup({ SessionStart: [{ matcher: "startup", hooks: [cmd("session_start.sh")] }] }, [
      textResponse("ok"),
    ]);
    await s.agent.run("Hello");
    const events = await done(s);
    assert.deepEqual(texts(s.requests[0]), ["The project uses Deno", "Hello"]);
    assert.deepEqual(roles(s.requests[0]), ["system", "user"]);
    assert.deepEqual(
      events.filter((e) => e.type === "user/message" || e.type === "system/message").map((e) => e.type),
      ["system/message", "user/message"],
    );
    assert.deepEqual(hookLog(events), []);
    assert.equal(events[0].type, "agent/inbox/spliced");
    assert.deepEqual(s.outcomes.map((o) => [o.event, o.verdict.outcome]), [["SessionStart", "context"]]);
  });

  it("SessionStart context on every start of a session has an id of its own (message ids are unique in a session)", async () => {
    const storage = memoryStorage();
    const model = scriptedAdapter(() => textResponse("ok"));
    const context = {
      type: "function" as const,
      name: "context",
      run: (input: { source?: string }) => ({ hookSpecificOutput: { additionalContext: `Started: ${input.source}` } }),
    };
    const hooks = { SessionStart: [{ hooks: [context] }] };
    let events: readonly SessionEvent[] = [];
    for (let life = 0; life < 3; life++) {
      const harness = await createHarness({ adapters: [model], storage, plugins: [hookBridge({ hooks })] });
      const agent = life === 0
        ? await harness.createAgent({ id: "restarted" })
        : await harness.resumeAgent("restarted");
      assert.equal((await agent.run(`turn ${life}`)).reason.kind, "completed");
      events = agent.session.events;
      await harness.dispose();
    }
    const contexts = events.filter((e) => e.type === "system/message");
    assert.deepEqual(contexts.map((e) => e.data.content[0]), [
      { type: "text", text: "Started: startup" },
      { type: "text", text: "Started: resume" },
      { type: "text", text: "Started: resume" },
    ]);
    assert.equal(new Set(contexts.map((e) => e.data.id)).size, 3, JSON.stringify(contexts.map((e) => e.data.id)));
    assert.deepEqual(checkInvariants(events), []);
  });

  it("hook context messages take their ids from the harness's id source: deterministic ids, identical logs", async () => {
    const context = (event: string) => ({
      type: "function" as const,
      name: event,
      run: () => ({ hookSpecificOutput: { additionalContext: `${event} context` } }),
    });
    const hooks: HookTable = {
      // Function hooks: no process whose timing could move the ids' order (a command's context is named alike).
      SessionStart: [{ hooks: [context("SessionStart"), context("SessionStart")] }],
      PostToolUse: [{ hooks: [context("PostToolUse")] }],
    };
    const run = async () => {
      let n = 0;
      const harness = await createHarness({
        adapters: [scriptedAdapter([textResponse("ok")])],
        model: { provider: "scripted", model: "scripted-model" },
        tools: [lookup],
        now: () => 0,
        newId: () => `id-${++n}`,
        plugins: [hookBridge({ hooks })],
      });
      const agent = await harness.createAgent({ id: "det" });
      assert.equal((await agent.run("Hello")).reason.kind, "completed");
      // Outside a turn a PostToolUse context has no handler id to be named after: it gets a new id too.
      const direct = await executeLookup(harness, "det");
      const events = agent.session.events;
      await harness.dispose();
      return { events, direct: direct.contexts?.map((m) => m.id) };
    };
    const first = await run();
    const ids = first.events.filter((e) => e.type === "system/message").map((e) => e.data.id);
    assert.equal(ids.length, 2);
    for (const id of [...ids, ...first.direct ?? []]) assert.match(id, /^det:(session-start-)?id-\d+$/);
    assert.equal(first.direct?.length, 1);
    const second = await run();
    assert.deepEqual(second.events, first.events);
    assert.deepEqual(second.direct, first.direct);
  });

  it("continue: false cancels the turn with cause hook", async () => {
    const s = await setup({ PreToolUse: [{ hooks: [cmd("stop_agent.sh")] }] }, [
      callLookup("alpha"),
      textResponse("x"),
    ]);
    const result = await s.agent.run("go");
    const events = await done(s);
    assert.deepEqual(result.reason, { kind: "aborted", reason: "hook" });
    assert.equal(toolResult(events).code, "DENIED");
  });
});

describe("hookBridge: continue: false, per event", () => {
  it("cancels the turn (cause hook) from PreToolUse, PostToolUse and UserPromptSubmit; a Stop turn ends completed; SessionStart ignores it", async () => {
    const halt = {
      type: "function" as const,
      name: "halt",
      run: (): HookOutput => ({
        continue: false,
        stopReason: "halt now",
        decision: "block",
        hookSpecificOutput: { additionalContext: "Context from the hook" },
      }),
    };
    const expected = {
      PreToolUse: { reason: { kind: "aborted", reason: "hook" }, calls: 1, tool: "DENIED" },
      PostToolUse: { reason: { kind: "aborted", reason: "hook" }, calls: 1, tool: "BLOCKED" },
      UserPromptSubmit: { reason: { kind: "aborted", reason: "hook" }, calls: 0, tool: undefined },
      // The turn was stopping: it stops, and `decision: "block"` beside `continue: false` does not keep it going.
      Stop: { reason: { kind: "completed" }, calls: 2, tool: undefined },
      // No turn runs yet: nothing to stop; the hook's context still waits for the first turn.
      SessionStart: { reason: { kind: "completed" }, calls: 2, tool: undefined },
    } as const;
    for (const [event, want] of Object.entries(expected)) {
      const s = await setup({ [event]: [{ hooks: [halt] }] }, [callLookup("alpha"), textResponse("ok")], {
        subprocess: false,
      });
      const result = await s.agent.run("go");
      const events = await done(s);
      assert.deepEqual(
        [
          result.reason,
          s.requests.length,
          events.some((e) => e.type === "tool/result") ? toolResult(events).code : undefined,
        ],
        [want.reason, want.calls, want.tool],
        event,
      );
      if (event === "SessionStart") assert.deepEqual(texts(s.requests[0]), ["Context from the hook", "go"]);
    }
  });
});

describe("hookBridge: failures never break the turn", () => {
  it("a hanging hook is killed at its timeout, logged HOOK_TIMEOUT, and the call runs", async () => {
    const s = await setup({ PreToolUse: [{ hooks: [cmd("hang.sh", 0.5)] }] }, [
      callLookup("alpha"),
      textResponse("ok"),
    ]);
    const result = await s.agent.run("go");
    const events = await done(s);
    assert.equal(result.reason.kind, "completed");
    assert.deepEqual(toolResult(events), { code: undefined, text: "definition of alpha" });
    assert.deepEqual(hookLog(events), [["PreToolUse", "error", "HOOK_TIMEOUT"]]);
  });

  it("a crashing hook is HOOK_FAILED with its exit code and stderr", async () => {
    const s = await setup({ PostToolUse: [{ hooks: [cmd("crash.sh")] }] }, [callLookup("alpha"), textResponse("ok")]);
    const result = await s.agent.run("go");
    const events = await done(s);
    assert.equal(result.reason.kind, "completed");
    assert.deepEqual(toolResult(events), { code: undefined, text: "definition of alpha" });
    const record = events.find((e) => e.type === "hook/result");
    assert.ok(record?.type === "hook/result");
    assert.deepEqual([record.data.outcome, record.data.code, record.data.exitCode], ["error", "HOOK_FAILED", 3]);
    assert.match(record.data.reason ?? "", /boom/);
  });

  it("malformed JSON is HOOK_BAD_OUTPUT and the prompt goes on", async () => {
    const s = await setup({ UserPromptSubmit: [{ hooks: [cmd("malformed.sh")] }] }, [textResponse("ok")]);
    const result = await s.agent.run("go");
    const events = await done(s);
    assert.equal(result.reason.kind, "completed");
    assert.deepEqual(hookLog(events), [["UserPromptSubmit", "error", "HOOK_BAD_OUTPUT"]]);
  });

  it("stdout past 256 KB is HOOK_OUTPUT_TOO_LARGE, not read: like malformed output it decides nothing, and the call runs", async () => {
    // The rule for every hook error (timeout, crash, malformed or cut output): logged, and the turn goes on
    // as if the hook had said nothing; a PreToolUse deny that cannot be read in full does not deny.
    const s = await setup({ PreToolUse: [{ hooks: [cmd("big_deny.sh")] }] }, [callLookup("alpha"), textResponse("ok")]);
    await s.agent.run("go");
    const events = await done(s);
    assert.deepEqual(hookLog(events), [["PreToolUse", "error", "HOOK_OUTPUT_TOO_LARGE"]]);
    const record = events.find((e) => e.type === "hook/result");
    assert.ok(record?.type === "hook/result");
    assert.equal(record.data.exitCode, 0);
    assert.match(record.data.reason ?? "", /printed 300\d\d\d bytes on stdout, more than the 262144 that are read/);
    assert.deepEqual(toolResult(events), { code: undefined, text: "definition of alpha" });
  });

  it('with preToolUseErrors: "deny" a PreToolUse hook that fails denies the call (fail closed)', async () => {
    for (const [script, code] of [["big_deny.sh", "HOOK_OUTPUT_TOO_LARGE"], ["crash.sh", "HOOK_FAILED"]] as const) {
      const s = await setup({ PreToolUse: [{ hooks: [cmd(script)] }] }, [callLookup("alpha"), textResponse("ok")], {
        preToolUseErrors: "deny",
      });
      await s.agent.run("go");
      const events = await done(s);
      assert.deepEqual(hookLog(events), [["PreToolUse", "error", code]]);
      const result = toolResult(events);
      assert.equal(result.code, "DENIED", script);
      assert.match(result.text, new RegExp(`a PreToolUse hook failed \\(${code}\\)`));
    }
    assert.throws(() => hookBridge({ preToolUseErrors: "maybe" as never }), { code: "INVALID_ARGS" });
  });

  it('an answer that cannot be read (an unknown decision, text or an array on stdout) is HOOK_BAD_OUTPUT: under "deny" it denies', async () => {
    const answers = [
      `echo '{"decision":"deny","reason":"no"}'`,
      `echo '{"decision":"BLOCK"}'`,
      `echo '{"continue":0}'`,
      `echo '{"hookSpecificOutput":{"permissionDecision":"Deny"}}'`,
      `echo '[1]'`,
      `echo debug; echo '{"decision":"block","reason":"r"}'`,
    ];
    for (const command of answers) {
      for (const preToolUseErrors of ["ignore", "deny"] as const) {
        const s = await setup(
          { PreToolUse: [{ hooks: [{ type: "command", command }] }] },
          [callLookup("alpha"), textResponse("ok")],
          { preToolUseErrors },
        );
        await s.agent.run("go");
        const events = await done(s);
        assert.deepEqual(hookLog(events), [["PreToolUse", "error", "HOOK_BAD_OUTPUT"]], command);
        // Fails open as Claude Code ignores such stdout; fails closed when asked to.
        assert.equal(toolResult(events).code, preToolUseErrors === "deny" ? "DENIED" : undefined, command);
      }
    }
    // The same for PostToolUse and Stop (logged, and the turn goes on); text stays context for UserPromptSubmit.
    const s = await setup({
      PostToolUse: [{ hooks: [{ type: "command", command: "echo formatted" }] }],
      Stop: [{ hooks: [{ type: "function", name: "s", run: () => ({ decision: "Block" as never }) }] }],
      UserPromptSubmit: [{ hooks: [{ type: "command", command: "echo '[1]'" }] }],
    }, [callLookup("alpha"), textResponse("ok")]);
    assert.equal((await s.agent.run("go")).reason.kind, "completed");
    const events = await done(s);
    assert.deepEqual(hookLog(events), [
      ["UserPromptSubmit", "context", undefined],
      ["PostToolUse", "error", "HOOK_BAD_OUTPUT"],
      ["Stop", "error", "HOOK_BAD_OUTPUT"],
    ]);
  });

  it("without ctx.subprocess a command hook is refused at creation (HOOKS_NO_SUBPROCESS): it would never run", async () => {
    // Run, it would answer HOOK_NO_SUBPROCESS, which fails open: a deny hook that never denies.
    await assert.rejects(
      setup({ PreToolUse: [{ hooks: [cmd("deny_exit2.sh")] }] }, [textResponse("ok")], { subprocess: false }),
      { code: "HOOKS_NO_SUBPROCESS", message: /deny_exit2\.sh/ },
    );
    // Function hooks need none.
    const fn = { type: "function" as const, name: "f", run: () => undefined };
    const s = await setup({ Stop: [{ hooks: [fn] }] }, [textResponse("ok")], { subprocess: false });
    assert.equal((await s.agent.run("go")).reason.kind, "completed");
    await s.harness.dispose();
  });

  it("refuses a maxStopContinuations that is not a non-negative integer (NaN kept a turn going without end)", () => {
    for (const maxStopContinuations of [Number.NaN, -1, 2.5, Infinity, "2" as unknown as number]) {
      assert.throws(() => hookBridge({ maxStopContinuations }), { code: "INVALID_ARGS" }, String(maxStopContinuations));
    }
    hookBridge({ maxStopContinuations: 0 });
  });

  it("refuses a hook timeout past what a timer keeps (3600 s, as the configuration allows) or under 1 ms", () => {
    for (const timeout of [0, -1, 0.0004, 0.0009, 3601, 2 ** 31, Infinity, Number.NaN]) {
      const hook = { type: "function" as const, name: "h", timeout, run: () => undefined };
      assert.throws(
        () => hookBridge({ hooks: { Stop: [{ hooks: [hook] }] } }),
        { code: "INVALID_ARGS" },
        String(timeout),
      );
    }
    hookBridge({
      hooks: { Stop: [{ hooks: [{ type: "function", name: "h", timeout: 3600, run: () => undefined }] }] },
    });
  });

  it("refuses a hook table with a mistake that would fail open, naming the field (as the configuration schema does)", () => {
    const deny = { type: "function" as const, name: "deny", run: () => ({ decision: "block" as const }) };
    const cases: [unknown, string][] = [
      [{ PretoolUse: [{ hooks: [deny] }] }, "hooks.PretoolUse"],
      [{ PreToolUse: [{ matcher: "(lookup", hooks: [deny] }] }, "hooks.PreToolUse[0].matcher"],
      [{ PreToolUse: [{ matcher: 7, hooks: [deny] }] }, "hooks.PreToolUse[0].matcher"],
      [{ PreToolUse: [{ hooks: [{ ...deny, type: "functon" }] }] }, "hooks.PreToolUse[0].hooks[0].type"],
      [{ PreToolUse: [{ hooks: [{ type: "function", name: "deny" }] }] }, "hooks.PreToolUse[0].hooks[0].run"],
      [
        { PreToolUse: [{ hooks: [{ type: "function", name: " ", run: deny.run }] }] },
        "hooks.PreToolUse[0].hooks[0].name",
      ],
      [{ PreToolUse: [{ hooks: [{ type: "command", command: "" }] }] }, "hooks.PreToolUse[0].hooks[0].command"],
      [{ PreToolUse: [{ hooks: [{ type: "command", command: "x", timout: 5 }] }] }, "hooks.PreToolUse[0].hooks[0]"],
      [{ PreToolUse: [{ hooks: [null] }] }, "hooks.PreToolUse[0].hooks[0]"],
      [{ PreToolUse: [{ matcher: "rm" }] }, "hooks.PreToolUse[0].hooks"],
      [{ PreToolUse: [{ matchr: "rm", hooks: [] }] }, "hooks.PreToolUse[0]"],
      [{ PreToolUse: deny }, "hooks.PreToolUse"],
      [{ PreToolUse: ["rm"] }, "hooks.PreToolUse[0]"],
      [[deny], "hooks"],
      ["PreToolUse", "hooks"],
    ];
    for (const [hooks, path] of cases) {
      assert.throws(
        () => hookBridge({ hooks: hooks as never }),
        (error: unknown) => {
          assert.ok(HarnessError.isInstance(error, "INVALID_ARGS"), String(error));
          assert.equal(error.details?.path, path);
          assert.ok(error.message.startsWith(`${path}`), error.message);
          return true;
        },
        JSON.stringify(hooks),
      );
    }
    // What the configuration allows stays allowed: every event, an absent or null list, empty, `*` and regex matchers.
    hookBridge({
      hooks: {
        PreToolUse: [{ matcher: "rm|shell", hooks: [deny] }, { matcher: "*", hooks: [] }, { matcher: "", hooks: [] }],
        PostToolUse: [{ hooks: [{ type: "command", command: "true", timeout: 1 }] }],
        UserPromptSubmit: undefined,
        Stop: null as never,
        SessionStart: [],
      },
    });
  });

  it("runs a hook written as a class: run a method (its this kept), fields of its own", async () => {
    class Guard {
      readonly type = "function" as const;
      readonly name = "class-guard";
      calls = 0;
      run() {
        this.calls++;
        return { decision: "block" as const, reason: "not here" };
      }
    }
    const guard = new Guard();
    const s = await setup({ PreToolUse: [{ hooks: [guard] }] }, [
      toolCallResponse([{ id: "c1", name: "lookup", arguments: "{}" }]),
      textResponse("ok"),
    ]);
    await s.agent.run("go");
    assert.equal(guard.calls, 1);
    assert.equal(toolResult(s.agent.session.events).code, "DENIED");
    await s.harness.dispose();
  });

  it("runs the table it checked: changing the caller's table afterwards changes nothing", async () => {
    const seen: string[] = [];
    const hook = (name: string) => ({ type: "function" as const, name, run: () => void seen.push(name) });
    const matchers = [{ matcher: "lookup", hooks: [hook("checked")] }];
    const table = { PreToolUse: matchers };
    const s = await setup(table, [
      toolCallResponse([{ id: "c1", name: "lookup", arguments: "{}" }]),
      textResponse("ok"),
    ]);
    matchers.push({ matcher: "lookup", hooks: [hook("added later")] });
    (matchers[0] as { matcher: string }).matcher = "nothing";
    assert.equal((await s.agent.run("go")).reason.kind, "completed");
    assert.deepEqual(seen, ["checked"]);
    const held = (s.harness.ctx as unknown as { service(name: string): { table(): object } }).service("hooks").table();
    assert.ok(Object.isFrozen(held), "the held table is frozen");
    await s.harness.dispose();
  });

  it("the shortest timeout (1 ms) runs the hook: a command that cannot answer in time is HOOK_TIMEOUT", async () => {
    const s = await setup({ PreToolUse: [{ hooks: [cmd("hang.sh", 0.001)] }] }, [
      callLookup("alpha"),
      textResponse("ok"),
    ]);
    await s.agent.run("go");
    const events = await done(s);
    assert.deepEqual(hookLog(events), [["PreToolUse", "error", "HOOK_TIMEOUT"]]);
  });

  it("UserPromptSubmit and Stop hooks stop with the turn: cancel() ends a turn waiting on one", async () => {
    for (const event of ["UserPromptSubmit", "Stop"] as const) {
      let entered!: () => void;
      const started = new Promise<void>((resolve) => (entered = resolve));
      const waitsForCancel = {
        type: "function" as const,
        name: "waits",
        timeout: 3600,
        run: (_input: unknown, { signal }: { signal: AbortSignal }) =>
          new Promise<undefined>((resolve) => {
            entered();
            signal.addEventListener("abort", () => resolve(undefined));
          }),
      };
      const s = await setup({ [event]: [{ hooks: [waitsForCancel] }] }, [textResponse("ok")]);
      const run = s.agent.run("go");
      await started;
      s.agent.cancel("user");
      assert.equal((await run).reason.kind, "aborted", event);
      await done(s);
    }
  });

  it("function hooks: a decision, a throw (HOOK_FAILED) and a hang (HOOK_TIMEOUT)", async () => {
    const s = await setup({
      PreToolUse: [{
        hooks: [
          { type: "function", name: "throws", run: () => Promise.reject(new Error("nope")) },
          {
            type: "function",
            name: "slow",
            timeout: 0.05,
            run: (_input, { signal }) => new Promise((resolve) => signal.addEventListener("abort", () => resolve())),
          },
          {
            type: "function",
            name: "deny-beta",
            run: (input) =>
              (input.tool_input as { word: string }).word === "beta"
                ? { decision: "block", reason: "no beta" }
                : undefined,
          },
        ],
      }],
    }, [
      toolCallResponse([
        { id: "c1", name: "lookup", arguments: '{"word":"alpha"}' },
        { id: "c2", name: "lookup", arguments: '{"word":"beta"}' },
      ]),
      textResponse("ok"),
    ]);
    await s.agent.run("go");
    const events = await done(s);
    assert.equal(toolResult(events, 0).code, undefined);
    assert.equal(toolResult(events, 1).code, "DENIED");
    assert.deepEqual(hookLog(events), [
      ["PreToolUse", "error", "HOOK_FAILED"],
      ["PreToolUse", "error", "HOOK_TIMEOUT"],
      ["PreToolUse", "continue", undefined],
      ["PreToolUse", "error", "HOOK_FAILED"],
      ["PreToolUse", "error", "HOOK_TIMEOUT"],
      ["PreToolUse", "deny", undefined],
    ]);
  });
});

describe("hookBridge: subagents", () => {
  type Recorder = (event: string, answer?: (input: HookInput) => HookOutput | undefined) => HookFunction;

  /** A parent that delegates "delete the build dir" to a worker, which looks a word up; the hooks each event ran. */
  async function delegate(hooks: (record: Recorder) => HookTable) {
    const seen: string[] = [];
    const recorder: Recorder = (event, answer) => ({
      type: "function" as const,
      name: event,
      run: (input: HookInput) => {
        const what = input.prompt !== undefined ? `: ${input.prompt}` : input.tool_name ? ` ${input.tool_name}` : "";
        seen.push(`${event} ${input.session_id}${what}`);
        return answer?.(input);
      },
    });
    const hasToolResult = (r: GenerateOptions) =>
      r.messages.some((m) => m.content.some((b) => b.type === "tool-result"));
    const task = { agent: "worker", description: "clean", prompt: "delete the build dir" };
    const model = scriptedAdapter((r) =>
      hasToolResult(r)
        ? textResponse(r.sessionId === "parent" ? "done" : "deleted")
        : r.sessionId === "parent"
        ? toolCallResponse([{ id: "c1", name: "task", arguments: JSON.stringify(task) }])
        : callLookup("build")
    );
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      tools: [lookup],
      plugins: [
        inProcessSubagents({ agents: [{ name: "worker", description: "Does one thing" }] }),
        hookBridge({ hooks: hooks(recorder) }),
      ],
    });
    const parent = await harness.createAgent({ id: "parent" });
    const result = await parent.run("clean up please");
    const events = parent.session.events;
    await harness.dispose();
    return { seen, text: result.text, task: toolResult(events) };
  }

  it("a subagent's prompt (its parent model's task) runs no UserPromptSubmit hook", async () => {
    // The user may not ask to delete; the parent model's task for its worker is not the user asking.
    const noDelete = (input: HookInput): HookOutput | undefined =>
      input.prompt?.includes("delete") ? { decision: "block", reason: "no deleting" } : undefined;
    const run = await delegate((record) => ({ UserPromptSubmit: [{ hooks: [record("UserPromptSubmit", noDelete)] }] }));
    assert.deepEqual(run.task, { code: undefined, text: "deleted" });
    assert.equal(run.text, "done");
    assert.deepEqual(run.seen, ["UserPromptSubmit parent: clean up please"]);
  });

  it("a subagent's turn end runs no Stop hook; its tool calls run PreToolUse and PostToolUse", async () => {
    const run = await delegate((record) => ({
      Stop: [{ hooks: [record("Stop")] }],
      PreToolUse: [{ hooks: [record("PreToolUse")] }],
      PostToolUse: [{ hooks: [record("PostToolUse")] }],
    }));
    assert.deepEqual(run.task, { code: undefined, text: "deleted" });
    assert.deepEqual(run.seen, [
      "PreToolUse parent task",
      "PreToolUse parent.c1 lookup",
      "PostToolUse parent.c1 lookup",
      "PostToolUse parent task",
      "Stop parent",
    ]);
  });
});

describe("hookBridge: dispose() while a SessionStart hook runs", () => {
  it("stops the hook (a command is killed, a function's signal aborts) instead of waiting out its timeout", async () => {
    let aborted = false;
    let entered!: () => void;
    const listens = {
      type: "function" as const,
      name: "listens",
      timeout: 5,
      run: (_input: unknown, { signal }: { signal: AbortSignal }) =>
        new Promise<undefined>((resolve) => {
          entered();
          signal.addEventListener("abort", () => (aborted = true, resolve(undefined)));
        }),
    };
    let deafTimer: ReturnType<typeof setTimeout> | undefined;
    const deaf = {
      type: "function" as const,
      name: "deaf",
      timeout: 5,
      run: () =>
        new Promise<undefined>((resolve) => (entered(), deafTimer = setTimeout(() => resolve(undefined), 5000))),
    };
    for (const hook of [cmd("hang.sh", 5), listens, deaf]) {
      const started = new Promise<void>((resolve) => (entered = resolve));
      const s = await setup({ SessionStart: [{ hooks: [hook] }] }, [textResponse("ok")]);
      // A command hook gives no sign it started: give it time to be running.
      await (hook.type === "command" ? new Promise((resolve) => setTimeout(resolve, 200)) : started);
      const t0 = Date.now();
      await s.harness.dispose();
      const took = Date.now() - t0;
      assert.ok(took < 2000, `${"command" in hook ? hook.command : hook.name}: dispose() took ${took} ms`);
      assert.deepEqual(s.outcomes.map((o) => [o.event, o.verdict.code]), [["SessionStart", "HOOK_ABORTED"]]);
    }
    clearTimeout(deafTimer);
    assert.ok(aborted, "the function hook's signal aborted");
  });
});

describe("hookBridge: a function hook's answer that is not JSON", () => {
  it("an updatedInput JSON cannot carry is HOOK_BAD_OUTPUT, logged, and the call goes on as the model made it", async () => {
    const circular: Record<string, unknown> = { word: "alpha" };
    circular.self = circular;
    for (const updatedInput of [{ word: 1n }, circular, { word: () => "x" }]) {
      const s = await setup({
        PreToolUse: [{
          hooks: [{ type: "function", name: "bad", run: () => ({ hookSpecificOutput: { updatedInput } }) as never }],
        }],
      }, [callLookup("alpha"), textResponse("ok")]);
      await s.agent.run("go");
      const events = await done(s);
      assert.deepEqual(hookLog(events), [["PreToolUse", "error", "HOOK_BAD_OUTPUT"]]);
      assert.equal(toolResult(events).code, undefined);
    }
  });
});

describe("hookBridge: a hook that answers after its turn was cancelled", () => {
  it("its late result is not logged after turn/end (nor into the next turn)", async () => {
    let started!: () => void;
    const entered = new Promise<void>((resolve) => started = resolve);
    const s = await setup(
      {
        PreToolUse: [{
          hooks: [{
            type: "function",
            name: "deaf",
            timeout: 5,
            run: async () => {
              started();
              await new Promise((resolve) => setTimeout(resolve, 200)); // ignores its signal
              return {};
            },
          }],
        }],
      },
      [callLookup("alpha"), textResponse("ok"), textResponse("again")],
      { subprocess: false },
    );
    const run = s.agent.run("go");
    await entered;
    s.agent.cancel("user");
    assert.equal((await run).reason.kind, "aborted");
    await s.agent.run("next");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const events = await done(s);
    assert.deepEqual(hookLog(events), []);
    assert.equal(events.filter((e) => e.type === "hook/invoked").length, 1);
  });
});

describe("hookBridge: configuration", () => {
  it("runs the hooks of a JSONC configuration file", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-hook-config-"));
    try {
      const file = join(dir, "profile.jsonc");
      await writeFile(
        file,
        `{
  // Claude Code's shape: per event, matchers with command hooks (timeout in seconds)
  "model": { "provider": "scripted", "model": "scripted-model" },
  "adapters": { "deepseek": null },
  "hooks": {
    "PreToolUse": [{ "matcher": "lookup", "hooks": [{ "type": "command", "command": ${
          JSON.stringify(cmd("deny_exit2.sh").command)
        }, "timeout": 5 }] }],
  },
}`,
      );
      const loaded = await loadConfig({ profiles: [file] });
      assert.equal(loaded.config.hooks?.PreToolUse?.[0].hooks[0].timeout, 5);
      const model = scriptedAdapter([callLookup("secret"), textResponse("ok")]);
      const harness = await createHarness({
        config: loaded,
        adapters: [model],
        tools: [lookup],
        plugins: [[capabilitiesPlugin, { subprocess: localSubprocess() }], hookBridge({ hooks: loaded.config.hooks })],
      });
      const agent = await harness.createAgent();
      await agent.run("go");
      assert.equal(toolResult(agent.session.events).code, "DENIED");
      await harness.dispose();

      // Hooks in the configuration with no bridge to run them fail at creation.
      await assert.rejects(createHarness({ config: loaded, adapters: [scriptedAdapter([])] }), {
        code: "HOOKS_NOT_INSTALLED",
      });
      // So do they next to a bridge given other hooks: it would drop them without a word.
      const own = { type: "function" as const, name: "audit", run: () => undefined };
      const subprocess = [capabilitiesPlugin, { subprocess: localSubprocess() }] as const;
      await assert.rejects(
        createHarness({
          config: loaded,
          adapters: [scriptedAdapter([])],
          plugins: [subprocess, hookBridge({ hooks: { PostToolUse: [{ hooks: [own] }] } })],
        }),
        { code: "HOOKS_NOT_INSTALLED", message: /deny_exit2\.sh/ },
      );
      // The configuration's hooks with one's own added to them run.
      const both = await createHarness({
        config: loaded,
        adapters: [scriptedAdapter([])],
        plugins: [subprocess, hookBridge({ hooks: { ...loaded.config.hooks, PostToolUse: [{ hooks: [own] }] } })],
      });
      await both.dispose();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
