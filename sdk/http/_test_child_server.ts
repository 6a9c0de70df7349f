// Test support (not published): start a server script in a child process and
// wait for the line `URL <base url>` it prints once it listens.

import { type ChildProcess, spawn } from "node:child_process";

/** A server running in a child process. */
export interface ChildServer {
  /** The base URL the child printed. */
  readonly url: string;
  /** The child process. */
  readonly child: ChildProcess;
  /** SIGKILL the child (if it still runs) and wait for its exit. */
  kill(): Promise<void>;
}

/** Options of {@linkcode startChildServer}. */
export interface StartChildServerOptions {
  /** The child's working directory. */
  readonly cwd?: string;
  /** Names the child in errors. @default {"child"} */
  readonly label?: string;
  /** Give up when no URL came within this many ms. @default {25000} */
  readonly timeoutMs?: number;
}

/** Spawn `command args` and resolve once it printed `URL <url>`; reject with its stderr when it exits first. */
export async function startChildServer(
  command: string,
  args: readonly string[],
  options: StartChildServerOptions = {},
): Promise<ChildServer> {
  const label = options.label ?? "child";
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], cwd: options.cwd });
  let stderr = "";
  child.stderr!.on("data", (d) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      timer = setTimeout(() => reject(new Error(`${label} did not start: ${stderr}`)), options.timeoutMs ?? 25_000);
      child.stdout!.on("data", (d) => {
        out += d;
        const m = out.match(/URL (\S+)\n/);
        if (m) resolve(m[1]);
      });
      child.on("exit", (code) => reject(new Error(`${label} exited early (${code}): ${stderr}`)));
    });
    return {
      url,
      child,
      kill: async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        await exited;
      },
    };
  } catch (error) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
