/**
 * Internal: how a route given over another one combines with it.
 *
 * @module
 */

import type { AgentOptions } from "./agent.ts";

const ROUTE_KEYS = ["provider", "model", "reasoningEffort", "temperature", "maxTokens", "stop"] as const;

/** Whether `key` is a field of the route (of the call config). */
export function isRouteKey(key: string): boolean {
  return (ROUTE_KEYS as readonly string[]).includes(key);
}

/**
 * The route `given` over `base`: field by field while it keeps the base's
 * provider and model (`{ temperature: 0 }`); whole when it names another route,
 * whose sampling settings (a reasoning effort, a token limit) are not the base
 * route's to give. Another model of the base's provider keeps the provider.
 * Only the route's fields of `given` are read; undefined ones are not given.
 *
 * @param base The route given over (harness defaults, a resumed agent's recorded route).
 * @param given The caller's fields.
 * @returns The route's fields.
 */
export function overRoute(
  base: Partial<AgentOptions> | undefined,
  given: Partial<AgentOptions> | undefined,
): Partial<AgentOptions> {
  const own: Record<string, unknown> = {};
  if (given !== undefined) {
    for (const key of ROUTE_KEYS) if (given[key] !== undefined) own[key] = given[key];
  }
  const mine = own as Partial<AgentOptions>;
  const sameRoute = (mine.provider === undefined || mine.provider === base?.provider) &&
    (mine.model === undefined || mine.model === base?.model);
  if (sameRoute) return { ...base, ...mine };
  return mine.provider === undefined && base?.provider !== undefined ? { provider: base.provider, ...mine } : mine;
}
