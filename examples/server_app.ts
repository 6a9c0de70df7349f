/**
 * The app the three server examples serve (`server_deno.ts`, `server_bun.ts`,
 * `server_node.ts`): a harness that persists every session to files, wrapped
 * by `createHarnessApp`. Sessions survive a restart: the app lists them and
 * resumes one from its files on the first request that needs its agent.
 *
 * Configuration (environment):
 * - `HARNESS_TOKEN` (required): the bearer token clients send;
 * - `HARNESS_DATA_DIR`: where session logs go (default `./.dsh-sessions`);
 * - `PORT` (default 8787) and `HOST` (default 127.0.0.1);
 * - `DEEPSEEK_API_KEY`: talk to DeepSeek; without it an offline echo model answers.
 *
 * @module
 */

import process from "node:process";
import { createHarness, type Harness, type LlmAdapter } from "../mod.ts";
import { fileStorage } from "../mod.ts";
import { deepseekAdapter } from "../adapters/mod.ts";
import { createHarnessApp, type HarnessApp, type RequestLogRecord } from "../sdk/http/mod.ts";
// The scripted model alone: testing/mod.ts would also bundle the fast-check arbitraries.
import { scriptedAdapter, textResponse } from "../testing/scripted_adapter.ts";

/** How to build the app. */
export interface ServerAppOptions {
  /** Where session logs are stored. */
  readonly dataDir: string;
  /** The bearer token clients must send. */
  readonly token: string;
  /** The models; default: DeepSeek when `apiKey` is set, else {@linkcode echoAdapter}. */
  readonly adapters?: readonly LlmAdapter[];
  /** A DeepSeek API key. */
  readonly apiKey?: string;
  /** The request log; `false` silences it. @default {JSON lines on the console} */
  readonly log?: ((record: RequestLogRecord) => void) | false;
}

/** Where to listen, plus the app options. */
export interface ServerOptions extends ServerAppOptions {
  /** The port; 0 picks a free one. */
  readonly port: number;
  /** The interface to listen on. */
  readonly hostname: string;
}

/** A server started by one of the examples. */
export interface RunningServer {
  /** The base URL, e.g. `http://127.0.0.1:8787`. */
  readonly url: string;
  /** The harness behind the app. */
  readonly harness: Harness;
  /** Stop listening, stop every agent and flush every session to disk. */
  close(): Promise<void>;
}

/** A built app and its harness. */
export interface ServerApp {
  readonly app: HarnessApp;
  readonly harness: Harness;
}

/**
 * An offline model that answers every message with `You said: <text>`.
 *
 * @returns The adapter (provider `echo`, model `echo-1`).
 */
export function echoAdapter(): LlmAdapter {
  return scriptedAdapter((request) => {
    const last = request.messages.findLast((m) => m.role === "user");
    const text = last?.content.map((b) => (b.type === "text" ? b.text : "")).join("") ?? "";
    return textResponse(`You said: ${text}`);
  }, { provider: "echo", models: [{ id: "echo-1" }] });
}

/**
 * Build the harness (file storage) and the app over it.
 *
 * @param options Storage directory, token and model.
 * @returns The app and its harness.
 */
export async function createServerApp(options: ServerAppOptions): Promise<ServerApp> {
  const live = options.adapters === undefined && options.apiKey !== undefined;
  const harness = await createHarness({
    adapters: options.adapters ?? (live ? [deepseekAdapter({ apiKey: options.apiKey! })] : [echoAdapter()]),
    model: live ? { provider: "deepseek", model: "deepseek-chat" } : { provider: "echo", model: "echo-1" },
    system: "You are a helpful assistant served over HTTP.",
    storage: fileStorage(options.dataDir),
  });
  const app = createHarnessApp(harness, { token: options.token, log: options.log });
  return { app, harness };
}

/**
 * Read the server options from the environment.
 *
 * @param env The environment.
 * @returns The options.
 * @throws {Error} When `HARNESS_TOKEN` is missing.
 */
export function serverOptionsFromEnv(env: Record<string, string | undefined> = process.env): ServerOptions {
  const token = env.HARNESS_TOKEN;
  if (!token) throw new Error("Set HARNESS_TOKEN to the bearer token clients must send");
  return {
    token,
    dataDir: env.HARNESS_DATA_DIR ?? "./.dsh-sessions",
    port: Number(env.PORT ?? 8787),
    hostname: env.HOST ?? "127.0.0.1",
    apiKey: env.DEEPSEEK_API_KEY || undefined,
  };
}

/**
 * Close the server on SIGINT / SIGTERM, then exit.
 *
 * @param server The running server.
 */
export function closeOnSignal(server: RunningServer): void {
  const stop = () => {
    server.close().then(() => process.exit(0), (error) => {
      console.error(error);
      process.exit(1);
    });
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
