/**
 * The plugin kernel: a typed view over Cordis 4, scopes, and the error base class.
 *
 * @module
 */

export {
  admits,
  type ContextCore,
  createKernel,
  type EventArgs,
  type EventName,
  type EventResult,
  type HarnessContext,
  type HarnessPlugin,
  type KernelEvents,
  type ListenerOptions,
  type PluginFunction,
  type PluginHandle,
  type PluginObject,
  type ScopeInfo,
  wrapContext,
} from "./harness_context.ts";
export { createScope, type Scope, scopeOf } from "./scope.ts";
export { HarnessError, type HarnessErrorOptions } from "./harness_error.ts";
