/**
 * The subprocess seam (`ctx.subprocess`): the service definition and the
 * local provider.
 *
 * @module
 */

export type { RunOptions, RunResult, SubprocessService } from "./subprocess_service.ts";
export { localSubprocess, type LocalSubprocessOptions } from "./local_subprocess.ts";
