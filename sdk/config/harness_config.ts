/**
 * The effective configuration of a harness, and the shape of one configuration layer.
 *
 * @module
 */

import type { LlmCallConfig, ReasoningEffort } from "../llm/llm_adapter.ts";
import type { HookEventName } from "../session/session_events.ts";

/** What a permission rule decides for a matching tool call. */
export type PermissionAction = "allow" | "deny" | "ask";

/**
 * One permission rule: which tools it matches and what it decides.
 *
 * `tool` is a tool name or a glob-like pattern where `*` matches any run of
 * characters (`fs_*`, `*`). See {@linkcode permissionFor} for how rules combine.
 */
export interface PermissionRule {
  /**
   * The tool name or pattern (`*` is the only wildcard), optionally with an argument pattern: `bash(git *)`.
   * An argument pattern matches the call's permission subject; createHarness refuses one whose name matches only
   * tools that name no subject (`CONFIG_RULE_NO_SUBJECT`), since it could never match.
   */
  readonly tool: string;
  /** What the rule decides. */
  readonly action: PermissionAction;
  /** Why, shown to the user or the model when the rule applies. */
  readonly reason?: string;
}

/**
 * The model every agent calls unless it names another: the same fields as a
 * call configuration (provider route, model id, reasoning effort, sampling).
 */
export type ModelConfig = LlmCallConfig;

/**
 * Kinds of configured adapters. `deepseek` and `openai-compatible` are the ones
 * the SDK ships; any other name is left to the code that builds adapters.
 */
export type AdapterKind = "deepseek" | "openai-compatible" | (string & Record<never, never>);

/**
 * How to build one provider adapter.
 *
 * Secrets never appear here: `apiKeyEnv` names the environment variable that
 * holds the API key, and the key is read when the adapter is built.
 */
export interface AdapterConfig {
  /** Which adapter implementation to build. */
  readonly kind: AdapterKind;
  /** The name of the environment variable holding the API key, e.g. `DEEPSEEK_API_KEY`. */
  readonly apiKeyEnv?: string;
  /** The API base URL; required for `openai-compatible`. */
  readonly baseURL?: string;
  /** The model ids this adapter serves, when they differ from its built-in catalogue. */
  readonly models?: readonly string[];
}

/** Session logs kept in memory only (lost when the process ends). */
export interface MemoryStorageConfig {
  /** Discriminator. */
  readonly kind: "memory";
}

/** Session logs written as JSONL files under a directory. */
export interface FileStorageConfig {
  /** Discriminator. */
  readonly kind: "file";
  /**
   * The root directory of the session files. A relative one is resolved when the configuration is loaded:
   * against the file that names it (`loadConfig`, or a `resolveConfig` layer with a `url`), against
   * `loadConfig`'s `cwd` in its overrides; one still relative is relative to the process's directory.
   */
  readonly dir: string;
  /**
   * How the files are encoded.
   *
   * @default {"zstd"}
   */
  readonly compression?: "zstd" | "none";
}

/** Where session logs are stored. */
/**
 * Session logs in PostgreSQL, shared by every instance (`postgresStorage` from
 * `@dsh/harness/postgres`). The connection string is read from the
 * environment variable `urlEnv`, never written in the file; the driver is
 * the application's: pass `storageKinds: { postgres: postgresStorageKind(...) }`
 * to `createHarness`.
 */
export interface PostgresStorageConfig {
  /** Discriminator. */
  readonly kind: "postgres";
  /** The environment variable holding the connection string, e.g. `DATABASE_URL`. */
  readonly urlEnv: string;
  /**
   * The schema holding the tables.
   *
   * @default {"dsh"}
   */
  readonly schema?: string;
}

/** Where session logs are stored. */
export type StorageConfig = MemoryStorageConfig | FileStorageConfig | PostgresStorageConfig;

