// Type tests of `pluginCtx()`: `deno check` runs this file (scripts/test.mjs, step "check"), so a subpath plugin's
// events or services that need a cast again, or that accept anything, fail the gate. The runtime part checks that
// what the types say arrives.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHarness, type HarnessCtx } from "./harness.ts";
import { pluginCtx } from "./plugin_ctx.ts";
import { hookBridge, type HookEvents, type HookResultInfo } from "./hooks/mod.ts";
import { compactionPlugin, type CompactionService, type CompactionServices } from "./compaction/mod.ts";
import { inProcessSubagents, type SubagentService, type SubagentServices } from "./subagents/mod.ts";
import type { LlmRuntime } from "./llm/mod.ts";
import { scriptedAdapter, textResponse } from "../testing/scripted_adapter.ts";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
function expectType<T extends true>(_proof?: T): void {}

describe("pluginCtx()", () => {
  it("types a subpath plugin's events and services on harness.ctx and agent.ctx, with no cast", async () => {
    const harness = await createHarness({
      adapters: [scriptedAdapter([textResponse("Hi"), textResponse("Again")])],
      plugins: [
        hookBridge({ hooks: { UserPromptSubmit: [{ hooks: [{ type: "function", name: "note", run: () => {} }] }] } }),
        // The [plugin, config] form takes a plugin whose configuration is typed.
        [compactionPlugin, { threshold: 0.9 }],
        inProcessSubagents({ agents: [] }),
      ],
    });
    const agent = await harness.createAgent();
    const results: HookResultInfo[] = [];
    pluginCtx<HookEvents>(harness.ctx).on("hooks/result", (info) => {
      expectType<Equal<typeof info, HookResultInfo>>();
      results.push(info);
    });
    // @ts-expect-error the core's map does not name the plugin's event
    harness.ctx.on("hooks/result", () => {});
    // @ts-expect-error a listener of another shape is refused
    pluginCtx<HookEvents>(agent.ctx).on("hooks/result", (info: number) => info);

    const services = pluginCtx<object, CompactionServices & SubagentServices>(agent.ctx);
    expectType<Equal<ReturnType<typeof services.service<"compaction">>, CompactionService>>();
    expectType<Equal<ReturnType<typeof services.service<"subagents">>, SubagentService>>();
    expectType<Equal<ReturnType<typeof services.service<"llm">>, LlmRuntime>>();
    // @ts-expect-error not a service of the maps given
    const refused = () => services.service("nothing");
    assert.throws(refused, { code: "SERVICE_MISSING" });
    assert.equal(typeof services.service("compaction").compact, "function");
    assert.equal(typeof services.service("subagents").run, "function");
    // Only the type changes.
    const same: HarnessCtx = agent.ctx;
    assert.equal(pluginCtx(same), same);

    await agent.run("Hello");
    assert.deepEqual(results.map((r) => [r.event, r.verdict.outcome]), [["UserPromptSubmit", "continue"]]);
    await harness.dispose();
  });
});
