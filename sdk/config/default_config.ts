/**
 * The built-in defaults, the first configuration layer.
 *
 * @module
 */

import type { HarnessConfig } from "./harness_config.ts";

/**
 * The built-in defaults every configuration starts from (origin `"default"`).
 *
 * DeepSeek's chat model with its key in `DEEPSEEK_API_KEY`, every registered
 * tool enabled, no permission rules, sessions kept in memory, no plugins, up to
 * 10 concurrency-safe tool calls at once, live invariant checks on.
 *
 * @example Reading a default
 * ```ts
 * import { DEFAULT_CONFIG } from "@dsh/harness/config";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_CONFIG.maxParallelToolCalls, 10);
 * assert.equal(Object.isFrozen(DEFAULT_CONFIG.model), true);
 * ```
 */
export const DEFAULT_CONFIG: HarnessConfig = Object.freeze({
  model: Object.freeze({ provider: "deepseek", model: "deepseek-chat" }),
  adapters: Object.freeze({
    deepseek: Object.freeze({ kind: "deepseek", apiKeyEnv: "DEEPSEEK_API_KEY", baseURL: "https://api.deepseek.com" }),
  }),
  permissions: Object.freeze([]),
  storage: Object.freeze({ kind: "memory" as const }),
  plugins: Object.freeze([]),
  maxParallelToolCalls: 10,
  invariants: true,
});
