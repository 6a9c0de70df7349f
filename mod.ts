/**
 * `@dsh/harness`: an agent harness whose only source of truth is an
 * append-only, typed session log, built as plugins on the Cordis 4 kernel.
 *
 * @example Creating a kernel and a scope
 * ```ts
 * import { createKernel, createScope } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const ctx = createKernel();
 * const scope = createScope(ctx, "agent-1");
 * assert.equal(scope.ctx.scope?.key, "agent-1");
 * await scope.dispose();
 * ```
 *
 * @module
 */

export * from "./sdk/kernel/mod.ts";
export * from "./sdk/llm/mod.ts";
export * from "./sdk/session/mod.ts";
export * from "./sdk/invariants/mod.ts";
export * from "./sdk/persistence/mod.ts";
export * from "./sdk/tools/mod.ts";
export * from "./sdk/prompt/mod.ts";
export * from "./sdk/agent/mod.ts";
export * from "./sdk/compaction/mod.ts";
export * from "./sdk/projections/mod.ts";
export * from "./sdk/harness.ts";
export { type PluginCtx, pluginCtx } from "./sdk/plugin_ctx.ts";
