/**
 * Internal: finding credentials written inline in a configuration layer.
 *
 * Two signs: a key that names a credential (`apiKey`, `token`, `secret`,
 * `password`, and compounds ending in them such as `accessToken`), holding
 * anything but `null`; or a string value shaped like a provider key (`sk-…`,
 * `xai-…`, `ghp_…`, …) or a URL with a password in it, under any key — the
 * whole string, or inside a longer one (a hook command's `Bearer sk-…`), or a
 * credential-named URL query parameter (`?key=…`). Keys naming an environment
 * variable (`apiKeyEnv`) are what we ask for and pass, unless what they hold is
 * shaped like a key rather than a variable's name (long, mixed-case, with digits).
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

// The same shapes inside a longer string, bounded so that a word merely containing the prefix does not match;
// a value that is a shell variable (`Bearer $TOKEN`, `user:$PASS@`) is a reference, not a credential.
const EMBEDDED_SECRETS: readonly RegExp[] = [
  ...SECRET_VALUES.slice(0, 8).map((pattern) =>
    new RegExp(`(?<![A-Za-z0-9_-])${pattern.source.slice(1, -1)}(?![A-Za-z0-9_-])`)
  ),
  /\bBearer\s+(?![$%{])[^\s"'$]{16,}/i,
  /\b[a-z][a-z0-9+.-]*:\/\/[^/\s:@]+:(?![$%{])[^/\s@$]+@/i,
  // A credential in a URL's query: ?key=…, &api_key=…, ?access_token=…
  /[?&](?:api[_-]?key|key|token|access[_-]?token|auth|secret|password|sig|signature)=(?![$%{])[^&#\s]{8,}/i,
];

// An environment variable's name is conventionally upper case; a long mixed-case one with digits is a pasted key.
function looksLikeKeyNotName(value: string): boolean {
  return value.length >= 24 && /[a-z]/.test(value) && /[A-Z]/.test(value) && /[0-9]/.test(value);
}

/** Whether `value` holds a credential inside it (see the module's description). */
export function containsSecret(value: string): boolean {
  return EMBEDDED_SECRETS.some((pattern) => pattern.test(value));
}

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
  if (typeof value === "string") {
    return looksLikeSecret(value) || containsSecret(value) ? { path, sign: "value" } : undefined;
  }
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
    if (key.endsWith("Env") && typeof child === "string" && looksLikeKeyNotName(child)) {
      return { path: [...path, key], sign: "value" };
    }
    const found = findInlineSecret(child, [...path, key]);
    if (found) return found;
  }
  return undefined;
}
