// Turns an effective HarnessConfig into what createHarness wires: adapters
// (through factories the caller passes, since sdk/ never imports adapters/),
// storage, the enabled tool set, permission rules and plugin modules.

import type { HarnessContext } from "./kernel/harness_context.ts";
import { HarnessError } from "./kernel/harness_error.ts";
import type { LlmAdapter } from "./llm/mod.ts";
// Types and the zod-free rule matcher only: the config loader (zod, jsonc-parser) is the
// "@dsh/harness/config" subpath, so the core bundle does not carry it.
import type { AdapterConfig, HarnessConfig, StorageConfig } from "./config/harness_config.ts";
import type { LoadedConfig } from "./config/resolve_config.ts";
import { permissionFor, WITH_ARGUMENT } from "./config/permission_for.ts";
import type { AnyToolDefinition, PreToolDecision, ToolDefinition, ToolEvents, ToolRuntime } from "./tools/mod.ts";
import { isDefaultAsk } from "./tools/_default_decision.ts";
import type { SessionStorage } from "./persistence/session_storage.ts";
import { memoryStorage } from "./persistence/memory_storage.ts";

/** What an adapter factory receives: the adapter's configuration, its route name and the resolved API key. */
export interface AdapterFactoryInput extends AdapterConfig {
  /** The route name (the key under `adapters`). */
  readonly provider: string;
  /** The value of the environment variable named by `apiKeyEnv`, if set. */
  readonly apiKey: string | undefined;
}

/** Makes an adapter of one `kind` from configuration. */
export type AdapterFactory = (input: AdapterFactoryInput) => LlmAdapter;

/** Reads an environment variable. */
export type EnvReader = (name: string) => string | undefined;

/** The default environment reader: `process.env` where it exists (Node, Bun, Deno's Node compatibility). */
export function defaultEnv(name: string): string | undefined {
  const g = globalThis as { process?: { env?: Record<string, string | undefined> } };
  return g.process?.env?.[name];
}

/** A config given to createHarness: the effective one, or the loader's result with origins. */
export type ConfigInput = HarnessConfig | LoadedConfig;

export function effectiveConfig(input: ConfigInput): HarnessConfig {
  const given = typeof input === "object" && input !== null && "origins" in input && "config" in input
    ? input.config
    : input;
  // What loadConfig() and resolveConfig() return fits already (they check it against harnessConfigSchema); a
  // hand-made object is checked here for what the harness reads, without the schema (zod stays out of the core).
  const problem = configProblem(given);
  if (problem !== undefined) {
    throw new HarnessError(
      "CONFIG_SCHEMA",
      `Invalid configuration given to createHarness: ${problem}; build it with resolveConfig() or loadConfig()`,
      { details: { problem } },
    );
  }
  return given as HarnessConfig;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isStrings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === "string");
const optional = (v: unknown, test: (v: unknown) => boolean) => v === undefined || v === null || test(v);

/** The first way `config` does not fit what the harness reads from a configuration, or `undefined`. */
function configProblem(config: unknown): string | undefined {
  if (!isObject(config)) return "(root): expected an object";
  const model = config.model;
  if (!isObject(model)) return "model: expected an object";
  for (const key of ["provider", "model"] as const) {
    if (!optional(model[key], (v) => typeof v === "string")) return `model.${key}: expected a string`;
  }
  if (!isObject(config.adapters)) return "adapters: expected an object";
  for (const [name, adapter] of Object.entries(config.adapters)) {
    if (!isObject(adapter) || typeof adapter.kind !== "string") return `adapters.${name}: expected { kind, … }`;
  }
  if (!optional(config.tools, isStrings)) return "tools: expected an array of tool names";
  const rules = config.permissions;
  if (!Array.isArray(rules)) return "permissions: expected an array";
  for (const [i, rule] of rules.entries()) {
    if (!isObject(rule) || typeof rule.tool !== "string" || !["allow", "deny", "ask"].includes(rule.action as string)) {
      return `permissions.${i}: expected { tool, action: "allow" | "deny" | "ask" }`;
    }
  }
  if (!isObject(config.storage) || typeof config.storage.kind !== "string") return "storage: expected { kind, … }";
  if (!isStrings(config.plugins)) return "plugins: expected an array of plugin names";
  const parallel = config.maxParallelToolCalls;
  if (!(Number.isInteger(parallel) && (parallel as number) > 0)) {
    return "maxParallelToolCalls: expected a positive integer";
  }
  if (!optional(config.maxSteps, (n) => Number.isSafeInteger(n) && (n as number) > 0)) {
    return "maxSteps: expected a positive integer";
  }
  if (typeof config.invariants !== "boolean") return "invariants: expected true or false";
  if (!optional(config.hooks, isObject)) return "hooks: expected an object";
  if (!optional(config.hookBridge, isObject)) return "hookBridge: expected an object";
  return undefined;
}