/** A hook run as a shell command (`sh -c`), Claude Code's protocol: the event as JSON on stdin. */
export interface HookCommandConfig {
  /** Discriminator. */
  readonly type: "command";
  /** The command line, run by `sh -c` through `ctx.subprocess`. */
  readonly command: string;
  /**
   * Seconds before the hook is killed (its outcome is then `HOOK_TIMEOUT` and the turn goes on).
   *
   * @default {60}
   */
  readonly timeout?: number;
}

/** The hooks of one event that apply when `matcher` matches (the tool name, for tool events). */
export interface HookMatcherConfig {
  /**
   * A regular expression the whole tool name must match (`Edit|Write`, `mcp__.*`); empty or `*` matches all.
   * For `SessionStart` it matches the source (`startup` or `resume`); other events ignore it.
   */
  readonly matcher?: string;
  /** The hooks to run, in order. */
  readonly hooks: readonly HookCommandConfig[];
}

/**
 * The environment of the hook bridge's command hooks (`hookBridge()`'s options of the same names): pass them on,
 * `hookBridge({ hooks: config.hooks, ...config.hookBridge })`.
 */
export interface HookBridgeConfig {
  /**
   * Which variables of the host process command hooks get: a list of names, or prefixes ending with `*`
   * (`["PATH", "HOME", "MY_TOOL_*"]`); `false` none; `true` the whole environment. Absent, the bridge's default
   * (`SHELL_ENV`, no credentials).
   */
  readonly inheritEnv?: boolean | readonly string[];
  /**
   * Variables set for every command hook, over the inherited ones (names non-empty, without `=` or NUL; values
   * strings without NUL). Like any value of the configuration, no credential: a value or name that looks like one is
   * `CONFIG_INLINE_SECRET`.
   */
  readonly env?: Readonly<Record<string, string>>;
}

/** Hooks by event name (`PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `Stop`, `SessionStart`). */
export type HooksConfig = { readonly [K in HookEventName]?: readonly HookMatcherConfig[] };

/**
 * The effective configuration: every layer applied over {@linkcode DEFAULT_CONFIG}.
 *
 * Produced by {@linkcode resolveConfig} and {@linkcode loadConfig}, deep-frozen.
 */
export interface HarnessConfig {
  /** The default model call configuration. */
  readonly model: ModelConfig;
  /** Provider adapters to build, by provider name. */
  readonly adapters: Readonly<Record<string, AdapterConfig>>;
  /**
   * The enabled tools by name; absent enables every registered tool. It applies to every global tool, those
   * plugins register included (`todo_write`, the subagents' `task`), once the plugins have started; a name
   * nothing registered is `CONFIG_UNKNOWN_TOOL`.
   */
  readonly tools?: readonly string[];
  /** Permission rules, in order (the last matching rule wins). */
  readonly permissions: readonly PermissionRule[];
  /** Where session logs are stored. */
  readonly storage: StorageConfig;
  /** Plugin module specifiers; relative ones are resolved against the file that names them. */
  readonly plugins: readonly string[];
  /** How many concurrency-safe tool calls run at once. */
  readonly maxParallelToolCalls: number;
  /**
   * The most model steps of one turn (`createHarness`'s `maxSteps`): a turn whose model still calls tools after this
   * many steps ends `blocked`. Absent means unbounded.
   */
  readonly maxSteps?: number;
  /** Whether the harness checks its invariants live (on by default, like the loop; turn off to save the cost). */
  readonly invariants: boolean;
  /** Hooks run by the hook bridge (`hookBridge()` of `@dsh/harness/hooks`); absent means none. */
  readonly hooks?: HooksConfig;
  /** The environment of the command hooks, for `hookBridge()` (see {@linkcode HookBridgeConfig}); absent, its defaults. */
  readonly hookBridge?: HookBridgeConfig;
}

