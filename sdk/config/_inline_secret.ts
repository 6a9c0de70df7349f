/**
 * Internal: finding credentials written inline in a configuration layer.
 *
 * Two signs: a key that names a credential (`apiKey`, `token`, `secret`,
 * `password`, and compounds ending in them such as `accessToken`), holding
 * anything but `null`; or a string value shaped like a provider key (`sk-…`,
 * `xai-…`, `ghp_…`, …) or a URL with a password in it, under any key. Keys
 * naming an environment variable (`apiKeyEnv`) are what we ask for and pass.
 *
 * @module
 */

import type { ConfigPathSegment } from "./_config_path.ts";

/** Where an inline secret is, and which sign gave it away. */
export interface InlineSecret {
  readonly path: readonly ConfigPathSegment[];
  readonly sign: "key" | "value";
}

const SECRET_KEY_ENDINGS = ["apikey", "token", "secret", "password", "passwd", "privatekey", "authorization"];

const SECRET_VALUES: readonly RegExp[] = [
  /^sk-[A-Za-z0-9_-]{16,}$/, // OpenAI, DeepSeek, Anthropic (sk-ant-…), many compatible providers
  /^xai-[A-Za-z0-9]{20,}$/, // xAI
  /^gsk_[A-Za-z0-9]{20,}$/, // Groq
  /^AIza[0-9A-Za-z_-]{30,}$/, // Google
  /^(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}$/, // GitHub tokens
  /^github_pat_[A-Za-z0-9_]{30,}$/, // GitHub fine-grained tokens
  /^hf_[A-Za-z0-9]{30,}$/, // Hugging Face
  /^AKIA[0-9A-Z]{16}$/, // AWS access key id
  /^Bearer\s+\S{16,}$/i, // a pasted Authorization header
  /^[a-z][a-z0-9+.-]*:\/\/[^/\s:@]+:[^/\s@]+@/i, // https://user:password@host
];

/** Whether `key` names a credential. */
export function isSecretKey(key: string): boolean {
  const normal = key.toLowerCase().replace(/[-_]/g, "");
  return SECRET_KEY_ENDINGS.some((ending) => normal.endsWith(ending));
}

/** Whether `value` looks like a credential. */
export function looksLikeSecret(value: string): boolean {
  const trimmed = value.trim();
  return SECRET_VALUES.some((pattern) => pattern.test(trimmed));
}

/** The first inline secret in `value`, depth first in key order, or `undefined`. */
export function findInlineSecret(value: unknown, path: ConfigPathSegment[] = []): InlineSecret | undefined {
  if (typeof value === "string") return looksLikeSecret(value) ? { path, sign: "value" } : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findInlineSecret(value[i], [...path, i]);
      if (found) return found;
    }
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  for (const [key, child] of Object.entries(value)) {
    if (child !== null && child !== undefined && isSecretKey(key)) return { path: [...path, key], sign: "key" };
    const found = findInlineSecret(child, [...path, key]);
    if (found) return found;
  }
  return undefined;
}
