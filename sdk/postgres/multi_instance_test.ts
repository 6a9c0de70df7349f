// Three harness instances — one each on Node, Bun and Deno, each a separate
// process serving the serverless handler over postgresStorage — share one
// PostgreSQL database. A client drives a conversation round-robin across
// them while following the SSE stream, reconnecting to another instance every
// few events; then the instance driving a turn is SIGKILLed mid-turn and
// another takes the session over once the lease expires.

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { EventSourceParserStream } from "eventsource-parser/stream";
import { checkInvariants } from "../invariants/mod.ts";
import type { SessionEvent } from "../session/mod.ts";
import { dropSchema, testSchema, useTestPostgres } from "./_test_postgres.ts";
import { postgresStorage } from "./postgres_storage.ts";
import { type ChildServer, startChildServer } from "../http/_test_child_server.ts";

const TURNS = Number(process.env.DSH_MI_TURNS ?? 50);
const LEASE_MS = 1500;
const root = fileURLToPath(new URL("../../", import.meta.url));
const script = fileURLToPath(new URL("./_test_instance.ts", import.meta.url));

const RUNTIMES: Record<string, (args: string[]) => [string, string[]]> = {
  node: (args) => ["node", ["--import", "tsx", script, ...args]],
  bun: (args) => [`${root}node_modules/.bin/bun`, [script, ...args]],
  deno: (args) => [`${root}node_modules/.bin/deno`, ["run", "-A", "--no-check", script, ...args]],
};

interface Instance extends ChildServer {
  readonly runtime: string;
}

async function startInstance(runtime: string, args: string[]): Promise<Instance> {
  const [cmd, argv] = RUNTIMES[runtime](args);
  return { runtime, ...(await startChildServer(cmd, argv, { cwd: root, label: `${runtime} instance` })) };
}

function post(url: string, path: string, body: unknown): Promise<Response> {
  return fetch(url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/**
 * Read session events from one instance's stream until `take` of them arrived,
 * or (once `idle()` says the conversation is over) nothing came for a second.
 */
async function readSome(
  url: string,
  id: string,
  lastEventId: string | undefined,
  take: number,
  idle: () => boolean,
): Promise<{ events: SessionEvent[]; lastId: string | undefined }> {
  const controller = new AbortController();
  const headers: Record<string, string> = { accept: "text/event-stream" };
  if (lastEventId !== undefined) headers["last-event-id"] = lastEventId;
  const response = await fetch(`${url}/sessions/${id}/events?deltas=false`, { headers, signal: controller.signal });
  if (response.status !== 200) throw new Error(`GET events: ${response.status} ${await response.text()}`);
  const reader = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream())
    .getReader();
  const got: SessionEvent[] = [];
  let lastId = lastEventId;
  let quiet = 0;
  try {
    // One read at a time: a read abandoned to the timer would swallow its message.
    let pending = reader.read();
    while (got.length < take) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const next = await Promise.race([
        pending,
        new Promise<"tick">((resolve) => (timer = setTimeout(() => resolve("tick"), 250))),
      ]);
      clearTimeout(timer);
      if (next === "tick") {
        if (idle() && ++quiet >= 4) break;
        continue;
      }
      pending = reader.read();
      quiet = 0;
      if (next.done) break;
      if (next.value.event === "reset") throw new Error(`unexpected reset: ${next.value.data}`);
      if (next.value.event === "session") {
        got.push(JSON.parse(next.value.data));
        lastId = next.value.id;
      }
    }
  } finally {
    controller.abort();
    await reader.cancel().catch(() => {});
  }
  return { events: got, lastId };
}

