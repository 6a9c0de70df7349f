// Internal: the bearer-token check of the HTTP app (moved out of `create_harness_app.ts`).

import type { Context, MiddlewareHandler } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import type { HarnessAppEnv } from "./create_harness_app.ts";
import { HttpProblem } from "./_problem.ts";

const CHALLENGE = 'Bearer realm="dsh-harness"';
export const TOKEN_SYNTAX = /^[A-Za-z0-9._~+/-]+=*$/;

/**
 * Why an `Authorization` header Hono found malformed is: another scheme, `Bearer` with no token, or a token with
 * characters RFC 6750's token68 has not. The header itself is not echoed (it may be a secret).
 */
function malformedReason(header: string): string {
  const space = header.indexOf(" ");
  const scheme = space < 0 ? header : header.slice(0, space);
  if (scheme.toLowerCase() !== "bearer") {
    return "The Authorization header is not a bearer credential; send Authorization: Bearer <token>";
  }
  if (header.slice(scheme.length).trim() === "") return "The Authorization header has no token after Bearer";
  return "The bearer token is malformed: RFC 6750 allows only letters, digits and -._~+/ (then = padding)";
}

/**
 * Hono's bearer-auth (a constant-time comparison of hashed tokens) with our answers: its message options are
 * called to build the refusal, and throwing from them makes `onError` answer with problem+json. Three refusals,
 * all 401 (a client re-authenticates on each; RFC 6750 §3.1 names a malformed token `invalid_token` too):
 * `AUTH_REQUIRED` (no credentials: a bare challenge), `MALFORMED_AUTHORIZATION` (a header that is not
 * `Bearer <token68>`: credentials given but unusable, whatever the token) and `INVALID_TOKEN` (a well-formed token
 * that is not the app's); the last two with `error="invalid_token"` in the challenge.
 */
export function bearerGuard(token: string): MiddlewareHandler<HarnessAppEnv> {
  const unusable = (code: string, detail: string): never => {
    throw new HttpProblem(401, code, detail, {
      headers: { "www-authenticate": `${CHALLENGE}, error="invalid_token"` },
    });
  };
  return bearerAuth({
    token,
    realm: "dsh-harness",
    noAuthenticationHeaderMessage: () => {
      throw new HttpProblem(
        401,
        "AUTH_REQUIRED",
        "The request has no Authorization header; send Authorization: Bearer <token>",
        { headers: { "www-authenticate": CHALLENGE } },
      );
    },
    invalidAuthenticationHeaderMessage: (c: Context) =>
      unusable("MALFORMED_AUTHORIZATION", malformedReason(c.req.header("authorization") ?? "")),
    invalidTokenMessage: () => unusable("INVALID_TOKEN", "The bearer token is not valid"),
  });
}
