import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { createHarness, type Harness } from "../harness.ts";
import { scriptedAdapter, textResponse, toolCallResponse } from "../../testing/scripted_adapter.ts";
import { defineTool } from "../tools/mod.ts";
import type { SessionEvent } from "../session/mod.ts";
import type { AgentUpdate } from "./agent.ts";
import { counterClock, counterIds } from "./_test_support.ts";
import { capturingErrors } from "../kernel/_test_console_errors.ts";

const echo = defineTool({
  name: "echo",
  description: "Echo the input",
  parameters: z.object({ text: z.string() }),
  output: { schema: z.string(), render: (_args, text) => text },
  execute: ({ text }) => text,
});

async function agentWith(script: Parameters<typeof scriptedAdapter>[0]) {
  const harness: Harness = await createHarness({
    adapters: [scriptedAdapter(script)],
    model: { provider: "scripted", model: "scripted-model" },
    tools: [echo],
    now: counterClock(),
    newId: counterIds(),
  });
  return { harness, agent: await harness.createAgent({ id: "a1" }) };
}

const CONVERSATION = () => [
  toolCallResponse([{ id: "c1", name: "echo", arguments: '{"text":"hi"}' }], { reasoning: "Echo it" }),
  textResponse("Echoed: hi"),
];

/** A comparable form of an update: the event itself is compared by its seq. */
function key(update: AgentUpdate): string {
  if (update.kind === "event") return `event ${update.event.seq} ${update.event.type}`;
  if (update.kind === "status") return `status ${update.status}`;
  return `delta ${JSON.stringify(update)}`;
}

/** Whether the event is a streamed chunk that a delta update accompanies. */
function isDeltaChunk(event: SessionEvent): boolean {
  return event.type === "assistant/chunk" && event.data.chunk.type.endsWith("-delta");
}

