/**
 * `toolRuntimePlugin`: provides the `tools` and `approvals` services and feeds
 * the tool schemas to the system prompt.
 *
 * @module
 */

import type { HarnessContext, KernelEvents, PluginObject } from "../kernel/harness_context.ts";
import type { SystemPrompt } from "../prompt/system_prompt.ts";
import type { SystemPromptEvents } from "../prompt/system_prompt_events.ts";
import type { SystemPromptServices } from "../prompt/system_prompt_plugin.ts";
import { ApprovalService } from "./approval_service.ts";
import type { ToolEvents } from "./tool_events.ts";
import { ToolRuntime } from "./tool_runtime.ts";

/** The services the tool runtime plugin provides. */
export interface ToolServices {
  /** The tool registry and pipeline. */
  tools: ToolRuntime;
  /** The approval service that answers `ask` decisions. */
  approvals: ApprovalService;
}

/** Options of {@linkcode toolRuntimePlugin}. */
export interface ToolRuntimePluginOptions {
  /**
   * Generates the ids of result messages.
   *
   * @default {() => crypto.randomUUID()}
   */
  newId?: () => string;
  /**
   * The order of the tool runtime's provider in the system prompt's tool list.
   *
   * @default {0}
   */
  promptOrder?: number;
}

type Events = ToolEvents & SystemPromptEvents & KernelEvents;
type Services = ToolServices & SystemPromptServices;

const schemaProvider: PluginObject<number, Events, Services> = {
  name: "tools:system-prompt",
  inject: ["systemPrompt", "tools"],
  apply(ctx, order) {
    const tools = ctx.service("tools");
    ctx.service("systemPrompt").tools({ order, schemas: (context) => tools.schemas(context.scope) }, ctx);
  },
};

/**
 * Provides `ctx.tools` (a {@linkcode ToolRuntime}) and `ctx.approvals` (an
 * {@linkcode ApprovalService} with no approver: every `ask` is denied until
 * one is registered). Whenever `ctx.systemPrompt` is present, the runtime's
 * `schemas(scope)` is registered as its tool provider, so one
 * `systemPrompt.assemble({ scope })` gives both the system text and the tools.
 *
 * @example
 * ```ts
 * import {
 *   createKernel, defineTool, systemPromptPlugin, toolRuntimePlugin,
 *   type SystemPromptServices, type ToolServices,
 * } from "@dsh/harness";
 * import { z } from "zod";
 * import assert from "node:assert/strict";
 *
 * const ctx = createKernel<object, ToolServices & SystemPromptServices>();
 * await ctx.plugin(systemPromptPlugin).ready;
 * await ctx.plugin(toolRuntimePlugin).ready;
 * ctx.tools!.register(defineTool({
 *   name: "now",
 *   description: "The current time",
 *   parameters: z.object({}),
 *   output: { schema: z.string(), render: (_args, iso) => iso },
 *   execute: () => new Date(0).toISOString(),
 * }));
 * const { tools } = await ctx.systemPrompt!.assemble();
 * assert.deepEqual(tools?.map((t) => t.name), ["now"]);
 * ```
 */
export const toolRuntimePlugin: PluginObject<
  ToolRuntimePluginOptions | void,
  ToolEvents & SystemPromptEvents & KernelEvents,
  ToolServices & SystemPromptServices
> = {
  name: "tools",
  apply(ctx, options) {
    installToolRuntime(ctx, options ?? {});
  },
};

/**
 * The tool runtime plugin's body. Given the system prompt it registers the tool
 * provider on it at once (used by `createHarness()`, which makes both on one
 * context); without it, a child plugin registers the provider whenever both
 * services are present.
 *
 * @param ctx The context that provides the services.
 * @param options The plugin's options.
 * @param prompt The system prompt made on the same context, if any.
 */
export function installToolRuntime(
  ctx: HarnessContext<Events, Services>,
  options: ToolRuntimePluginOptions,
  prompt?: SystemPrompt,
): void {
  const approvals = new ApprovalService();
  ctx.provide("approvals", approvals);
  const tools = new ToolRuntime(ctx, { approvals, ...(options.newId ? { newId: options.newId } : {}) });
  ctx.provide("tools", tools);
  const order = options.promptOrder ?? 0;
  if (prompt === undefined) ctx.plugin(schemaProvider, order);
  else prompt.tools({ order, schemas: (context) => tools.schemas(context.scope) }, ctx);
}
