import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "./harness_error.ts";
import { withoutStacks } from "./_without_stacks.ts";
import { createKernel } from "./harness_context.ts";

const errors = Error as unknown as { stackTraceLimit: number };

describe("withoutStacks()", () => {
  it("turns stack captures off for the call only, and restores the limit after a return or a throw", () => {
    const before = errors.stackTraceLimit;
    assert.ok(before > 0);
    let inside = -1;
    assert.equal(
      withoutStacks(() => {
        inside = errors.stackTraceLimit;
        return 42;
      }),
      42,
    );
    // Bun (JavaScriptCore) gives errors made with a limit of 0 no `stack`, which Cordis cannot handle: left as is.
    assert.equal(inside, "Bun" in globalThis ? before : 0);
    assert.equal(errors.stackTraceLimit, before);
    assert.throws(() =>
      withoutStacks(() => {
        throw new RangeError("nope");
      }), { name: "RangeError", message: "nope" });
    assert.equal(errors.stackTraceLimit, before);
  });

  it("gives an error created inside the call the stack of its caller", () => {
    function namedCallerOfWithoutStacks(): void {
      withoutStacks(() => {
        throw new TypeError("refused");
      });
    }
    const error = (() => {
      try {
        namedCallerOfWithoutStacks();
      } catch (e) {
        return e as Error;
      }
      throw new Error("Expected a throw");
    })();
    assert.equal(error.message, "refused");
    assert.match(String(error.stack), /namedCallerOfWithoutStacks/);
  });

  it("leaves a limit of 0 set by the program alone", () => {
    const before = errors.stackTraceLimit;
    errors.stackTraceLimit = 0;
    try {
      assert.equal(withoutStacks(() => errors.stackTraceLimit), 0);
      assert.equal(errors.stackTraceLimit, 0);
    } finally {
      errors.stackTraceLimit = before;
    }
  });
});

describe("the kernel's registrations without stack captures", () => {
  it("keep Cordis's refusals: its message (as the cause of the coded error), a stack naming the caller, the limit restored", () => {
    const before = errors.stackTraceLimit;
    const ctx = createKernel<object, { answer: number }>();
    ctx.provide("answer", 1);
    function provideAgain(): void {
      ctx.provide("answer", 2);
    }
    assert.throws(provideAgain, (error: Error) => {
      assert.ok(HarnessError.isInstance(error, "SERVICE_ALREADY_PROVIDED"), String(error));
      assert.match((error.cause as Error).message, /service "answer" has been registered/);
      assert.match(String(error.stack), /provideAgain/);
      return true;
    });
    assert.equal(ctx.get("answer"), 1);
    assert.equal(errors.stackTraceLimit, before);
  });

  it("keep the install site in the stack of an error thrown by a plugin's apply", async () => {
    const ctx = createKernel();
    function installFailingPlugin() {
      return ctx.plugin(function failingPlugin() {
        throw new Error("apply failed");
      });
    }
    const handle = installFailingPlugin();
    await assert.rejects(handle.ready, (error: Error) => {
      assert.equal(error.message, "apply failed");
      assert.match(String(error.stack), /failingPlugin/);
      // The install site: a frame of this file besides the plugin's own (Bun names the caller's frame only).
      assert.ok(String(error.stack).split("_without_stacks_test").length >= 3, String(error.stack));
      return true;
    });
  });
});
