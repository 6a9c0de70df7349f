/**
 * `capabilitiesPlugin`: provides the capability services on the harness
 * context (`ctx.subprocess`, …).
 *
 * @module
 */

import type { KernelEvents, PluginObject } from "../kernel/harness_context.ts";
import type { SubprocessService } from "./subprocess/subprocess_service.ts";

/** The capability services, readable as `ctx.<name>` once provided. */
export interface CapabilityServices {
  /** Runs programs. */
  subprocess: SubprocessService;
}

/** Options of {@linkcode capabilitiesPlugin}: the providers to install; absent ones are left out. */
export interface CapabilitiesOptions {
  /** The provider of `ctx.subprocess`, e.g. `localSubprocess()`. */
  readonly subprocess?: SubprocessService;
}

/**
 * Provides each given capability service under its name for as long as the
 * plugin lives. Swapping a provider (say, a remote sandbox for
 * `localSubprocess()`) moves everything built on the seam with it.
 *
 * @example Providing `ctx.subprocess`
 * ```ts
 * import { createHarness } from "@dsh/harness";
 * import { capabilitiesPlugin, localSubprocess } from "@dsh/harness/tools";
 * import assert from "node:assert/strict";
 *
 * const harness = await createHarness({ plugins: [[capabilitiesPlugin, { subprocess: localSubprocess() }]] });
 * const result = await harness.ctx.subprocess!.run(["echo", "hi"]);
 * assert.equal(result.stdout, "hi\n");
 * await harness.dispose();
 * ```
 */
export const capabilitiesPlugin: PluginObject<CapabilitiesOptions, KernelEvents, CapabilityServices> = {
  name: "capabilities",
  apply(ctx, options) {
    if (options?.subprocess !== undefined) ctx.provide("subprocess", options.subprocess);
  },
};
