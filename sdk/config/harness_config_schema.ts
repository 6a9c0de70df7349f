/**
 * zod v4 schemas of one configuration layer and of the effective configuration.
 *
 * @module
 */

import { z } from "zod";
import type { HarnessConfig, HarnessConfigLayer } from "./harness_config.ts";
import { matcherPattern as hookMatcherPattern } from "../hooks/_check_hook_table.ts";

const name = z.string().min(1, "Expected a non-empty string");
const names = z.array(name);
// Tool names once each: a repeated one would be refused later, by the tool runtime, with no file or line.
const toolNames = names.superRefine((list, ctx) => {
  const seen = new Set<string>();
  list.forEach((entry, index) => {
    if (seen.has(entry)) ctx.addIssue({ code: "custom", path: [index], message: `Tool "${entry}" is listed twice` });
    seen.add(entry);
  });
});
const envName = z.string().regex(
  /^[A-Za-z_][A-Za-z0-9_]*$/,
  "Expected an environment variable name such as MY_API_KEY",
);
const httpUrl = z.string().refine((text) => {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}, "Expected an http or https URL");
const reasoningEffort = z.enum(["minimal", "low", "medium", "high", "max"]);
const temperature = z.number().min(0).max(2);
const positiveInt = z.number().int().positive();
const compression = z.enum(["zstd", "none"]);
// `name` or `name(pattern)`: a parenthesis anywhere else is a typo, and the rule would match nothing.
const permissionTool = name.refine((tool) => !/[()]/.test(tool) || /^[^()]+\(.*\)$/s.test(tool), {
  message: 'Expected a tool name, or "name(pattern)" with one pair of parentheses around the pattern',
});
const permissionRule = z.strictObject({
  tool: permissionTool,
  action: z.enum(["allow", "deny", "ask"]),
  reason: z.string().optional(),
});

const hookCommand = z.strictObject({
  type: z.literal("command"),
  command: name,
  // Seconds, from 1 ms (what hookBridge() accepts) to an hour.
  timeout: z.number().min(0.001).max(3600).optional(),
});
// hookBridge() matches a tool name against the matcher's pattern: one that does not compile would never match as meant.
const matcherPattern = z.string().superRefine((matcher, ctx) => {
  try {
    hookMatcherPattern(matcher);
  } catch (error) {
    const cause = (error as { cause?: unknown }).cause;
    const why = cause instanceof Error ? `: ${cause.message}` : "";
    ctx.addIssue({ code: "custom", message: `Expected a regular expression (a tool name matcher)${why}` });
  }
});
const hookMatcher = z.strictObject({ matcher: matcherPattern.optional(), hooks: z.array(hookCommand) });
const hookList = z.array(hookMatcher);
const hooksLayer = z.strictObject({
  PreToolUse: hookList.nullish(),
  PostToolUse: hookList.nullish(),
  UserPromptSubmit: hookList.nullish(),
  Stop: hookList.nullish(),
  SessionStart: hookList.nullish(),
});
const hooks = z.strictObject({
  PreToolUse: hookList.optional(),
  PostToolUse: hookList.optional(),
  UserPromptSubmit: hookList.optional(),
  Stop: hookList.optional(),
  SessionStart: hookList.optional(),
});
// The hook bridge's command environment: what hookBridge() checks (checkEnvNames, checkEnv), refused here with the
// path of the field instead of when the bridge is made.
const inheritEnv = z.union([
  z.boolean(),
  z.array(
    z.string().regex(
      /^[^=\0*]+\*?$/,
      'Expected a variable name, or a prefix ending with "*" (no "=", NUL or other "*")',
    ),
  ),
]);
const envVarName = z.string().regex(/^[^=\0]+$/, 'Expected a variable name: not empty, no "=" or NUL');
const envValue = z.string().regex(/^[^\0]*$/, "Expected a string without NUL characters");
const hookBridgeLayer = z.strictObject({
  inheritEnv: inheritEnv.nullish(),
  env: z.record(envVarName, envValue.nullable()).nullish(),
});
const hookBridge = z.strictObject({
  inheritEnv: inheritEnv.optional(),
  env: z.record(envVarName, envValue).optional(),
});

