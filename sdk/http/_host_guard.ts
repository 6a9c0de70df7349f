// Internal: the Host check of an app served without authentication (DNS rebinding).
//
// Without a token, being able to reach the app is the only credential. A page on another site cannot read its
// answers (no CORS) and its writes are refused (`CROSS_SITE_REQUEST`), but a page whose own name the attacker
// points at this address once it has loaded (DNS rebinding: `attacker.example` resolving to 127.0.0.1) is the
// same origin as the app to the browser: it reads every answer and its requests say `Sec-Fetch-Site:
// same-origin`. What gives it away is the name it asked for, the request's `Host`: an app without auth answers
// only a name that cannot be rebound — `localhost` and `*.localhost` (browsers resolve them to loopback
// themselves), an IP address (there is no name to rebind) — or one the app was told it is served under
// (`allowedHosts`).

import type { MiddlewareHandler } from "hono";
import { HttpProblem } from "./_problem.ts";

/** The host name of a `Host` value (`name[:port]`, `[v6][:port]`), lowercased, IPv4 forms normalized; else `undefined`. */
export function hostName(host: string): string | undefined {
  // Nothing a URL would read as user info, a path, a query or a fragment: a Host is a name and a port.
  if (host === "" || /[\s@/\\?#]/.test(host)) return undefined;
  try {
    const name = new URL(`http://${host}`).hostname;
    return name.endsWith(".") ? name.slice(0, -1) : name;
  } catch {
    return undefined;
  }
}

/** Whether `name` (as {@linkcode hostName} gives it) names this machine or an address: nothing DNS can rebind. */
export function unrebindable(name: string): boolean {
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  if (name.startsWith("[")) return true; // an IPv6 literal
  return /^\d{1,3}(?:\.\d{1,3}){3}$/.test(name); // an IPv4 literal (the URL parser wrote it in dotted decimal)
}

/**
 * Refuse, 403 `HOST_NOT_ALLOWED`, a request whose `Host` (else its URL's host) is neither
 * {@linkcode unrebindable} nor one of `allowed` (a name, or `.name` for the name and every name under it).
 */
export function hostGuard(allowed: readonly string[] = []): MiddlewareHandler {
  const names = allowed.map((a) => a.toLowerCase().replace(/\.$/, ""));
  const listed = (name: string) =>
    names.some((a) => a.startsWith(".") ? name === a.slice(1) || name.endsWith(a) : name === a);
  return async (c, next) => {
    const host = c.req.header("host") ?? new URL(c.req.url).host;
    const name = hostName(host);
    if (name === undefined || !(unrebindable(name) || listed(name))) {
      throw new HttpProblem(
        403,
        "HOST_NOT_ALLOWED",
        `This app serves without authentication and does not answer the host name ${JSON.stringify(host)}: only ` +
          "localhost, an IP address or a name in allowedHosts (a page on any other name may be another site's, its name " +
          "pointed at this address)",
      );
    }
    await next();
  };
}
