/**
 * The shell seam (`ctx.shell`): the service definition, `bash -c` over the
 * subprocess seam, and the `bash` tool.
 *
 * @module
 */

export type { ShellExecOptions, ShellResult, ShellService } from "./shell_service.ts";
export { bashShell, type BashShellOptions, SHELL_ENV } from "./bash_shell.ts";
export { bashTool, type BashToolOptions } from "./bash_tool.ts";
