// The model catalogue a fixture implies: the models its request headers
// name, with the defaults the recorded adapter filled in, so that a replayed
// request header equals the recorded one.

import type { ModelInfo, ReasoningEffort } from "../mod.ts";
import type { Fixture } from "./fixture.ts";

/** What a fixture tells about one model. */
export type ModelFacts = {
  efforts: Set<ReasoningEffort>;
  effort?: ReasoningEffort;
  maxTokens?: number;
  window?: number;
};

/** The recorded models of every provider. */
export function recordedModels(fixture: Fixture): Map<string, Map<string, ModelFacts>> {
  const providers = new Map<string, Map<string, ModelFacts>>();
  const facts = (provider: string, model: string): ModelFacts => {
    let models = providers.get(provider);
    if (models === undefined) providers.set(provider, models = new Map());
    let entry = models.get(model);
    if (entry === undefined) models.set(model, entry = { efforts: new Set() });
    return entry;
  };
  for (const session of fixture.sessions) {
    for (const event of session.events) {
      if (event.type === "request/header") {
        const { config } = event.data.header;
        const defaults = event.data.header.adapterDefaults;
        const entry = facts(config.provider, config.model);
        if (config.reasoningEffort !== undefined) {
          entry.efforts.add(config.reasoningEffort);
          if (defaults?.reasoningEffort) entry.effort = config.reasoningEffort;
        }
        if (defaults?.maxTokens && config.maxTokens !== undefined) entry.maxTokens = config.maxTokens;
      } else if (event.type === "request/context") {
        const entry = facts(event.data.provider, event.data.model);
        if (event.data.contextWindow !== undefined) entry.window = event.data.contextWindow;
      }
    }
  }
  return providers;
}

/** The catalogue entry of a recorded model. */
export function toModelInfo(id: string, facts: ModelFacts): ModelInfo {
  return {
    id,
    ...(facts.window !== undefined ? { contextWindow: facts.window } : {}),
    ...(facts.efforts.size > 0 ? { reasoningEfforts: [...facts.efforts] } : {}),
    ...(facts.effort !== undefined ? { defaultReasoningEffort: facts.effort } : {}),
    ...(facts.maxTokens !== undefined ? { defaultMaxTokens: facts.maxTokens } : {}),
  };
}
