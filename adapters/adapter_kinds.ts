/**
 * Adapter factories by configured `kind`, for `createHarness({ config, adapterKinds })`.
 *
 * @module
 */

import type { AdapterFactory } from "../mod.ts";
import { DEEPSEEK_MODELS, deepseekAdapter } from "./deepseek_adapter.ts";
import { openaiCompatibleAdapter } from "./openai_compatible_adapter.ts";

/**
 * The factories for the adapter kinds of this package: `deepseek` and `openai-compatible`.
 * A configured `models` list is the models the adapter serves (for `deepseek`, instead of
 * `DEEPSEEK_MODELS`; a listed id found there keeps its context window and reasoning efforts).
 *
 * @example Building a harness from configuration
 * ```ts
 * import { createHarness } from "@dsh/harness";
 * import { resolveConfig } from "@dsh/harness/config";
 * import { adapterKinds } from "@dsh/harness/adapters";
 * import assert from "node:assert/strict";
 *
 * const loaded = resolveConfig([{ name: "inline", value: { model: { provider: "deepseek", model: "deepseek-chat" } } }]);
 * const harness = await createHarness({ config: loaded, adapterKinds, env: () => undefined });
 * assert.deepEqual(harness.ctx.service("llm").listProviders(), ["deepseek"]);
 * await harness.dispose();
 * ```
 */
export const adapterKinds: Readonly<Record<string, AdapterFactory>> = Object.freeze({
  "deepseek": (input) =>
    deepseekAdapter({
      apiKey: input.apiKey,
      provider: input.provider,
      ...(input.baseURL !== undefined ? { baseURL: input.baseURL } : {}),
      // Configured models replace the catalogue; a catalogued id keeps what the catalogue knows of it.
      ...(input.models !== undefined
        ? { models: input.models.map((id) => DEEPSEEK_MODELS.find((m) => m.id === id) ?? { id }) }
        : {}),
    }),
  "openai-compatible": (input) => {
    if (input.baseURL === undefined) {
      throw new TypeError(`Adapter "${input.provider}" of kind openai-compatible needs a baseURL`);
    }
    return openaiCompatibleAdapter({
      baseURL: input.baseURL,
      provider: input.provider,
      models: (input.models ?? []).map((id) => ({ id })),
      ...(input.apiKey !== undefined ? { apiKey: input.apiKey } : {}),
    });
  },
});
