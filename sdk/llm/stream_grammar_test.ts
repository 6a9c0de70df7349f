import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { checkStreamGrammar, type GrammarRule, type StreamChunk, StreamGrammarChecker } from "./mod.ts";
import { arbValidStream } from "./_test_stream_arbitrary.ts";

const rules = (chunks: StreamChunk[]): GrammarRule[] => checkStreamGrammar(chunks).map((v) => v.rule);
const stop: StreamChunk = { type: "finish", reason: { kind: "stop" } };
const usage: StreamChunk = { type: "usage", usage: { inputTokens: 1, outputTokens: 1 } };
const text = (index: number, t = "x"): StreamChunk => ({ type: "text-delta", index, text: t });
const start = (index: number): StreamChunk => ({ type: "block-start", index, blockType: "text" });
const end = (index: number, t = "x"): StreamChunk => ({ type: "block-end", index, block: { type: "text", text: t } });

describe("checkStreamGrammar()", () => {
  it("accepts a complete stream, and an error finish that leaves a block open", () => {
    assert.deepEqual(rules([start(0), text(0), end(0), usage, stop]), []);
    assert.deepEqual(
      rules([start(0), text(0), { type: "finish", reason: { kind: "error", failure: { code: "X", message: "m" } } }]),
      [],
    );
  });

  it("reports a delta with no block-start and a block-end with no open block at their own positions", () => {
    assert.deepEqual(checkStreamGrammar([text(0), end(0), stop]).map((v) => [v.rule, v.position]), [[
      "delta-without-block-start",
      0,
    ]]);
    assert.deepEqual(checkStreamGrammar([start(0), end(0), end(1), stop]).map((v) => [v.rule, v.position]), [[
      "block-end-without-block-start",
      2,
    ]]);
    // The block then counts as opened there: a second end is a duplicate, not a second missing start.
    assert.deepEqual(rules([end(0), end(0), stop]), ["block-end-without-block-start", "duplicate-block-end"]);
  });

  const cases: [string, StreamChunk[], GrammarRule][] = [
    ["a chunk after finish", [text(0), end(0), stop, usage], "chunk-after-finish"],
    ["usage twice", [text(0), end(0), usage, usage, stop], "duplicate-usage"],
    ["no finish", [text(0), end(0), usage], "missing-finish"],
    [
      "a delta into a block of another type",
      [text(0), { type: "reasoning-delta", index: 0, text: "r" }, end(0), stop],
      "delta-type-mismatch",
    ],
    ["a delta into an ended block", [text(0), end(0), text(0), stop], "delta-after-block-end"],
    ["a skipped index", [text(1), end(1), stop], "index-order"],
    ["a block left open at a stop finish", [text(0), stop], "open-blocks-at-finish"],
    ["a second block-start", [
      { type: "block-start", index: 0, blockType: "text" },
      { type: "block-start", index: 0, blockType: "text" },
      end(0),
      stop,
    ], "duplicate-block-start"],
    ["a second block-end", [text(0), end(0), end(0), stop], "duplicate-block-end"],
    ["a block-end of another type", [
      text(0),
      { type: "block-end", index: 0, block: { type: "reasoning", text: "x" } },
      stop,
    ], "block-end-type-mismatch"],
    [
      "a tool call that changes id",
      [
        { type: "tool-call-delta", index: 0, id: "a", name: "n", argumentsDelta: "{" },
        { type: "tool-call-delta", index: 0, id: "b", argumentsDelta: "}" },
        { type: "block-end", index: 0, block: { type: "tool-call", id: "a", name: "n", arguments: "{}" } },
        { type: "finish", reason: { kind: "tool-calls" } },
      ],
      "tool-call-id-changed",
    ],
    ["an unknown chunk type", [{ type: "nope" } as unknown as StreamChunk, stop], "malformed-chunk"],
    ["a negative index", [text(-1), stop], "malformed-chunk"],
  ];
  for (const [name, chunks, rule] of cases) {
    it(`rejects ${name} (${rule})`, () => {
      assert.ok(rules(chunks).includes(rule), JSON.stringify(checkStreamGrammar(chunks)));
    });
  }

  it("reports the position of the offending chunk", () => {
    assert.deepEqual(checkStreamGrammar([start(0), end(0), stop, usage]), [
      { rule: "chunk-after-finish", position: 3, message: 'Chunk "usage" follows the finish chunk' },
    ]);
  });

  it("StreamGrammarChecker reports violations as chunks arrive", () => {
    const checker = new StreamGrammarChecker();
    assert.deepEqual(checker.push(start(0)), []);
    assert.deepEqual(checker.push(text(0)), []);
    assert.deepEqual(checker.push(start(2)).map((v) => v.rule), ["index-order"]);
    assert.equal(checker.finished, false);
    checker.push({ type: "finish", reason: { kind: "aborted", failure: { code: "ABORTED", message: "m" } } });
    assert.equal(checker.finished, true);
    assert.deepEqual(checker.end(), []);
    assert.deepEqual(checker.violations.map((v) => v.rule), ["index-order"]);
  });

  it("property: every generated valid stream passes", () => {
    fc.assert(fc.property(arbValidStream, ({ chunks }) => assert.deepEqual(checkStreamGrammar(chunks), [])), {
      numRuns: 300,
    });
  });

  it("property: each kind of defect injected into a valid stream is rejected", () => {
    const defects: [GrammarRule, (chunks: StreamChunk[]) => StreamChunk[] | undefined][] = [
      ["missing-finish", (c) => c.slice(0, -1)],
      ["chunk-after-finish", (c) => [...c, usage]],
      ["duplicate-usage", (c) => [...c.slice(0, -1), usage, usage, c.at(-1)!]],
      ["index-order", (c) => [...c.slice(0, -1), text(c.length + 1), c.at(-1)!]],
      ["open-blocks-at-finish", (c) => [...c.slice(0, -1), text(blockCount(c)), stop]],
      ["delta-after-block-end", (c) => {
        const ended = c.find((x) => x.type === "block-end");
        if (ended?.type !== "block-end") return undefined;
        const delta: StreamChunk = ended.block.type === "tool-call"
          ? { type: "tool-call-delta", index: ended.index, id: ended.block.id, argumentsDelta: "x" }
          : ended.block.type === "reasoning"
          ? { type: "reasoning-delta", index: ended.index, text: "x" }
          : text(ended.index);
        return [...c.slice(0, -1), delta, c.at(-1)!];
      }],
      ["delta-type-mismatch", (c) => {
        const d = c.find((x) => x.type === "reasoning-delta" || x.type === "tool-call-delta");
        if (d === undefined || !("index" in d)) return undefined;
        const at = c.indexOf(d);
        return [...c.slice(0, at + 1), text(d.index), ...c.slice(at + 1)];
      }],
    ];
    fc.assert(
      fc.property(arbValidStream, fc.nat(defects.length - 1), ({ chunks }, pick) => {
        const [rule, inject] = defects[pick];
        const broken = inject(chunks);
        if (broken === undefined) return;
        assert.ok(rules(broken).includes(rule), `${rule} not found in ${JSON.stringify(checkStreamGrammar(broken))}`);
      }),
      { numRuns: 400 },
    );
  });
});

function blockCount(chunks: StreamChunk[]): number {
  const seen = new Set<number>();
  for (const c of chunks) if ("index" in c) seen.add(c.index);
  return seen.size;
}
