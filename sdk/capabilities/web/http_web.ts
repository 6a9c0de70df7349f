/**
 * `httpWeb()`: the `ctx.web` provider over `fetch`, with host lists, size and
 * time caps, bounded redirects, and HTML turned into markdown.
 *
 * @module
 */

import { NodeHtmlMarkdown } from "node-html-markdown";
import { HarnessError } from "../../kernel/harness_error.ts";
import { headOf } from "../_cap_text.ts";
import { allowMatches, denyMatches, isIpEntry, isPrivateHost, refusal } from "./_host_policy.ts";
import type { WebPage, WebService } from "./web_service.ts";

/** Options of {@linkcode httpWeb}. */
export interface HttpWebOptions {
  /**
   * Hosts that may be fetched (`example.com`, `*.example.com`); absent allows
   * every public host. Local and private addresses (`localhost`, `127.0.0.1`,
   * `10.x`, `192.168.x`, `169.254.x`, `::1`, …, and IPv6 addresses carrying
   * one: `::ffff:10.0.0.1`, 6to4 `2002:a00:1::`, NAT64 `64:ff9b::a00:1`) are
   * refused unless an entry here names them. An IP address here allows that
   * address only, in any spelling of it (`::ffff:93.184.216.34` is
   * `93.184.216.34`): an IPv6 entry is never read as the IPv4 address it
   * carries, so `2002:5db8:d822::1` allows neither `93.184.216.34` nor the
   * rest of its 6to4 network, nor an IPv4 entry those IPv6 addresses.
   */
  readonly allowHosts?: readonly string[];
  /**
   * Hosts that may never be fetched; they win over `allowHosts`. An IP address matches in every spelling of it and
   * in every IPv6 address that carries it (`93.184.216.34` also as `[::ffff:93.184.216.34]`, `[::ffff:5db8:d822]`,
   * `0x5d.184.216.34`, translated `[::ffff:0:5db8:d822]`, NAT64 `[64:ff9b::5db8:d822]` or any address of its 6to4
   * network `[2002:5db8:d822::/48]`; an IPv6 entry that carries one denies that IPv4 address too), and a name that
   * resolves to a denied address is refused too: with an IP address here, every name is resolved with `lookup`
   * before it is fetched, allowed ones included (see {@linkcode httpWeb}).
   *
   * @default {[]}
   */
  readonly denyHosts?: readonly string[];
  /** The most bytes of a body read; the rest is dropped and the page marked truncated. @default {2000000} */
  readonly maxBytes?: number;
  /** The time budget of one fetch, redirects included, in milliseconds. @default {30000} */
  readonly timeoutMs?: number;
  /** The most redirects followed. @default {5} */
  readonly maxRedirects?: number;
  /** The fetch function. @default {globalThis.fetch} */
  readonly fetch?: typeof fetch;
  /** The User-Agent header. @default {"dsh-harness web_fetch"} */
  readonly userAgent?: string;
  /**
   * Resolves a host name to its addresses, to refuse a public name that
   * points at a private or a denied address. Not called for IP literals, nor
   * for hosts an `allowHosts` entry names unless `denyHosts` holds an IP
   * address. Its time counts in `timeoutMs`, and an abort stops the wait for
   * it; a failure is `WEB_FETCH_FAILED`.
   *
   * @default {node:dns lookup, every address}
   */
  readonly lookup?: (host: string) => Promise<readonly string[]>;
}

const dnsLookup = async (host: string): Promise<readonly string[]> => {
  const { lookup } = await import("node:dns/promises");
  return (await lookup(host, { all: true })).map((a) => a.address);
};

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** The caller's judgement of a redirect's target; one that throws refuses it. */
function permitted(permits: (url: string) => boolean, url: string): boolean {
  try {
    return permits(url) === true;
  } catch {
    return false;
  }
}

