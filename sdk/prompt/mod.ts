/**
 * The system prompt: ordered, scoped sections, contexts, variables and tool
 * providers, assembled per request, and strict `{{variable}}` rendering.
 *
 * @module
 */

export type {
  AssembleContext,
  AssembledPrompt,
  PromptAssembly,
  PromptContext,
  PromptPart,
  PromptSection,
  PromptText,
  PromptToolProvider,
  PromptVariable,
} from "./prompt_contributions.ts";
export { SystemPrompt } from "./system_prompt.ts";
export type { SystemPromptEvents } from "./system_prompt_events.ts";
export { systemPromptPlugin, type SystemPromptServices } from "./system_prompt_plugin.ts";
export { PROMPT_VARIABLE_NAME, renderPrompt } from "./render_prompt.ts";
export type { RegistrationOwner, ServiceHost } from "./registration_owner.ts";
