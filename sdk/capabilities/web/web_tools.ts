/**
 * The web tools: `web_fetch` over `ctx.web` and `web_search` over `ctx.webSearch`.
 *
 * @module
 */

import { z } from "zod";
import { defineTool } from "../../tools/define_tool.ts";
import type { AnyToolDefinition } from "../../tools/tool_definition.ts";
import { capText, serviceOf, type ServiceSource } from "../_cap_text.ts";
import type { WebSearchService, WebService } from "./web_service.ts";

/** Options of {@linkcode webFetchTool} and {@linkcode webSearchTool}. */
export interface WebToolOptions {
  /** The most characters of a result the model sees. @default {30000} */
  readonly maxOutputChars?: number;
}

/**
 * The `web_fetch` tool: fetch a URL and read it as markdown. It reads
 * (`access: "read"`, runs in parallel) and names the URL as its permission
 * subject, so rules such as `web_fetch(https://docs.example.com/*)` apply;
 * the provider's host lists apply in any case. The subject is the URL as it
 * is fetched, in one spelling: parsed as `new URL()` does (scheme and host in
 * lower case, the default port dropped, `\` read as `/`, `.` and `..`
 * resolved), without a user name and password, fragment or the host's
 * trailing dot, and with the escapes of unreserved characters in the path
 * decoded (`%61` is `a`); a rule's URL is matched in that spelling too
 * (`web_fetch(https://Evil.example)` denies `https://evil.example/`; an allow
 * rule only where no `*` could take what the spelling drops, see
 * `permissionFor`). A `%2F` or `%5C` in the path, and an empty segment,
 * stay as written, and the rules also judge the URL as a server that
 * decodes them or merges slashes reads it: a deny or an ask there stands
 * (`/private%2Fkey` is `/private/key` to a deny rule for `/private/*`, see
 * `permissionFor`). A URL that is not http or https has none, so only
 * rules without a pattern decide it (and `httpWeb()` refuses it). Each
 * redirect the fetch follows is judged by the same rules in the same
 * spelling (the call's `permits`, with the host lists of `httpWeb()`): a
 * target that a `deny` or `ask` rule matches is refused, `WEB_REDIRECT_DENIED`
 * (a hop cannot be asked about mid-call); one no rule matches is followed.
 *
 * @param web The web service, or a function returning it at call time.
 * @param options The output cap.
 * @returns The tool definition.
 *
 * @example
 * ```ts
 * import { httpWeb, webFetchTool } from "@dsh/harness/tools";
 * import assert from "node:assert/strict";
 *
 * const tool = webFetchTool(httpWeb());
 * assert.equal(tool.name, "web_fetch");
 * assert.equal(tool.access, "read");
 * ```
 */
export function webFetchTool(web: ServiceSource<WebService>, options: WebToolOptions = {}): AnyToolDefinition {
  const maxChars = options.maxOutputChars ?? 30_000;
  return defineTool({
    name: "web_fetch",
    description: "Fetch a web page (http or https) and read it as markdown.",
    parameters: z.object({ url: z.string().min(1).describe("The URL to fetch") }),
    output: {
      schema: z.object({
        url: z.string(),
        finalUrl: z.string(),
        status: z.number(),
        contentType: z.string(),
        title: z.string().optional(),
        text: z.string(),
        truncated: z.boolean(),
        bytes: z.number(),
        redirects: z.number(),
      }),
      render: (_args, v) => {
        const head = [
          ...(v.title !== undefined ? [`Title: ${v.title}`] : []),
          `URL: ${v.finalUrl}`,
          ...(v.status >= 400 ? [`HTTP status: ${v.status}`] : []),
        ].join("\n");
        const note = v.truncated ? `\n[the page was cut at ${v.bytes} bytes]` : "";
        return `${head}\n\n${capText(v.text === "" ? "(no content)" : v.text, maxChars)}${note}`;
      },
    },
    access: "read",
    isConcurrencySafe: () => true,
    permissionSubject: (args) => fetchSubject(args.url),
    execute: async (args, exec) => {
      const permits = exec.permits;
      // Each redirect's target, in the subject's spelling, judged as a call naming it would be.
      const options = permits === undefined ? { signal: exec.signal } : {
        signal: exec.signal,
        permits: (url: string) => {
          const subject = fetchSubject(url);
          return subject !== undefined && permits(subject);
        },
      };
      return { ...await serviceOf(web).fetch(args.url, options) };
    },
  }) as AnyToolDefinition;
}

/** The URL as it is fetched, in one spelling, for the permission rules; `undefined` when it is not http or https. */
function fetchSubject(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  url.username = "";
  url.password = "";
  url.hash = "";
  if (url.hostname.endsWith(".")) url.hostname = url.hostname.replace(/\.+$/, "");
  url.pathname = url.pathname.replace(/%[0-9a-f]{2}/gi, (escape) => {
    const char = String.fromCharCode(parseInt(escape.slice(1), 16));
    return /^[A-Za-z0-9._~-]$/.test(char) ? char : escape.toUpperCase();
  });
  return url.href;
}

/**
 * The `web_search` tool over a search provider you supply (none ships: each
 * needs a key). It reads and runs in parallel; its permission subject is the
 * query.
 *
 * @param search The search service, or a function returning it at call time.
 * @param options The output cap.
 * @returns The tool definition.
 *
 * @example A provider written for a test
 * ```ts
 * import { webSearchTool, type WebSearchService } from "@dsh/harness/tools";
 * import assert from "node:assert/strict";
 *
 * const search: WebSearchService = {
 *   search: (query) => Promise.resolve([{ title: "Deno", url: "https://deno.com", snippet: `about ${query}` }]),
 * };
 * const tool = webSearchTool(search);
 * const value = await tool.execute({ query: "deno" }, { signal: new AbortController().signal } as never);
 * assert.equal(tool.output.render({ query: "deno" }, value), "1. Deno\n   https://deno.com\n   about deno");
 * ```
 */
export function webSearchTool(
  search: ServiceSource<WebSearchService>,
  options: WebToolOptions = {},
): AnyToolDefinition {
  const maxChars = options.maxOutputChars ?? 30_000;
  return defineTool({
    name: "web_search",
    description: "Search the web. Returns titles, URLs and snippets; read a page with web_fetch.",
    parameters: z.object({
      query: z.string().min(1),
      limit: z.number().int().min(1).max(50).optional().describe("How many results; default 10"),
    }),
    output: {
      schema: z.object({
        results: z.array(z.object({ title: z.string(), url: z.string(), snippet: z.string() })),
      }),
      render: (args, v) =>
        v.results.length === 0
          ? `No results for "${args.query}"`
          : capText(v.results.map((r, i) => `${i + 1}. ${r.title}\n   ${r.url}\n   ${r.snippet}`).join("\n"), maxChars),
    },
    access: "read",
    isConcurrencySafe: () => true,
    permissionSubject: (args) => args.query,
    execute: async (args, exec) => {
      const limit = args.limit ?? 10;
      const results = await serviceOf(search).search(args.query, { limit, signal: exec.signal });
      return { results: results.slice(0, limit).map((r) => ({ title: r.title, url: r.url, snippet: r.snippet })) };
    },
  }) as AnyToolDefinition;
}