describe("Agent.listen()", () => {
  it("an async listener or session observer that rejects is reported like one that throws, and the agent goes on", async () => {
    const { harness, agent } = await agentWith(CONVERSATION());
    const printed = await capturingErrors(async () => {
      agent.listen(
        (async (update: AgentUpdate) => {
          await Promise.resolve();
          if (update.kind === "status") throw new Error("listener broke");
        }) as never,
      );
      agent.session.observe(
        (async () => {
          await Promise.resolve();
          throw new Error("observer broke");
        }) as never,
      );
      const result = await agent.run("Echo hi");
      assert.equal(result.reason.kind, "completed");
      await new Promise((resolve) => setTimeout(resolve, 10));
    });
    const reported = printed.map((args) => args[0]);
    assert.ok(reported.some((m) => String(m).includes("a listener of agent")), String(reported));
    assert.ok(reported.some((m) => String(m).includes("an observer of session")), String(reported));
    await harness.dispose();
  });

  it("hears what subscribe() yields, in the same order", async () => {
    const { harness, agent } = await agentWith(CONVERSATION());
    const heard: string[] = [];
    agent.listen((update) => heard.push(key(update)));
    const yielded: string[] = [];
    const reading = (async () => {
      for await (const update of agent.subscribe()) yielded.push(key(update));
    })();
    await agent.run("Echo hi");
    await harness.dispose();
    await reading;
    assert.deepEqual(heard, yielded);
    // Every event of the log, and each delta after its chunk's event.
    const events = heard.filter((k) => k.startsWith("event "));
    assert.deepEqual(events, agent.session.events.map((e) => `event ${e.seq} ${e.type}`));
    const deltas = heard.filter((k) => k.startsWith("delta "));
    assert.ok(deltas.length > 0);
    for (const delta of deltas) {
      const seq = JSON.parse(delta.slice("delta ".length)).seq;
      assert.equal(heard[heard.indexOf(delta) - 1], `event ${seq} assistant/chunk`);
    }
    assert.deepEqual(heard.filter((k) => k.startsWith("status ")), ["status running", "status idle"]);
  });

  it("is called inside the append: the event is the log's last when the listener hears it", async () => {
    const { harness, agent } = await agentWith(CONVERSATION());
    const lag: number[] = [];
    agent.listen((update) => {
      if (update.kind === "event") lag.push(agent.session.events.length - 1 - update.event.seq);
      if (update.kind === "delta") lag.push(agent.session.events.length - 1 - update.seq);
    });
    await agent.run("Echo hi");
    assert.ok(lag.length > agent.session.events.length);
    assert.deepEqual([...new Set(lag)], [0]);
    await harness.dispose();
  });

  it("a listener that throws is reported and keeps listening; the turn and the other listeners go on", async () => {
    const { harness, agent } = await agentWith(CONVERSATION());
    let thrown = 0;
    agent.listen(() => {
      thrown++;
      throw new Error("listener broke");
    });
    const heard: string[] = [];
    agent.listen((update) => heard.push(key(update)));
    let text = "";
    const errors = await capturingErrors(async () => {
      text = (await agent.run("Echo hi")).text;
    });
    assert.equal(text, "Echoed: hi");
    assert.equal(thrown, heard.length);
    assert.equal(errors.length, thrown);
    assert.match(String(errors[0][0]), /a listener of agent a1 threw/);
    assert.equal((errors[0][1] as Error).message, "listener broke");
    await harness.dispose();
  });

  it("an append from inside the listener is refused with APPEND_REENTERED, and the log stays whole", async () => {
    const { harness, agent } = await agentWith([textResponse("ok"), textResponse("again")]);
    const refused: unknown[] = [];
    agent.listen((update) => {
      if (update.kind !== "event" || update.event.type !== "turn/end") return;
      try {
        agent.followup("more");
      } catch (error) {
        refused.push(error);
      }
    });
    await agent.run("Hi");
    assert.equal(refused.length, 1);
    assert.equal((refused[0] as { code?: string }).code, "APPEND_REENTERED");
    assert.equal(agent.session.events.filter((e) => e.type === "turn/end").length, 1);
    assert.equal(agent.inbox.count("next-turn"), 0); // the refused followup left nothing behind
    assert.equal((await agent.run("Next")).text, "again");
    await harness.dispose();
  });

  it("stops when its function is called (twice is harmless), also from inside itself", async () => {
    const { harness, agent } = await agentWith([textResponse("one"), textResponse("two")]);
    let heard = 0;
    const stop = agent.listen(() => void heard++);
    let once = 0;
    const stopSelf = agent.listen(() => {
      once++;
      stopSelf();
    });
    // A listener stopped by an earlier one during a delivery does not hear that update either.
    let stopLater = () => {};
    agent.listen(() => stopLater());
    let later = 0;
    stopLater = agent.listen(() => void later++);
    await agent.run("first");
    assert.equal(later, 0);
    const afterFirst = heard;
    assert.ok(afterFirst > 0);
    stop();
    stop();
    await agent.run("second");
    assert.equal(heard, afterFirst);
    assert.equal(once, 1);
    await harness.dispose();
  });

  it("stopping one listener or closing a subscription leaves the others hearing everything", async () => {
    const { harness, agent } = await agentWith(CONVERSATION());
    const kept: string[] = [];
    let stopFirst = () => {};
    stopFirst = agent.listen((update) => {
      if (update.kind === "delta") stopFirst();
    });
    agent.listen((update) => kept.push(key(update)));
    const closing = agent.subscribe()[Symbol.asyncIterator]();
    const closed = closing.next().then(() => closing.return!());
    await agent.run("Echo hi");
    await closed;
    assert.deepEqual(
      kept.filter((k) => k.startsWith("event ")),
      agent.session.events.map((e) => `event ${e.seq} ${e.type}`),
    );
    assert.ok(kept.includes("status idle"));
    await harness.dispose();
  });

  it("a listener added during a delivery starts with the next update: never a delta without its event", async () => {
    const { harness, agent } = await agentWith(CONVERSATION());
    const late: AgentUpdate[] = [];
    let added = false;
    agent.listen((update) => {
      if (!added && update.kind === "event" && isDeltaChunk(update.event)) {
        added = true;
        agent.listen((u) => late.push(u));
      }
    });
    await agent.run("Echo hi");
    assert.ok(late.length > 0);
    const first = late[0];
    const chunkSeq = agent.session.events.find(isDeltaChunk)!.seq;
    assert.ok(
      first.kind === "event" && first.event.seq === chunkSeq + 1,
      "it starts with the event after the one being delivered",
    );
    const heardEvents = new Set(late.flatMap((u) => (u.kind === "event" ? [u.event.seq] : [])));
    for (const u of late) {
      if (u.kind === "delta") assert.ok(heardEvents.has(u.seq), `delta of seq ${u.seq} without its event`);
    }
    await harness.dispose();
  });

  it("input queued when the agent turns idle starts the next turn; later listeners never hear a stale idle", async () => {
    const { harness, agent } = await agentWith([textResponse("one"), textResponse("two")]);
    let queued = false;
    agent.listen((update) => {
      if (update.kind === "status" && update.status === "idle" && !queued) {
        queued = true;
        agent.followup("again");
      }
    });
    const statuses: string[] = [];
    agent.listen((update) => {
      if (update.kind === "status") statuses.push(`${update.status} (agent ${agent.status})`);
    });
    const result = await agent.run("Hi");
    assert.equal(result.text, "one");
    // run() settles once the agent is idle again, after the turn the listener queued.
    assert.equal(agent.status, "idle");
    assert.equal(agent.session.events.filter((e) => e.type === "turn/end").length, 2);
    // Each status heard is the agent's status when it is heard.
    assert.deepEqual(statuses, ["running (agent running)", "running (agent running)", "idle (agent idle)"]);
    await harness.dispose();
  });

  it("ends on dispose; a listener added after dispose is never called", async () => {
    const { harness, agent } = await agentWith([textResponse("ok")]);
    const heard: string[] = [];
    agent.listen((update) => heard.push(key(update)));
    await agent.run("Hi");
    const count = heard.length;
    await harness.dispose();
    let late = 0;
    const stop = agent.listen(() => void late++);
    // The session outlives the agent: what is appended to it now reaches no listener.
    agent.session.append("todo/write", { todos: [] });
    stop();
    assert.equal(heard.length, count);
    assert.equal(late, 0);
  });

  it("takes only a function (INVALID_ARGS)", async () => {
    const { harness, agent } = await agentWith([]);
    for (const bad of [undefined, null, "fn", { call() {} }]) {
      assert.throws(() => agent.listen(bad as never), { code: "INVALID_ARGS" });
    }
    await harness.dispose();
  });
});
