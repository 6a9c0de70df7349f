/**
 * `@dsh/harness/tools`: capability seams — each a service definition on the
 * harness context, providers, and the model-facing tools built on it.
 *
 * - `ctx.fs`: {@linkcode FsService}; providers {@linkcode localFs} and {@linkcode memoryFs};
 *   tools {@linkcode fsTools} (`read_file`, `write_file`, `edit_file`, `list_dir`, `glob`, `grep`).
 * - `ctx.subprocess`: {@linkcode SubprocessService}; provider {@linkcode localSubprocess}.
 * - `ctx.shell`: {@linkcode ShellService}; provider {@linkcode bashShell}; tool {@linkcode bashTool}.
 * - `ctx.web`: {@linkcode WebService}; provider {@linkcode httpWeb}; tool {@linkcode webFetchTool}.
 * - `ctx.webSearch`: {@linkcode WebSearchService} (bring your own provider); tool {@linkcode webSearchTool}.
 *
 * {@linkcode capabilitiesPlugin} provides the services and registers the tools.
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
export * from "./fs/mod.ts";
export * from "./shell/mod.ts";
export * from "./web/mod.ts";
export { type CapabilitiesOptions, capabilitiesPlugin, type CapabilityServices } from "./capabilities_plugin.ts";
export type { ServiceSource } from "./service_source.ts";
