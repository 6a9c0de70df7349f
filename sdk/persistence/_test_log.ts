// Test helpers: realistic session logs built event by event.

import type { SessionEvent } from "../session/session_events.ts";

const MODEL = { kind: "model", provider: "test", model: "m1" } as const;

/** Builds a contiguous log; `time` advances by one per event unless given. */
export class LogBuilder {
  readonly events: SessionEvent[] = [];
  time = 1_000;

  constructor(start: readonly SessionEvent[] = []) {
    this.events.push(...start);
    if (start.length > 0) this.time = start[start.length - 1].time;
  }

  push(event: Omit<SessionEvent, "seq" | "time"> & { time?: number }): SessionEvent {
    const full = { ...event, seq: this.events.length, time: event.time ?? ++this.time } as SessionEvent;
    this.events.push(full);
    return full;
  }

  turn(turn: number, body: () => void): void {
    this.push({ type: "turn/start", data: { turn } });
    body();
    this.push({ type: "turn/end", data: { turn, reason: { kind: "completed" } } });
  }

  user(text: string): SessionEvent {
    return this.push({
      type: "user/message",
      data: { id: `u${this.events.length}`, role: "user", content: [{ type: "text", text }], source: { kind: "user" } },
      surfaceOp: "append",
    } as Omit<SessionEvent, "seq" | "time">);
  }

  /** A streamed step: reasoning deltas, text deltas, tool-call deltas, then the assistant message. */
  stream(turn: number, step: number, text: string[], options: { reasoning?: string[]; calls?: string[] } = {}) {
    const seqs: number[] = [];
    let index = 0;
    const chunk = (c: unknown) =>
      seqs.push(this.push({ type: "assistant/chunk", data: { turn, step, chunk: c } } as never).seq);
    const content: unknown[] = [];
    if (options.reasoning) {
      chunk({ type: "block-start", index, blockType: "reasoning" });
      for (const t of options.reasoning) chunk({ type: "reasoning-delta", index, text: t });
      const block = { type: "reasoning", text: options.reasoning.join("") };
      chunk({ type: "block-end", index, block });
      content.push(block);
      index++;
    }
    chunk({ type: "block-start", index, blockType: "text" });
    for (const t of text) chunk({ type: "text-delta", index, text: t });
    const textBlock = { type: "text", text: text.join("") };
    chunk({ type: "block-end", index, block: textBlock });
    content.push(textBlock);
    index++;
    for (const id of options.calls ?? []) {
      chunk({ type: "block-start", index, blockType: "tool-call" });
      chunk({ type: "tool-call-delta", index, id, name: "read", argumentsDelta: "" });
      for (const part of ['{"pa', 'th":', '"a.txt', '"}']) {
        chunk({ type: "tool-call-delta", index, id, argumentsDelta: part });
      }
      const block = { type: "tool-call", id, name: "read", arguments: '{"path":"a.txt"}' };
      chunk({ type: "block-end", index, block });
      content.push(block);
      index++;
    }
    chunk({ type: "usage", usage: { inputTokens: 10, outputTokens: 5 } });
    chunk({ type: "finish", reason: { kind: options.calls?.length ? "tool-calls" : "stop" } });
    return this.push({
      type: "assistant/message",
      data: { turn, step, message: { id: `a${this.events.length}`, role: "assistant", content, source: MODEL } },
      surfaceOp: "append",
      sourceEventSeqs: seqs,
    } as never);
  }

  toolCall(turn: number, step: number, callId: string): SessionEvent {
    return this.push({ type: "tool/call", data: { turn, step, callId, name: "read", arguments: '{"path":"a.txt"}' } });
  }

  toolResult(turn: number, step: number, callId: string, callSeq: number, text = "contents"): SessionEvent {
    return this.push({
      type: "tool/result",
      data: {
        turn,
        step,
        message: {
          id: `r${this.events.length}`,
          role: "user",
          content: [{ type: "tool-result", toolCallId: callId, content: [{ type: "text", text }] }],
          source: { kind: "tool", callId },
        },
      },
      surfaceOp: "append",
      sourceEventSeqs: [callSeq],
    } as never);
  }

  /** A complete turn: user prompt, a tool step, and a final answer. */
  completeTurn(turn: number): void {
    this.turn(turn, () => {
      this.push({ type: "step/start", data: { turn, step: 1 } });
      this.user(`question ${turn} — ünïcødé ✓`);
      this.stream(turn, 1, ["Let ", "me ", "look", "."], { reasoning: ["The ", "user ", "asks"], calls: [`c${turn}`] });
      const call = this.toolCall(turn, 1, `c${turn}`);
      this.toolResult(turn, 1, `c${turn}`, call.seq, 'line 1\nline 2 "quoted"');
      this.push({ type: "step/end", data: { turn, step: 1 } });
      this.push({ type: "step/start", data: { turn, step: 2 } });
      this.stream(turn, 2, ["The ", "file ", "says ", "hello", "."]);
      this.push({ type: "step/end", data: { turn, step: 2 } });
    });
  }
}
