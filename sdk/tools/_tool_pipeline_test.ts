import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { createKernel, createScope, type HarnessContext, HarnessError, type KernelEvents } from "../kernel/mod.ts";
import type { UserMessage } from "../llm/messages.ts";
import { ApprovalQueue } from "./approval_queue.ts";
import { ApprovalService, approveAll, programmaticApprover } from "./approval_service.ts";
import { defineTool } from "./define_tool.ts";
import type { ToolExecution, ToolOutcome } from "./tool_definition.ts";
import type { ToolEvents } from "./tool_events.ts";
import type { ToolExecutionResult } from "./tool_execution_result.ts";
import { ToolRuntime } from "./tool_runtime.ts";
import { deferred, echoTool, settle, signal } from "./_test_util.ts";

type Ctx = HarnessContext<ToolEvents & KernelEvents>;

function setup(options: { approvals?: ApprovalService } = {}) {
  const ctx: Ctx = createKernel<ToolEvents & KernelEvents>();
  let n = 0;
  const tools = new ToolRuntime(ctx, { newId: () => `m${++n}`, ...options });
  return { ctx, tools };
}

function isDeepFrozen(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return true;
  return Object.isFrozen(value) && Object.values(value).every(isDeepFrozen);
}

function text(result: ToolExecutionResult): string {
  const block = result.message.content[0];
  assert.equal(block.type, "tool-result");
  return block.content.map((b) => (b.type === "text" ? b.text : "")).join("");
}

/** A tool that counts its body runs. */
function countingTool(name = "count_me") {
  const state = { runs: 0 };
  const tool = defineTool({
    name,
    description: "",
    parameters: z.object({}),
    output: { schema: z.string(), render: (_a, v) => v },
    execute: () => {
      state.runs++;
      return "ran";
    },
  });
  return { tool, state };
}

const call = (name: string, args = "{}", extra: Partial<Parameters<ToolRuntime["execute"]>[0]> = {}) => ({
  callId: `call-${name}`,
  name,
  arguments: args,
  signal,
  ...extra,
});

describe("ToolRuntime.execute() stage order", () => {
  it("runs pre-execute, guards, execute wrappers, the body, post-execute, finalizeContent, then tools/result", async () => {
    const { ctx, tools } = setup();
    const stages: string[] = [];
    tools.register(echoTool("staged", {
      execute: ({ text }: { text: string }) => {
        stages.push("body");
        return Promise.resolve(text);
      },
      finalizeContent: () => {
        stages.push("finalizeContent");
        return undefined;
      },
    }));
    ctx.on("tools/result", () => void stages.push("tools/result"));
    ctx.on("tools/post-execute", async (_exec, _outcome, next) => {
      stages.push("post-execute");
      return await next();
    });
    ctx.on("tools/execute", async (_exec, next) => {
      stages.push("execute:before");
      const outcome = await next();
      stages.push("execute:after");
      return outcome;
    });
    tools.guard(() => void stages.push("guard"));
    ctx.on("tools/pre-execute", async (_exec, next) => {
      stages.push("pre-execute");
      return await next();
    });
    await tools.execute(call("staged", '{"text":"x"}'));
    assert.deepEqual(stages, [
      "pre-execute",
      "guard",
      "execute:before",
      "body",
      "execute:after",
      "post-execute",
      "finalizeContent",
      "tools/result",
    ]);
  });
});

