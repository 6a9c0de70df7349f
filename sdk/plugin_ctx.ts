/**
 * `pluginCtx()`: `harness.ctx` or `agent.ctx` typed with the events and
 * services of a plugin that `HarnessEvents`/`HarnessServices` do not list.
 *
 * The plugins of the subpaths (`hookBridge` from `@dsh/harness/hooks`,
 * `subagentsPlugin` from `@dsh/harness/subagents`, `compactionPlugin`) add
 * events and services the core's maps cannot name without importing them,
 * and published code may not augment the maps (`declare module` is refused by
 * JSR). Each of them exports its maps (`HookEvents`, `SubagentServices`,
 * `CompactionServices`); this function types a context with them, so that
 * listeners and service lookups need no cast.
 *
 * @module
 */

import type { HarnessContext } from "./kernel/harness_context.ts";
import type { HarnessCtx, HarnessEvents, HarnessServices } from "./harness.ts";

/** A harness context that also knows the events `E` and the services `S` of subpath plugins. */
export type PluginCtx<E extends object = object, S extends object = object> = HarnessContext<
  HarnessEvents & E,
  HarnessServices & S
>;

/**
 * Type a harness context with the events and services of subpath plugins.
 * It returns `ctx` itself: only the type changes. A service of a plugin that
 * is not installed is still absent (`get()` answers `undefined`, `service()`
 * throws `SERVICE_MISSING`), and its events never fire.
 *
 * @param ctx `harness.ctx` or `agent.ctx`.
 * @returns The same context, typed with `HarnessEvents & E` and `HarnessServices & S`.
 *
 * @example A hook bridge's events
 * ```ts
 * import { createHarness, pluginCtx } from "@dsh/harness";
 * import { hookBridge, type HookEvents, type HookResultInfo } from "@dsh/harness/hooks";
 * import { scriptedAdapter, textResponse } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * const harness = await createHarness({
 *   adapters: [scriptedAdapter(textResponse("Hi"))],
 *   plugins: [hookBridge({ hooks: { UserPromptSubmit: [{ hooks: [{ type: "function", name: "note", run: () => {} }] }] } })],
 * });
 * const results: HookResultInfo[] = [];
 * pluginCtx<HookEvents>(harness.ctx).on("hooks/result", (info) => void results.push(info));
 * await (await harness.createAgent()).run("Hello");
 * assert.deepEqual(results.map((r) => r.event), ["UserPromptSubmit"]);
 * await harness.dispose();
 * ```
 */
export function pluginCtx<E extends object = object, S extends object = object>(ctx: HarnessCtx): PluginCtx<E, S> {
  // The one cast: the plugin provides these at run time; the core's maps cannot name them.
  return ctx as unknown as PluginCtx<E, S>;
}