/** One layer's view of {@linkcode ModelConfig}: every field optional, `null` removes it. */
export interface ModelConfigLayer {
  /** See {@linkcode ModelConfig.provider}. */
  readonly provider?: string | null;
  /** See {@linkcode ModelConfig.model}. */
  readonly model?: string | null;
  /** See {@linkcode ModelConfig.reasoningEffort}. */
  readonly reasoningEffort?: ReasoningEffort | null;
  /** See {@linkcode ModelConfig.temperature}. */
  readonly temperature?: number | null;
  /** See {@linkcode ModelConfig.maxTokens}. */
  readonly maxTokens?: number | null;
  /** See {@linkcode ModelConfig.stop}. */
  readonly stop?: readonly string[] | null;
}

/** One layer's view of {@linkcode AdapterConfig}: every field optional, `null` removes it. */
export interface AdapterConfigLayer {
  /** See {@linkcode AdapterConfig.kind}. */
  readonly kind?: AdapterKind | null;
  /** See {@linkcode AdapterConfig.apiKeyEnv}. */
  readonly apiKeyEnv?: string | null;
  /** See {@linkcode AdapterConfig.baseURL}. */
  readonly baseURL?: string | null;
  /** See {@linkcode AdapterConfig.models}. */
  readonly models?: readonly string[] | null;
}

/** One layer's view of {@linkcode StorageConfig}: every field optional, `null` removes it. */
export interface StorageConfigLayer {
  /** See {@linkcode StorageConfig}. */
  readonly kind?: "memory" | "file" | "postgres" | null;
  /** See {@linkcode FileStorageConfig.dir}. */
  readonly dir?: string | null;
  /** See {@linkcode FileStorageConfig.compression}. */
  readonly compression?: "zstd" | "none" | null;
  /** See {@linkcode PostgresStorageConfig.urlEnv}. */
  readonly urlEnv?: string | null;
  /** See {@linkcode PostgresStorageConfig.schema}. */
  readonly schema?: string | null;
}

/**
 * One configuration layer (a profile file, the user patch, programmatic overrides).
 *
 * Every field is optional. Objects merge deeply into what earlier layers set;
 * arrays replace; `null` removes the inherited value. An object whose `kind`
 * differs from the inherited one replaces it instead of merging.
 */
export interface HarnessConfigLayer {
  /** See {@linkcode HarnessConfig.model}. */
  readonly model?: ModelConfigLayer | null;
  /** See {@linkcode HarnessConfig.adapters}. */
  readonly adapters?: Readonly<Record<string, AdapterConfigLayer | null>> | null;
  /** See {@linkcode HarnessConfig.tools}. */
  readonly tools?: readonly string[] | null;
  /** See {@linkcode HarnessConfig.permissions}. */
  readonly permissions?: readonly PermissionRule[] | null;
  /** See {@linkcode HarnessConfig.storage}. */
  readonly storage?: StorageConfigLayer | null;
  /** See {@linkcode HarnessConfig.plugins}. */
  readonly plugins?: readonly string[] | null;
  /** See {@linkcode HarnessConfig.maxParallelToolCalls}. */
  readonly maxParallelToolCalls?: number | null;
  /** See {@linkcode HarnessConfig.maxSteps}; `null` removes an inherited bound. */
  readonly maxSteps?: number | null;
  /** See {@linkcode HarnessConfig.invariants}. */
  readonly invariants?: boolean | null;
  /** See {@linkcode HarnessConfig.hooks}; each event's list replaces the inherited one, `null` removes it. */
  readonly hooks?: { readonly [K in HookEventName]?: readonly HookMatcherConfig[] | null } | null;
  /**
   * See {@linkcode HarnessConfig.hookBridge}: `env` merges with the inherited one by name (`null` removes a variable),
   * `inheritEnv` replaces it; `null` removes either, or the whole.
   */
  readonly hookBridge?: {
    readonly inheritEnv?: boolean | readonly string[] | null;
    readonly env?: Readonly<Record<string, string | null>> | null;
  } | null;
}
