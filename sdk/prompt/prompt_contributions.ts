/**
 * The contributions a system prompt assembles, and what an assembly produces.
 *
 * @module
 */

import type { ScopeInfo } from "../kernel/harness_context.ts";
import type { ToolSchema } from "../llm/messages.ts";

/** What one assembly resolves: the scope whose contributions and listeners take part, and a signal. */
export interface AssembleContext {
  /** The scope (agent) whose contributions and listeners take part; omitted: only global ones. */
  readonly scope?: ScopeInfo;
  /** Controls this assembly only; never kept for later ones. */
  readonly signal?: AbortSignal;
}

/** Static text, or text computed for each assembly. */
export type PromptText = string | ((context: AssembleContext) => string | Promise<string>);

/**
 * A section of the system prompt. Order convention: `-100` the harness
 * identity, `0` the deployment persona, `100`–`199` tool guidance.
 */
export interface PromptSection {
  /** Unique within its scope; a scoped section shadows a global one of the same name. */
  readonly name: string;
  /** Sections are joined in ascending order (ties by name). */
  readonly order: number;
  /** The text; it may reference `{{variables}}`. */
  readonly text: PromptText;
  /**
   * A complete system prompt: when the nearest one applies, it is the only
   * section, restored after the `system-prompt/assemble` waterfall so no
   * listener can add to or replace it. At most one per scope.
   */
  readonly complete?: boolean;
}

/**
 * Dynamic context for the model, given to the loop beside the system text
 * (which logs it as a system-role snapshot). Its text is not interpolated;
 * apply `renderPrompt(part.text, assembly.variables)` if it uses variables.
 */
export interface PromptContext {
  /** Unique within its scope; a scoped context shadows a global one of the same name. */
  readonly name: string;
  /** Contexts are joined in ascending order (ties by name). */
  readonly order: number;
  /** The text; empty text contributes nothing. */
  readonly text: PromptText;
}

/** A variable for `{{name}}` references. */
export interface PromptVariable {
  /** Letters, digits and `_`, not starting with a digit. */
  readonly name: string;
  /** The value, or a function computing it per assembly (`undefined`: not defined this time). */
  readonly value: string | ((context: AssembleContext) => string | undefined | Promise<string | undefined>);
}

/** A source of tool schemas for the request (the tool runtime registers one). */
export interface PromptToolProvider {
  /**
   * Providers' schemas are concatenated in ascending order.
   *
   * @default {0}
   */
  readonly order?: number;
  /** The schemas for this assembly. */
  schemas(context: AssembleContext): readonly ToolSchema[] | Promise<readonly ToolSchema[]>;
}

/** A resolved section or context. */
export interface PromptPart {
  /** The contribution's name. */
  readonly name: string;
  /** Its order. */
  readonly order: number;
  /** Its text for this assembly (variables not yet interpolated). */
  readonly text: string;
  /** Set on a complete section. */
  readonly complete?: boolean;
}

/** Everything one assembly resolved; the `system-prompt/assemble` waterfall may change it. */
export interface PromptAssembly {
  /** The sections, in order; only the complete section when one applies. */
  sections: PromptPart[];
  /** The non-empty contexts, in order. */
  contexts: PromptPart[];
  /** The defined variables. */
  variables: Record<string, string>;
  /** The tool schemas (name, description, parameters only). */
  tools: ToolSchema[];
}

/** The rendered result of `SystemPrompt.assemble()`: empty system text, tools and contexts are absent. */
export interface AssembledPrompt {
  /** The rendered system text; absent when empty. */
  readonly system?: string;
  /** The tool schemas; absent when there are none. */
  readonly tools?: readonly ToolSchema[];
  /**
   * The non-empty dynamic contexts, in order, as name and text (not
   * interpolated). The agent loop logs each as a `system/message` when its
   * text changes, so the model sees it in the history; absent when there are none.
   */
  readonly contexts?: readonly { readonly name: string; readonly text: string }[];
}
