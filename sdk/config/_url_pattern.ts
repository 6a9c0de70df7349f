// Internal: the URL in a permission rule's argument pattern (`web_fetch(https://Docs.Example:443)`) spelled as
// `web_fetch` spells the URL it fetches (its permission subject): scheme and host in lower case (and the host as
// `new URL()` writes it: punycode, no trailing dot), no default port, `/` for an origin alone, no fragment, the
// characters a URL escapes escaped and the escapes of unreserved characters decoded in the path. A rule matches a
// subject in its own spelling or in this one, so a rule written before the subject had one spelling (a deny for
// `https://evil.example`, for `https://Intranet.example/*`, for `https://api.example:443/*`) still matches.
//
// The other spelling may match more than the rule as written meant: a `*` next to what it drops takes whatever
// stands there instead (`http://*:80` as `http://*/` takes `internal:8080`, `https://docs.example/*#top` as
// `https://docs.example/*` the whole site). That is what a deny or an ask rule should do (it then covers every
// spelling of what it names, and more), not an allow rule: one whose scheme or host holds a `*`, or whose `*` ends
// right before the fragment, has no other spelling and matches as written only.

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

const lowerAscii = (text: string): string => text.replace(/[A-Z]/g, (c) => c.toLowerCase());

/**
 * A label of a host pattern as `new URL()` writes it (punycode, in lower case; a label of digits is not read as an
 * IPv4 address, the `.x` after it sees to that), or in ASCII lower case when it holds a `*` or is no label.
 */
function labelOf(label: string): string {
  if (label === "" || label.includes("*")) return lowerAscii(label);
  try {
    const host = new URL(`http://${label}.x/`).hostname;
    return host.endsWith(".x") ? host.slice(0, -2) : lowerAscii(label);
  } catch {
    return lowerAscii(label);
  }
}

/** Whether the scheme pattern `scheme` (with a `*`) matches `name`. */
function schemeMatches(scheme: string, name: string): boolean {
  const body = scheme.split("*").map((part) => part.replace(/[.+]/g, "\\$&")).join(".*");
  return new RegExp(`^${body}$`).test(name);
}

/**
 * Scheme and authority of a deny or an ask rule's pattern whose scheme or host holds a `*`, spelled as far as the
 * `*` lets: the labels without one as `new URL()` writes them, the others in ASCII lower case, no trailing dot, an
 * IPv6 address without a `*` compressed, no default port (under a scheme with a `*`, `:443` is https's and `:80`
 * http's default: `*://evil.example:443` is spelled `https://evil.example`).
 */
function wildSpelling(scheme: string, authority: string): string {
  let host = authority;
  let port = "";
  const split = authority.startsWith("[") ? authority.indexOf("]") + 1 : authority.indexOf(":");
  if (split > 0) {
    host = authority.slice(0, split);
    port = authority.slice(split);
  }
  if (host.startsWith("[")) {
    if (host.includes("*") || !host.endsWith("]")) host = lowerAscii(host);
    else {
      try {
        host = new URL(`http://${host}/`).hostname;
      } catch {
        host = lowerAscii(host);
      }
    }
  } else {
    host = host.replace(/[.\u3002\uFF0E\uFF61]+$/, "").split(/[.\u3002\uFF0E\uFF61]/).map(labelOf).join(".");
  }
  if (scheme.includes("*")) {
    if (port === ":443" && schemeMatches(scheme, "https")) [scheme, port] = ["https", ""];
    else if (port === ":80" && schemeMatches(scheme, "http")) [scheme, port] = ["http", ""];
  } else if (port === DEFAULT_PORT[scheme]) port = "";
  return `${scheme}://${host}${port}`;
}