/**
 * A {@linkcode WebService} that fetches over HTTP(S). Every hop of a redirect
 * chain is checked against the host lists, so a public page cannot redirect
 * the fetch to a private address, and against the call's `permits` when it
 * gives one (`web_fetch` gives the permission rules' judgement). HTML is converted to markdown with
 * `node-html-markdown` (scripts and styles dropped); other text types are
 * returned as they are, binary types as a one-line note.
 *
 * A host name is also resolved (`lookup`) before it is fetched: one that no
 * allow entry names is refused when any of its addresses is private, and
 * when `denyHosts` holds an IP address, every name — allowed ones too — is
 * resolved and refused when any of its addresses is denied. A name an allow
 * entry names is resolved only in that case. The default `lookup` asks this
 * machine's resolver (`node:dns`, getaddrinfo), not the `fetch`: in a setup
 * that reaches the web only through a proxy, or with a custom `fetch` that
 * resolves elsewhere, a name the local DNS cannot resolve fails with
 * `WEB_FETCH_FAILED` ("Cannot resolve …") although the fetch could reach it,
 * and the lookup itself tells the local DNS which hosts are fetched; pass a
 * `lookup` that resolves where the fetch does, or leave IP addresses off
 * `denyHosts` and name the hosts in `allowHosts`. The fetch resolves the name
 * again, so a DNS answer that changes in between (rebinding) is not caught.
 *
 * @param options Host lists and caps.
 * @returns The service.
 *
 * @example A local page, allowed explicitly
 * ```ts
 * import { httpWeb } from "@dsh/harness/tools";
 * import assert from "node:assert/strict";
 *
 * const web = httpWeb({ allowHosts: ["example.test"], fetch: () => Promise.resolve(new Response("<h1>Hi</h1>", {
 *   headers: { "content-type": "text/html" },
 * })) });
 * const page = await web.fetch("http://example.test/");
 * assert.equal(page.text, "# Hi");
 * await assert.rejects(web.fetch("http://127.0.0.1/"), { code: "WEB_HOST_DENIED" });
 * ```
 */
