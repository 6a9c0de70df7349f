// Internal: bearer-token check with a constant-time comparison.

import { HttpProblem } from "./_problem.ts";

const encoder = new TextEncoder();

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/**
 * Whether two byte arrays are equal, in time that depends only on their
 * lengths (here both are SHA-256 digests, so it is constant).
 */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}

/**
 * A verifier for `Authorization: Bearer <token>` headers. Both the expected and
 * the presented token are hashed first, so the comparison leaks neither the
 * token's length nor the position of the first differing byte.
 */
export function bearerVerifier(token: string): (authorization: string | undefined) => Promise<void> {
  const expected = sha256(token);
  const challenge = 'Bearer realm="dsh-harness"';
  return async (authorization) => {
    const match = authorization === undefined ? null : /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(authorization);
    if (match === null) {
      throw new HttpProblem(
        401,
        "AUTH_REQUIRED",
        authorization === undefined
          ? "The request has no Authorization header; send Authorization: Bearer <token>"
          : "The Authorization header is not a bearer token",
        { headers: { "www-authenticate": challenge } },
      );
    }
    if (!timingSafeEqual(await sha256(match[1]), await expected)) {
      throw new HttpProblem(401, "INVALID_TOKEN", "The bearer token is not valid", {
        headers: { "www-authenticate": `${challenge}, error="invalid_token"` },
      });
    }
  };
}
