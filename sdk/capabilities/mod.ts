/**
 * `@dsh/harness/tools`: capability seams — each a service definition on the
 * harness context, providers, and the model-facing tools built on it.
 *
 * - `ctx.subprocess`: {@linkcode SubprocessService}, provider {@linkcode localSubprocess}.
 *
 * @example Running a program through the seam
 * ```ts
 * import { localSubprocess } from "@dsh/harness/tools";
 * import assert from "node:assert/strict";
 *
 * const result = await localSubprocess().run(["sh", "-c", "exit 2"]);
 * assert.equal(result.exitCode, 2);
 * ```
 *
 * @module
 */

export * from "./subprocess/mod.ts";
export { type CapabilitiesOptions, capabilitiesPlugin, type CapabilityServices } from "./capabilities_plugin.ts";