export function httpWeb(options: HttpWebOptions = {}): WebService {
  const deny = options.denyHosts ?? [];
  const deniedIps = deny.filter(isIpEntry);
  const maxBytes = options.maxBytes ?? 2_000_000;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxRedirects = options.maxRedirects ?? 5;
  const userAgent = options.userAgent ?? "dsh-harness web_fetch";

  const check = (raw: string): URL => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new HarnessError("WEB_INVALID_URL", `Cannot fetch "${raw}": it is not a URL`, { details: { url: raw } });
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new HarnessError("WEB_INVALID_URL", `Cannot fetch "${raw}": only http and https are fetched`, {
        details: { url: raw },
      });
    }
    // Node's fetch refuses such a URL, Bun's and Deno's send Basic auth: none is fetched, the same on every runtime
    // (and the password is not repeated in the error or in a page's finalUrl).
    if (url.username !== "" || url.password !== "") {
      url.username = "";
      url.password = "";
      throw new HarnessError(
        "WEB_INVALID_URL",
        `Cannot fetch ${url.href} with a user name or password in the URL: credentials are not sent`,
        { details: { url: url.href } },
      );
    }
    const why = refusal(url.hostname, options.allowHosts, deny);
    if (why !== undefined) {
      throw new HarnessError("WEB_HOST_DENIED", `Cannot fetch from ${url.hostname}: ${why}`, {
        details: { url: url.href, host: url.hostname },
      });
    }
    return url;
  };

  const resolve = options.lookup ?? dnsLookup;
  // The name resolution is part of the fetch's time budget and stops on its signal (the lookup itself, getaddrinfo,
  // cannot be cancelled: it is no longer waited for).
  const checkAddresses = async (url: URL, signal: AbortSignal): Promise<void> => {
    const host = url.hostname.replace(/^\[|\]$/g, "");
    if (/^[\d.]+$/.test(host) || host.includes(":")) return; // an IP literal: already checked
    // A name allowed by name is not resolved, unless an address on the deny list might be what it resolves to.
    const allowed = options.allowHosts?.some((p) => allowMatches(p, host)) ?? false;
    if (allowed && deniedIps.length === 0) return;
    let addresses: readonly string[];
    try {
      addresses = await raced(resolve(host), signal);
    } catch (cause) {
      if (signal.aborted) throw cause;
      throw new HarnessError("WEB_FETCH_FAILED", `Cannot resolve ${host}`, { cause, details: { url: url.href, host } });
    }
    // Deny entries win over allow entries for the addresses a name resolves to too, in any spelling of them.
    const denied = addresses.find((a) => deniedIps.some((p) => denyMatches(p, a)));
    if (denied !== undefined) {
      throw new HarnessError(
        "WEB_HOST_DENIED",
        `Cannot fetch from ${host}: it resolves to ${denied}, which is denied`,
        {
          details: { url: url.href, host, address: denied },
        },
      );
    }
    const inner = allowed ? undefined : addresses.find((a) => isPrivateHost(a));
    if (inner !== undefined) {
      throw new HarnessError(
        "WEB_HOST_DENIED",
        `Cannot fetch from ${host}: it resolves to a private address (${inner})`,
        {
          details: { url: url.href, host, address: inner },
        },
      );
    }
  };

  return {
    async fetch(raw, fetchOptions = {}): Promise<WebPage> {
      let url = check(raw);
      const doFetch = options.fetch ?? globalThis.fetch;
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(), timeoutMs);
      const signals = [timeout.signal, ...(fetchOptions.signal ? [fetchOptions.signal] : [])];
      const signal = AbortSignal.any(signals);
      const fail = (cause: unknown): never => {
        if (fetchOptions.signal?.aborted) throw new HarnessError("WEB_ABORTED", `Fetching ${url.href} was aborted`);
        if (timeout.signal.aborted) {
          throw new HarnessError("WEB_TIMEOUT", `Fetching ${url.href} took longer than ${timeoutMs} ms`, {
            details: { url: url.href, timeoutMs },
          });
        }
        if (HarnessError.isInstance(cause)) throw cause;
        throw new HarnessError("WEB_FETCH_FAILED", `Cannot fetch ${url.href}: ${(cause as Error)?.message ?? cause}`, {
          cause,
          details: { url: url.href },
        });
      };
      try {
        await checkAddresses(url, signal);
        let response: Response;
        let redirects = 0;
        for (;;) {
          response = await doFetch(url.href, {
            redirect: "manual",
            signal,
            headers: { "user-agent": userAgent, accept: "text/html, text/*;q=0.9, */*;q=0.5" },
          }).catch(fail);
          const location = response.headers.get("location");
          if (!REDIRECTS.has(response.status) || location === null) break;
          await response.body?.cancel().catch(() => {});
          if (redirects === maxRedirects) {
            throw new HarnessError("WEB_REDIRECT_LIMIT", `Fetching ${raw} redirected more than ${maxRedirects} times`, {
              details: { url: raw, last: url.href },
            });
          }
          redirects++;
          url = check(new URL(location, url).href);
          if (fetchOptions.permits !== undefined && !permitted(fetchOptions.permits, url.href)) {
            throw new HarnessError(
              "WEB_REDIRECT_DENIED",
              `Fetching ${raw} redirected to ${url.href}, which may not be reached through a redirect here (a fetch of that URL itself is judged, or asked about, on its own)`,
              { details: { url: raw, redirect: url.href } },
            );
          }
          await checkAddresses(url, signal);
        }
        const { bytes, truncated, total } = await readCapped(response, maxBytes).catch(fail);
        const header = response.headers.get("content-type") ?? "application/octet-stream";
        const contentType = header.split(";")[0].trim().toLowerCase();
        const page = toText(bytes, contentType, truncated, charsetOf(header, bytes));
        return {
          url: raw,
          finalUrl: url.href,
          status: response.status,
          contentType,
          ...(page.title !== undefined ? { title: page.title } : {}),
          text: page.text,
          truncated,
          bytes: total,
          redirects,
        };
      } catch (error) {
        return fail(error);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** `promise`, or the signal's reason once it aborts, whichever comes first. */
function raced<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    Promise.resolve(promise).then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

async function readCapped(
  response: Response,
  maxBytes: number,
): Promise<{ bytes: Uint8Array; truncated: boolean; total: number }> {
  const out = new Uint8Array(Math.min(maxBytes, 65536));
  let buffer = out;
  let length = 0;
  let truncated = false;
  const reader = response.body?.getReader();
  if (reader === undefined) return { bytes: new Uint8Array(0), truncated: false, total: 0 };
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const room = maxBytes - length;
    const part = value.length <= room ? value : value.subarray(0, room);
    if (length + part.length > buffer.length) {
      const grown = new Uint8Array(Math.min(maxBytes, Math.max(buffer.length * 2, length + part.length)));
      grown.set(buffer.subarray(0, length));
      buffer = grown;
    }
    buffer.set(part, length);
    length += part.length;
    if (part.length < value.length) {
      truncated = true;
      await reader.cancel().catch(() => {});
      break;
    }
  }
  return { bytes: buffer.subarray(0, length), truncated, total: length };
}

const TEXT_TYPES = /^(text\/|application\/(json|xml|javascript|x-ndjson|ld\+json)|[^/]+\/[^;]*\+(json|xml))/;

/**
 * The decoder for a page: the charset its Content-Type names, else one an HTML
 * page declares in its first bytes (`<meta charset>`), else UTF-8. A label the
 * runtime cannot decode falls back to UTF-8.
 */
function charsetOf(header: string, bytes: Uint8Array): TextDecoder {
  let label = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(header)?.[1];
  if (label === undefined) {
    let head = "";
    for (const byte of bytes.subarray(0, 1024)) head += String.fromCharCode(byte); // the declaration is ASCII
    label = /<meta[^>]*charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1];
  }
  try {
    return new TextDecoder(label ?? "utf-8");
  } catch {
    return new TextDecoder();
  }
}