describe("ToolRuntime.execute() results", () => {
  it("a success is a deep-frozen user message with one tool-result block for the call, also emitted on tools/result", async () => {
    const { ctx, tools } = setup();
    tools.register(echoTool());
    const seen: [ToolExecution, ToolExecutionResult][] = [];
    ctx.on("tools/result", (exec, result) => void seen.push([exec, result]));
    const result = await tools.execute(call("echo", '{"text":"hello"}', { sessionId: "s1", turn: 2, step: 1 }));
    assert.deepEqual(result, {
      message: {
        id: "m1",
        role: "user",
        content: [{ type: "tool-result", toolCallId: "call-echo", content: [{ type: "text", text: "hello" }] }],
        source: { kind: "tool", callId: "call-echo" },
      },
      value: "hello",
      contexts: [],
    });
    assert.equal(isDeepFrozen(result), true);
    assert.equal(seen.length, 1);
    assert.equal(seen[0][1], result);
    assert.equal(seen[0][0].sessionId, "s1");
    assert.deepEqual(seen[0][0].args, { text: "hello" });
    assert.equal(Object.isFrozen(seen[0][0].args), true);
  });

  it("an empty argument string means {}; invalid JSON is an INVALID_ARGS result and the body never runs", async () => {
    const { tools } = setup();
    const { tool, state } = countingTool();
    tools.register(tool);
    assert.equal((await tools.execute(call("count_me", ""))).value, "ran");
    const bad = await tools.execute(call("count_me", "{oops"));
    assert.deepEqual(bad.error, { name: "ToolArgsError", code: "INVALID_ARGS" });
    assert.equal(bad.message.content[0].type === "tool-result" && bad.message.content[0].isError, true);
    assert.equal(state.runs, 1);
  });

  it("the invalid-JSON message is the same on every engine: no JSON.parse text in the result", async () => {
    const { tools } = setup();
    tools.register(countingTool().tool);
    for (const raw of ["{oops", '{"a":', "[1,]", "nul"]) {
      const bad = await tools.execute(call("count_me", raw));
      assert.equal(text(bad), "Invalid JSON arguments for count_me: not valid JSON");
    }
  });

  it("an unknown tool is an UNKNOWN_TOOL result, not a throw", async () => {
    const { tools } = setup();
    const result = await tools.execute(call("ghost"));
    assert.deepEqual(result.error, { name: "ToolNotFoundError", code: "UNKNOWN_TOOL" });
    assert.match(text(result), /ghost/);
    assert.equal(result.value, undefined);
  });

  it("a throwing body is an error result; a HarnessError keeps its code", async () => {
    const { tools } = setup();
    tools.register(echoTool("plain", { execute: () => Promise.reject(new TypeError("disk on fire")) }));
    tools.register(echoTool("coded", {
      execute: () => {
        throw new HarnessError("FILE_NOT_FOUND", "No such file: a.txt");
      },
    }));
    const plain = await tools.execute(call("plain", '{"text":"x"}'));
    assert.deepEqual(plain.error, { name: "TypeError", code: "TOOL_FAILED" });
    assert.equal(text(plain), "disk on fire");
    const coded = await tools.execute(call("coded", '{"text":"x"}'));
    assert.deepEqual(coded.error, { name: "HarnessError", code: "FILE_NOT_FOUND" });
  });

  it("a timed-out tool observes its signal and the result is TIMEOUT", async () => {
    const { tools } = setup();
    let observed: unknown;
    tools.register(echoTool("slow", {
      timeoutMs: 5,
      execute: (_args: unknown, exec: { signal: AbortSignal }) =>
        new Promise((_resolve, reject) => {
          exec.signal.addEventListener("abort", () => {
            observed = exec.signal.reason;
            reject(exec.signal.reason);
          });
        }),
    }));
    const result = await tools.execute(call("slow", '{"text":"x"}'));
    assert.deepEqual(result.error, { name: "ToolTimeoutError", code: "TIMEOUT" });
    assert.equal(HarnessError.isInstance(observed, "TIMEOUT"), true);
  });

  it("a caller abort during the body is ABORTED; an abort before dispatch never runs the body", async () => {
    const { tools } = setup();
    const started = deferred();
    let bodySawAbort = false;
    tools.register(echoTool("hang", {
      execute: (_args: unknown, exec: { signal: AbortSignal }) => {
        started.resolve();
        return new Promise(() => {
          exec.signal.addEventListener("abort", () => (bodySawAbort = true));
        });
      },
    }));
    const controller = new AbortController();
    const pending = tools.execute(call("hang", '{"text":"x"}', { signal: controller.signal }));
    await started.promise;
    controller.abort();
    const result = await pending;
    assert.deepEqual(result.error, { name: "AbortError", code: "ABORTED" });
    assert.equal(bodySawAbort, true);

    const { tool, state } = countingTool();
    tools.register(tool);
    const early = await tools.execute(call("count_me", "{}", { signal: controller.signal }));
    assert.equal(early.error?.code, "ABORTED");
    assert.equal(state.runs, 0);
  });

  it("deferContext() and concludeTurn() ride the result; a failure never concludes the turn", async () => {
    const { tools } = setup();
    const note: UserMessage = {
      id: "ctx1",
      role: "user",
      content: [{ type: "text", text: "remember this" }],
      source: { kind: "plugin", plugin: "demo" },
    };
    const body =
      (fail: boolean) => (_args: unknown, exec: { deferContext(m: UserMessage): void; concludeTurn(): void }) => {
        exec.deferContext(note);
        exec.concludeTurn();
        if (fail) throw new Error("nope");
        return Promise.resolve("done");
      };
    tools.register(echoTool("finish", { execute: body(false) }));
    tools.register(echoTool("finish_fail", { execute: body(true) }));
    const ok = await tools.execute(call("finish", '{"text":"x"}'));
    assert.equal(ok.concludeTurn, true);
    assert.deepEqual(ok.contexts, [note]);
    assert.notEqual(ok.contexts[0], note);
    const failed = await tools.execute(call("finish_fail", '{"text":"x"}'));
    assert.equal(failed.concludeTurn, undefined);
    assert.equal(failed.error?.code, "TOOL_FAILED");
    assert.deepEqual(failed.contexts, [note]);
  });

  it("finalizeContent is called exactly once per call, failures included", async () => {
    const { ctx, tools } = setup();
    const calls: string[] = [];
    tools.register(echoTool("fin", {
      finalizeContent: (_exec: ToolExecution, outcome: ToolOutcome) => {
        calls.push(outcome.isError ? outcome.error.code : "ok");
        return outcome.isError ? undefined : "[finalized]";
      },
    }));
    ctx.on("tools/post-execute", (_exec, _outcome, next) => next());
    const ok = await tools.execute(call("fin", '{"text":"x"}'));
    assert.equal(text(ok), "[finalized]");
    assert.equal(ok.value, "x");
    await tools.execute(call("fin", '{"text":1}'));
    assert.deepEqual(calls, ["ok", "INVALID_ARGS"]);
  });

  it("a throwing finalizeContent turns the result into FINALIZE_FAILED", async () => {
    const { tools } = setup();
    tools.register(echoTool("fin", {
      finalizeContent: () => {
        throw new Error("bad finalizer");
      },
    }));
    const result = await tools.execute(call("fin", '{"text":"x"}'));
    assert.equal(result.error?.code, "FINALIZE_FAILED");
    assert.equal(result.value, undefined);
  });

  it("a throwing tools/result listener is contained", async () => {
    const { ctx, tools } = setup();
    const reported: string[] = [];
    ctx.on("kernel/listener-error", (name) => void reported.push(name));
    ctx.on("tools/result", () => {
      throw new Error("observer broke");
    });
    tools.register(echoTool());
    const result = await tools.execute(call("echo", '{"text":"x"}'));
    assert.equal(result.value, "x");
    assert.deepEqual(reported, ["tools/result"]);
  });

  it("rejects a malformed input (no signal) with INVALID_ARGS", async () => {
    const { tools } = setup();
    await assert.rejects(
      tools.execute({ callId: "c", name: "echo", arguments: "{}" } as never),
      (e) => HarnessError.isInstance(e, "INVALID_ARGS"),
    );
  });
});

