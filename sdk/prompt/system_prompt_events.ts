/**
 * The events of the system prompt.
 *
 * @module
 */

import type { AssembleContext, PromptAssembly } from "./prompt_contributions.ts";

/** The events of the system prompt, for the kernel's typed context. */
export interface SystemPromptEvents {
  /**
   * Rewrite an assembly (filtered by the assembly's scope). The returned
   * value is authoritative, except that a complete section is restored after.
   */
  "system-prompt/assemble": (
    assembly: PromptAssembly,
    context: AssembleContext,
    next: () => Promise<PromptAssembly>,
  ) => PromptAssembly | Promise<PromptAssembly>;
  /** A contribution was registered or removed (an unfiltered announcement). */
  "system-prompt/change": () => void;
}
