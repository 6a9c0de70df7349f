/**
 * Resolving the effective configuration from in-memory layers.
 *
 * @module
 */

import type { z } from "zod";
import { HarnessError } from "../kernel/harness_error.ts";
import { deepFreeze } from "../session/deep_freeze.ts";
import type { HarnessConfig } from "./harness_config.ts";
import { harnessConfigLayerSchema, harnessConfigSchema } from "./harness_config_schema.ts";
import { DEFAULT_CONFIG } from "./default_config.ts";
import { type ConfigPathSegment, formatConfigPath } from "./_config_path.ts";
import { configError, type ConfigLocation } from "./_config_error.ts";
import { JsoncText, MAX_DEPTH, tooDeepValue } from "./_jsonc_text.ts";
import { findInlineSecret } from "./_inline_secret.ts";
import { isPlainObject, LayerMerger, pathKey } from "./_layer_merge.ts";
import { resolveDirectory, resolvePluginSpecifier } from "./_plugin_specifier.ts";
import type { StorageFactory } from "../_apply_config.ts";
import { fileStorageKind } from "../persistence/file_storage.ts";

const FILE_KIND: Readonly<Record<string, StorageFactory>> = Object.freeze({ file: fileStorageKind() });

/** One configuration layer given to {@linkcode resolveConfig}. */
export interface ConfigLayer {
  /** The layer's name: its file path, or a label such as `overrides`. Origins and errors use it. */
  readonly name: string;
  /** The layer's value (a {@linkcode HarnessConfigLayer}); when absent, `text` is parsed. */
  readonly value?: unknown;
  /** The layer's JSONC text, so that errors can name a line and column. */
  readonly text?: string;
  /**
   * The URL of the layer's file (or of a directory, ending in `/`). Relative plugin specifiers
   * (`./x.ts`, `../x.ts`) are resolved against it, and so is a relative `storage.dir` (to a path,
   * when it is a `file:` URL); without it they are kept as written (and `createHarness` refuses
   * to import a relative specifier).
   */
  readonly url?: string | URL;
}

/** The effective configuration and where each of its values came from. */
export interface LoadedConfig {
  /** The effective configuration, deep-frozen. */
  readonly config: HarnessConfig;
  /**
   * The layer each leaf came from, by path: `"model.provider"`,
   * `"adapters.deepseek.apiKeyEnv"`, `"tools"` (arrays are leaves, as are empty
   * objects). The value is `"default"`, a file path or a layer name such as `"overrides"`.
   */
  readonly origins: Readonly<Record<string, string>>;
  /**
   * The storage factories for the kinds a configuration may name that the core does not build
   * itself: `{ file: fileStorageKind() }`, so that `createHarness({ config: loaded })` opens a
   * configured `file` storage (absent from a `LoadedConfig` you build yourself).
   */
  readonly storageKinds?: Readonly<Record<string, StorageFactory>>;
}

interface PreparedLayer {
  readonly name: string;
  readonly value: Record<string, unknown>;
  readonly text: JsoncText | undefined;
}

const DEFAULT_LAYER: ConfigLayer = { name: "default", value: DEFAULT_CONFIG };

/**
 * Apply configuration layers, in order, over {@linkcode DEFAULT_CONFIG}.
 *
 * Objects merge deeply; arrays replace; `null` removes the inherited value; an
 * object whose `kind` differs from the inherited one replaces it instead of
 * merging. Each layer is checked on its own first: its text must be valid JSONC,
 * it must hold no inline secret, and it must fit {@linkcode harnessConfigLayerSchema};
 * then the result must fit {@linkcode harnessConfigSchema}. Pure: no file system.
 *
 * @param layers The layers, lowest precedence first (the defaults are applied before them).
 * @returns The deep-frozen effective configuration and the origin of each leaf.
 * @throws {HarnessError} `CONFIG_SYNTAX` when a layer's text is not JSONC,
 *   `CONFIG_INLINE_SECRET` when a layer holds a credential instead of naming an
 *   environment variable, `CONFIG_SCHEMA` when a layer or the result does not fit
 *   the schema. Messages and `details` name the layer, and with text the line and column (1-based).
 *   `INVALID_ARGS` when `layers` is not an array of named layers, or a layer's `url` is not a URL.
 *
 * @example Layering in memory
 * ```ts
 * import { resolveConfig } from "@dsh/harness/config";
 * import assert from "node:assert/strict";
 *
 * const { config, origins } = resolveConfig([
 *   { name: "base.jsonc", text: '{ "model": { "model": "deepseek-reasoner", "temperature": 0.2 } }' },
 *   { name: "overrides", value: { model: { temperature: null }, tools: ["add"] } },
 * ]);
 * assert.deepEqual(config.model, { provider: "deepseek", model: "deepseek-reasoner" });
 * assert.equal(origins["model.model"], "base.jsonc");
 * assert.equal(origins["model.provider"], "default");
 * assert.equal(origins["tools"], "overrides");
 * ```
 */
export function resolveConfig(layers: readonly ConfigLayer[]): LoadedConfig {
  if (!Array.isArray(layers)) throw new HarnessError("INVALID_ARGS", "Configuration layers must be an array");
  const prepared = [DEFAULT_LAYER, ...layers].map(prepareLayer);
  const merger = new LayerMerger();
  prepared.forEach((layer, index) => merger.apply(index, layer.value));
  const { value, origins, touched } = merger.result();

  const checked = harnessConfigSchema.safeParse(value);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    const path = issuePath(issue);
    const blamed = blame(path, touched);
    const layer = prepared[blamed];
    throw configError(
      "CONFIG_SCHEMA",
      "Invalid configuration",
      { file: layer.name, position: layer.text?.locate(path), path: formatConfigPath(path) },
      `${formatConfigPath(path) || "(root)"}: ${problemOf(issue, value, path)}`,
      { issues: checked.error.issues.map((i) => ({ path: formatConfigPath(issuePath(i)), message: i.message })) },
    );
  }

  const originNames: Record<string, string> = {};
  for (const [path, index] of origins) originNames[path] = prepared[index].name;
  return Object.freeze({
    config: deepFreeze(value) as unknown as HarnessConfig,
    origins: Object.freeze(originNames),
    storageKinds: FILE_KIND,
  });
}

