/**
 * Configuration layers: the effective {@linkcode HarnessConfig} built from the
 * built-in defaults, profile files, the user's patch file and programmatic
 * overrides (JSONC files; objects merge, arrays replace, `null` removes), with
 * the origin of every value, and the permission rules it carries.
 *
 * @example Loading, inspecting and using a configuration
 * ```ts
 * import { dumpConfig, permissionFor, resolveConfig } from "@dsh/harness/config";
 * import assert from "node:assert/strict";
 *
 * const loaded = resolveConfig([
 *   { name: "profiles/base.jsonc", text: '{ "permissions": [{ "tool": "fs_*", "action": "ask" }] }' },
 * ]);
 * assert.deepEqual(permissionFor(loaded.config.permissions, "fs_write"), { action: "ask" });
 * assert.match(dumpConfig(loaded), /# from profiles\/base\.jsonc/);
 * ```
 *
 * @module
 */

export type {
  AdapterConfig,
  AdapterConfigLayer,
  AdapterKind,
  FileStorageConfig,
  HarnessConfig,
  HarnessConfigLayer,
  HookBridgeConfig,
  HookCommandConfig,
  HookMatcherConfig,
  HooksConfig,
  MemoryStorageConfig,
  ModelConfig,
  ModelConfigLayer,
  PermissionAction,
  PermissionRule,
  PostgresStorageConfig,
  StorageConfig,
  StorageConfigLayer,
} from "./harness_config.ts";
export { harnessConfigLayerSchema, harnessConfigSchema } from "./harness_config_schema.ts";
export { DEFAULT_CONFIG } from "./default_config.ts";
export { type ConfigLayer, type LoadedConfig, resolveConfig } from "./resolve_config.ts";
export { type ConfigPaths, loadConfig, type LoadConfigOptions } from "./load_config.ts";
export { dumpConfig } from "./dump_config.ts";
export { permissionFor, type PermissionVerdict } from "./permission_for.ts";