function toText(
  bytes: Uint8Array,
  contentType: string,
  truncated: boolean,
  decoder: TextDecoder = new TextDecoder(),
): { text: string; title?: string } {
  if (!TEXT_TYPES.test(contentType)) return { text: `(binary content of type ${contentType}, ${bytes.length} bytes)` };
  const text = decoder.decode(bytes, { stream: truncated });
  if (contentType !== "text/html" && contentType !== "application/xhtml+xml") return { text };
  // Every step is linear in the page: a page is the other side's input (a regex that backtracks, or a converter that
  // is superlinear in nesting, would block the process beyond any timeout).
  const lower = text.toLowerCase();
  const title = titleOf(text, lower);
  const body = withoutElements(text, lower);
  if (nestingDepth(body) > MAX_CONVERTED_DEPTH) {
    const plain = textOnly(body);
    const note = `(the page nests elements deeper than ${MAX_CONVERTED_DEPTH} levels: its text only)`;
    return title ? { text: `${note}\n\n${plain}`, title } : { text: `${note}\n\n${plain}` };
  }
  const markdown = NodeHtmlMarkdown.translate(body).trim();
  return title ? { text: markdown, title } : { text: markdown };
}

/** How deep a page may nest elements to be converted to markdown (the converter's time grows with the cube of it). */
const MAX_CONVERTED_DEPTH = 256;

const VOID_ELEMENTS = new Set([
  "area",
  "base",
  "br",
  "col",
  "embed",
  "hr",
  "img",
  "input",
  "link",
  "meta",
  "param",
  "source",
  "track",
  "wbr",
]);

/** The text of the first `<title>`, unescaped and trimmed; `undefined` without one. */
function titleOf(html: string, lower: string): string | undefined {
  const open = lower.indexOf("<title");
  if (open < 0) return undefined;
  const start = lower.indexOf(">", open);
  const end = start < 0 ? -1 : lower.indexOf("</title", start);
  if (end < 0) return undefined;
  const title = textOnly(headOf(html.slice(start + 1, end), 2000)).trim();
  return title === "" ? undefined : title;
}

/** The page without its `head`, `title`, `script`, `style`, `noscript` and `template` elements (an unclosed one runs to the end). */
function withoutElements(html: string, lower: string): string {
  const starts = /<(script|style|noscript|template|head|title)\b/g;
  let out = "";
  let from = 0;
  for (let match = starts.exec(lower); match !== null; match = starts.exec(lower)) {
    if (match.index < from) continue;
    out += html.slice(from, match.index);
    const close = lower.indexOf(`</${match[1]}`, match.index);
    if (close < 0) return out;
    const end = lower.indexOf(">", close);
    from = end < 0 ? html.length : end + 1;
    starts.lastIndex = from;
  }
  return out + html.slice(from);
}

/** The deepest nesting of elements, counted from start and end tags in one pass. */
function nestingDepth(html: string): number {
  const tags = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)[^<>]*?(\/?)>/g;
  let depth = 0;
  let deepest = 0;
  for (let match = tags.exec(html); match !== null; match = tags.exec(html)) {
    if (match[1] === "/") depth = Math.max(0, depth - 1);
    else if (match[3] !== "/" && !VOID_ELEMENTS.has(match[2].toLowerCase())) deepest = Math.max(deepest, ++depth);
  }
  return deepest;
}

/** The text of some HTML: tags dropped, the common entities decoded, blank space folded (all in linear time). */
function textOnly(html: string): string {
  const entities: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", nbsp: " " };
  const text = html.replace(/<[^<>]*>/g, " ").replace(/&(amp|lt|gt|quot|#39|nbsp);/g, (_, e: string) => entities[e]);
  const lines: string[] = [];
  for (const line of text.split("\n")) {
    const folded = line.replace(/\s+/g, " ").trim();
    if (folded !== "" || (lines.length > 0 && lines[lines.length - 1] !== "")) lines.push(folded);
  }
  return lines.join("\n").trim();
}
