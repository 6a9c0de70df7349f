// Test support (not published): an SSE client over real fetch and
// EventSourceParserStream, and a harness + app + loopback server fixture.

import assert from "node:assert/strict";
import { EventSourceParserStream } from "eventsource-parser/stream";
import type { SessionEvent } from "../session/session_events.ts";
import { deltaOf, isStreamedDelta } from "./_sse_frames.ts";
import { z } from "zod";
import { createHarness, type CreateHarnessOptions, type Harness } from "../harness.ts";
import type { LlmAdapter } from "../llm/llm_adapter.ts";
import { defineTool } from "../tools/define_tool.ts";
import { createHarnessApp, type HarnessAppOptions, type RequestLogRecord } from "./create_harness_app.ts";
import { type LoopbackServer, serveOnLoopback } from "./_test_server.ts";

/** One parsed SSE message; `data` is the parsed JSON. */
export interface SseMessage {
  readonly event: string;
  readonly id: string | undefined;
  // deno-lint-ignore no-explicit-any
  readonly data: any;
}

/** An open event stream. */
export class SseClient {
  readonly response: Response;
  readonly comments: string[] = [];
  readonly #controller: AbortController;
  readonly #reader: ReadableStreamDefaultReader<{ event?: string; id?: string; data: string }>;

  private constructor(response: Response, controller: AbortController, comments: string[]) {
    this.response = response;
    this.#controller = controller;
    this.comments = comments;
    this.#reader = response.body!
      .pipeThrough(new TextDecoderStream())
      .pipeThrough(new EventSourceParserStream({ onComment: (c) => comments.push(c) }))
      .getReader();
  }

  /** Open `GET <url>`; the response must be an event stream. */
  static async open(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
    const controller = new AbortController();
    const response = await fetch(url, {
      headers: { accept: "text/event-stream", ...headers },
      signal: controller.signal,
    });
    if (!response.ok) throw new Error(`GET ${url}: ${response.status} ${await response.text()}`);
    return new SseClient(response, controller, []);
  }

  /** The next message, or `undefined` when the stream ended. */
  async next(): Promise<SseMessage | undefined> {
    const { done, value } = await this.#reader.read();
    if (done) return undefined;
    return {
      event: value.event ?? "message",
      id: value.id,
      data: value.data === "" ? undefined : JSON.parse(value.data),
    };
  }

  /** Read messages up to and including the first that matches (throws if the stream ends first). */
  async until(match: (message: SseMessage) => boolean): Promise<SseMessage[]> {
    const out: SseMessage[] = [];
    while (true) {
      const message = await this.next();
      if (message === undefined) throw new Error(`Stream ended before the expected message; got ${out.length}`);
      out.push(message);
      if (match(message)) return out;
    }
  }

  /** Drop the connection, as a client going away would. */
  async close(): Promise<void> {
    this.#controller.abort();
    await this.#reader.cancel().catch(() => {});
  }
}

/** The messages of an SSE text read whole (comments and `retry:` ignored). */
export function parseFrames(text: string): SseMessage[] {
  const out: SseMessage[] = [];
  for (const frame of text.split("\n\n")) {
    let event = "message", id: string | undefined, data: string | undefined;
    for (const line of frame.split("\n")) {
      if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("id: ")) id = line.slice(4);
      else if (line.startsWith("data: ")) data = line.slice(6);
    }
    if (data !== undefined) out.push({ event, id, data: JSON.parse(data) });
  }
  return out;
}

/** The session events (`event: session`) among messages. */
export function sessionEvents(messages: readonly SseMessage[]): SseMessage[] {
  return messages.filter((m) => m.event === "session");
}

/** The frames among messages that stand for an event of the log: session frames, and deltas with an id. */
export function loggedFrames(messages: readonly SseMessage[]): SseMessage[] {
  return messages.filter((m) => m.event === "session" || (m.event === "delta" && m.id !== undefined));
}

/**
 * The seq of each event of the log that the frames among messages stand for:
 * a session frame's, and each chunk of a delta frame with an id (`seq` to
 * `last`; its id names the last).
 */
export function loggedSeqs(messages: readonly SseMessage[]): number[] {
  return loggedFrames(messages).flatMap((m) => {
    const id = Number(m.id?.split(":").at(-1));
    if (m.event === "session") return [id];
    const first: number = m.data.seq, last: number = m.data.last ?? m.data.seq;
    assert.equal(id, last, `the id of delta frame ${JSON.stringify(m.data)} names its last chunk`);
    return Array.from({ length: last - first + 1 }, (_, i) => first + i);
  });
}

/**
 * The payload a delta frame carries for the chunks `first` to `last` of
 * `log`: the first one's delta with the run's text, and `last` when it
 * carries more than one.
 */
