/**
 * The context a registration belongs to.
 *
 * @module
 */

import type { Context } from "cordis";
import type { ScopeInfo } from "../kernel/harness_context.ts";

/**
 * What the tool runtime, the approval service and the system prompt need of a
 * registering context: its scope (which decides visibility) and its `effect`
 * (which ties the registration's lifetime to the context's plugin or scope).
 * Every `HarnessContext` is one.
 */
export interface RegistrationOwner {
  /** The scope of the registering context, `undefined` outside every scope. */
  readonly scope: ScopeInfo | undefined;
  /** Register a reversible effect, undone when the context's plugin or scope goes away. */
  effect(execute: () => () => void | Promise<void>, label?: string): () => Promise<void>;
}

/**
 * What a shared service (the tool runtime, the system prompt) needs of the
 * context that hosts it: global registrations live as long as it, and it
 * dispatches events. Every `HarnessContext` is one.
 */
export interface ServiceHost extends RegistrationOwner {
  /** The raw kernel context, used for scope-filtered dispatch. */
  readonly raw: Context;
}
