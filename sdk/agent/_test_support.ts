// Shared helpers of the agent loop tests (not published).

import { z } from "zod";
import type { SessionEvent } from "../session/mod.ts";
import { defineTool, type ToolDefinition } from "../tools/mod.ts";

/**
 * A zod tool `add` that sums `a` and `b`; with `concurrent`, it says every call of it may run beside others
 * (`isConcurrencySafe`).
 */
export function addTool(options: { concurrent?: boolean } = {}): ToolDefinition<{ a: number; b: number }, number> {
  return defineTool({
    name: "add",
    description: "Add two numbers",
    parameters: z.object({ a: z.number(), b: z.number() }),
    output: { schema: z.number(), render: (_args, sum) => String(sum) },
    execute: ({ a, b }) => a + b,
    ...(options.concurrent ? { isConcurrencySafe: () => true } : {}),
  });
}

/** A deterministic clock: 1000, 1001, … */
export function counterClock(start = 1000): () => number {
  let t = start;
  return () => t++;
}

/** A deterministic id generator: id-1, id-2, … */
export function counterIds(prefix = "id"): () => string {
  let n = 0;
  return () => `${prefix}-${++n}`;
}

/**
 * A compact, readable form of a log: one string per event, runs of chunks
 * folded into one entry (`assistant/chunk×N`).
 */
export function summarize(events: readonly SessionEvent[]): string[] {
  const out: string[] = [];
  let chunkRun = 0;
  const flush = () => {
    if (chunkRun > 0) out.push(`assistant/chunk×${chunkRun}`);
    chunkRun = 0;
  };
  for (const event of events) {
    if (event.type === "assistant/chunk") {
      chunkRun++;
      continue;
    }
    flush();
    out.push(describe(event));
  }
  flush();
  return out;
}

function describe(event: SessionEvent): string {
  switch (event.type) {
    case "turn/start":
      return `turn/start ${event.data.turn}`;
    case "turn/end": {
      const r = event.data.reason;
      const detail = r.kind === "aborted" ? `:${r.reason}` : r.kind === "error" ? `:${r.error.code}` : "";
      return `turn/end ${event.data.turn} ${r.kind}${detail}`;
    }
    case "step/start":
      return `step/start ${event.data.turn}.${event.data.step}`;
    case "step/end":
      return `step/end ${event.data.turn}.${event.data.step}`;
    case "user/message":
      return `user/message ${textOf(event.data.content)}`;
    case "assistant/message":
      return `assistant/message ${
        event.data.message.content.map((b) =>
          b.type === "text" || b.type === "reasoning"
            ? `${b.type}:${b.text}`
            : b.type === "tool-call"
            ? `call:${b.name}`
            : b.type
        ).join(",")
      }${event.data.interrupted ? " (interrupted)" : ""}`;
    case "tool/call":
      return `tool/call ${event.data.name} ${event.data.callId}`;
    case "tool/result":
      return `tool/result ${event.data.message.source.kind === "tool" ? event.data.message.source.callId : "?"}${
        event.data.error ? ` error:${event.data.error.code}` : ""
      }`;
    case "request/header":
      return `request/header ${event.data.reason}`;
    case "agent/inbox/spliced":
      return `inbox ${event.data.target} ${event.data.outcome ?? "inserted"}${
        event.data.removedCount ? ` -${event.data.removedCount}` : ""
      }${event.data.inserted.length ? ` +${event.data.inserted.length}` : ""}`;
    case "llm/retry":
      return `llm/retry ${event.data.attempt} ${event.data.failure.code}`;
    default:
      return event.type;
  }
}

function textOf(content: readonly { type: string; text?: string }[]): string {
  return content.map((b) => (b.type === "text" ? b.text : `[${b.type}]`)).join("");
}
