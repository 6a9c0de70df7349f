import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Session } from "../session/mod.ts";
import type { GenerateOptions, UserMessage } from "../llm/mod.ts";
import { RequestChecker } from "./_request_check.ts";

const user = (id: string, text: string): UserMessage => ({
  id,
  role: "user",
  content: [{ type: "text", text }],
  source: { kind: "user" },
});

function open(session: Session) {
  session.append("turn/start", { turn: 1 });
  session.append("step/start", { turn: 1, step: 1 });
  session.append("user/message", user("u1", "hi"), { surfaceOp: "append" });
  session.append("request/header", {
    header: { config: { provider: "p", model: "m" }, system: "S" },
    reason: "initial",
  });
}

const request = (session: Session, patch: Partial<GenerateOptions> = {}): GenerateOptions =>
  Object.freeze({
    provider: "p",
    model: "m",
    system: "S",
    messages: Object.freeze(session.deriveMessages()),
    ...patch,
  });

describe("RequestChecker", () => {
  it("accepts the log's derivation, and keeps accepting as the log grows and is replaced", () => {
    const session = Session.create("s");
    open(session);
    const checker = new RequestChecker(session);
    checker.check(request(session));
    session.append("user/message", user("u2", "more"), { surfaceOp: "append" });
    checker.check(request(session));
    session.append("user/message", user("u3", "summary"), {
      surfaceOp: { op: "replace", start: 2, end: 4 },
      sourceEventSeqs: [2, 4],
    });
    assert.equal(session.deriveMessages().length, 1);
    checker.check(request(session));
  });

  it("covers logged system messages: a request that leaves one out, or adds one, differs", () => {
    const session = Session.create("s");
    open(session);
    const checker = new RequestChecker(session);
    const context = {
      id: "c1",
      role: "system" as const,
      content: [{ type: "text" as const, text: "Branch main." }],
      source: { kind: "plugin" as const, plugin: "git" },
    };
    const withoutContext = request(session);
    session.append("system/message", context, { surfaceOp: "append" });
    assert.throws(() => checker.check(withoutContext), /messages: 1 sent, 2 derived/);
    checker.check(request(session));
    assert.equal(request(session).messages[1], session.events.at(-1)!.data);
    const forged = Object.freeze([...session.deriveMessages(), context]);
    assert.throws(() => checker.check(request(session, { messages: forged })), /messages: 3 sent, 2 derived/);
  });

  it("names each kind of difference", () => {
    const session = Session.create("s");
    open(session);
    const checker = new RequestChecker(session);
    const fails = (r: GenerateOptions, what: RegExp) =>
      assert.throws(
        () => checker.check(r),
        (e: Error & { code?: string }) => e.code === "INVARIANT_REQUEST_RECONSTRUCTION" && what.test(e.message),
      );
    fails(request(session, { messages: Object.freeze([]) }), /messages: 0 sent, 1 derived/);
    fails(request(session, { messages: Object.freeze([user("u1", "hi")]) }), /message 0 is not the log's message/);
    fails(request(session, { system: "other" }), /system prompt/);
    fails(request(session, { model: "x" }), /config/);
    fails(request(session, { temperature: 0.5 }), /config/);
    fails({ ...request(session) }, /not frozen/);
  });

  it("refuses a request before any request/header", () => {
    const session = Session.create("s");
    session.append("turn/start", { turn: 1 });
    assert.throws(
      () =>
        new RequestChecker(session).check(
          Object.freeze({ provider: "p", model: "m", messages: Object.freeze([]) }),
        ),
      /no request\/header/,
    );
  });
});
