import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { frameEnd, nextMagic, zstd, zstdWasm } from "./_zstd.ts";

/** A zstd frame of raw blocks without a content size, as some streaming encoders write. */
function rawFrame(content: Uint8Array): Uint8Array {
  const parts: number[] = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38]; // no size, window 128 KiB
  const block = 1 << 17;
  for (let at = 0; at < content.length || at === 0; at += block) {
    const size = Math.min(block, content.length - at);
    const last = at + block >= content.length ? 1 : 0;
    const header = (size << 3) | last;
    parts.push(header & 0xff, (header >> 8) & 0xff, (header >> 16) & 0xff);
    for (let i = 0; i < size; i++) parts.push(content[at + i]);
    if (content.length === 0) break;
  }
  return new Uint8Array(parts);
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

describe("zstd frames", () => {
  const content = new TextEncoder().encode("0123456789abcdef\n".repeat(150_000)); // 2.5 MB

  it("frameEnd() walks a frame without a content size and reports incomplete frames", () => {
    const frame = rawFrame(content);
    assert.equal(frameEnd(frame, 0), frame.length);
    assert.equal(frameEnd(frame.subarray(0, frame.length - 1), 0), -1);
    assert.equal(frameEnd(frame.subarray(0, 3), 0), -1);
    assert.equal(frameEnd(new Uint8Array([1, 2, 3, 4, 5, 6]), 0), -1);
    const twice = new Uint8Array([...frame.subarray(0, 100), ...frame]);
    assert.equal(nextMagic(twice, 1), 100);
  });

  it("decompresses frames without a content size larger than the first buffer guess", async () => {
    const frame = rawFrame(content);
    assert.ok(same((await zstdWasm()).decompress(frame), content));
    assert.ok(same((await zstd()).decompress(frame), content));
  });

  it("the runtime's compressor writes frames the wasm decoder reads, and back", async () => {
    const native = await zstd();
    const wasm = await zstdWasm();
    const a = native.compress(content, 3);
    const b = wasm.compress(content, 3);
    assert.ok(same(wasm.decompress(a.subarray(0, frameEnd(a, 0))), content));
    assert.ok(same(native.decompress(b), content));
    assert.equal(frameEnd(b, 0), b.length);
  });

  it("skips skippable frames", () => {
    const skippable = new Uint8Array([0x50, 0x2a, 0x4d, 0x18, 2, 0, 0, 0, 9, 9]);
    assert.equal(frameEnd(skippable, 0), skippable.length);
    assert.equal(frameEnd(skippable.subarray(0, 9), 0), -1);
  });
});
