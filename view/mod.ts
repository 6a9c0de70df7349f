/**
 * `@dsh/harness/view`: the session timeline over a folder of stored sessions,
 * with no server to write. Run it as a program to print the URL:
 *
 * ```sh
 * deno run -A view/mod.ts ./sessions [--port 8788] [--host 127.0.0.1] [--token T | --no-auth]   # in a clone
 * npx dsh-view ./sessions        # inside a checkout of this package (Node, through tsx)
 * deno run -A jsr:@dsh/harness/view ./sessions   # once the package is published on JSR
 * ```
 *
 * To add the timeline to your own service, use `createHarnessApp()` from
 * `@dsh/harness/http`: it serves the same pages.
 *
 * @example
 * ```ts
 * import { parseViewArgs } from "@dsh/harness/view";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(parseViewArgs(["./sessions", "--port", "9000", "--no-auth"]), {
 *   dir: "./sessions",
 *   options: { port: 9000, token: false },
 * });
 * ```
 *
 * @module
 */

import { HarnessError } from "../sdk/kernel/harness_error.ts";
import { serveView, type ServeViewOptions, type ViewServer } from "./serve_view.ts";

export { serveView, type ServeViewOptions, type ViewServer } from "./serve_view.ts";

/** The parsed command line of the view program. */
export interface ViewArgs {
  /** The folder of stored sessions. */
  readonly dir: string;
  /** Where to listen and the token. */
  readonly options: ServeViewOptions;
}

/** A port given on the command line: decimal digits only, 0 to 65535 (`Number()` would take "", "0x50", "1e3"). */
function parsePort(text: string): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(port <= 65535)) {
    throw new HarnessError(
      "INVALID_ARGS",
      `--port takes a decimal integer from 0 to 65535; got ${JSON.stringify(text)}`,
      {
        details: { port: text },
      },
    );
  }
  return port;
}

/**
 * Parse `dir [--port N] [--host H] [--token T] [--no-auth]`.
 *
 * @param args The arguments after the program name.
 * @returns The folder and the options.
 * @throws {HarnessError} `INVALID_ARGS` on an unknown flag, a missing value, a port that is not a decimal
 *   integer from 0 to 65535, or no folder.
 *
 * @example
 * ```ts
 * import { parseViewArgs } from "@dsh/harness/view";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(parseViewArgs(["data", "--host", "0.0.0.0", "--token", "s3cret"]), {
 *   dir: "data",
 *   options: { hostname: "0.0.0.0", token: "s3cret" },
 * });
 * assert.throws(() => parseViewArgs([]), { code: "INVALID_ARGS" });
 * assert.throws(() => parseViewArgs(["data", "--port", "0x50"]), { code: "INVALID_ARGS" });
 * ```
 */
export function parseViewArgs(args: readonly string[]): ViewArgs {
  let dir: string | undefined;
  const options: { port?: number; hostname?: string; token?: string | false } = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const value = () => {
      const v = args[++i];
      if (v === undefined) throw new HarnessError("INVALID_ARGS", `${arg} needs a value`);
      return v;
    };
    if (arg === "--port") options.port = parsePort(value());
    else if (arg === "--host") options.hostname = value();
    else if (arg === "--token") options.token = value();
    else if (arg === "--no-auth") options.token = false;
    else if (arg.startsWith("-")) {
      throw new HarnessError(
        "INVALID_ARGS",
        `Unknown option ${arg}; usage: view <dir> [--port N] [--host H] [--token T | --no-auth]`,
      );
    } else if (dir === undefined) dir = arg;
    else throw new HarnessError("INVALID_ARGS", `One folder only; got ${dir} and ${arg}`);
  }
  if (dir === undefined) {
    throw new HarnessError(
      "INVALID_ARGS",
      "Name the folder of stored sessions: view <dir> [--port N] [--host H] [--token T | --no-auth]",
    );
  }
  return { dir, options };
}

/**
 * Run the view program: parse the arguments, serve, print the URL, and stop on SIGINT or SIGTERM.
 *
 * @param args The arguments after the program name.
 * @param print Where the URL goes.
 * @returns The running server.
 */
export async function runView(
  args: readonly string[],
  print: (line: string) => void = console.log,
): Promise<ViewServer> {
  const { dir, options } = parseViewArgs(args);
  const server = await serveView(dir, options);
  print(`Timeline of ${dir}: ${server.url}`);
  return server;
}

/**
 * The `dsh-view` program: serve the timeline of `args` until SIGINT or
 * SIGTERM; a bad argument or a failed start prints its message and exits 2.
 *
 * @param args The command-line arguments (the folder, `--port`, …).
 */
export async function viewMain(args: readonly string[]): Promise<void> {
  const { default: process } = await import("node:process");
  try {
    const server = await runView(args);
    const stop = () => void server.close().then(() => process.exit(0));
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(2);
  }
}

// Run as a program (`deno run -A view/mod.ts <dir>`, `bun view/mod.ts <dir>`). Not a top-level await: a module
// with one cannot be require()d on Node.
if ((import.meta as { main?: boolean }).main === true) {
  const g = globalThis as { Deno?: { args: string[] }; process?: { argv: string[] } };
  void viewMain(g.Deno !== undefined ? g.Deno.args : g.process?.argv.slice(2) ?? []);
}
