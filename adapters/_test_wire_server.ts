/**
 * Test helper: a loopback HTTP server that plays recorded provider streams as
 * SSE, and records what the adapter sent. Not published.
 *
 * @module
 */

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { readFileSync } from "node:fs";
import type { Socket } from "node:net";
import type { StreamChunk } from "../sdk/llm/mod.ts";

/** A request the server received. */
export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage["headers"];
  readonly body: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  readonly json: unknown;
}

/** A running loopback server. */
export interface WireServer {
  /** The base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Errors thrown by the handler, in order; `close()` rethrows the first. */
  readonly errors: Error[];
  /** Stop the server; rejects with the handler's first error, if it threw. */
  close(): Promise<void>;
}

/** Answers one request. */
export type WireHandler = (request: RecordedRequest, response: ServerResponse) => void | Promise<void>;

/** Start a server on 127.0.0.1, on a free port. */
export async function startWireServer(handler: WireHandler): Promise<WireServer> {
  const requests: RecordedRequest[] = [];
  const errors: Error[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (part: string) => (body += part));
    req.on("end", () => {
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch { /* not JSON */ }
      const recorded: RecordedRequest = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body,
        json,
      };
      requests.push(recorded);
      // A handler that throws (synchronously or not) answers 500 at once with
      // its message, so the adapter under test fails now instead of waiting for
      // its idle timeout; close() then rethrows the error to fail the test.
      Promise.resolve().then(() => handler(recorded, res)).catch((thrown) => {
        const error = thrown instanceof Error ? thrown : new Error(String(thrown));
        errors.push(error);
        if (res.headersSent) res.destroy(error);
        else res.writeHead(500, { "Content-Type": "text/plain" }).end(`wire server handler failed: ${error.message}`);
      });
    });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("Loopback server has no port");
  return {
    url: `http://127.0.0.1:${address.port}`,
    requests,
    errors,
    close: () =>
      new Promise<void>((resolve, reject) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => (errors.length ? reject(errors[0]) : resolve()));
      }),
  };
}

/** The SSE payloads of a recorded fixture (one JSON document per line). */
export function fixturePayloads(name: string): string[] {
  const text = readFileSync(new URL(`./testdata/wire/${name}`, import.meta.url), "utf8");
  return text.split("\n").filter((line) => line.trim() !== "");
}

/** The parsed payloads of a fixture. */
export function fixtureJson(name: string): Record<string, unknown>[] {
  return fixturePayloads(name).map((line) => JSON.parse(line));
}

/** Options of {@linkcode sseText}. */
export interface SseTextOptions {
  /** End with `data: [DONE]`. @default {true} */
  readonly done?: boolean;
}

/** Payloads as an SSE body. */
export function sseText(payloads: readonly string[], options: SseTextOptions = {}): string {
  const events = payloads.map((p) => `data: ${p}\n\n`);
  if (options.done ?? true) events.push("data: [DONE]\n\n");
  return events.join("");
}

/** Write SSE headers and `text`, in pieces of `pieceSize` characters when given, then end the response. */
export async function playSse(response: ServerResponse, text: string, pieceSize?: number): Promise<void> {
  response.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
  if (pieceSize === undefined) {
    response.end(text);
    return;
  }
  for (let i = 0; i < text.length; i += pieceSize) {
    response.write(text.slice(i, i + pieceSize));
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  response.end();
}

/** Collect a whole stream. */
export async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** The finish chunk of a stream (the last chunk). */
export function finishOf(chunks: readonly StreamChunk[]): Extract<StreamChunk, { type: "finish" }> {
  const last = chunks.at(-1);
  if (last?.type !== "finish") throw new Error(`Stream did not end with finish: ${JSON.stringify(last)}`);
  return last;
}
