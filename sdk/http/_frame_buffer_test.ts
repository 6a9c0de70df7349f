import { describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import fc from "fast-check";
import { FrameBuffer } from "./_frame_buffer.ts";

const RUNS = Math.max(1000, Number(process.env.DSH_PROPERTY_RUNS ?? 0) || 0);
const encoder = new TextEncoder();
const LONGEST = -0.0000010059214244312041;

// Any UTF-16 code unit (lone surrogates, controls, the ASCII escapes), and whole code points.
const anyText = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) }),
  fc.string({ unit: "binary" }),
  fc.string({
    unit: fc.constantFrom('"', "\\", "\n", "\u0000", "\u001f", "\u007f", "\u2028", "\ud800", "\udc00", "a"),
  }),
);

describe("FrameBuffer", () => {
  it("jsonString() writes the UTF-8 bytes of JSON.stringify(text)", () => {
    // Short texts and long ones (past the length the runtime's encoder takes over), ASCII or not.
    const someText = fc.oneof(anyText, fc.string({ minLength: 60, maxLength: 300 }), anyText.map((t) => t.repeat(40)));
    fc.assert(
      fc.property(fc.array(someText, { maxLength: 5 }), fc.integer({ min: 1, max: 64 }), (texts, capacity) => {
        const out = new FrameBuffer(capacity);
        for (const text of texts) out.jsonString(text);
        assert.deepEqual(out.take(), encoder.encode(texts.map((t) => JSON.stringify(t)).join("")));
      }),
      { numRuns: RUNS },
    );
  });

  it("jsonString() escapes every code unit below 0x800 as JSON.stringify does", () => {
    const out = new FrameBuffer(16);
    for (let c = 0; c < 0x800; c++) {
      const text = `a${String.fromCharCode(c)}b`;
      out.jsonString(text);
      assert.deepEqual(out.take(), encoder.encode(JSON.stringify(text)), `code unit ${c.toString(16)}`);
    }
  });

  it("text() writes what TextEncoder writes, ASCII or not", () => {
    // Short texts and long ones (past the length the runtime's encoder takes over), ASCII or not.
    const someText = fc.oneof(anyText, fc.string({ minLength: 60, maxLength: 300 }), anyText.map((t) => t.repeat(40)));
    fc.assert(
      fc.property(fc.array(someText, { maxLength: 5 }), fc.integer({ min: 1, max: 64 }), (texts, capacity) => {
        const out = new FrameBuffer(capacity);
        for (const text of texts) out.text(text);
        // Each text on its own: two halves of a pair written one after the other stay two replacement characters.
        const expected = texts.map((t) => [...encoder.encode(t)]).flat();
        assert.deepEqual(out.take(), Uint8Array.from(expected));
      }),
      { numRuns: RUNS },
    );
  });

  it("number() writes what JSON.stringify writes for a finite number", () => {
    const numbers = fc.oneof(
      fc.nat(),
      fc.maxSafeNat(),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.constantFrom(
        0,
        -0,
        9,
        10,
        99,
        100,
        1e15 - 1,
        1e15,
        1e21,
        2 ** 53,
        1.5e-7,
        -1,
        LONGEST,
        -1.2345678901234567e-308,
      ),
    );
    fc.assert(
      fc.property(fc.array(numbers, { maxLength: 6 }), (values) => {
        const out = new FrameBuffer(4);
        for (const value of values) {
          out.number(value);
          out.text(",");
        }
        assert.equal(new TextDecoder().decode(out.take()), values.map((v) => `${JSON.stringify(v)},`).join(""));
      }),
      { numRuns: RUNS },
    );
  });

  it("number() has room for the longest numbers whatever the buffer's fill", () => {
    // 25 characters: a sign, "0.", five zeros and 17 digits.
    assert.equal(String(LONGEST).length, 25);
    for (let filled = 0; filled < 64; filled++) {
      for (const capacity of [1, 16, 25, 32, 64]) {
        const out = new FrameBuffer(capacity);
        out.text("x".repeat(filled));
        out.number(LONGEST);
        out.number(-1.2345678901234567e-308);
        assert.equal(new TextDecoder().decode(out.take()), `${"x".repeat(filled)}${LONGEST}-1.2345678901234567e-308`);
      }
    }
  });

  it("repeat() copies earlier bytes; take() hands them over and counts", () => {
    const out = new FrameBuffer(2);
    out.text("ab");
    const start = out.length;
    out.jsonString("é\n");
    const end = out.length;
    out.text("|");
    out.repeat(start, end);
    assert.equal(out.taken, 0);
    const bytes = out.take();
    assert.equal(new TextDecoder().decode(bytes), 'ab"é\\n"|"é\\n"');
    assert.equal(out.taken, 1);
    assert.equal(out.length, 0);
    out.text("c");
    assert.equal(new TextDecoder().decode(out.take()), "c");
    assert.equal(new TextDecoder().decode(bytes), 'ab"é\\n"|"é\\n"', "a taken copy is not written over");
  });
});