describe("ToolRuntime.execute() policy: pre-execute, guards, approvals", () => {
  it("a deny decision is a DENIED result and the body never runs", async () => {
    const { ctx, tools } = setup();
    const { tool, state } = countingTool();
    tools.register(tool);
    ctx.on(
      "tools/pre-execute",
      (exec, next) => exec.name === "count_me" ? { kind: "deny", reason: "read-only mode" } : next(),
    );
    const result = await tools.execute(call("count_me"));
    assert.deepEqual(result.error, { name: "ToolDeniedError", code: "DENIED" });
    assert.match(text(result), /read-only mode/);
    assert.equal(state.runs, 0);
  });

  it("a guard denial cannot be reversed by a later allow", async () => {
    const { ctx, tools } = setup();
    const { tool, state } = countingTool();
    tools.register(tool);
    tools.guard((exec) => exec.name === "count_me" ? "blocked by policy" : undefined);
    // Registered later and short-circuiting with allow: still denied.
    ctx.on("tools/pre-execute", () => ({ kind: "allow" }));
    ctx.on("tools/pre-execute", () => ({ kind: "allow" }), { prepend: true });
    const result = await tools.execute(call("count_me"));
    assert.equal(result.error?.code, "DENIED");
    assert.match(text(result), /blocked by policy/);
    assert.equal(state.runs, 0);
  });

  it("a throwing guard denies; a guard returning undefined leaves the call allowed", async () => {
    const { tools } = setup();
    const { tool } = countingTool();
    tools.register(tool);
    const off = tools.guard(() => {
      throw new Error("guard bug");
    });
    tools.guard(() => undefined);
    assert.equal((await tools.execute(call("count_me"))).error?.code, "DENIED");
    off();
    await Promise.resolve();
    assert.equal((await tools.execute(call("count_me"))).error, undefined);
  });

  it("a guard and a pre-execute listener registered in a scope apply to that scope's calls only", async () => {
    const { ctx, tools } = setup();
    const { tool, state } = countingTool();
    tools.register(tool);
    const a = createScope(ctx, "a");
    const b = createScope(ctx, "b");
    tools.guard(() => "not in a", a.ctx);
    const seen: string[] = [];
    b.ctx.on("tools/pre-execute", (exec, next) => {
      seen.push(exec.callId);
      return next();
    });
    assert.equal(
      (await tools.execute(call("count_me", "{}", { callId: "in-a", scope: a.info }))).error?.code,
      "DENIED",
    );
    assert.equal((await tools.execute(call("count_me", "{}", { callId: "in-b", scope: b.info }))).error, undefined);
    assert.equal((await tools.execute(call("count_me", "{}", { callId: "unscoped" }))).error, undefined);
    assert.deepEqual(seen, ["in-b"]);
    assert.equal(state.runs, 2);
    await a.dispose();
    assert.equal((await tools.execute(call("count_me", "{}", { scope: a.info }))).error, undefined);
  });

  it("an ask with no approver is denied, with no approval service too", async () => {
    for (const approvals of [new ApprovalService(), undefined]) {
      const { ctx, tools } = setup(approvals ? { approvals } : {});
      const { tool, state } = countingTool();
      tools.register(tool);
      ctx.on("tools/pre-execute", () => ({ kind: "ask", reason: "writes files" }));
      const result = await tools.execute(call("count_me"));
      assert.equal(result.error?.code, "DENIED");
      assert.match(text(result), /unavailable/);
      assert.equal(state.runs, 0);
    }
  });

  it("an ask runs the tool only on allowed-once", async () => {
    const approvals = new ApprovalService();
    const { ctx, tools } = setup({ approvals });
    const { tool, state } = countingTool();
    tools.register(tool);
    ctx.on("tools/pre-execute", () => ({ kind: "ask" }));
    const offReject = approvals.register(programmaticApprover(() => false));
    assert.equal((await tools.execute(call("count_me"))).error?.code, "DENIED");
    assert.equal(state.runs, 0);
    offReject();
    approvals.register(approveAll());
    assert.equal((await tools.execute(call("count_me"))).error, undefined);
    assert.equal(state.runs, 1);
  });

  it("schema-invalid arguments are INVALID_ARGS before any guard or approver is asked", async () => {
    const approvals = new ApprovalService();
    const asked: string[] = [];
    approvals.register((request) => {
      asked.push(request.callId);
      return Promise.resolve("allowed-once" as const);
    });
    const { ctx, tools } = setup({ approvals });
    tools.register(echoTool("write_it", { access: "write" }));
    const seen: unknown[] = [];
    ctx.on("tools/pre-execute", (exec, next) => {
      seen.push(exec.args);
      return next();
    });
    tools.guard((exec) => void seen.push(`guard ${exec.callId}`));
    const invalid = await tools.execute(call("write_it", '{"text":42}', { callId: "bad" }));
    assert.deepEqual(invalid.error, { name: "ToolArgsError", code: "INVALID_ARGS" });
    assert.match(text(invalid), /^Invalid arguments for write_it: .*text/);
    // The listeners saw the call (one may repair it); no guard or approver did.
    assert.deepEqual([asked, seen], [[], [{ text: 42 }]]);
    // Valid arguments reach the listeners as the parsed JSON they always were, then the guards and the approver.
    const valid = await tools.execute(call("write_it", '{"text":"hi"}', { callId: "good" }));
    assert.equal(valid.value, "hi");
    assert.deepEqual([asked, seen], [["good"], [{ text: 42 }, { text: "hi" }, "guard good"]]);
  });

  it("a listener's rewrite repairs arguments the model got wrong; a rewrite to invalid ones is INVALID_ARGS", async () => {
    const approvals = new ApprovalService();
    const asked: unknown[] = [];
    approvals.register((request) => {
      asked.push(request.args);
      return Promise.resolve("allowed-once" as const);
    });
    const { ctx, tools } = setup({ approvals });
    tools.register(echoTool("write_it", { access: "write" }));
    ctx.on("tools/pre-execute", async (exec, next) => {
      const decision = await next();
      const given = (exec.args as { text?: unknown }).text;
      return { ...decision, input: { text: given === "break" ? 7 : String(given) } };
    });
    const repaired = await tools.execute(call("write_it", '{"text":42}', { callId: "fixed" }));
    assert.equal(repaired.value, "42");
    const broken = await tools.execute(call("write_it", '{"text":"break"}', { callId: "broken" }));
    assert.equal(broken.error?.code, "INVALID_ARGS");
    assert.deepEqual(asked, [{ text: "42" }]);
  });

  it("a listener that fails on arguments that do not fit the parameters gives INVALID_ARGS, not HOOK_FAILED", async () => {
    const { ctx, tools } = setup();
    tools.register(echoTool("echo_it"));
    // Written for valid arguments: `text` a string.
    ctx.on(
      "tools/pre-execute",
      (exec, next) =>
        (exec.args as { text: string }).text.startsWith("sudo") ? { kind: "deny", reason: "no sudo" } : next(),
    );
    const missing = await tools.execute(call("echo_it", "{}"));
    assert.deepEqual(missing.error, { name: "ToolArgsError", code: "INVALID_ARGS" });
    assert.match(text(missing), /^Invalid arguments for echo_it: /);
    // With valid arguments, a listener's failure is still its own.
    ctx.on("tools/pre-execute", () => {
      throw new Error("policy down");
    });
    assert.equal((await tools.execute(call("echo_it", '{"text":"hi"}'))).error?.code, "HOOK_FAILED");
  });

  it("a hand-made definition's checkArgs is asked too; without one the body alone validates", async () => {
    const { ctx, tools } = setup();
    let pre = 0;
    ctx.on("tools/pre-execute", (_exec, next) => {
      pre++;
      return next();
    });
    const base = {
      description: "",
      parameters: { type: "object" },
      output: { schema: { type: "string" }, render: (_args: unknown, value: unknown) => String(value) },
      execute: () => Promise.resolve("ran"),
    };
    tools.register({
      ...base,
      name: "checked",
      checkArgs: (args) => (args as { n?: unknown }).n === 1 ? undefined : ["/n must be 1"],
    });
    tools.register({ ...base, name: "unchecked" });
    const refused = await tools.execute(call("checked", '{"n":2}'));
    assert.equal(text(refused), "Invalid arguments for checked: /n must be 1");
    assert.equal((await tools.execute(call("unchecked", '{"n":2}'))).value, "ran");
    assert.equal(pre, 2);
  });

  it("a pending ask can be answered later by call id through an ApprovalQueue", async () => {
    const approvals = new ApprovalService();
    const queue = new ApprovalQueue();
    approvals.register(queue.approver);
    const { ctx, tools } = setup({ approvals });
    const { tool, state } = countingTool();
    tools.register(tool);
    ctx.on("tools/pre-execute", () => ({ kind: "ask", reason: "please confirm" }));
    const pending = tools.execute(call("count_me", "{}", { callId: "c-42" }));
    await settle();
    assert.deepEqual(queue.pending().map((p) => [p.callId, p.toolName, p.reason]), [[
      "c-42",
      "count_me",
      "please confirm",
    ]]);
    assert.equal(state.runs, 0);
    assert.equal(queue.answer("c-42", "allowed-once"), true);
    assert.equal((await pending).error, undefined);
    assert.equal(state.runs, 1);
  });

  it("guards are checked before asking: a guarded call never reaches the approver", async () => {
    const approvals = new ApprovalService();
    let asked = 0;
    approvals.register(() => {
      asked++;
      return "allowed-once";
    });
    const { ctx, tools } = setup({ approvals });
    tools.register(countingTool().tool);
    ctx.on("tools/pre-execute", () => ({ kind: "ask" }));
    tools.guard(() => "never");
    assert.equal((await tools.execute(call("count_me"))).error?.code, "DENIED");
    assert.equal(asked, 0);
  });

  it("a throwing pre-execute listener is a HOOK_FAILED result", async () => {
    const { ctx, tools } = setup();
    tools.register(countingTool().tool);
    ctx.on("tools/pre-execute", () => {
      throw new Error("policy crashed");
    });
    const result = await tools.execute(call("count_me"));
    assert.deepEqual(result.error, { name: "Error", code: "HOOK_FAILED" });
  });
});

