import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { GenerateOptions, Message } from "../mod.ts";
import { diffRequest, newMessageMatch } from "./_request_diff.ts";

/** Frozen user messages whose key listings (one per serialisation) are counted in `reads`. */
function counted(reads: { count: number }, ids: readonly string[]): Message[] {
  return ids.map((id) =>
    new Proxy(Object.freeze({ id, role: "user", content: [{ type: "text", text: id }], source: { kind: "user" } }), {
      ownKeys(target) {
        reads.count++;
        return Reflect.ownKeys(target);
      },
    }) as Message
  );
}

function live(messages: readonly Message[]): GenerateOptions {
  return { provider: "p", model: "m", messages } as GenerateOptions;
}

/** The same content under other ids and objects, as a live session derives it. */
function relabel(messages: readonly Message[]): Message[] {
  return messages.map((m) => Object.freeze({ ...m, id: `live-${m.id}` }));
}

describe("diffRequest()", () => {
  it("serialises only the messages that are new since the session's previous request", () => {
    const reads = { count: 0 };
    const history = counted(reads, Array.from({ length: 200 }, (_, i) => `m${i}`));
    const liveHistory = relabel(history);
    reads.count = 0;
    const match = newMessageMatch();
    assert.equal(diffRequest({ messages: history.slice(0, 100) }, live(liveHistory.slice(0, 100)), match), undefined);
    assert.equal(reads.count, 100);
    reads.count = 0;
    for (let n = 101; n <= 200; n++) {
      assert.equal(diffRequest({ messages: history.slice(0, n) }, live(liveHistory.slice(0, n)), match), undefined);
    }
    // Comparing each request in full serialised 101 + 102 + ... + 200 = 15,050 recorded messages.
    assert.equal(reads.count, 100);
  });

  it("reports the same divergence as a comparison from scratch, after a matched prefix and after a rewrite", () => {
    const reads = { count: 0 };
    const history = counted(reads, ["a", "b", "c", "d"]);
    const liveHistory = relabel(history);
    const match = newMessageMatch();
    assert.equal(diffRequest({ messages: history.slice(0, 3) }, live(liveHistory.slice(0, 3)), match), undefined);

    const changed = [...liveHistory.slice(0, 3), Object.freeze({ ...liveHistory[3], content: [] }) as Message];
    const divergence = diffRequest({ messages: history }, live(changed), match);
    assert.deepEqual(divergence, diffRequest({ messages: history }, live(changed)));
    assert.match(divergence!.summary, /^message 3 differs: user \(user: text\)/);

    // The live history rewritten at a position matched before (new objects there): compared again, and caught.
    const rewritten = [
      liveHistory[0],
      Object.freeze({ ...liveHistory[1], content: [] }) as Message,
      ...liveHistory.slice(2),
    ];
    const again = diffRequest({ messages: history }, live(rewritten), match);
    assert.deepEqual(again, diffRequest({ messages: history }, live(rewritten)));
    assert.match(again!.summary, /^message 1 differs/);
  });
});

describe("diffRequest() diffs", () => {
  /** The changed lines of a diff, each as its mark and its text without the indent. */
  const changedLines = (diff: string) =>
    diff.split("\n").filter((line) => /^[-+][^-+]/.test(line)).map((line) => line[0] + line.slice(1).trim());
  const file = (changed: number | undefined) =>
    Array.from({ length: 400 }, (_, i) => `const v${i} = f(${i});${i === changed ? " // changed" : ""}`).join("\n");
  const toolResult = (text: string): Message =>
    ({
      id: "r",
      role: "user",
      content: [{ type: "tool-result", toolCallId: "c1", content: [{ type: "text", text }] }],
      source: { kind: "tool", callId: "c1" },
    }) as Message;

  it("show the changed line of a long multi-line text, not the whole text as one line on each side", () => {
    const divergence = diffRequest({ messages: [toolResult(file(undefined))] }, live([toolResult(file(250))]));
    assert.match(divergence!.summary, /^message 0 differs: user \(tool: tool-result\)/);
    assert.deepEqual(changedLines(divergence!.diff), ["-const v250 = f(250);", "+const v250 = f(250); // changed"]);
    assert.ok(divergence!.diff.length < 1000, `a diff of ${divergence!.diff.length} characters`);
  });

  it("show a text's lines JSON-escaped, so a change of a tab, a quote or a trailing line break shows", () => {
    const lines = (text: string) => {
      const divergence = diffRequest({ messages: [toolResult("a\nb\tc\n")] }, live([toolResult(text)]));
      return changedLines(divergence!.diff);
    };
    assert.deepEqual(lines('a\nb "c"\n'), ["-b\\tc", '+b \\"c\\"']);
    assert.deepEqual(lines("a\nb\tc"), ["-"]); // the empty line after the last line break
  });

  it("show a changed tool description line by line", () => {
    const tool = (description: string) => ({ name: "task", description, parameters: { type: "object" } });
    const before = "Delegate a task.\n- worker: Works on one task\n- reviewer: Reviews code";
    const after = before.replace("Reviews code", "Reviews code and tests");
    const divergence = diffRequest(
      { header: { config: { provider: "p", model: "m" }, tools: [tool(before)] }, messages: [] },
      { ...live([]), tools: [tool(after)] },
    );
    assert.equal(divergence!.summary, 'the schema of tool "task" differs');
    assert.deepEqual(changedLines(divergence!.diff), [
      "-- reviewer: Reviews code",
      "+- reviewer: Reviews code and tests",
    ]);
  });
});
