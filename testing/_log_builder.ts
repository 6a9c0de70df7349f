// Helpers that build well-formed payloads for generated logs.

import type { AssistantMessage, ContentBlock, SystemMessage, UserMessage } from "../mod.ts";

export function userMessage(id: string, text: string, plugin?: string): UserMessage {
  return {
    id,
    role: "user",
    content: [{ type: "text", text }],
    source: plugin === undefined ? { kind: "user" } : { kind: "plugin", plugin },
  };
}

export function assistantMessage(id: string, content: ContentBlock[]): AssistantMessage {
  return { id, role: "assistant", content, source: { kind: "model", provider: "test", model: "test-model" } };
}

export function toolResultMessage(id: string, callId: string, text: string, isError?: boolean): UserMessage {
  return {
    id,
    role: "user",
    content: [{
      type: "tool-result",
      toolCallId: callId,
      content: [{ type: "text", text }],
      ...(isError ? { isError: true } : {}),
    }],
    source: { kind: "tool", callId },
  };
}

/** Pick index `a mod n`, or undefined when n is 0. */
export function pick(a: number, n: number): number | undefined {
  return n === 0 ? undefined : a % n;
}

export function systemMessage(id: string, text: string): SystemMessage {
  return { id, role: "system", content: [{ type: "text", text }], source: { kind: "plugin", plugin: "test-context" } };
}