describe("ToolRuntime.execute() around and after the body", () => {
  it("a tools/execute wrapper can retry by calling next() again", async () => {
    const { ctx, tools } = setup();
    let attempts = 0;
    tools.register(echoTool("flaky", {
      execute: ({ text }: { text: string }) => {
        attempts++;
        if (attempts < 3) throw new Error(`attempt ${attempts} failed`);
        return Promise.resolve(text);
      },
    }));
    ctx.on("tools/execute", async (_exec, next) => {
      let outcome = await next();
      for (let i = 0; i < 5 && outcome.isError; i++) outcome = await next();
      return outcome;
    });
    const result = await tools.execute(call("flaky", '{"text":"third time"}'));
    assert.equal(result.value, "third time");
    assert.equal(attempts, 3);
  });

  it("a wrapper may replace the signal; aborting it stops the body while the caller's signal still applies", async () => {
    const { ctx, tools } = setup();
    let bodySignal: AbortSignal | undefined;
    tools.register(echoTool("hang", {
      execute: (_args: unknown, exec: { signal: AbortSignal }) => {
        bodySignal = exec.signal;
        return new Promise(() => {});
      },
    }));
    ctx.on("tools/execute", (exec, next) => {
      const controller = new AbortController();
      exec.signal = controller.signal;
      const outcome = next();
      controller.abort(new HarnessError("WRAPPER_TIMEOUT", "The wrapper gave up"));
      return outcome;
    });
    const result = await tools.execute(call("hang", '{"text":"x"}'));
    assert.equal(result.error?.code, "WRAPPER_TIMEOUT");
    assert.equal(bodySignal?.aborted, true);
  });

  it("replacing the signal in a wrapper does not detach the caller's signal", async () => {
    const { ctx, tools } = setup();
    const started = deferred();
    tools.register(echoTool("hang", {
      execute: () => {
        started.resolve();
        return new Promise(() => {});
      },
    }));
    ctx.on("tools/execute", (exec, next) => {
      exec.signal = new AbortController().signal; // never aborts
      return next();
    });
    const caller = new AbortController();
    const pending = tools.execute(call("hang", '{"text":"x"}', { signal: caller.signal }));
    await started.promise;
    caller.abort();
    assert.equal((await pending).error?.code, "ABORTED");
  });

  it("arguments are snapshotted as plain JSON: a __proto__ key stays an ordinary property", async () => {
    const { ctx, tools } = setup();
    tools.register(countingTool().tool);
    let args: unknown;
    ctx.on("tools/pre-execute", (exec, next) => {
      args = exec.args;
      return next();
    });
    await tools.execute(call("count_me", '{"__proto__":{"polluted":true}}'));
    assert.equal(Object.getPrototypeOf(args), Object.prototype);
    assert.deepEqual(Object.keys(args as object), ["__proto__"]);
    assert.equal((args as { polluted?: boolean }).polluted, undefined);
  });

  it("post-execute may replace the content and keep the value", async () => {
    const { ctx, tools } = setup();
    tools.register(echoTool());
    ctx.on("tools/post-execute", () => ({ kind: "accept", content: "[redacted]" }));
    const result = await tools.execute(call("echo", '{"text":"secret"}'));
    assert.equal(text(result), "[redacted]");
    assert.equal(result.value, "secret");
  });

  it("post-execute may replace the value, which is revalidated and re-rendered", async () => {
    const { ctx, tools } = setup();
    tools.register(echoTool());
    const off = ctx.on("tools/post-execute", () => ({ kind: "accept", value: "replaced" }));
    const result = await tools.execute(call("echo", '{"text":"original"}'));
    assert.equal(result.value, "replaced");
    assert.equal(text(result), "replaced");
    off();
    ctx.on("tools/post-execute", () => ({ kind: "accept", value: 42 }));
    const invalid = await tools.execute(call("echo", '{"text":"original"}'));
    assert.equal(invalid.error?.code, "INVALID_TOOL_OUTPUT");
    assert.equal(invalid.value, undefined);
  });

  it("post-execute block turns the result into a BLOCKED error with the feedback, and sees thrown tools too", async () => {
    const { ctx, tools } = setup();
    tools.register(echoTool());
    tools.register(echoTool("broken", { execute: () => Promise.reject(new Error("boom")) }));
    const seen: boolean[] = [];
    ctx.on("tools/post-execute", (_exec, outcome, next) => {
      seen.push(outcome.isError);
      return outcome.isError ? next() : { kind: "block", feedback: "Use a shorter text", contexts: [] };
    });
    const blocked = await tools.execute(call("echo", '{"text":"long"}'));
    assert.deepEqual(blocked.error, { name: "ToolBlockedError", code: "BLOCKED" });
    assert.equal(text(blocked), "Use a shorter text");
    assert.equal(blocked.value, undefined);
    const broken = await tools.execute(call("broken", '{"text":"x"}'));
    assert.equal(broken.error?.code, "TOOL_FAILED");
    assert.deepEqual(seen, [false, true]);
  });

  it("failures never end anything: after every kind of failure the next call still runs", async () => {
    const { tools } = setup();
    tools.register(echoTool());
    await tools.execute(call("ghost"));
    await tools.execute(call("echo", "not json"));
    const result = await tools.execute(call("echo", '{"text":"still here"}'));
    assert.equal(result.value, "still here");
  });
});

