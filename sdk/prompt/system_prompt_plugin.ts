/**
 * `systemPromptPlugin`: provides the `systemPrompt` service.
 *
 * @module
 */

import type { KernelEvents, PluginObject } from "../kernel/harness_context.ts";
import { SystemPrompt } from "./system_prompt.ts";
import type { SystemPromptEvents } from "./system_prompt_events.ts";

/** The service the system prompt plugin provides. */
export interface SystemPromptServices {
  /** The system prompt registry. */
  systemPrompt: SystemPrompt;
}

/**
 * Provides `ctx.systemPrompt`, a {@linkcode SystemPrompt} whose global
 * contributions live as long as the plugin.
 *
 * @example
 * ```ts
 * import { createKernel, systemPromptPlugin, type SystemPromptServices } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const ctx = createKernel<object, SystemPromptServices>();
 * await ctx.plugin(systemPromptPlugin).ready;
 * ctx.systemPrompt!.section({ name: "persona", order: 0, text: "Be brief." });
 * assert.equal((await ctx.systemPrompt!.assemble()).system, "Be brief.");
 * ```
 */
export const systemPromptPlugin: PluginObject<void, SystemPromptEvents & KernelEvents, SystemPromptServices> = {
  name: "system-prompt",
  apply(ctx) {
    ctx.provide("systemPrompt", new SystemPrompt(ctx));
  },
};