const modelLayer = z.strictObject({
  provider: name.nullish(),
  model: name.nullish(),
  reasoningEffort: reasoningEffort.nullish(),
  temperature: temperature.nullish(),
  maxTokens: positiveInt.nullish(),
  stop: z.array(z.string()).nullish(),
});
const schemaName = z.string().regex(/^[a-z_][a-z0-9_]{0,39}$/, {
  message: "A schema name is lower-case letters, digits and _ (at most 40)",
});
const adapterLayer = z.strictObject({
  kind: name.nullish(),
  apiKeyEnv: envName.nullish(),
  baseURL: httpUrl.nullish(),
  models: names.nullish(),
});
const storageLayer = z.strictObject({
  kind: z.enum(["memory", "file", "postgres"]).nullish(),
  dir: name.nullish(),
  compression: compression.nullish(),
  urlEnv: envName.nullish(),
  schema: schemaName.nullish(),
});

/**
 * The schema of one configuration layer: every field optional, `null` allowed
 * wherever a value may be removed, unknown keys refused.
 *
 * {@linkcode resolveConfig} checks each layer with it (and reports the file,
 * line and column of a failure); use it directly to check a layer yourself.
 *
 * @example Checking a layer
 * ```ts
 * import { harnessConfigLayerSchema } from "@dsh/harness/config";
 * import assert from "node:assert/strict";
 *
 * assert.equal(harnessConfigLayerSchema.safeParse({ model: { temperature: null } }).success, true);
 * assert.equal(harnessConfigLayerSchema.safeParse({ model: { temprature: 1 } }).success, false);
 * ```
 */
export const harnessConfigLayerSchema: z.ZodType<HarnessConfigLayer> = z.strictObject({
  model: modelLayer.nullish(),
  adapters: z.record(z.string(), adapterLayer.nullable()).nullish(),
  tools: toolNames.nullish(),
  permissions: z.array(permissionRule).nullish(),
  storage: storageLayer.nullish(),
  plugins: names.nullish(),
  maxParallelToolCalls: positiveInt.nullish(),
  maxSteps: positiveInt.nullish(),
  invariants: z.boolean().nullish(),
  hooks: hooksLayer.nullish(),
  hookBridge: hookBridgeLayer.nullish(),
});

const adapter = z.strictObject({
  kind: name,
  apiKeyEnv: envName.optional(),
  baseURL: httpUrl.optional(),
  models: names.optional(),
}).superRefine((value, ctx) => {
  if (value.kind === "openai-compatible" && value.baseURL === undefined) {
    ctx.addIssue({ code: "custom", path: ["baseURL"], message: "An openai-compatible adapter needs a baseURL" });
  }
});

/**
 * The schema of the effective configuration ({@linkcode HarnessConfig}).
 *
 * @example Checking an effective configuration
 * ```ts
 * import { DEFAULT_CONFIG, harnessConfigSchema } from "@dsh/harness/config";
 * import assert from "node:assert/strict";
 *
 * assert.equal(harnessConfigSchema.safeParse(DEFAULT_CONFIG).success, true);
 * assert.equal(harnessConfigSchema.safeParse({ ...DEFAULT_CONFIG, model: undefined }).success, false);
 * ```
 */
export const harnessConfigSchema: z.ZodType<HarnessConfig> = z.strictObject({
  model: z.strictObject({
    provider: name,
    model: name,
    reasoningEffort: reasoningEffort.optional(),
    temperature: temperature.optional(),
    maxTokens: positiveInt.optional(),
    stop: z.array(z.string()).optional(),
  }),
  adapters: z.record(z.string(), adapter),
  tools: toolNames.optional(),
  permissions: z.array(permissionRule),
  storage: z.discriminatedUnion("kind", [
    z.strictObject({ kind: z.literal("memory") }),
    z.strictObject({ kind: z.literal("file"), dir: name, compression: compression.optional() }),
    z.strictObject({ kind: z.literal("postgres"), urlEnv: envName, schema: schemaName.optional() }),
  ]),
  plugins: names,
  maxParallelToolCalls: positiveInt,
  maxSteps: positiveInt.optional(),
  invariants: z.boolean(),
  hooks: hooks.optional(),
  hookBridge: hookBridge.optional(),
});
