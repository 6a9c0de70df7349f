// Bench helper (a child process of bench/slow_readers.ts): N event-stream
// readers that stop reading, as a user's stalled clients are met — raw TCP
// sockets that send the GET, read the response head and the `ready` event, and
// then read nothing more, so the kernel's buffers fill and the server meets
// backpressure. They live in their own process, so the server's process pays
// only for serving them.
//
//   <runtime> bench/_stalled_readers.ts <url> <readers> [query]
//
// `query` (e.g. `deltas=false`) is added to each reader's GET.
//
// Prints `ready` once every reader is stalled. On a line `drain` on stdin it
// reads every stream to its end (a reader still served ends with `event: end`;
// one the server dropped ends without it) and prints one JSON line:
// `{ "readers", "ended", "dropped", "bytes" }`, then exits.

import { connect, type Socket } from "node:net";
import process from "node:process";

const [url, count, query] = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const { hostname, port, pathname } = new URL(url);
const READERS = Number(count);

interface Reader {
  socket: Socket;
  tail: string;
  bytes: number;
  sawEnd: boolean;
  done: boolean;
}

function open(): Promise<Reader> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const reader: Reader = { socket, tail: "", bytes: 0, sawEnd: false, done: false };
    const onData = (chunk: Uint8Array) => {
      reader.bytes += chunk.length;
      reader.tail += new TextDecoder().decode(chunk);
      if (!reader.tail.startsWith("HTTP/1.1 200")) reject(new Error(`stream refused: ${reader.tail.slice(0, 80)}`));
      if (reader.tail.includes("event: ready")) {
        reader.tail = "";
        socket.off("data", onData);
        // Stop reading: from here on the kernel buffers fill and then the server's writes wait.
        socket.pause();
        resolve(reader);
      }
    };
    socket.on("data", onData);
    socket.on("error", reject);
    socket.write(
      `GET ${pathname}/events${
        query ? `?${query}` : ""
      } HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\n\r\n`,
    );
  });
}

/** Read a stalled stream to its end: `event: end`, the chunked body's last chunk, or the socket closing. */
function drain(reader: Reader): Promise<void> {
  return new Promise((resolve) => {
    const finish = () => {
      if (reader.done) return;
      reader.done = true;
      reader.socket.destroy();
      resolve();
    };
    reader.socket.on("data", (chunk: Uint8Array) => {
      reader.bytes += chunk.length;
      reader.tail = (reader.tail + new TextDecoder().decode(chunk)).slice(-4096);
      if (reader.tail.includes("event: end\n")) reader.sawEnd = true;
      if (reader.sawEnd || reader.tail.endsWith("\r\n0\r\n\r\n")) finish();
    });
    reader.socket.on("end", finish);
    reader.socket.on("close", finish);
    reader.socket.on("error", finish);
    reader.socket.resume();
  });
}

const readers: Reader[] = [];
for (let i = 0; i < READERS; i++) readers.push(await open());
console.log("ready");

let input = "";
process.stdin.on("data", async (chunk: Uint8Array) => {
  input += new TextDecoder().decode(chunk);
  if (!input.includes("drain\n")) return;
  process.stdin.pause();
  const timeout = new Promise<void>((resolve) => setTimeout(resolve, 20_000));
  await Promise.race([Promise.all(readers.map(drain)), timeout]);
  const ended = readers.filter((r) => r.sawEnd).length;
  console.log(JSON.stringify({
    readers: READERS,
    ended,
    dropped: readers.filter((r) => r.done && !r.sawEnd).length,
    bytes: readers.reduce((n, r) => n + r.bytes, 0),
  }));
  for (const r of readers) r.socket.destroy();
  process.exit(0);
});