/** Build the configured adapters, except those of the providers in `skip` (given explicitly: not built at all). */
export function adaptersFromConfig(
  config: HarnessConfig,
  factories: Readonly<Record<string, AdapterFactory>> | undefined,
  env: EnvReader,
  skip: ReadonlySet<string> = new Set(),
): LlmAdapter[] {
  const out: LlmAdapter[] = [];
  for (const [provider, adapter] of Object.entries(config.adapters)) {
    if (skip.has(provider)) continue;
    const factory = factories?.[adapter.kind];
    if (factory === undefined) {
      throw new HarnessError(
        "CONFIG_ADAPTER_KIND",
        `Configured adapter "${provider}" has kind "${adapter.kind}", for which no factory was given: pass adapterKinds from "@dsh/harness/adapters"`,
        { details: { provider, kind: adapter.kind } },
      );
    }
    const apiKey = adapter.apiKeyEnv !== undefined ? env(adapter.apiKeyEnv) : undefined;
    out.push(factory({ ...adapter, provider, apiKey }));
  }
  return out;
}

/** What a storage factory receives: the storage's configuration and the environment reader. */
export interface StorageFactoryInput {
  /** The configured storage. */
  readonly config: StorageConfig;
  /** Reads the environment variable a configuration names (e.g. `urlEnv`). */
  readonly env: EnvReader;
}

/**
 * Makes the storage of one configured `kind` that the core does not build itself: `file`
 * (`fileStorageKind()`, which `loadConfig`/`resolveConfig` results carry) or `postgres`.
 */
export type StorageFactory = (input: StorageFactoryInput) => SessionStorage;

/** The storage factories a config input carries (a `LoadedConfig` carries the `file` kind). */
export function configStorageKinds(input: ConfigInput): Readonly<Record<string, StorageFactory>> | undefined {
  return "origins" in input && "config" in input ? (input as LoadedConfig).storageKinds : undefined;
}

// The core builds only memory storage itself: file storage (node:fs, zstd, the log decoder) comes from a factory,
// so that a program that never names it (an edge worker) does not bundle it.
export function storageFromConfig(
  config: HarnessConfig,
  factories: Readonly<Record<string, StorageFactory>> | undefined,
  env: EnvReader,
): SessionStorage {
  const storage = config.storage;
  const factory = factories?.[storage.kind];
  if (factory !== undefined) return factory({ config: storage, env });
  if (storage.kind === "memory") return memoryStorage();
  const from = storage.kind === "file"
    ? 'pass storageKinds: { file: fileStorageKind() } from "@dsh/harness", or load the configuration with loadConfig() or resolveConfig(), whose result carries it'
    : 'pass storageKinds from "@dsh/harness/postgres"';
  throw new HarnessError(
    "CONFIG_STORAGE_KIND",
    `Configured storage has kind "${storage.kind}", for which no factory was given: ${from}`,
    { details: { kind: storage.kind } },
  );
}

/** The given tools the configuration's `tools` list names (all of them without a list). */
export function enabledTools(config: HarnessConfig, tools: readonly ToolDefinition[]): ToolDefinition[] {
  if (config.tools === undefined) return [...tools];
  const enabled = new Set(config.tools);
  return tools.filter((t) => enabled.has(t.name));
}

