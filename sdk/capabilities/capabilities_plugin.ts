/**
 * `capabilitiesPlugin`: provides the capability services on the harness
 * context (`ctx.fs`, `ctx.subprocess`, `ctx.shell`, `ctx.web`, `ctx.webSearch`) and registers the tools
 * built on them.
 *
 * @module
 */

import type { HarnessContext, KernelEvents, PluginObject } from "../kernel/harness_context.ts";
import type { ToolServices } from "../tools/tool_runtime_plugin.ts";
import type { FsService } from "./fs/fs_service.ts";
import { fsTools, type FsToolsOptions } from "./fs/fs_tools.ts";
import type { ShellService } from "./shell/shell_service.ts";
import { bashTool, type BashToolOptions } from "./shell/bash_tool.ts";
import type { SubprocessService } from "./subprocess/subprocess_service.ts";
import type { WebSearchService, WebService } from "./web/web_service.ts";
import { webFetchTool, webSearchTool, type WebToolOptions } from "./web/web_tools.ts";

/** The capability services, readable as `ctx.<name>` once provided. */
export interface CapabilityServices {
  /** Files, confined to a root. */
  fs: FsService;
  /** Runs programs. */
  subprocess: SubprocessService;
  /** Runs command lines with a per-session working directory. */
  shell: ShellService;
  /** Fetches web pages as text. */
  web: WebService;
  /** Searches the web. */
  webSearch: WebSearchService;
}

/** Options of {@linkcode capabilitiesPlugin}: the providers to install; absent ones are left out. */
export interface CapabilitiesOptions {
  /** The provider of `ctx.fs`, e.g. `localFs({ root })`; brings the file tools. */
  readonly fs?: FsService;
  /** The provider of `ctx.subprocess`, e.g. `localSubprocess()`. */
  readonly subprocess?: SubprocessService;
  /** The provider of `ctx.shell`, e.g. `bashShell({ subprocess: () => ctx.service("subprocess"), cwd })`; brings `bash`. */
  readonly shell?: ShellService;
  /** The provider of `ctx.web`, e.g. `httpWeb({ allowHosts })`; brings `web_fetch`. */
  readonly web?: WebService;
  /** The provider of `ctx.webSearch` (none ships: each needs a key); brings `web_search`. */
  readonly webSearch?: WebSearchService;
  /**
   * Register the tools of the provided seams on `ctx.tools`.
   *
   * @default {true}
   */
  readonly tools?: boolean;
  /** Options of the file tools. */
  readonly fsTools?: FsToolsOptions;
  /** Options of the `bash` tool. */
  readonly bashTool?: BashToolOptions;
  /** Options of the web tools. */
  readonly webTools?: WebToolOptions;
}

type Services = CapabilityServices & Partial<ToolServices>;

/**
 * Provides each given capability service under its name for as long as the
 * plugin lives, and registers the tools built on it (`read_file`,
 * `write_file`, `edit_file`, `list_dir`, `glob`, `grep` for `fs`; `bash` for
 * `shell`; `web_fetch` for `web`; `web_search` for `webSearch`). The tools read the service from the context at every call, so a
 * provider swapped later (say, a remote sandbox for the local one) moves them
 * too. Every call goes through the tool pipeline: reads are allowed and run
 * in parallel; writes and `bash` ask for approval by default and run alone.
 *
 * @example Providing `ctx.subprocess` and `ctx.fs`
 * ```ts
 * import { createHarness } from "@dsh/harness";
 * import { capabilitiesPlugin, localSubprocess, memoryFs } from "@dsh/harness/tools";
 * import assert from "node:assert/strict";
 *
 * const harness = await createHarness({
 *   plugins: [[capabilitiesPlugin, { subprocess: localSubprocess(), fs: memoryFs() }]],
 * });
 * const result = await harness.ctx.subprocess!.run(["echo", "hi"]);
 * assert.equal(result.stdout, "hi\n");
 * assert.ok(harness.ctx.tools!.schemas().some((tool) => tool.name === "read_file"));
 * await harness.dispose();
 * ```
 */
export const capabilitiesPlugin: PluginObject<CapabilitiesOptions, KernelEvents, Services> = {
  name: "capabilities",
  apply(ctx, options = {}) {
    if (options.subprocess !== undefined) ctx.provide("subprocess", options.subprocess);
    if (options.fs !== undefined) ctx.provide("fs", options.fs);
    if (options.shell !== undefined) ctx.provide("shell", options.shell);
    if (options.web !== undefined) ctx.provide("web", options.web);
    if (options.webSearch !== undefined) ctx.provide("webSearch", options.webSearch);
    if (options.tools === false) return;
    const tools = ctx.get("tools");
    if (tools === undefined) return;
    const typed = ctx as HarnessContext<KernelEvents, Services>;
    if (options.fs !== undefined) {
      for (const tool of fsTools(() => typed.service("fs"), options.fsTools)) tools.register(tool, ctx);
    }
    if (options.shell !== undefined) tools.register(bashTool(() => typed.service("shell"), options.bashTool), ctx);
    if (options.web !== undefined) tools.register(webFetchTool(() => typed.service("web"), options.webTools), ctx);
    if (options.webSearch !== undefined) {
      tools.register(webSearchTool(() => typed.service("webSearch"), options.webTools), ctx);
    }
  },
};
