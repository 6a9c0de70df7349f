import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { checkInvariants, createHarness, memoryStorage, renderTranscript, todos, todoWritePlugin } from "../../mod.ts";
import { scriptedAdapter, textResponse, toolCallResponse } from "../../testing/mod.ts";

const list = [
  { id: "1", content: "Read the issue", status: "completed" },
  { id: "2", content: "Write the code", status: "in_progress" },
  { id: "3", content: "Land it", status: "pending" },
];

describe("todo_write", () => {
  it("appends todo/write inside the turn; the todos projection is the list, live and after a reload", async () => {
    const storage = memoryStorage();
    const model = scriptedAdapter([
      toolCallResponse([{ id: "call_1", name: "todo_write", arguments: JSON.stringify({ todos: list }) }]),
      textResponse("Planned."),
    ]);
    let t = 0;
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      plugins: [todoWritePlugin],
      storage,
      now: () => ++t,
    });
    const agent = await harness.createAgent({ id: "todo-session" });
    const result = await agent.run("Plan the work");
    assert.equal(result.reason.kind, "completed");
    const events = agent.session.events;
    assert.deepEqual(checkInvariants(events), []);
    const write = events.find((e) => e.type === "todo/write");
    assert.deepEqual(write?.data, { todos: list });
    const projections = harness.ctx.service("sessionProjections");
    const live = projections.stateOf(agent.session, todos);
    assert.deepEqual(live, list);
    const toolResult = events.find((e) => e.type === "tool/result");
    assert.match(JSON.stringify(toolResult?.data), /\[x\] Read the issue.*\[~\] Write the code.*\[ \] Land it/);
    const transcript = renderTranscript(events);
    assert.match(transcript, /\*\*Todos\*\*\n\n- \[x\] Read the issue\n- \[~\] Write the code\n- \[ \] Land it/);
    await harness.dispose();

    // A new process: the stored log resumes and the projection reads the same list.
    const again = await createHarness({
      adapters: [scriptedAdapter([])],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
    });
    const resumed = await again.resumeAgent("todo-session");
    assert.deepEqual(again.ctx.service("sessionProjections").stateOf(resumed.session, todos), live);
    await again.dispose();
  });

  it("refuses duplicate ids, two items in progress and bad statuses as tool errors", async () => {
    const bad = [
      [{ id: "1", content: "a", status: "pending" }, { id: "1", content: "b", status: "pending" }],
      [{ id: "1", content: "a", status: "in_progress" }, { id: "2", content: "b", status: "in_progress" }],
      [{ id: "1", content: "a", status: "started" }],
    ];
    const model = scriptedAdapter([
      toolCallResponse(
        bad.map((todos, i) => ({ id: `c${i}`, name: "todo_write", arguments: JSON.stringify({ todos }) })),
      ),
      textResponse("ok"),
    ]);
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      plugins: [todoWritePlugin],
    });
    const agent = await harness.createAgent();
    await agent.run("go");
    const results = agent.session.events.filter((e) => e.type === "tool/result");
    assert.deepEqual(results.map((e) => e.type === "tool/result" && e.data.error?.code), [
      "INVALID_ARGS",
      "INVALID_ARGS",
      "INVALID_ARGS",
    ]);
    assert.equal(agent.session.events.some((e) => e.type === "todo/write"), false);
    await harness.dispose();
  });
});