/**
 * Apply the configuration's `tools` list to every global tool, once the plugins have started: those that plugins
 * register (the configuration's own, `todoWritePlugin`, the subagents' `task`) are enabled by naming them too.
 *
 * @throws {HarnessError} `CONFIG_UNKNOWN_TOOL` for a listed name that no option or plugin registered.
 */
export function restrictTools(ctx: HarnessContext, config: HarnessConfig): void {
  if (config.tools === undefined) return;
  const tools = ctx.get("tools" as never) as ToolRuntime | undefined;
  if (tools === undefined) {
    throw new HarnessError("CONFIG_UNKNOWN_TOOL", "The configured tools need the tool runtime, which is not installed");
  }
  for (const name of config.tools) {
    if (!tools.registered(name)) {
      const known = tools.schemas().map((s) => s.name);
      throw new HarnessError(
        "CONFIG_UNKNOWN_TOOL",
        `Configured tool "${name}" was neither given to createHarness nor registered by a plugin`,
        { details: { tool: name, known } },
      );
    }
  }
  tools.restrictGlobal({ allow: config.tools }, ctx);
}

/**
 * Refuse an argument rule, `name(pattern)`, whose name matches registered tools none of which names a permission
 * subject: it could never match, so a deny (or ask) written for those calls would let every one of them through.
 * Run once the plugins have registered their tools.
 *
 * @throws {HarnessError} `CONFIG_RULE_NO_SUBJECT` naming the rule and the tools.
 */
export function checkRuleSubjects(ctx: HarnessContext, config: HarnessConfig): void {
  const tools = ctx.get("tools" as never) as ToolRuntime | undefined;
  if (tools === undefined) return;
  for (const [index, rule] of config.permissions.entries()) {
    const split = WITH_ARGUMENT.exec(rule.tool);
    // Only a rule that names its tool exactly: a pattern (`*(.env)`) may be meant for tools registered later or in
    // an agent's scope, which this check cannot see.
    if (split === null || /[*?[\]{}|]/.test(split[1])) continue;
    const definition = tools.get(split[1]);
    if (definition === undefined || typeof definition.permissionSubject === "function") continue;
    throw new HarnessError(
      "CONFIG_RULE_NO_SUBJECT",
      `Permission rule "${rule.tool}" (permissions.${index}) can never match: "${
        split[1]
      }" names no permission subject; write the rule without an argument pattern ("${split[1]}")`,
      { details: { rule: rule.tool, index, tools: [split[1]] } },
    );
  }
}

