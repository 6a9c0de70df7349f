// `{{fromRequest:<regex>}}` placeholders in scripted chunks, filled from the
// live request when the chunk is played.

import { type GenerateOptions, LlmFailure, type Message, type StreamChunk } from "../mod.ts";

function messageTexts(message: Message): string[] {
  const out: string[] = [];
  for (const block of message.content) {
    if (block.type === "text" || block.type === "reasoning") out.push(block.text);
    else if (block.type === "tool-call") out.push(block.arguments);
    else if (block.type === "tool-result") {
      for (const inner of block.content) if (inner.type === "text") out.push(inner.text);
    }
  }
  return out;
}

const PLACEHOLDER = /\{\{fromRequest:(.+?)\}\}/g;

/** The chunk with its placeholders filled; throws `REPLAY_PLACEHOLDER` when one cannot be. */
export function fillPlaceholders(chunk: StreamChunk, request: GenerateOptions): StreamChunk {
  const text = JSON.stringify(chunk);
  if (!text.includes("{{fromRequest:")) return chunk;
  const haystack = [...request.messages].reverse().flatMap(messageTexts);
  if (request.system !== undefined) haystack.push(request.system);
  // Inside tool-call arguments (raw JSON text) a value is inserted JSON-escaped, so quotes and backslashes stay JSON.
  const fill = (value: unknown, json = false): unknown => {
    if (typeof value === "string") {
      return value.replace(PLACEHOLDER, (_all, source: string) => {
        let pattern: RegExp;
        try {
          pattern = new RegExp(source);
        } catch (cause) {
          throw new LlmFailure(
            "REPLAY_PLACEHOLDER",
            `Replay placeholder has an invalid regular expression: ${source}`,
            {
              cause,
            },
          );
        }
        for (const candidate of haystack) {
          const match = pattern.exec(candidate);
          if (match) {
            const found = match[1] ?? match[0];
            return json ? JSON.stringify(found).slice(1, -1) : found;
          }
        }
        throw new LlmFailure(
          "REPLAY_PLACEHOLDER",
          `Replay placeholder /${source}/ matches nothing in the live request`,
        );
      });
    }
    if (Array.isArray(value)) return value.map((v) => fill(v));
    if (typeof value === "object" && value !== null) {
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, fill(v, k === "arguments" || k === "argumentsDelta")]),
      );
    }
    return value;
  };
  return fill(chunk) as StreamChunk;
}