describe("ToolRuntime.execute() with values String() cannot convert", () => {
  // A null-prototype object, and an object whose toString throws: String() throws on both.
  const unprintables = [() => Object.create(null), () => ({
    toString: () => {
      throw new Error("no text");
    },
  })];
  const UNPRINTABLE = "a value that cannot be shown as text was thrown";

  it("thrown from any stage, the call still has an error result naming the stage's code", async () => {
    for (const make of unprintables) {
      const cases: [string, (ctx: Ctx, tools: ToolRuntime) => void, string][] = [
        ["pre-execute", (ctx) =>
          void ctx.on("tools/pre-execute", () => {
            throw make();
          }), "HOOK_FAILED"],
        ["guard", (_ctx, tools) =>
          void tools.guard(() => {
            throw make();
          }), "DENIED"],
        ["execute wrapper", (ctx) =>
          void ctx.on("tools/execute", () => {
            throw make();
          }), "HOOK_FAILED"],
        ["post-execute", (ctx) =>
          void ctx.on("tools/post-execute", () => {
            throw make();
          }), "HOOK_FAILED"],
        ["finalizeContent", (_ctx, tools) =>
          void tools.register(echoTool("finalized", {
            finalizeContent: () => {
              throw make();
            },
          })), "FINALIZE_FAILED"],
        ["body", (_ctx, tools) =>
          void tools.register(echoTool("throws", {
            execute: () => {
              throw make();
            },
          })), "TOOL_FAILED"],
        [
          "async body",
          (_ctx, tools) => void tools.register(echoTool("throws", { execute: () => Promise.reject(make()) })),
          "TOOL_FAILED",
        ],
        [
          "render",
          (_ctx, tools) =>
            void tools.register(echoTool("throws", {
              output: {
                schema: z.string(),
                render: () => {
                  throw make();
                },
              },
            })),
          "INVALID_TOOL_OUTPUT",
        ],
      ];
      for (const [stage, arrange, code] of cases) {
        const { ctx, tools } = setup();
        tools.register(echoTool());
        arrange(ctx, tools);
        const name = stage === "finalizeContent" ? "finalized" : /body|render/.test(stage) ? "throws" : "echo";
        const result = await tools.execute(call(name, '{"text":"x"}'));
        assert.equal(result.error?.code, code, stage);
        assert.equal(
          result.error?.name,
          code === "DENIED" ? "ToolDeniedError" : code === "INVALID_TOOL_OUTPUT" ? "ToolOutputError" : "Error",
          stage,
        );
        assert.ok(text(result).includes(UNPRINTABLE), stage);
      }
    }
  });

  it("an Error whose message or name is not a string gives text and a name that are strings", async () => {
    const { ctx, tools } = setup();
    tools.register(echoTool());
    const odd = [
      Object.assign(new Error("x"), { message: 123 }),
      Object.assign(new Error("x"), { message: { deep: 1 } }),
      Object.defineProperty(new Error("x"), "name", {
        get() {
          throw new Error("name getter");
        },
      }),
      Object.assign(new Error("x"), { name: 7 }),
    ];
    let thrown: unknown;
    ctx.on("tools/pre-execute", () => {
      throw thrown;
    });
    const texts: string[] = [];
    for (const error of odd) {
      thrown = error;
      const result = await tools.execute(call("echo", '{"text":"x"}'));
      assert.deepEqual(result.error, { name: "Error", code: "HOOK_FAILED" });
      const block = result.message.content[0];
      assert.equal(block.type, "tool-result");
      assert.equal(typeof (block.content[0] as { text: unknown }).text, "string");
      texts.push(text(result));
    }
    assert.deepEqual(texts, ["123", "[object Object]", "x", "x"]);
  });
});

