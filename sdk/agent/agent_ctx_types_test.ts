// Type tests of `agent.ctx`: `deno check` runs this file (scripts/test.mjs, step "check"), so listeners that
// need a cast again, or accept anything, fail the gate. The runtime test checks that the typed listeners see
// what their types say.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHarness, type HarnessCtx } from "../harness.ts";
import type { LlmCallConfig } from "../llm/mod.ts";
import type { Session, SessionEvent } from "../session/mod.ts";
import { scriptedAdapter, textResponse } from "../../testing/scripted_adapter.ts";
import type { Agent, AgentStatus } from "./agent.ts";
import type { PreStepDecision, PreStepProposal } from "./agent_events.ts";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
function expectType<T extends true>(_proof?: T): void {}

expectType<Equal<Agent["ctx"], HarnessCtx>>();

describe("agent.ctx listeners", () => {
  it("are typed by the harness's event map: no casts, and what the types say arrives", async () => {
    const harness = await createHarness({
      adapters: [scriptedAdapter(textResponse("Hi"))],
      model: { provider: "scripted", model: "scripted-model" },
    });
    const agent = await harness.createAgent();
    const seen: string[] = [];
    agent.ctx.on("agent/status", (who, status) => {
      expectType<Equal<typeof who, Agent>>();
      expectType<Equal<typeof status, AgentStatus>>();
      seen.push(`status ${status}`);
    });
    agent.ctx.on("agent/pre-step", async (_agent, proposal, next) => {
      expectType<Equal<typeof proposal, PreStepProposal>>();
      expectType<Equal<typeof next, () => Promise<PreStepDecision>>>();
      seen.push(`pre-step ${proposal.step}`);
      return await next();
    });
    agent.ctx.on("agent/request", async (_agent, draft, next) => {
      seen.push(`request ${draft.config.model}`);
      const config: LlmCallConfig = await next();
      return { ...config, temperature: 0.5 };
    });
    agent.ctx.on("session/event", (session, event) => {
      expectType<Equal<typeof session, Session>>();
      expectType<Equal<typeof event, SessionEvent>>();
      if (event.type === "turn/end") seen.push(`turn/end ${event.data.reason.kind}`);
    });
    // Services are typed too.
    const llm = agent.ctx.service("llm");
    assert.deepEqual(llm.listProviders(), ["scripted"]);

    assert.equal((await agent.run("Hello")).text, "Hi");
    assert.deepEqual(seen, [
      "status running",
      "pre-step 1",
      "request scripted-model",
      "turn/end completed",
      "status idle",
    ]);
    await harness.dispose();
  });
});

// Type-only: never called.
export function _misuses(agent: Agent): void {
  // @ts-expect-error an event the harness does not have
  agent.ctx.on("agent/no-such-event", () => {});
  // @ts-expect-error the status listener gets (agent, status), not a number
  agent.ctx.on("agent/status", (_agent, status: number) => void status);
  // @ts-expect-error a pre-step listener must return its decision
  agent.ctx.on("agent/pre-step", () => "enter");
  // @ts-expect-error emit checks the arguments of the event
  agent.ctx.emit("agent/status", agent, "sleeping");
}
