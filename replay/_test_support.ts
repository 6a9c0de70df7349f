// Test helpers of the replay room: hand-built logs and sessions recorded
// through a real harness with the scripted model.

import {
  createHarness,
  type CreateHarnessOptions,
  defineTool,
  type LlmAdapter,
  type RunResult,
  type Session,
  type SessionEvent,
  type StreamChunk,
  type ToolDefinition,
  TurnFailedError,
} from "../mod.ts";
import { type Script, scriptedAdapter, textResponse, toolCallResponse } from "../testing/mod.ts";

type Draft = Omit<SessionEvent, "seq" | "time">;

/** Build a log with contiguous seqs. */
export function log(...drafts: Draft[]): SessionEvent[] {
  return drafts.map((draft, seq) => ({ ...draft, seq, time: 1000 + seq }) as SessionEvent);
}

/** An `assistant/chunk` draft. */
export function chunk(turn: number, step: number, c: StreamChunk): Draft {
  return { type: "assistant/chunk", data: { turn, step, chunk: c } } as Draft;
}

/** A `stop` finish chunk. */
export const STOP: StreamChunk = { type: "finish", reason: { kind: "stop" } };

/** A text delta chunk. */
export function text(t: string, index = 0): StreamChunk {
  return { type: "text-delta", index, text: t };
}

/** An `error` finish chunk. */
export function errorFinish(code: string): StreamChunk {
  return { type: "finish", reason: { kind: "error", failure: { code, message: `${code} failure` } } };
}

/** The tool the recorded sessions use: echo its text, upper-cased. */
export function shoutTool(suffix = "!"): ToolDefinition {
  return defineTool({
    name: "shout",
    description: "Shout a text",
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    output: { schema: { type: "string" }, render: (_args, value) => String(value) },
    execute: (args) => `${String((args as { text: string }).text).toUpperCase()}${suffix}`,
  });
}

/** The scripted conversation the recorded sessions have: a tool call, an answer, then a second turn. */
export function conversation(): Script {
  return [
    toolCallResponse([{ id: "call-1", name: "shout", arguments: '{"text":"hi"}' }], { reasoning: "Use the tool." }),
    textResponse("Shouted.", { usage: { inputTokens: 10, outputTokens: 2 } }),
    textResponse("Second answer.", { reasoning: "Easy." }),
  ];
}

/** The user turns of the recorded sessions. */
export const INPUTS: readonly string[] = ["Shout hi", "Again?"];

/** Options of `runSession`. */
export interface RunSessionOptions extends CreateHarnessOptions {
  readonly id?: string;
  readonly inputs?: readonly string[];
  /** Prefix of generated ids; differs between record and replay to prove normalisation. */
  readonly idPrefix?: string;
  /** Start of the clock. */
  readonly clock?: number;
}

/** Run the inputs on a fresh harness over `adapters`; resolves to the session and outcomes. */
export async function runSession(
  adapters: readonly LlmAdapter[],
  options: RunSessionOptions = {},
): Promise<{ session: Session; results: RunResult[] }> {
  let n = 0;
  let clock = options.clock ?? 1_000_000;
  const harness = await createHarness({
    tools: [shoutTool()],
    system: "Be loud.",
    newId: () => `${options.idPrefix ?? "id"}-${++n}`,
    now: () => clock++,
    ...options,
    adapters,
  });
  try {
    const agent = await harness.createAgent({ provider: "scripted", model: "scripted-model", id: options.id ?? "s1" });
    const results: RunResult[] = [];
    for (const input of options.inputs ?? INPUTS) {
      // A failed turn (e.g. a strict replay that diverged) is an outcome these tests compare too.
      results.push(
        await agent.run(input).catch((error) =>
          error instanceof TurnFailedError ? error.result : Promise.reject(error)
        ),
      );
    }
    return { session: agent.session, results };
  } finally {
    await harness.dispose();
  }
}

/** Record the conversation with the scripted model; resolves to the recorded log. */
export async function recordConversation(options: RunSessionOptions = {}): Promise<SessionEvent[]> {
  const { session } = await runSession([scriptedAdapter(conversation())], options);
  return session.events.slice();
}
