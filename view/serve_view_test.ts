import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { connect, createServer, type Server } from "node:net";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { fileStorage } from "../sdk/persistence/file_storage.ts";
import type { SessionEvent } from "../sdk/session/session_events.ts";
import { parseViewArgs, serveView } from "./mod.ts";

const root = fileURLToPath(new URL("..", import.meta.url));

const events: SessionEvent[] = [
  { type: "turn/start", seq: 0, time: 10, data: { turn: 1 } },
  { type: "step/start", seq: 1, time: 10, data: { turn: 1, step: 1 } },
  {
    type: "user/message",
    seq: 2,
    time: 11,
    data: { id: "u1", role: "user", content: [{ type: "text", text: "Hello view" }], source: { kind: "user" } },
    surfaceOp: "append",
  },
  { type: "step/end", seq: 3, time: 12, data: { turn: 1, step: 1 } },
  { type: "turn/end", seq: 4, time: 12, data: { turn: 1, reason: { kind: "completed" } } },
];

async function folder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "dsh-view-test-"));
  const storage = fileStorage(dir);
  await storage.create({ id: "s1", createdAt: 5 });
  await storage.append("s1", events, { expectedSeq: 0 });
  return dir;
}

/** A port held by another server on 127.0.0.1, and how to let it go. */
async function heldPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { port, release: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** How this runtime runs the view program. */
function program(): [string, string[]] {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  if (g.Deno !== undefined) return [process.execPath, ["run", "-A", join(root, "view/mod.ts")]];
  if (g.Bun !== undefined) return [process.execPath, [join(root, "view/mod.ts")]];
  return [process.execPath, [join(root, "view/bin.mjs")]];
}

describe("serveView()", () => {
  it("serves the stored sessions of a folder, read only, behind a token carried in the URL fragment", async () => {
    const dir = await folder();
    const server = await serveView(dir, { port: 0 });
    try {
      assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/view#token=[\w-]+$/);
      const auth = { authorization: `Bearer ${server.token}` };
      const page = await fetch(`${server.origin}/sessions/s1/view`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /data-session="s1"/);
      assert.equal((await fetch(`${server.origin}/sessions/s1/log`)).status, 401);
      const log = await (await fetch(`${server.origin}/sessions/s1/log`, { headers: auth })).json();
      assert.deepEqual([log.live, log.status, log.events], [false, "stored", events]);
      const list = await (await fetch(`${server.origin}/sessions`, { headers: auth })).json();
      assert.deepEqual(list.sessions.map((s: { id: string }) => s.id), ["s1"]);
      // Read only: no request resumes, forks, deletes or leases a stored session.
      for (const [method, path] of [["DELETE", "/sessions/s1"], ["POST", "/sessions/s1/fork"], ["POST", "/sessions"]]) {
        const res = await fetch(`${server.origin}${path}`, { method, headers: auth });
        assert.equal(res.status, 405, `${method} ${path}`);
        await res.body?.cancel();
      }
      assert.deepEqual((await fileStorage(dir).inspect("s1")).events, events);
      const lease = await fileStorage(dir).acquireWriter("s1");
      await lease.release();
    } finally {
      await server.close();
      await rm(dir, { recursive: true });
    }
  });

  it("refuses a path that is not a folder, and a bad port", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dsh-view-test-"));
    try {
      await writeFile(join(dir, "file"), "x");
      await assert.rejects(serveView(join(dir, "file")), { code: "INVALID_ARGS" });
      await assert.rejects(serveView(join(dir, "missing")), { code: "INVALID_ARGS" });
      await assert.rejects(serveView(dir, { port: 70000 }), { code: "INVALID_ARGS" });
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("names the address when the port is taken, as one coded error", async () => {
    const dir = await folder();
    const held = await heldPort();
    try {
      await assert.rejects(serveView(dir, { port: held.port }), (error: Error & { code?: string }) => {
        assert.equal(error.code, "LISTEN_FAILED");
        assert.equal(error.message, `Cannot listen on 127.0.0.1:${held.port}: the port is already in use`);
        return true;
      });
    } finally {
      await held.release();
      await rm(dir, { recursive: true });
    }
  });

  it("without a token, answers no request for a name an attacker's page could have pointed here (DNS rebinding)", async () => {
    const dir = await folder();
    const server = await serveView(dir, { port: 0, token: false });
    // A request as a browser on that name sends it: the Host is the name the page was loaded from.
    const statusFor = (host: string) =>
      new Promise<string>((resolve, reject) => {
        const { hostname, port } = new URL(server.origin);
        const socket = connect(Number(port), hostname, () => {
          socket.write(
            `GET /sessions HTTP/1.1\r\nHost: ${host}\r\nSec-Fetch-Site: same-origin\r\nConnection: close\r\n\r\n`,
          );
        });
        let text = "";
        socket.on("data", (d) => (text += d));
        socket.on("end", () =>
          resolve(text.split("\r\n")[0] + (/HOST_NOT_ALLOWED/.test(text) ? " HOST_NOT_ALLOWED" : "")));
        socket.on("error", reject);
      });
    try {
      const port = new URL(server.origin).port;
      assert.equal(await statusFor(`attacker.example:${port}`), "HTTP/1.1 403 Forbidden HOST_NOT_ALLOWED");
      assert.equal(await statusFor(`127.0.0.1:${port}`), "HTTP/1.1 200 OK");
      assert.equal(await statusFor(`localhost:${port}`), "HTTP/1.1 200 OK");
    } finally {
      await server.close();
      await rm(dir, { recursive: true });
    }
  });

  it("parseViewArgs() reads the command line", () => {
    assert.deepEqual(parseViewArgs(["d", "--port", "0", "--token", "t"]), {
      dir: "d",
      options: { port: 0, token: "t" },
    });
    assert.throws(() => parseViewArgs(["d", "--bogus"]), { code: "INVALID_ARGS" });
    assert.throws(() => parseViewArgs(["d", "--port"]), { code: "INVALID_ARGS" });
    assert.throws(() => parseViewArgs(["a", "b"]), { code: "INVALID_ARGS" });
  });

  it("the view program prints the URL of the timeline and serves it until stopped", async () => {
    const dir = await folder();
    const [cmd, args] = program();
    const child = spawn(cmd, [...args, dir, "--port", "0", "--no-auth"], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no URL printed in 20 s; stderr: ${err}`)), 20_000);
        child.stdout.on("data", (d) => {
          out += d;
          const match = /Timeline of .*: (http:\/\/\S+)/.exec(out);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]);
          }
        });
        child.once("exit", (code) => reject(new Error(`exited with ${code}: ${err}`)));
      });
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/view$/);
      const list = await (await fetch(new URL("/sessions", url))).json();
      assert.deepEqual(list.sessions.map((s: { id: string }) => s.id), ["s1"]);
    } finally {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
      await rm(dir, { recursive: true });
    }
  });
  it("the view program on a taken port says which address and exits 2", async () => {
    const dir = await folder();
    const held = await heldPort();
    try {
      const [cmd, args] = program();
      const child = spawn(cmd, [...args, dir, "--port", String(held.port), "--no-auth"], {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout.on("data", (d) => (out += d));
      child.stderr.on("data", (d) => (err += d));
      const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
      assert.equal(out, "");
      assert.equal(err, `Cannot listen on 127.0.0.1:${held.port}: the port is already in use\n`);
      assert.equal(code, 2);
    } finally {
      await held.release();
      await rm(dir, { recursive: true });
    }
  });
});
