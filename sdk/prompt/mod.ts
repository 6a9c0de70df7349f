/**
 * The system prompt: ordered, scoped sections, contexts, variables and tool
 * providers, assembled per request, and strict `{{variable}}` rendering.
 *
 * @module
 */

export {
  type AssembleContext,
  type AssembledPrompt,
  type PromptAssembly,
  type PromptContext,
  type PromptPart,
  type PromptSection,
  type PromptText,
  type PromptToolProvider,
  type PromptVariable,
  SystemPrompt,
  type SystemPromptEvents,
} from "./system_prompt.ts";
export { systemPromptPlugin, type SystemPromptServices } from "./system_prompt_plugin.ts";
export { PROMPT_VARIABLE_NAME, renderPrompt } from "./render_prompt.ts";
export type { RegistrationOwner, ServiceHost } from "./registration_owner.ts";
