/**
 * The request header's canonical form and equality.
 *
 * @module
 */

import type { EpochHeader } from "./session_events.ts";
import { jsonEqual } from "./_json_equal.ts";

/**
 * The canonical form of a request header: an empty system prompt, an empty
 * tool list and empty `adapterDefaults` are absent, and so are fields whose
 * value is `undefined`.
 *
 * @param header A header.
 * @returns A new header in canonical form (nested values are shared, not copied).
 *
 * @example
 * ```ts
 * import { canonicalHeader } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const header = canonicalHeader({ config: { provider: "p", model: "m" }, system: "", tools: [], adapterDefaults: {} });
 * assert.deepEqual(header, { config: { provider: "p", model: "m" } });
 * ```
 */
export function canonicalHeader(header: EpochHeader): EpochHeader {
  const out: { -readonly [K in keyof EpochHeader]: EpochHeader[K] } = { config: definedEntries(header.config) };
  const defaults = header.adapterDefaults;
  if (defaults) {
    const kept = definedEntries(defaults);
    for (const _ in kept) {
      out.adapterDefaults = kept;
      break;
    }
  }
  if (header.system !== undefined && header.system !== "") out.system = header.system;
  if (header.tools !== undefined && header.tools.length > 0) out.tools = header.tools;
  return out;
}

// A copy of the object without its `undefined`-valued own enumerable properties, in the same order.
function definedEntries<T extends object>(value: T): T {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined) continue;
    // defineProperty keeps a key named "__proto__" an own data property.
    if (key === "__proto__") {
      Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
    } else out[key] = v;
  }
  return out as T;
}

/**
 * Whether two request headers are equal, field by field, after
 * canonicalisation: config (provider, model, reasoning effort, temperature,
 * max tokens, stop), adapter defaults, system prompt and tool schemas (compared
 * as JSON, so key order does not matter).
 *
 * @param a One header.
 * @param b The other header.
 * @returns `true` when a request built from either would be the same.
 *
 * @example
 * ```ts
 * import { headerEquals } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const config = { provider: "deepseek", model: "deepseek-chat" };
 * assert.equal(headerEquals({ config, system: "" }, { config }), true);
 * assert.equal(headerEquals({ config }, { config: { ...config, temperature: 0.2 } }), false);
 * ```
 */
export function headerEquals(a: EpochHeader, b: EpochHeader): boolean {
  if (a === b) return true;
  const x = canonicalHeader(a);
  const y = canonicalHeader(b);
  const keys = ["provider", "model", "reasoningEffort", "temperature", "maxTokens", "stop"] as const;
  for (const key of keys) if (!jsonEqual(x.config[key], y.config[key])) return false;
  return jsonEqual(x.adapterDefaults, y.adapterDefaults) && x.system === y.system && jsonEqual(x.tools, y.tools);
}