describe("ToolRuntime.execute() without a tools/execute wrapper", () => {
  // Without a wrapper the pipeline takes the body's outcome as runBody made it (awaited only when the body
  // is asynchronous); a pass-through wrapper takes the general path. Both must give the same results.
  const bodies: [string, (input: { text: string }) => unknown][] = [
    ["a synchronous value", ({ text }) => text],
    ["an asynchronous value", ({ text }) => Promise.resolve(text)],
    ["a synchronous throw", () => {
      throw new HarnessError("NOPE", "no");
    }],
    ["an asynchronous rejection", () => Promise.reject(new Error("later"))],
    ["an invalid output", () => 42],
  ];
  for (const [what, execute] of bodies) {
    it(`gives the same outcome and result as a pass-through wrapper for ${what}`, async () => {
      const results: ToolExecutionResult[] = [];
      const outcomes: ToolOutcome[] = [];
      for (const wrapped of [false, true]) {
        const { ctx, tools } = setup();
        // What the later stages see of the body's outcome: normalised (deep-frozen) either way.
        ctx.on("tools/post-execute", (_exec, outcome, next) => {
          outcomes.push(outcome);
          return next();
        });
        tools.register(echoTool("body", {
          execute: execute as never,
          output: {
            schema: z.string(),
            render: (_a: unknown, v: string) => v,
            meta: (_a: unknown, v: string) => ({ v }),
          },
        }));
        if (wrapped) ctx.on("tools/execute", (_exec, next) => next());
        results.push(await tools.execute(call("body", '{"text":"hi"}')));
      }
      assert.deepEqual(results[0], results[1]);
      assert.ok(isDeepFrozen(results[0]) && isDeepFrozen(results[1]));
      assert.deepEqual(outcomes[0], outcomes[1]);
      assert.ok(isDeepFrozen(outcomes[0].content) && isDeepFrozen(outcomes[1].content));
      assert.ok(isDeepFrozen(outcomes[0].meta) && isDeepFrozen(outcomes[1].meta));
    });
  }

  it("a synchronous body's deferred context and concluded turn ride the result as through a wrapper", async () => {
    const results: ToolExecutionResult[] = [];
    for (const wrapped of [false, true]) {
      const { ctx, tools } = setup();
      tools.register(echoTool("ctx", {
        execute: ({ text }: { text: string }, run: { deferContext(m: UserMessage): void; concludeTurn(): void }) => {
          run.deferContext({ id: "c1", role: "user", content: [{ type: "text", text }], source: { kind: "user" } });
          run.concludeTurn();
          return text;
        },
      }));
      if (wrapped) ctx.on("tools/execute", (_exec, next) => next());
      results.push(await tools.execute(call("ctx", '{"text":"note"}')));
    }
    assert.deepEqual(results[0], results[1]);
    assert.equal(results[0].concludeTurn, true);
    assert.equal(results[0].contexts?.length, 1);
  });

  it("an abort caused by a synchronous body wins over its value, as through a wrapper", async () => {
    const results: ToolExecutionResult[] = [];
    for (const wrapped of [false, true]) {
      const { ctx, tools } = setup();
      const controller = new AbortController();
      tools.register(echoTool("self_abort", {
        execute: ({ text }: { text: string }) => {
          controller.abort();
          return text;
        },
      }));
      if (wrapped) ctx.on("tools/execute", (_exec, next) => next());
      results.push(await tools.execute(call("self_abort", '{"text":"x"}', { signal: controller.signal })));
    }
    assert.deepEqual(results[0], results[1]);
    assert.equal(results[0].error?.code, "ABORTED");
  });
});
