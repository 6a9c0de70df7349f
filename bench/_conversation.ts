/**
 * The standard scripted conversation of the design notes' BENCH.md (kept outside
 * this repository; nothing here reads it), shared by
 * every loop benchmark: the chunks of each (turn, step), the scripted model
 * that streams them, the `add` tool, the bare baseline loop, and the checks
 * that make a run which skips work fail.
 *
 * A turn is 2 model steps and 100 chunks (90 deltas), one tool call, and four
 * history messages (user, assistant with the call, tool result, assistant).
 *
 * @module
 */

import {
  type ContentBlock,
  defineTool,
  type GenerateOptions,
  type LlmAdapter,
  type Message,
  type Session,
  type StreamChunk,
  type TokenUsage,
  type ToolDefinition,
} from "../mod.ts";
import { z } from "zod";

/** The provider route of the scripted model. */
export const BENCH_PROVIDER = "bench";
/** The model id of the scripted model. */
export const BENCH_MODEL = "bench-model";
/** Model steps per turn. */
export const STEPS_PER_TURN = 2;
/** Chunks streamed per turn (both steps, block starts and ends, usage and finish included). */
export const CHUNKS_PER_TURN = 100;
/** Deltas streamed per turn. */
export const DELTAS_PER_TURN = 90;
/** History messages per turn. */
export const MESSAGES_PER_TURN = 4;

const DELTA = "word ";
const TEXT_20 = DELTA.repeat(20);
const TEXT_40 = DELTA.repeat(40);
const USAGE: TokenUsage = { inputTokens: 100, outputTokens: 50 };

/** The arguments of the turn's tool call, as the model streams them. */
export function toolArguments(turn: number): string {
  return `{"a":${1000 + turn},"b":${2000 + turn}}`;
}

/** The user's text of a turn. */
export function userText(turn: number): string {
  return `Turn ${turn}: add the two numbers, please.`;
}

/** The final answer of a turn (the 40 text deltas of step 2, joined). */
export const FINAL_TEXT: string = TEXT_40;

function argumentPieces(turn: number): string[] {
  const text = toolArguments(turn);
  const pieces: string[] = [];
  for (let i = 0; i < 10; i++) {
    pieces.push(text.slice(Math.floor((text.length * i) / 10), Math.floor((text.length * (i + 1)) / 10)));
  }
  return pieces;
}

/**
 * The scripted model's stream for one step: fresh chunk objects, yielded from
 * an async generator with one `await` per chunk and no timers.
 *
 * @param turn The turn, from 1.
 * @param step 1 (reasoning, text, tool call) or 2 (text).
 */
export async function* scriptedStream(turn: number, step: number): AsyncGenerator<StreamChunk, void, undefined> {
  if (step === 1) {
    await null;
    yield { type: "block-start", index: 0, blockType: "reasoning" };
    for (let i = 0; i < 20; i++) {
      await null;
      yield { type: "reasoning-delta", index: 0, text: DELTA };
    }
    await null;
    yield { type: "block-end", index: 0, block: { type: "reasoning", text: TEXT_20 } };
    await null;
    yield { type: "block-start", index: 1, blockType: "text" };
    for (let i = 0; i < 20; i++) {
      await null;
      yield { type: "text-delta", index: 1, text: DELTA };
    }
    await null;
    yield { type: "block-end", index: 1, block: { type: "text", text: TEXT_20 } };
    const id = `call_${turn}`;
    await null;
    yield { type: "block-start", index: 2, blockType: "tool-call" };
    const pieces = argumentPieces(turn);
    for (let i = 0; i < 10; i++) {
      await null;
      yield i === 0
        ? { type: "tool-call-delta", index: 2, id, name: "add", argumentsDelta: pieces[i] }
        : { type: "tool-call-delta", index: 2, id, argumentsDelta: pieces[i] };
    }
    await null;
    yield {
      type: "block-end",
      index: 2,
      block: { type: "tool-call", id, name: "add", arguments: toolArguments(turn) },
    };
    await null;
    yield { type: "usage", usage: { ...USAGE } };
    await null;
    yield { type: "finish", reason: { kind: "tool-calls" } };
    return;
  }
  await null;
  yield { type: "block-start", index: 0, blockType: "text" };
  for (let i = 0; i < 40; i++) {
    await null;
    yield { type: "text-delta", index: 0, text: DELTA };
  }
  await null;
  yield { type: "block-end", index: 0, block: { type: "text", text: TEXT_40 } };
  await null;
  yield { type: "usage", usage: { ...USAGE } };
  await null;
  yield { type: "finish", reason: { kind: "stop" } };
}

/** The scripted model as an adapter, counting what it streamed. */
export interface BenchAdapter extends LlmAdapter {
  /** Model calls served. */
  readonly calls: number;
}

/**
 * The scripted model as an `LlmAdapter`: call k of a session plays turn
 * `k / 2 + 1`, step `k % 2 + 1` (one counter per session id).
 */
export function benchAdapter(): BenchAdapter {
  const perSession = new Map<string, number>();
  let calls = 0;
  return {
    provider: BENCH_PROVIDER,
    models: [{ id: BENCH_MODEL, contextWindow: 1_000_000 }],
    get calls() {
      return calls;
    },
    stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
      const key = options.sessionId ?? "";
      const k = perSession.get(key) ?? 0;
      perSession.set(key, k + 1);
      calls++;
      return scriptedStream(Math.floor(k / 2) + 1, (k % 2) + 1);
    },
  };
}

