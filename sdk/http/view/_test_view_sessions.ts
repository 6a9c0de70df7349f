// Test support (not published): the sessions the timeline tests look at, made by a
// real harness with a scripted model — a tool turn (with a failing tool and a
// rejected approval), a cancelled turn, a system-prompt change, a compaction,
// and a fork of the first session with a turn of its own.

import { z } from "zod";
import { createHarness, type Harness } from "../../harness.ts";
import type { Agent } from "../../agent/agent.ts";
import { compactionPlugin, type CompactionService } from "../../compaction/mod.ts";
import type { GenerateOptions, LlmAdapter, StreamChunk, TokenUsage } from "../../llm/mod.ts";
import type { SessionStorage } from "../../persistence/session_storage.ts";
import { defineTool } from "../../tools/define_tool.ts";
import { programmaticApprover } from "../../tools/approval_service.ts";
import {
  scriptedAdapter,
  type ScriptEntry,
  textResponse,
  toolCallResponse,
} from "../../../testing/scripted_adapter.ts";

/** Wrap an adapter so that each chunk arrives `delayMs` after the previous one. */
export function pacedAdapter(inner: LlmAdapter, delayMs: number): LlmAdapter {
  return {
    provider: inner.provider,
    models: inner.models,
    async *stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
      for await (const chunk of inner.stream(options)) {
        if (delayMs > 0 && chunk.type !== "finish") await new Promise((resolve) => setTimeout(resolve, delayMs));
        yield chunk;
      }
    },
  };
}

export const lookupTool = defineTool({
  name: "lookup",
  description: "Look up the weather of a city",
  parameters: z.object({ city: z.string() }),
  output: { schema: z.string(), render: (_args: { city: string }, value: string) => value },
  execute: async ({ city }: { city: string }) => {
    await new Promise((resolve) => setTimeout(resolve, 15));
    return `${city}: sunny, 21 °C`;
  },
});

export const flakyTool = defineTool({
  name: "forecast",
  description: "Tomorrow's forecast (always fails here)",
  parameters: z.object({ city: z.string() }),
  output: { schema: z.string(), render: (_args: { city: string }, value: string) => value },
  execute: ({ city }: { city: string }): string => {
    throw new Error(`The forecast service has no data for ${city}`);
  },
});

export const deleteTool = defineTool({
  name: "delete_file",
  description: "Delete a file (asks for approval)",
  parameters: z.object({ path: z.string() }),
  output: { schema: z.string(), render: (_args: { path: string }, value: string) => value },
  execute: (): string => "deleted",
});

const usage = (inputTokens: number, outputTokens: number, extra: Record<string, number> = {}) => ({
  usage: { inputTokens, outputTokens, ...extra },
});

/** The model's answers per session, in call order. */
function scripts(): Record<string, ScriptEntry[]> {
  return {
    main: [
      toolCallResponse([
        { id: "call-1", name: "lookup", arguments: '{"city":"Paris"}' },
        { id: "call-2", name: "forecast", arguments: '{"city":"Paris"}' },
      ], {
        reasoning: "The user wants the weather in Paris. I will look it up and ask for the forecast.",
        ...usage(180, 42, { cacheReadTokens: 64, reasoningTokens: 18 }),
      }),
      textResponse(
        "It is sunny in Paris, 21 °C. The forecast service had no data for tomorrow.",
        usage(260, 24, { cacheReadTokens: 200 }),
      ),
      { hang: true, chunks: textResponse("Roses are red, violets are blue, the harness").chunks.slice(0, -2) },
      toolCallResponse([{ id: "call-3", name: "delete_file", arguments: '{"path":"/tmp/notes.txt"}' }], usage(320, 20)),
      textResponse("I could not delete the file: the request was rejected.", usage(360, 14, { cacheReadTokens: 300 })),
      textResponse("Why did the agent cross the road? To reach the other side of its context window.", {
        reasoning: "A short joke.",
        ...usage(400, 30, { reasoningTokens: 6 }),
      }),
      textResponse("Rome is sunny too.", usage(90, 8)),
    ],
    "main-fork": [
      toolCallResponse([{ id: "call-9", name: "lookup", arguments: '{"city":"Berlin"}' }], usage(200, 20)),
      textResponse("Berlin: sunny, 21 °C as well.", usage(240, 12, { cacheReadTokens: 180 })),
    ],
  };
}

/** The sessions made by {@linkcode makeViewSessions}. */
export interface ViewSessions {
  readonly harness: Harness;
  /** Every request the model received, per session. */
  readonly requests: Record<string, GenerateOptions[]>;
  readonly main: Agent;
  readonly fork: Agent;
}

async function waitFor(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  if (!check()) throw new Error(`Timed out waiting for ${what}`);
}

/**
 * Run the fixture conversation on a harness over `storage`; the caller disposes the harness
 * (then the sessions are only stored).
 */
