// The call settings every route is checked for, wherever it comes from (createAgent and resume options, a subagent
// definition's model, an `agent/request` listener's config): the same bounds as the configuration schema's `model`,
// so that a value no provider takes (a negative token limit, a temperature of NaN) is refused by name where it is
// given instead of being sent.

import { HarnessError } from "../kernel/harness_error.ts";
import type { LlmCallConfig } from "./llm_adapter.ts";

/**
 * Check a call config's provider, model and sampling settings.
 *
 * @param config The config (or a route's fields).
 * @param where What it is, for the message ("Call config", "Agent options").
 * @throws {HarnessError} `INVALID_ARGS` when `provider` or `model` is not a non-empty string, `temperature` is not a
 *   number from 0 to 2, `maxTokens` is not a positive safe integer, or `stop` is not an array of strings.
 */
export function checkCallConfig(config: LlmCallConfig, where = "Call config"): void {
  if (
    typeof config !== "object" || config === null || typeof config.provider !== "string" ||
    config.provider === "" || typeof config.model !== "string" || config.model === ""
  ) {
    throw new HarnessError("INVALID_ARGS", `${where} must name a provider and a model`);
  }
  checkSettings(config, where);
}

/**
 * Check the sampling settings a route gives (each optional).
 *
 * @throws {HarnessError} `INVALID_ARGS` as {@linkcode checkCallConfig} does.
 */
export function checkSettings(config: Partial<LlmCallConfig>, where: string): void {
  const { temperature, maxTokens, stop } = config;
  if (temperature !== undefined && !(typeof temperature === "number" && temperature >= 0 && temperature <= 2)) {
    throw invalid(where, "temperature", "a number from 0 to 2", temperature);
  }
  if (maxTokens !== undefined && !(Number.isSafeInteger(maxTokens) && maxTokens > 0)) {
    throw invalid(where, "maxTokens", "a positive integer", maxTokens);
  }
  if (stop !== undefined && !(Array.isArray(stop) && stop.every((s) => typeof s === "string"))) {
    throw invalid(where, "stop", "an array of strings", stop);
  }
}

function invalid(where: string, field: string, expected: string, value: unknown): HarnessError {
  const shown = typeof value === "number" || value === null ? String(value) : typeof value;
  return new HarnessError("INVALID_ARGS", `${where}: ${field} must be ${expected}, not ${shown}`, {
    details: { field },
  });
}
