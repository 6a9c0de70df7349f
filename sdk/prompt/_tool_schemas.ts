// Internal: the tool schemas of an assembly — each provider's answer checked, projected to name, description and
// parameters (shared when deep-frozen), and the tools picked across providers (moved out of `system_prompt.ts`).

import { HarnessError } from "../kernel/harness_error.ts";
import type { ToolSchema } from "../llm/messages.ts";

// The projection of a frozen schema whose parameters are deep-frozen (the tool
// runtime's): made once and shared, frozen, so that the same tool gives the
// same schema object on every assembly (the loop then compares request headers
// by identity instead of as JSON). Keyed by the source schema and by the
// projection itself (a projection projects to itself).
export const projections = new WeakMap<object, ToolSchema>();

function ownData(value: object, ...keys: string[]): boolean {
  for (const key of keys) {
    const descriptor = Object.getOwnPropertyDescriptor(value, key);
    if (descriptor === undefined || !("value" in descriptor)) return false;
  }
  return true;
}

export function projectSchema(schema: ToolSchema): ToolSchema {
  if (typeof schema === "object" && schema !== null) {
    const known = projections.get(schema);
    if (known !== undefined) return known;
  }
  if (
    typeof schema !== "object" || schema === null || typeof schema.name !== "string" ||
    typeof schema.description !== "string" || typeof schema.parameters !== "object" || schema.parameters === null
  ) {
    throw new HarnessError(
      "PROMPT_ASSEMBLY_INVALID",
      "A tool provider returned a schema without name, description and parameters",
    );
  }
  const name = schema.name, description = schema.description, parameters = schema.parameters;
  // Allowlist: nothing but these three fields ever reaches a model.
  // Deep-frozen parameters (the tool runtime's) cannot change under us: share them instead of cloning per request.
  if (isDeepFrozen(parameters)) {
    const projection: ToolSchema = { name, description, parameters };
    // A getter could answer differently next time: only plain data properties are shared.
    if (!Object.isFrozen(schema) || !ownData(schema, "name", "description", "parameters")) return projection;
    Object.freeze(projection);
    projections.set(schema, projection);
    projections.set(projection, projection);
    return projection;
  }
  return { name, description, parameters: structuredClone(parameters) as Record<string, unknown> };
}

const deepFrozen = new WeakSet<object>();

function isDeepFrozen(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return true;
  if (deepFrozen.has(value)) return true;
  if (!Object.isFrozen(value) || !Object.values(value).every(isDeepFrozen)) return false;
  deepFrozen.add(value);
  return true;
}

/**
 * Pick the tools of one assembly from its providers' projected schemas, in
 * provider order: a duplicate name is taken from the nearest provider, at the
 * rank of its first appearance.
 */
export function pickTools(projected: readonly (readonly ToolSchema[])[], depths: readonly number[]): ToolSchema[] {
  const picked = new Map<string, { schema: ToolSchema; depth: number; rank: number }>();
  let rank = 0;
  for (let i = 0; i < projected.length; i++) {
    const d = depths[i];
    for (const schema of projected[i]) {
      const seen = picked.get(schema.name);
      if (seen === undefined || d > seen.depth) picked.set(schema.name, { schema, depth: d, rank: seen?.rank ?? rank });
      rank++;
    }
  }
  return [...picked.values()].sort((a, b) => a.rank - b.rank).map((p) => p.schema);
}

export function providerFailed(cause: unknown): HarnessError {
  return new HarnessError("PROMPT_TEXT_FAILED", "Prompt tool provider failed to evaluate", { cause });
}

export function checkSchemas(schemas: unknown): readonly unknown[] {
  if (!Array.isArray(schemas)) {
    throw new HarnessError("PROMPT_ASSEMBLY_INVALID", "A tool provider did not return an array of schemas");
  }
  return schemas;
}
