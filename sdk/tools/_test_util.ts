// Test helpers for the tools room (not published).
import { z } from "zod";
import { defineTool } from "./define_tool.ts";
import type { ToolDefinition } from "./tool_definition.ts";

/** A promise with its resolver exposed. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Let pending promise callbacks and zero-delay timers run. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

/** A tool that echoes `text`. */
export function echoTool(name = "echo", extra: Partial<Parameters<typeof defineTool>[0]> = {}): ToolDefinition {
  return defineTool(
    {
      name,
      description: `Echo (${name})`,
      parameters: z.object({ text: z.string() }),
      output: { schema: z.string(), render: (_args: unknown, text: string) => text },
      execute: ({ text }: { text: string }) => text,
      ...extra,
    } as Parameters<typeof defineTool>[0],
  ) as ToolDefinition;
}

export const signal: AbortSignal = new AbortController().signal;
