import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { SseBody } from "./_sse_body.ts";

const text = (bytes: Uint8Array | undefined) => new TextDecoder().decode(bytes);

describe("SseBody", () => {
  it("holds one chunk for a reader that does not read: a write resolves once the chunk is read", async () => {
    const body = new SseBody();
    const reader = body.readable.getReader();
    let written = false;
    const pending = body.write("a").then(() => (written = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(written, false, "the write waits while nobody reads");
    assert.equal(text((await reader.read()).value), "a");
    await pending;
    const next = body.write("b");
    assert.equal(text((await reader.read()).value), "b");
    await next;
    body.close();
    assert.equal((await reader.read()).done, true);
  });

  it("a cancelled body is aborted: listeners run once, a waiting write settles, later writes are dropped", async () => {
    const body = new SseBody();
    let aborted = 0;
    body.onAbort(() => aborted++);
    const reader = body.readable.getReader();
    const waiting = body.write("a");
    await reader.cancel();
    await waiting;
    await body.write("c");
    assert.equal(body.aborted, true);
    assert.equal(aborted, 1);
  });

  it("a body cancelled from inside enqueue() (Deno's server, for a connection gone) settles that write", async () => {
    const body = new SseBody();
    const proto = ReadableStreamDefaultController.prototype;
    const enqueue = proto.enqueue;
    // What Deno's server does when the connection is closed: the stream is cancelled during the enqueue.
    proto.enqueue = function (this: ReadableStreamDefaultController<Uint8Array>, chunk: Uint8Array) {
      enqueue.call(this, chunk);
      body.abort();
    };
    let write: Promise<void>;
    try {
      write = body.write("a");
    } finally {
      proto.enqueue = enqueue;
    }
    let settled = false;
    void write.then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.equal(settled, true, "the write is not left waiting for a pull that cannot come");
    assert.equal(body.aborted, true);
  });

  it("abort() ends the response after what was written, and settles the waiting write", async () => {
    const body = new SseBody();
    const waiting = body.write("kept");
    body.abort();
    await waiting;
    const got = await new Response(body.readable).text();
    assert.equal(got, "kept");
  });
});