/**
 * `pattern` with its URL spelled as `web_fetch`'s subject is, or `undefined` when it names no http(s) URL or is
 * spelled so already. For an allow rule (`allow`) the other spelling must not match what the pattern did not mean:
 * a pattern with a user name (a subject has none), with a `*` in its scheme or host (`http://*:80`, also one that
 * `new URL()` decodes from `%2A`) or a `*` right before its fragment (`https://docs.example/*#top`) has none. A deny
 * or an ask rule's pattern drops the user name and is spelled as far as the `*` lets.
 */
export function urlSpelling(pattern: string, allow: boolean): string | undefined {
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
    if (allow) return undefined;
    authority = authority.slice(at + 1);
  }
  let origin: string;
  if (authority.includes("*") || name.includes("*")) {
    if (allow) return undefined;
    origin = wildSpelling(name, authority);
  } else {
    const host = hostOf(name, authority);
    // `%2A` in a host is a `*` to `new URL()`: a wildcard the allow rule did not have.
    if (host === undefined || (allow && host.includes("*"))) return undefined;
    origin = `${name}://${host}`;
  }
  const hash = rest.indexOf("#");
  if (hash !== -1) {
    if (allow && rest[hash - 1] === "*") return undefined;
    rest = rest.slice(0, hash);
  }
  const query = rest.indexOf("?");
  let path = query === -1 ? rest : rest.slice(0, query);
  const search = query === -1 ? "" : escaped(rest.slice(query), QUERY_ESCAPE);
  path = escaped(path.replaceAll("\\", "/"), PATH_ESCAPE).replace(/%[0-9a-f]{2}/gi, (escape) => {
    const char = String.fromCharCode(parseInt(escape.slice(1), 16));
    return /^[A-Za-z0-9._~-]$/.test(char) ? char : escape.toUpperCase();
  });
  const spelled = `${origin}${path === "" ? "/" : path}${search}`;
  return spelled === pattern ? undefined : spelled;
}

const SEPARATOR_ESCAPE = /%(?:2f|5c)/i;
const PATH_START = /^https?:\/\/[^/?#]*/i;

/** `path` (from `/`) of the http(s) origin `origin` with its `.` and `..` segments resolved, as a URL's. */
function resolved(origin: string, path: string): string | undefined {
  try {
    const url = new URL(origin);
    // The pathname setter parses the path as a URL's: `..` takes the segment before it, the root stays.
    url.pathname = path;
    return url.href;
  } catch {
    return undefined;
  }
}

/**
 * The other ways a server may read the path of an http(s) URL subject, for the deny and ask rules (see
 * `permissionFor`): with the `%2F` and `%5C` escapes read as `/` (as servers that decode them before routing do),
 * before and after its `.` and `..` segments are resolved, and with each run of `/` taken as one (as servers that merge
 * slashes do) before they are. The subject keeps the escapes and the empty segments (the URL fetched has them), so
 * without these a deny rule for `/private/*` would be passed by `/private%2Fkey`, `/public/..%2Fprivate/key` or
 * `/a//..%2Fprivate/key`. Empty when the subject is no http(s) URL or its path has neither an escaped separator nor an
 * empty segment; never the subject itself. A doubly escaped separator (`%252F`), a `;` parameter and a server that
 * reads paths without regard to case are not covered.
 */
export function serverSpellings(subject: string): string[] {
  const origin = PATH_START.exec(subject);
  if (origin === null) return [];
  const rest = subject.slice(origin[0].length);
  const end = rest.search(/[?#]/);
  const path = end === -1 ? rest : rest.slice(0, end);
  const tail = end === -1 ? "" : rest.slice(end);
  const escaped = SEPARATOR_ESCAPE.test(path);
  if (!escaped && !path.includes("//")) return [];
  const decoded = escaped ? path.replace(/%(?:2f|5c)/gi, "/") : path;
  const out = new Set<string>();
  if (escaped) out.add(`${origin[0]}${decoded}${tail}`);
  for (const form of [decoded, decoded.replace(/\/{2,}/g, "/")]) {
    const href = resolved(origin[0], form);
    if (href !== undefined) out.add(href + tail);
  }
  out.delete(subject);
  return [...out];
}