export async function makeViewSessions(storage: SessionStorage, delayMs = 2): Promise<ViewSessions> {
  const plan = scripts();
  const cursors: Record<string, number> = {};
  const requests: Record<string, GenerateOptions[]> = {};
  const model = scriptedAdapter((request: GenerateOptions) => {
    if (request.purpose === "compaction") {
      return textResponse(
        "The user asked for the weather in Paris (sunny, 21 °C), a poem (cancelled) and a file deletion (rejected).",
      );
    }
    const id = request.sessionId ?? "?";
    (requests[id] ??= []).push(request);
    const at = cursors[id] = (cursors[id] ?? -1) + 1;
    const entry = plan[id]?.[at];
    if (entry === undefined) throw new Error(`No scripted answer ${at} for session ${id}`);
    return entry;
  });
  const harness = await createHarness({
    adapters: [pacedAdapter(model, delayMs)],
    model: { provider: "scripted", model: "scripted-model" },
    tools: [lookupTool, flakyTool, deleteTool],
    system: "You are a weather assistant.",
    storage,
    plugins: [[compactionPlugin as never, {}]],
  });
  harness.ctx.on(
    "tools/pre-execute",
    (exec, next) => exec.name === "delete_file" ? { kind: "ask", reason: "deletes a file" } : next(),
  );
  harness.ctx.service("approvals").register(programmaticApprover((req) => req.toolName !== "delete_file"));

  const main = await harness.createAgent({ id: "main" });
  await main.run("What is the weather in Paris?");
  const turnOneEnd = main.session.events.findLast((e) => e.type === "turn/end")!.seq;

  main.followup("Write me a long poem about logs.");
  await waitFor(
    () =>
      main.session.events.some((e) =>
        e.type === "assistant/chunk" && e.data.turn === 2 && e.data.chunk.type === "text-delta" &&
        e.data.chunk.text.includes("harness")
      ),
    "the poem to stream",
  );
  main.cancel("user");
  await main.whenIdle();

  await main.run("Delete /tmp/notes.txt please.");
  harness.ctx.service("systemPrompt").section({
    name: "style",
    order: 60,
    text: "Answer in one sentence.\nBe cheerful.",
  });
  await main.run("Tell me a joke.");
  const compaction = harness.ctx.get("compaction" as never) as unknown as CompactionService;
  await compaction.compact(main);
  await main.run("And in Rome?");

  const fork = await harness.forkAgent("main", { boundary: turnOneEnd, id: "main-fork" });
  await fork.run("And in Berlin?");
  return { harness, requests, main, fork };
}

/** A text answer streamed one word per delta (with optional reasoning, also per word). */
export function streamedText(text: string, options: { reasoning?: string; usage?: TokenUsage } = {}): ScriptEntry {
  const chunks: StreamChunk[] = [];
  let index = 0;
  const block = (type: "text" | "reasoning", body: string) => {
    const i = index++;
    chunks.push({ type: "block-start", index: i, blockType: type });
    for (const word of body.match(/\S+\s*/g) ?? []) {
      chunks.push(
        type === "text"
          ? { type: "text-delta", index: i, text: word }
          : { type: "reasoning-delta", index: i, text: word },
      );
    }
    chunks.push({ type: "block-end", index: i, block: { type, text: body } });
  };
  if (options.reasoning !== undefined) block("reasoning", options.reasoning);
  block("text", text);
  chunks.push({ type: "usage", usage: options.usage ?? { inputTokens: 50, outputTokens: 40 } });
  chunks.push({ type: "finish", reason: { kind: "stop" } });
  return { chunks };
}

/** A stored session of at least `size` events, made by the agent loop (the benchmark conversation's turn shape). */
export async function bigSession(storage: SessionStorage, size: number, id = "big"): Promise<number> {
  const model = scriptedAdapter((_request, index) =>
    index % 2 === 0
      ? toolCallResponse([{ id: `call_${index}`, name: "lookup", arguments: `{"city":"c${index}"}` }], {
        reasoning: "r ".repeat(20),
      })
      : streamedText(Array.from({ length: 40 }, (_, i) => `w${i}`).join(" "))
  );
  const harness = await createHarness({
    adapters: [model],
    model: { provider: "scripted", model: "scripted-model" },
    tools: [lookupTool],
    storage,
  });
  const agent = await harness.createAgent({ id });
  while (agent.session.seq < size) await agent.run(`question ${agent.session.seq}`);
  const n = agent.session.seq;
  await harness.dispose();
  return n;
}

/**
 * A session "plain" run once, then resumed and run twice (by new harnesses over `storage`, as new processes
 * would), and its fork "plain-fork" (forked after the third run, run, then resumed and run again). Every
 * resume writes a `session/end-seed`; only the fork's first one ends a seed copied from a parent.
 */
export async function resumedSessions(storage: SessionStorage): Promise<void> {
  const open = () =>
    createHarness({
      adapters: [scriptedAdapter(() => textResponse("ok"))],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
    });
  let harness = await open();
  await (await harness.createAgent({ id: "plain" })).run("first question");
  await harness.dispose();
  for (const question of ["second question", "third question"]) {
    harness = await open();
    await (await harness.resumeAgent("plain")).run(question);
    await harness.dispose();
  }
  harness = await open();
  await (await harness.forkAgent("plain", { id: "plain-fork" })).run("fork question");
  await harness.dispose();
  harness = await open();
  await (await harness.resumeAgent("plain-fork")).run("fork question after a resume");
  await harness.dispose();
}