function prepareLayer(layer: ConfigLayer): PreparedLayer {
  if (typeof layer !== "object" || layer === null || typeof layer.name !== "string" || layer.name === "") {
    throw new HarnessError("INVALID_ARGS", "A configuration layer needs a non-empty name");
  }
  const { name } = layer;
  let url: URL | undefined;
  if (layer.url !== undefined) {
    try {
      url = new URL(layer.url);
    } catch (cause) {
      throw new HarnessError("INVALID_ARGS", `Configuration layer "${name}" has an invalid url: ${String(layer.url)}`, {
        cause,
      });
    }
  }
  if (layer.text !== undefined && typeof layer.text !== "string") {
    throw new HarnessError("INVALID_ARGS", `Configuration layer "${name}" has a text that is not a string`);
  }
  let text: JsoncText | undefined;
  let value = layer.value;
  if (layer.text !== undefined) {
    if (value === undefined) {
      text = JsoncText.parse(layer.text, name);
      value = text.value;
    } else {
      try {
        text = JsoncText.parse(layer.text, name);
      } catch {
        text = undefined; // the value is authoritative; the text only serves for positions
      }
    }
  }
  if (value === undefined) value = {};
  const at = (path: readonly ConfigPathSegment[], key?: string): ConfigLocation => ({
    file: name,
    position: text?.locate(path, key),
    path: formatConfigPath(key === undefined ? path : [...path, key]),
  });

  if (!isPlainObject(value)) {
    throw configError("CONFIG_SCHEMA", "Invalid configuration", at([]), "a layer must be an object");
  }
  const deep = tooDeepValue(value);
  if (deep !== undefined) {
    throw configError(
      "CONFIG_SYNTAX",
      "Invalid configuration",
      at(deep),
      `values nest deeper than ${MAX_DEPTH} levels`,
    );
  }
  const secret = findInlineSecret(value);
  if (secret !== undefined) {
    const where = at(secret.path);
    const detail = `${where.path} ${secret.sign === "key" ? "holds" : "looks like"} a credential; ` +
      "keep it in an environment variable and name that variable (apiKeyEnv)";
    throw configError("CONFIG_INLINE_SECRET", "Inline secret", where, detail, { sign: secret.sign });
  }
  const checked = harnessConfigLayerSchema.safeParse(value);
  if (!checked.success) throw schemaError(checked.error, at);

  let resolved: Record<string, unknown> = value;
  const plugins = resolved.plugins;
  if (url !== undefined && Array.isArray(plugins)) {
    resolved = { ...resolved, plugins: plugins.map((p: string) => resolvePluginSpecifier(p, url)) };
  }
  const storage = resolved.storage;
  if (url !== undefined && isPlainObject(storage) && typeof storage.dir === "string") {
    resolved = { ...resolved, storage: { ...storage, dir: resolveDirectory(storage.dir, url) } };
  }
  return { name, value: resolved, text };
}

function schemaError(
  error: z.ZodError,
  at: (path: readonly ConfigPathSegment[], key?: string) => ConfigLocation,
): HarnessError {
  const issues = error.issues.map((issue) => {
    const path = issue.path as ConfigPathSegment[];
    const unknownKey = issue.code === "unrecognized_keys" ? issue.keys[0] : undefined;
    const location = at(path, unknownKey);
    const message = unknownKey === undefined ? issue.message : `unknown key ${JSON.stringify(unknownKey)}`;
    return { location, message };
  });
  const first = issues[0];
  return configError(
    "CONFIG_SCHEMA",
    "Invalid configuration",
    first.location,
    `${first.location.path || "(root)"}: ${lowerFirst(first.message)}`,
    {
      issues: issues.map(({ location, message }) => ({
        path: location.path,
        line: location.position?.line,
        column: location.position?.column,
        message,
      })),
    },
  );
}

function issuePath(issue: z.core.$ZodIssue): ConfigPathSegment[] {
  const path = issue.path as ConfigPathSegment[];
  return issue.code === "unrecognized_keys" && issue.keys.length > 0 ? [...path, issue.keys[0]] : path;
}

/** The layer that last wrote the deepest written prefix of `path`. */
function blame(path: readonly ConfigPathSegment[], touched: ReadonlyMap<string, number>): number {
  for (let length = path.length; length > 0; length--) {
    const index = touched.get(pathKey(path.slice(0, length)));
    if (index !== undefined) return index;
  }
  return 0;
}

/** The issue's message, or "a value is required" when nothing is there (zod says "received undefined"). */
function problemOf(issue: z.core.$ZodIssue, value: unknown, path: readonly ConfigPathSegment[]): string {
  if (issue.code === "invalid_type" && valueAt(value, path) === undefined) return "a value is required";
  return lowerFirst(issue.message);
}

function valueAt(value: unknown, path: readonly ConfigPathSegment[]): unknown {
  let node = value;
  for (const segment of path) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

function lowerFirst(text: string): string {
  return text.length > 1 && /^[A-Z][a-z]/.test(text) ? text[0].toLowerCase() + text.slice(1) : text;
}
