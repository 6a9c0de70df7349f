import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { InboxEntry, SessionEvent } from "../session/mod.ts";
import { Inbox } from "./inbox.ts";

const entry = (id: string): InboxEntry => ({
  id,
  message: { id: `m-${id}`, role: "user", content: [{ type: "text", text: id }], source: { kind: "user" } },
});

/** A log of raw events, numbered. */
function log(...events: Omit<SessionEvent, "seq" | "time">[]): SessionEvent[] {
  return events.map((event, seq) => ({ ...event, seq, time: 0 }) as SessionEvent);
}
const insert = (target: "next-turn" | "next-step", ...ids: string[]) =>
  ({ type: "agent/inbox/spliced", data: { target, start: 0, inserted: ids.map(entry) } }) as never;
const claim = (target: "next-turn" | "next-step", count: number) =>
  ({
    type: "agent/inbox/spliced",
    data: { target, start: 0, removedCount: count, inserted: [], outcome: "claimed" },
  }) as never;
const turnStart = (turn: number) => ({ type: "turn/start", data: { turn } }) as never;
const turnEnd = (turn: number, kind: string) => ({ type: "turn/end", data: { turn, reason: { kind } } }) as never;
const entered = (id: string) => ({ type: "user/message", data: entry(id).message, surfaceOp: "append" }) as never;

describe("Inbox.strandedClaims()", () => {
  it("names the claims of a turn a crash interrupted before their messages entered", () => {
    const events = log(
      insert("next-turn", "a"),
      turnStart(1),
      claim("next-turn", 1),
      entered("a"),
      turnEnd(1, "interrupted"), // entered: served
      insert("next-turn", "b"),
      insert("next-step", "s"),
      turnStart(2),
      claim("next-step", 1),
      claim("next-turn", 1),
      turnEnd(2, "interrupted"), // nothing entered: both stranded
    );
    assert.deepEqual(Inbox.strandedClaims(events).map((c) => [c.target, c.entries.map((e) => e.id)]), [
      ["next-step", ["s"]],
      ["next-turn", ["b"]],
    ]);
  });

  it("leaves claims that a turn ended otherwise, and entries a later splice put back", () => {
    const events = log(
      insert("next-turn", "a", "b"),
      turnStart(1),
      claim("next-turn", 1),
      turnEnd(1, "aborted"), // a cancel's business, not a crash's
      turnStart(2),
      claim("next-turn", 1),
      turnEnd(2, "interrupted"),
      insert("next-turn", "b"), // put back by an earlier resume
    );
    assert.deepEqual(Inbox.strandedClaims(events), []);
    // Put back, claimed again, and stranded again by a second crash.
    const again = [...events, ...log(turnStart(3), claim("next-turn", 1), turnEnd(3, "interrupted"))]
      .map((event, seq) => ({ ...event, seq }));
    assert.deepEqual(Inbox.strandedClaims(again).map((c) => c.entries.map((e) => e.id)), [["b"]]);
  });

  it("a prompt context's snapshot logged before the step's input does not count as the input entered", () => {
    const context = {
      type: "system/message",
      surfaceOp: "append",
      data: {
        id: "ctx",
        role: "system",
        content: [{ type: "text", text: "Turn counter: 2" }],
        source: { kind: "plugin", plugin: "system-prompt/context:clock", form: "snapshot" },
      },
    } as never;
    const events = log(
      insert("next-turn", "a"),
      turnStart(1),
      claim("next-turn", 1),
      context,
      turnEnd(1, "interrupted"),
    );
    assert.deepEqual(Inbox.strandedClaims(events).map((c) => c.entries.map((e) => e.id)), [["a"]]);
    // Once the step's own message follows the snapshot, the claim is served.
    const served = log(
      insert("next-turn", "a"),
      turnStart(1),
      claim("next-turn", 1),
      context,
      entered("a"),
      turnEnd(1, "interrupted"),
    );
    assert.deepEqual(Inbox.strandedClaims(served), []);
  });

  it("restore() records an insert at the front that fromLog() replays", () => {
    const recorded: SessionEvent[] = [];
    const commit = (data: unknown) => void recorded.push({ type: "agent/inbox/spliced", data } as never);
    const inbox = new Inbox(commit);
    inbox.push("next-turn", entry("x"));
    const [claimed] = inbox.claim("next-turn");
    inbox.push("next-turn", entry("y"));
    inbox.restore("next-turn", [claimed]);
    assert.deepEqual(inbox.pending("next-turn").map((e) => e.id), ["x", "y"]);
    assert.deepEqual(Inbox.fromLog(recorded, () => {}).pending("next-turn").map((e) => e.id), ["x", "y"]);
  });
});
