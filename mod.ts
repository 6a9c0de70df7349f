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

// `export *` from each room's listing, on purpose: esbuild with code splitting follows every import of a module whose
// named re-exports a program uses, so listing the names here (to load ten modules fewer from source) put storage code
// into the initial chunk of a program that imports only createHarness and defineTool (bench/PROFILE.md, s18f;
// edge_bundle_test.ts checks it).
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