/** A call's permission subject, or `undefined` when the tool names none or its function throws. */
function subjectOf(definition: AnyToolDefinition | undefined, args: unknown): string | undefined {
  try {
    const subject = definition?.permissionSubject?.(args);
    return typeof subject === "string" ? subject : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Install the permission rules as a `tools/pre-execute` listener (the last
 * matching rule wins). Arguments rewritten by a listener inside it (a hook's
 * `updatedInput`) are judged again: the rules apply to what the tool runs with.
 * What a call reaches beyond its subject (a link's target) is judged by the
 * same rules through a subject guard; where no rule covers it, a `write` tool
 * that ran on an allow rule for its own path is refused (it would have asked).
 */
export function installPermissions(ctx: HarnessContext, config: HarnessConfig): void {
  if (config.permissions.length === 0) return;
  const typed = ctx as unknown as HarnessContext<ToolEvents, object>;
  const deny = (name: string, verdict: { reason?: string }): PreToolDecision => ({
    kind: "deny",
    reason: verdict.reason ?? `Tool "${name}" is denied by configuration`,
  });
  typed.on("tools/pre-execute", async (exec, next) => {
    const definition = (ctx.get("tools" as never) as ToolRuntime | undefined)?.get(exec.name, exec.scope);
    const judge = (args: unknown) => permissionFor(config.permissions, exec.name, subjectOf(definition, args));
    const verdict = judge(exec.args);
    if (verdict?.action === "deny") return deny(exec.name, verdict);
    // The rest of the chain (hooks, other listeners) is consulted under an asking rule too: its denial or
    // rewritten input stands, and an allow becomes the rule's ask.
    const decision = await next();
    if (decision.kind === "deny") return decision;
    // Rewritten arguments are judged as the model's were; no rule for them leaves the decision as it is.
    const effective = decision.input !== undefined ? judge(decision.input) : verdict;
    if (effective?.action === "deny") return deny(exec.name, effective);
    // An ask for the model's arguments holds whatever they were rewritten to (as their denial does).
    const ask = effective?.action === "ask" ? effective : verdict?.action === "ask" ? verdict : undefined;
    if (ask !== undefined) {
      const reason = ask.reason ?? (decision.kind === "ask" && !isDefaultAsk(decision) ? decision.reason : undefined);
      return {
        kind: "ask",
        ...(reason !== undefined ? { reason } : {}),
        ...(decision.input !== undefined ? { input: decision.input } : {}),
      };
    }
    // An allowing rule overrides the tool's default ask, not another listener's decision.
    if (effective?.action === "allow" && isDefaultAsk(decision)) {
      return { kind: "allow", ...(decision.input !== undefined ? { input: decision.input } : {}) };
    }
    return decision;
  });
  // What a call reaches beyond its own subject (each file a search reads, a link's target, a redirect's target) is
  // judged by the same rules; one that would ask cannot be asked mid-call, and is left out (or refused) too.
  const tools = ctx.get("tools" as never) as ToolRuntime | undefined;
  if (tools === undefined) {
    throw new HarnessError("CONFIG_PERMISSIONS", "Permission rules need the tool runtime, which is not installed");
  }
  tools.subjectGuard((exec, subject) => {
    const verdict = permissionFor(config.permissions, exec.name, subject);
    if (verdict?.action === "allow") return undefined;
    const refused = `Tool "${exec.name}" may not reach ${JSON.stringify(subject)} by configuration`;
    if (verdict !== undefined) return verdict.reason ?? refused;
    // No rule for what the call reaches: it is judged as a call naming it would be, by the tool's default. A
    // `write` tool asks by default, so a call that ran on an allow rule for the path it names (write_file(src/*)
    // with src/x a link to .git/hooks) does not carry that allow to where the path leads.
    const definition = tools.get(exec.name, exec.scope);
    if (definition?.access !== "write") return undefined;
    const given = permissionFor(config.permissions, exec.name, subjectOf(definition, exec.args));
    return given?.action === "allow"
      ? `${refused}: no rule allows it, and the allow for the path it names does not`
      : undefined;
  });
}

/** Import plugin modules named by specifier; a module exports the plugin as `default` or `plugin`. */
export async function importPlugins(specifiers: readonly string[]): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const specifier of specifiers) {
    // Imported from here, `./x` would be a file of the SDK: such a specifier is resolved against the file that
    // names it (or loadConfig's cwd) when the configuration is loaded, and one still relative had neither.
    if (specifier.startsWith("./") || specifier.startsWith("../")) {
      throw new HarnessError(
        "CONFIG_PLUGIN_IMPORT",
        `Cannot import plugin "${specifier}": a relative specifier needs the file that names it; load the configuration with loadConfig(), give its layer a url, or name the plugin by absolute path or URL`,
        { details: { specifier } },
      );
    }
    let mod: { default?: unknown; plugin?: unknown };
    try {
      mod = await import(specifier);
    } catch (cause) {
      throw new HarnessError("CONFIG_PLUGIN_IMPORT", `Cannot import plugin "${specifier}"`, { cause });
    }
    const plugin = mod.default ?? mod.plugin;
    if (typeof plugin !== "function" && (typeof plugin !== "object" || plugin === null)) {
      throw new HarnessError(
        "CONFIG_PLUGIN_IMPORT",
        `Plugin module "${specifier}" exports no plugin (default or "plugin")`,
      );
    }
    out.push(plugin);
  }
  return out;
}