export function deltaPayloadOf(log: readonly SessionEvent[], first: number, last = first): Record<string, unknown> {
  const head = deltaOf(log[first]);
  assert.ok(head !== undefined, `event ${first} is a streamed delta`);
  if (last === first) return head;
  const run = log.slice(first, last + 1).map((e) => deltaOf(e));
  assert.ok(run.every((d) => d !== undefined && d.blockType === head.blockType && d.index === head.index));
  return { ...head, text: run.map((d) => d!.text).join(""), last };
}

/**
 * Assert that each frame among messages that stands for events is those
 * events of `log`: the event itself (`event: session`), or, for a run of
 * streamed chunks of one block, their delta (`event: delta`, which a stream
 * that sends deltas sends instead). Returns how many frames of each kind
 * there were, and how many chunks the delta frames carried.
 */
export function assertFramesOfLog(
  messages: readonly SseMessage[],
  log: readonly SessionEvent[],
): { session: number; delta: number; chunks: number } {
  const counts = { session: 0, delta: 0, chunks: 0 };
  for (const m of loggedFrames(messages)) {
    const seq = Number(m.id?.split(":").at(-1));
    const event = log[seq];
    assert.ok(event !== undefined, `frame ${m.id} is beyond the log`);
    if (m.event === "session") {
      assert.deepEqual(m.data, JSON.parse(JSON.stringify(event)));
      counts.session++;
    } else {
      for (let s = m.data.seq; s <= seq; s++) {
        assert.ok(isStreamedDelta(log[s]), `frame ${m.id} carries event ${s}, which is not a streamed delta`);
      }
      assert.deepEqual(m.data, JSON.parse(JSON.stringify(deltaPayloadOf(log, m.data.seq, seq))));
      counts.delta++;
      counts.chunks += seq - m.data.seq + 1;
    }
  }
  return counts;
}

/** A tool `lookup` that answers `value of <key>`, after `hold()` when given. */
export function lookupTool(hold?: () => Promise<void>) {
  return defineTool({
    name: "lookup",
    description: "Look a key up",
    parameters: z.object({ key: z.string() }),
    output: { schema: z.string(), render: (_args: { key: string }, value: string) => value },
    execute: async ({ key }: { key: string }) => {
      await hold?.();
      return `value of ${key}`;
    },
  });
}

/** `adapter` streaming as `inner` does, each text delta only once the test grants a permit for it. */
export function pacedAdapter(inner: LlmAdapter): { adapter: LlmAdapter; grant(n: number): void } {
  let permits = 0;
  let wake: (() => void) | undefined;
  const adapter: LlmAdapter = {
    provider: inner.provider,
    models: inner.models,
    async *stream(options) {
      for await (const chunk of inner.stream(options)) {
        if (chunk.type === "text-delta") {
          while (permits === 0) await new Promise<void>((resolve) => (wake = resolve));
          permits--;
        }
        yield chunk;
      }
    },
  };
  return {
    adapter,
    grant(n) {
      permits += n;
      wake?.();
    },
  };
}

/** The live agent of a session. */
export function agentOf(harness: Harness, id: string) {
  const agent = harness.ctx.service("agents").get(id);
  assert.ok(agent, `agent ${id} is live`);
  return agent;
}

/** Run `body` with the served harness, then close it. */
export async function withServer(served: Served, body: (s: Served) => Promise<void>): Promise<void> {
  try {
    await body(served);
  } finally {
    await served.close();
  }
}

/** A harness served over loopback by the app. */
export interface Served {
  readonly harness: Harness;
  readonly server: LoopbackServer;
  readonly url: string;
  readonly logs: RequestLogRecord[];
  readonly token: string;
  /** fetch `path` with the bearer token and a JSON body. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  /** Open the event stream of a session. */
  events(id: string, headers?: Record<string, string>, query?: string): Promise<SseClient>;
  close(): Promise<void>;
}

/** Start a harness, its app and a loopback server. */
export async function serveHarness(
  harnessOptions: CreateHarnessOptions,
  appOptions: HarnessAppOptions = {},
  ready?: (harness: Harness) => void,
): Promise<Served> {
  const harness = await createHarness({ model: { provider: "scripted", model: "scripted-model" }, ...harnessOptions });
  ready?.(harness);
  const token = "test-token-0123456789";
  const logs: RequestLogRecord[] = [];
  const app = createHarnessApp(harness, { token, log: (r) => logs.push(r), ...appOptions });
  const server = await serveOnLoopback(app.fetch);
  const auth = { authorization: `Bearer ${token}` };
  return {
    harness,
    server,
    url: server.url,
    logs,
    token,
    call: (method, path, body, headers = {}) =>
      fetch(server.url + path, {
        method,
        headers: { ...auth, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
        body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      }),
    events: (id, headers = {}, query = "") =>
      SseClient.open(`${server.url}/sessions/${id}/events${query}`, { ...auth, ...headers }),
    close: async () => {
      await server.close();
      await harness.dispose();
    },
  };
}

/** A promise with its resolver, to hold a tool or a model call until the test lets it go. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}
