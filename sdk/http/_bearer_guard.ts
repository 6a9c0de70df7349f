// Internal: the bearer-token check of the HTTP app (moved out of `create_harness_app.ts`).

import type { Context, MiddlewareHandler } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import type { HarnessAppEnv } from "./create_harness_app.ts";
import { HttpProblem } from "./_problem.ts";

const CHALLENGE = 'Bearer realm="dsh-harness"';
export const TOKEN_SYNTAX = /^[A-Za-z0-9._~+/-]+=*$/;

/**
 * Hono's bearer-auth (a constant-time comparison of hashed tokens) with our answers: its message options are
 * called to build the refusal, and throwing from them makes `onError` answer with problem+json.
 */
export function bearerGuard(token: string): MiddlewareHandler<HarnessAppEnv> {
  const required = (c: Context): never => {
    throw new HttpProblem(
      401,
      "AUTH_REQUIRED",
      (c.req.header("authorization") ?? "") === ""
        ? "The request has no Authorization header; send Authorization: Bearer <token>"
        : "The Authorization header is not a bearer token",
      { headers: { "www-authenticate": CHALLENGE } },
    );
  };
  return bearerAuth({
    token,
    realm: "dsh-harness",
    noAuthenticationHeaderMessage: required,
    invalidAuthenticationHeaderMessage: required,
    invalidTokenMessage: () => {
      throw new HttpProblem(401, "INVALID_TOKEN", "The bearer token is not valid", {
        headers: { "www-authenticate": `${CHALLENGE}, error="invalid_token"` },
      });
    },
  });
}
