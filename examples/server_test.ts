import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventSourceParserStream } from "eventsource-parser/stream";
import type { RunningServer, ServerOptions } from "./server_app.ts";
import { startNodeServer } from "./server_node.ts";
import { startDenoServer } from "./server_deno.ts";
import { startBunServer } from "./server_bun.ts";

const g = globalThis as { Deno?: unknown; Bun?: unknown };
const own: [string, (options: ServerOptions) => Promise<RunningServer>] = g.Deno !== undefined
  ? ["server_deno.ts", startDenoServer]
  : g.Bun !== undefined
  ? ["server_bun.ts", startBunServer]
  : ["server_node.ts", startNodeServer];
// The runtime's own example, and the node-server one, which runs on all three.
const examples = own[0] === "server_node.ts" ? [own] : [own, ["server_node.ts", startNodeServer] as typeof own];

async function readEvents(response: Response): Promise<{ event: string; id?: string; data: string }[]> {
  const out: { event: string; id?: string; data: string }[] = [];
  const reader = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream())
    .getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    out.push({ event: r.value.event ?? "message", id: r.value.id, data: r.value.data });
  }
  return out;
}

describe("server examples", () => {
  for (const [name, start] of examples) {
    it(`${name} serves the app with file storage, and a restarted server continues a session`, async () => {
      const dataDir = await mkdtemp(join(tmpdir(), "dsh-server-"));
      const options: ServerOptions = { dataDir, token: "example-token", port: 0, hostname: "127.0.0.1", log: false };
      const headers = { authorization: "Bearer example-token", "content-type": "application/json" };
      try {
        let server = await start(options);
        try {
          const created = await fetch(`${server.url}/sessions`, { method: "POST", headers, body: '{"id":"demo"}' });
          assert.equal(created.status, 201);
          const reply = await fetch(`${server.url}/sessions/demo/messages`, {
            method: "POST",
            headers,
            body: JSON.stringify({ content: "Hello", wait: true }),
          });
          assert.equal((await reply.json()).result.text, "You said: Hello");
          assert.equal((await fetch(`${server.url}/sessions`)).status, 401);
        } finally {
          await server.close();
        }

        server = await start(options);
        try {
          const list = await (await fetch(`${server.url}/sessions`, { headers })).json();
          assert.deepEqual(list.sessions.map((s: { id: string; status: string }) => [s.id, s.status]), [[
            "demo",
            "stored",
          ]]);
          const reply = await fetch(`${server.url}/sessions/demo/messages`, {
            method: "POST",
            headers,
            body: JSON.stringify({ content: "Again", wait: true }),
          });
          const { result } = await reply.json();
          assert.deepEqual([result.text, result.turn], ["You said: Again", 2]);
          const events = await readEvents(
            await fetch(`${server.url}/sessions/demo/events?follow=false&deltas=false`, { headers }),
          );
          const logged = events.filter((e) => e.event === "session").map((e) => JSON.parse(e.data));
          assert.deepEqual(logged.map((e) => e.seq), logged.map((_, i) => i));
          assert.deepEqual(
            logged.filter((e) => e.type === "user/message").map((e) => e.data.content[0].text),
            ["Hello", "Again"],
          );
          assert.equal((await fetch(`${server.url}/sessions/demo`, { method: "DELETE", headers })).status, 204);
          assert.deepEqual(await (await fetch(`${server.url}/sessions`, { headers })).json(), { sessions: [] });
        } finally {
          await server.close();
        }
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    });
  }
});
