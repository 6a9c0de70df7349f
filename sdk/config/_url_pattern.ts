// Internal: the URL in a permission rule's argument pattern (`web_fetch(https://Docs.Example:443)`) spelled as
// `web_fetch` spells the URL it fetches (its permission subject): scheme and host in lower case (and the host as
// `new URL()` writes it: punycode, no trailing dot), no default port, `/` for an origin alone, no fragment, the
// characters a URL escapes escaped and the escapes of unreserved characters decoded in the path. A rule matches a
// subject in its own spelling or in this one, so a rule written before the subject had one spelling (a deny for
// `https://evil.example`, for `https://Intranet.example/*`, for `https://api.example:443/*`) still matches.

const SCHEME = /^([A-Za-z*][A-Za-z0-9+.*-]*):\/\//;
const DEFAULT_PORT: Record<string, string> = { http: ":80", https: ":443" };

/**
 * `text` with the control characters, the space, those of `escape` and every non-ASCII one written as UTF-8 escapes,
 * as `new URL()` does.
 */
function escaped(text: string, escape: string): string {
  let out = "";
  for (const char of text) {
    const code = char.charCodeAt(0);
    if (code > 0x20 && code < 0x7f && !escape.includes(char)) out += char;
    else {for (const byte of new TextEncoder().encode(char)) {
        out += `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
      }}
  }
  return out;
}

// What else `new URL()` escapes in the path and in the query of an http(s) URL.
const PATH_ESCAPE = '"<>`{}';
const QUERY_ESCAPE = "\"'<>";

/** The host (and port) of an authority without `*`, as `new URL()` writes it; `undefined` when it is not one. */
function hostOf(scheme: string, authority: string): string | undefined {
  try {
    const url = new URL(`${scheme}://${authority}/`);
    if (url.hostname.endsWith(".")) url.hostname = url.hostname.replace(/\.+$/, "");
    return url.host;
  } catch {
    return undefined;
  }
}

/**
 * `pattern` with its URL spelled as `web_fetch`'s subject is, or `undefined` when it names no http(s) URL or is
 * spelled so already. A user name in the pattern is dropped when `dropUser` (a deny or an ask rule: a subject has
 * none, so the rule covers the URL without it), else the pattern has no other spelling (an allow rule is not
 * widened to the URL without it).
 */
export function urlSpelling(pattern: string, dropUser: boolean): string | undefined {
  const scheme = SCHEME.exec(pattern);
  if (scheme === null) return undefined;
  const name = scheme[1].toLowerCase();
  if (name !== "http" && name !== "https" && !name.includes("*")) return undefined;
  let rest = pattern.slice(scheme[0].length);
  const end = rest.search(/[/?#\\]/);
  let authority = end === -1 ? rest : rest.slice(0, end);
  rest = end === -1 ? "" : rest.slice(end);
  const at = authority.lastIndexOf("@");
  if (at !== -1) {
    if (!dropUser) return undefined;
    authority = authority.slice(at + 1);
  }
  if (authority.includes("*") || name.includes("*")) {
    authority = authority.replace(/[A-Z]/g, (c) => c.toLowerCase()).replace(/\.+(?=:\d+$|$)/, "");
    const port = DEFAULT_PORT[name];
    if (port !== undefined && authority.endsWith(port)) authority = authority.slice(0, -port.length);
  } else {
    const host = hostOf(name, authority);
    if (host === undefined) return undefined;
    authority = host;
  }
  const hash = rest.indexOf("#");
  if (hash !== -1) rest = rest.slice(0, hash);
  const query = rest.indexOf("?");
  let path = query === -1 ? rest : rest.slice(0, query);
  const search = query === -1 ? "" : escaped(rest.slice(query), QUERY_ESCAPE);
  path = escaped(path.replaceAll("\\", "/"), PATH_ESCAPE).replace(/%[0-9a-f]{2}/gi, (escape) => {
    const char = String.fromCharCode(parseInt(escape.slice(1), 16));
    return /^[A-Za-z0-9._~-]$/.test(char) ? char : escape.toUpperCase();
  });
  const spelled = `${name}://${authority}${path === "" ? "/" : path}${search}`;
  return spelled === pattern ? undefined : spelled;
}
