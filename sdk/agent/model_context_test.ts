import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { createHarness } from "../harness.ts";
import { defineTool } from "../tools/mod.ts";
import type { Message, UserMessage } from "../llm/mod.ts";
import { renderTranscript } from "../session/mod.ts";
import { checkInvariants } from "../invariants/mod.ts";
import { scriptedAdapter, textResponse, toolCallResponse } from "../../testing/scripted_adapter.ts";
import { counterClock, counterIds } from "./_test_support.ts";
import { compactionPlugin } from "../compaction/mod.ts";
import { LlmFailure } from "../llm/llm_failure.ts";

const texts = (messages: readonly Message[]) =>
  messages.map((m) => `${m.role}:${m.content.map((b) => (b.type === "text" ? b.text : b.type)).join("")}`);

describe("model-visible context is logged as system/message (002 §9.3)", () => {
  it("a prompt context() reaches the model through the log, logged again only when its text changes", async () => {
    const model = scriptedAdapter([textResponse("a"), textResponse("b"), textResponse("c")]);
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      system: "Be brief.",
      now: counterClock(),
      newId: counterIds(),
    });
    let branch = "main";
    harness.ctx.service("systemPrompt").context({ name: "git", order: 0, text: () => `Branch ${branch}.` });
    const agent = await harness.createAgent({ id: "ctx" });
    await agent.run("one");
    assert.deepEqual(texts(model.requests[0].messages), ["system:Branch main.", "user:one"]);
    await agent.run("two");
    branch = "feature";
    await agent.run("three");
    const logged = agent.session.events.filter((e) => e.type === "system/message");
    assert.deepEqual(logged.map((e) => e.type === "system/message" && texts([e.data])[0]), [
      "system:Branch main.",
      "system:Branch feature.",
    ]);
    assert.ok(logged.every((e) => e.surfaceOp === "append"));
    assert.deepEqual(texts(model.requests[2].messages), [
      "system:Branch main.",
      "user:one",
      "assistant:a",
      "user:two",
      "assistant:b",
      "system:Branch feature.",
      "user:three",
    ]);
    // Every request equals the log's derivation (the invariants are on), and the log is valid.
    assert.deepEqual(model.requests[2].messages, agent.session.deriveMessages().slice(0, 7));
    assert.deepEqual(checkInvariants(agent.session.events), []);
    assert.match(
      renderTranscript(agent.session.events),
      /\*\*System context\*\* \(system-prompt\/context:git, snapshot\)\n\n> Branch feature\./,
    );
    await harness.dispose();
  });

  it("a context that is removed or becomes empty is logged as cleared, once; one that comes back is logged again", async () => {
    const model = scriptedAdapter(() => textResponse("ok"));
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      now: counterClock(),
      newId: counterIds(),
    });
    const agent = await harness.createAgent({ id: "ctx" });
    let todo = "Todo: fix bug #1";
    harness.ctx.service("systemPrompt").context({ name: "todo", order: 0, text: () => todo });
    const off = harness.ctx.service("systemPrompt").context({ name: "mode", order: 1, text: "PLAN MODE." });
    await agent.run("one");
    off();
    todo = "";
    await agent.run("two");
    await agent.run("three");
    todo = "Todo: fix bug #2";
    await agent.run("four");
    const last = texts(model.requests[3].messages);
    assert.deepEqual(last, [
      "system:Todo: fix bug #1",
      "system:PLAN MODE.",
      "user:one",
      "assistant:ok",
      'system:(The context "todo" given earlier no longer applies.)',
      'system:(The context "mode" given earlier no longer applies.)',
      "user:two",
      "assistant:ok",
      "user:three",
      "assistant:ok",
      "system:Todo: fix bug #2",
      "user:four",
    ]);
    assert.deepEqual(checkInvariants(agent.session.events), []);
    await harness.dispose();
  });

  it("a context summarised away by an overflow compaction is logged again for the rebuilt request", async () => {
    let n = 0;
    const model = scriptedAdapter((request) => {
      if (request.purpose === "compaction") return textResponse("SUMMARY");
      n++;
      if (n === 3) return { throw: new LlmFailure("CONTEXT_WINDOW_EXCEEDED", "Too long", { status: 400 }) };
      return textResponse(`ans${n}`);
    });
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      sleep: () => Promise.resolve(),
      plugins: [compactionPlugin],
      now: counterClock(),
      newId: counterIds(),
    });
    harness.ctx.service("systemPrompt").context({ name: "rules", order: 0, text: "Never touch prod." });
    const agent = await harness.createAgent({ id: "ctx" });
    await agent.run("one");
    await agent.run("two");
    assert.equal((await agent.run("three")).text, "ans4");
    const main = model.requests.filter((r) => r.purpose === undefined);
    const rebuilt = texts(main[3].messages);
    assert.ok(rebuilt.includes("system:Never touch prod."), rebuilt.join(" | "));
    // Logged where the rebuild found it missing: after the input the summary kept.
    assert.deepEqual(rebuilt.slice(-2), ["user:three", "system:Never touch prod."]);
    assert.deepEqual(checkInvariants(agent.session.events), []);
    await harness.dispose();
  });

  it("a resumed loop does not log an unchanged context again", async () => {
    const { memoryStorage } = await import("../persistence/mod.ts");
    const storage = memoryStorage();
    const build = async (answer: string) => {
      const model = scriptedAdapter(textResponse(answer));
      const harness = await createHarness({
        adapters: [model],
        model: { provider: "scripted", model: "scripted-model" },
        storage,
      });
      harness.ctx.service("systemPrompt").context({ name: "todo", order: 0, text: "Todo: none." });
      return { harness, model };
    };
    const first = await build("a");
    await (await first.harness.createAgent({ id: "r" })).run("one");
    await first.harness.dispose();
    const second = await build("b");
    const agent = await second.harness.resumeAgent("r");
    await agent.run("two");
    assert.equal(agent.session.events.filter((e) => e.type === "system/message").length, 1);
    assert.deepEqual(texts(second.model.requests[0].messages), [
      "system:Todo: none.",
      "user:one",
      "assistant:a",
      "user:two",
    ]);
    await second.harness.dispose();
  });

  it("a tool's deferred text context is logged after the step's results and reaches the next request", async () => {
    const note: UserMessage = {
      id: "n1",
      role: "user",
      content: [{ type: "text", text: "The file changed on disk." }],
      source: { kind: "plugin", plugin: "watcher", form: "notice" },
    };
    const touch = defineTool({
      name: "touch",
      description: "Touch a file",
      parameters: z.object({}),
      output: { schema: z.string(), render: (_a, v) => v },
      execute: (_args, exec) => {
        exec.deferContext(note);
        return "touched";
      },
    });
    const model = scriptedAdapter([
      toolCallResponse([{ id: "c1", name: "touch", arguments: "{}" }, { id: "c2", name: "touch", arguments: "{}" }]),
      textResponse("done"),
    ]);
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      tools: [touch],
      now: counterClock(),
      newId: counterIds(),
    });
    const agent = await harness.createAgent({ id: "t" });
    await agent.run("touch it twice");
    const types = agent.session.events.map((e) => e.type).filter((t) =>
      t === "tool/result" || t === "system/message" || t === "user/message"
    );
    assert.deepEqual(types, ["user/message", "tool/result", "tool/result", "system/message", "system/message"]);
    const second = model.requests[1].messages;
    assert.deepEqual(second.map((m) => m.role), ["user", "assistant", "user", "user", "system", "system"]);
    assert.deepEqual(second.at(-1)?.source, note.source);
    const contexts = agent.session.events.filter((e) => e.type === "system/message");
    const results = agent.session.events.filter((e) => e.type === "tool/result").map((e) => e.seq);
    assert.deepEqual(contexts.map((e) => e.sourceEventSeqs), [[results[0]], [results[1]]]);
    assert.deepEqual(checkInvariants(agent.session.events), []);
    await harness.dispose();
  });
});