/** The tool `add({a, b})`, declared with the SDK's normal tool definition. */
export function addTool(): ToolDefinition {
  return defineTool({
    name: "add",
    description: "Add two numbers",
    parameters: z.object({ a: z.number(), b: z.number() }),
    output: { schema: z.number(), render: (_args, sum) => String(sum) },
    execute: ({ a, b }) => a + b,
  });
}

/** What a loop saw, for the correctness checks. */
export interface LoopCounts {
  /** History messages at the end. */
  messages: number;
  /** Deltas the application saw. */
  deltas: number;
  /** Tool calls executed with the right result. */
  toolCalls: number;
}

type MutableBlock =
  | { type: "text" | "reasoning"; text: string }
  | { type: "tool-call"; id: string; name: string; arguments: string };

/**
 * The bare baseline: plain code, no SDK, that iterates the same async
 * generator, concatenates deltas into message objects, parses the arguments
 * once, calls the tool and pushes the messages to an array.
 */
export class BareLoop {
  /** The history. */
  readonly history: Message[] = [];
  /** Deltas seen. */
  deltas = 0;
  /** Tool calls made with the right result. */
  toolCalls = 0;
  #ids = 0;

  /** Run one turn: append the user message, then steps until the model stops. */
  async turn(turn: number): Promise<string> {
    this.history.push({
      id: `b${++this.#ids}`,
      role: "user",
      content: [{ type: "text", text: userText(turn) }],
      source: { kind: "user" },
    });
    for (let step = 1;; step++) {
      const blocks: MutableBlock[] = [];
      let finish = "";
      let usage: TokenUsage | undefined;
      for await (const chunk of scriptedStream(turn, step)) {
        switch (chunk.type) {
          case "block-start":
            blocks[chunk.index] = chunk.blockType === "tool-call"
              ? { type: "tool-call", id: "", name: "", arguments: "" }
              : { type: chunk.blockType, text: "" };
            break;
          case "text-delta":
          case "reasoning-delta":
            (blocks[chunk.index] as { text: string }).text += chunk.text;
            this.deltas++;
            break;
          case "tool-call-delta": {
            const block = blocks[chunk.index] as { id: string; name: string; arguments: string };
            block.id = chunk.id;
            if (chunk.name !== undefined) block.name = chunk.name;
            block.arguments += chunk.argumentsDelta;
            this.deltas++;
            break;
          }
          case "usage":
            usage = chunk.usage;
            break;
          case "finish":
            finish = chunk.reason.kind;
            break;
        }
      }
      if (usage === undefined) throw new Error("The scripted model sent no usage");
      this.history.push({
        id: `b${++this.#ids}`,
        role: "assistant",
        content: blocks as ContentBlock[],
        source: { kind: "model", provider: BENCH_PROVIDER, model: BENCH_MODEL },
      });
      if (finish !== "tool-calls") {
        const last = blocks.at(-1);
        return last?.type === "text" ? last.text : "";
      }
      for (const block of blocks) {
        if (block.type !== "tool-call") continue;
        const args = JSON.parse(block.arguments) as { a: number; b: number };
        const sum = args.a + args.b;
        if (sum === 3000 + 2 * turn) this.toolCalls++;
        this.history.push({
          id: `b${++this.#ids}`,
          role: "user",
          content: [{ type: "tool-result", toolCallId: block.id, content: [{ type: "text", text: String(sum) }] }],
          source: { kind: "tool", callId: block.id },
        });
      }
    }
  }

  /** The counts for {@linkcode checkCounts}. */
  counts(): LoopCounts {
    return { messages: this.history.length, deltas: this.deltas, toolCalls: this.toolCalls };
  }
}

/**
 * What a harness session holds after `turns` turns: derived history length,
 * and tool results whose text is the right sum.
 */
export function sessionCounts(session: Session, deltas: number): LoopCounts {
  let toolCalls = 0;
  for (const event of session.events) {
    if (event.type !== "tool/result" || event.data.error !== undefined) continue;
    const block = event.data.message.content[0];
    if (block?.type !== "tool-result") continue;
    const text = block.content[0]?.type === "text" ? block.content[0].text : "";
    if (text === String(3000 + 2 * event.data.turn)) toolCalls++;
  }
  return { messages: session.deriveMessages().length, deltas, toolCalls };
}

/**
 * Check that a run of `turns` turns did all the work.
 *
 * @throws {Error} When a count differs from the script's.
 */
export function checkCounts(subject: string, turns: number, counts: LoopCounts): void {
  const expected: LoopCounts = {
    messages: MESSAGES_PER_TURN * turns,
    deltas: DELTAS_PER_TURN * turns,
    toolCalls: turns,
  };
  for (const key of ["messages", "deltas", "toolCalls"] as const) {
    if (counts[key] !== expected[key]) {
      throw new Error(
        `${subject} skipped work: ${key} is ${counts[key]}, expected ${expected[key]} after ${turns} turns`,
      );
    }
  }
}