describe("postgresStorage shared by Node, Bun and Deno instances", () => {
  const server = useTestPostgres();

  it(`${TURNS} turns round-robin, SSE hopping between instances, then a SIGKILL mid-turn and a take-over`, async () => {
    const schema = testSchema("mi");
    const storage = postgresStorage({ client: server.admin, schema });
    await storage.migrate();
    const started = await Promise.allSettled(
      ["node", "bun", "deno"].map((runtime) => startInstance(runtime, [server.url, schema, String(LEASE_MS)])),
    );
    const instances = started.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    try {
      for (const r of started) if (r.status === "rejected") throw r.reason;
      const created = await post(instances[0].url, "/sessions", { id: "chat", system: "Be brief." });
      assert.equal(created.status, 201, await created.clone().text());

      // The follower: hops to the next instance every few events, resuming with Last-Event-ID.
      let driving = true;
      const seen: SessionEvent[] = [];
      const follower = (async () => {
        let hop = 0;
        let lastId: string | undefined;
        while (true) {
          const instance = instances[hop++ % instances.length];
          const stat = await storage.stat("chat");
          if (!driving && seen.length === stat!.nextSeq) return;
          const got = await readSome(instance.url, "chat", lastId, 7, () => !driving);
          seen.push(...got.events);
          lastId = got.lastId;
        }
      })();

      const answers: string[] = [];
      for (let turn = 1; turn <= TURNS; turn++) {
        const instance = instances[turn % instances.length];
        const response = await post(instance.url, "/sessions/chat/messages", { content: `turn ${turn}`, wait: true });
        assert.equal(response.status, 200, `turn ${turn} on ${instance.runtime}: ${await response.clone().text()}`);
        const { result } = await response.json();
        assert.equal(result.text, `${instance.runtime} heard: turn ${turn}`);
        assert.equal(result.turn, turn);
        answers.push(result.text);
      }
      driving = false;
      await follower;

      const log = (await storage.inspect("chat")).events;
      assert.deepEqual(checkInvariants(log), []);
      assert.deepEqual(seen.map((e) => e.seq), log.map((e) => e.seq), "every event once, in order");
      assert.deepEqual(seen, log, "no event altered");
      const runtimes = new Set(
        log.filter((e) => e.type === "assistant/message").map((e) =>
          (e.data as unknown as { message: { content: { text?: string }[] } }).message.content[0].text!.split(" ")[0]
        ),
      );
      assert.deepEqual([...runtimes].sort(), ["bun", "deno", "node"]);

      // SIGKILL the instance driving a turn once part of it is durable.
      const victim = instances[1];
      const acknowledged = log.length;
      const hanging = post(victim.url, "/sessions/chat/messages", { content: "please hang" }).catch(() => undefined);
      const abort = new AbortController();
      for await (const event of storage.follow("chat", { fromSeq: acknowledged, signal: abort.signal })) {
        if (event.type === "request/header") break;
      }
      abort.abort();
      await victim.kill();
      await hanging;

      // Another instance takes over once the lease has expired (409 until then), repairs, continues.
      const heir = instances[2];
      const since = Date.now();
      let response: Response;
      while (true) {
        response = await post(heir.url, "/sessions/chat/messages", { content: "after the crash", wait: true });
        if (response.status !== 409) break;
        assert.ok(Date.now() - since < 10_000, "the lease should expire within 10 s");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(response.status, 200, await response.clone().text());
      assert.equal((await response.json()).result.text, `${heir.runtime} heard: after the crash`);

      const final = (await storage.inspect("chat")).events;
      assert.equal(final.length > acknowledged, true);
      assert.deepEqual(final.slice(0, acknowledged), log, "nothing acknowledged lost");
      assert.deepEqual(checkInvariants(final), []);
      const ends = final.filter((e) => e.type === "turn/end").map((e) =>
        (e.data as { reason: { kind: string } }).reason
      );
      assert.equal(ends.length, TURNS + 2);
      assert.notEqual(ends.at(-2)!.kind, "completed", "the killed turn was closed by repair");
      assert.equal(ends.at(-1)!.kind, "completed");
    } finally {
      await Promise.all(instances.map((i) => i.kill()));
      await storage.close();
      await dropSchema(server.admin, schema);
    }
  });
});
