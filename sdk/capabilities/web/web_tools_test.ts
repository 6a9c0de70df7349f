import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HarnessError } from "../../kernel/harness_error.ts";
import { toolCaller } from "../_test_tool_caller.ts";
import { permissionFor } from "../../config/permission_for.ts";
import { webFetchTool, webSearchTool } from "./web_tools.ts";
import type { WebPage, WebSearchResult, WebSearchService, WebService } from "./web_service.ts";

/** A search double: answers from a table, records the queries, fails on "fail". */
function tableSearch(table: Record<string, WebSearchResult[]>): WebSearchService & { queries: string[] } {
  const queries: string[] = [];
  return {
    queries,
    search: (query, options = {}) => {
      queries.push(query);
      if (query === "fail") return Promise.reject(new HarnessError("WEB_SEARCH_FAILED", "The search provider failed"));
      return Promise.resolve((table[query] ?? []).slice(0, options.limit ?? 10));
    },
  };
}

/** A fetched page: a 200 text page of `https://a.test/x`, 20 bytes, but for what `fields` say. */
function pageOf(fields: Partial<WebPage>): WebPage {
  return {
    url: "https://a.test/x",
    finalUrl: "https://a.test/x",
    status: 200,
    contentType: "text/plain",
    text: "",
    truncated: false,
    bytes: 20,
    redirects: 0,
    ...fields,
  };
}

function runner(...tools: ReturnType<typeof webFetchTool>[]) {
  const call = toolCaller(tools);
  return async (name: string, args: object) => {
    const { text, code } = await call(name, args);
    return { text, code };
  };
}

describe("web tools", () => {
  it("web_search renders the provider's results and passes its failures on", async () => {
    const search = tableSearch({
      deno: [
        { title: "Deno", url: "https://deno.com", snippet: "A runtime" },
        { title: "Deno std", url: "https://jsr.io/@std", snippet: "The standard library" },
      ],
    });
    const call = runner(webSearchTool(search));
    assert.deepEqual(await call("web_search", { query: "deno", limit: 1 }), {
      text: "1. Deno\n   https://deno.com\n   A runtime",
      code: undefined,
    });
    assert.equal((await call("web_search", { query: "nothing" })).text, 'No results for "nothing"');
    assert.equal((await call("web_search", { query: "fail" })).code, "WEB_SEARCH_FAILED");
    assert.deepEqual(search.queries, ["deno", "nothing", "fail"]);
  });

  it("web_fetch renders title, URL, status and the truncation note; reads run without asking", async () => {
    const page = pageOf({
      finalUrl: "https://a.test/y",
      status: 404,
      contentType: "text/html",
      title: "Gone",
      text: "Not here",
      truncated: true,
      bytes: 10,
      redirects: 1,
    });
    const web: WebService = { fetch: () => Promise.resolve(page) };
    const call = runner(webFetchTool(web));
    assert.deepEqual(await call("web_fetch", { url: "https://a.test/x" }), {
      text: "Title: Gone\nURL: https://a.test/y\nHTTP status: 404\n\nNot here\n[the page was cut at 10 bytes]",
      code: undefined,
    });
    const failing: WebService = {
      fetch: () => Promise.reject(new HarnessError("WEB_HOST_DENIED", "Cannot fetch from 10.0.0.1")),
    };
    assert.equal(
      (await runner(webFetchTool(failing))("web_fetch", { url: "http://10.0.0.1" })).code,
      "WEB_HOST_DENIED",
    );
  });

  it("web_fetch and web_search cut their output between characters, never inside a surrogate pair", async () => {
    const page = pageOf({ url: "https://a.test/", finalUrl: "https://a.test/", text: `${"a".repeat(9)}😀 and more` });
    const call = runner(
      webFetchTool({ fetch: () => Promise.resolve(page) }, { maxOutputChars: 10 }),
      webSearchTool(tableSearch({ q: [{ title: "T😀", url: "u", snippet: "s" }] }), { maxOutputChars: 5 }),
    );
    assert.equal(
      (await call("web_fetch", { url: "https://a.test/" })).text,
      `URL: https://a.test/\n\n${"a".repeat(9)}\n[output truncated: showing 9 of 20 characters]`,
    );
    // "1. T" and the emoji's first half would be the first 5 units.
    assert.equal(
      (await call("web_search", { query: "q" })).text,
      "1. T\n[output truncated: showing 4 of 16 characters]",
    );
  });

  it("web_fetch's permission subject is the URL as it is fetched, so every spelling of it meets the same rules", () => {
    const tool = webFetchTool({ fetch: () => Promise.reject(new Error("not called")) });
    const subject = (url: string) => tool.permissionSubject!({ url } as never);
    const rules = [
      { tool: "web_fetch", action: "allow" as const },
      { tool: "web_fetch(https://internal.example.com/*)", action: "deny" as const },
      { tool: "web_fetch(http://*)", action: "ask" as const },
    ];
    const internal = [
      "https://internal.example.com/admin",
      "HTTPS://internal.example.com/admin",
      "https://INTERNAL.example.com/admin",
      "https://internal.example.com./admin",
      "https://internal.example.com:443/admin",
      "https://x:y@internal.example.com/admin",
      "https:internal.example.com/admin",
      "https:\\\\internal.example.com\\admin",
      " https://internal.example.com/admin",
      "https://internal.example.com/%61dmin#top",
      "https://internal.example.com/a/%2e%2E/admin",
      "https://internal%2Eexample.com/admin",
    ];
    for (const url of internal) {
      assert.equal(subject(url), "https://internal.example.com/admin", url);
      assert.deepEqual(permissionFor(rules, "web_fetch", subject(url)), { action: "deny" }, url);
    }
    for (const url of ["http://plain.example.com/", "HTTP://plain.example.com/", "Http://plain.example.com:80/"]) {
      assert.equal(subject(url), "http://plain.example.com/", url);
      assert.deepEqual(permissionFor(rules, "web_fetch", subject(url)), { action: "ask" }, url);
    }
    // An escape of a reserved character stays one (in upper case); a deny or an ask rule also reads %2F as a path
    // separator (permissionFor), as a server that decodes it does.
    assert.equal(subject("https://a.test/x%2fy"), "https://a.test/x%2Fy");
    assert.deepEqual(permissionFor(rules, "web_fetch", subject("https://internal.example.com/x/..%2fadmin")), {
      action: "deny",
    });
    // Not http or https: no subject (only rules without a pattern decide it; httpWeb refuses it).
    for (const url of ["not a url", "javascript:alert(1)", "file:///etc/passwd"]) assert.equal(subject(url), undefined);
  });

  it("web_fetch's rules match in any spelling of their URL: an origin alone, a capital, a default port", () => {
    const tool = webFetchTool({ fetch: () => Promise.reject(new Error("not called")) });
    const subject = (url: string) => tool.permissionSubject!({ url } as never);
    // Rules written for the URL as the model spelled it (the subject was that, once) still deny every spelling.
    const rules = [
      { tool: "web_fetch", action: "allow" as const },
      { tool: "web_fetch(https://evil.example)", action: "deny" as const },
      { tool: "web_fetch(https://Intranet.example/*)", action: "deny" as const },
      { tool: "web_fetch(https://api.example:443/*)", action: "deny" as const },
      { tool: "web_fetch(HTTP://*.Corp.example/Wiki/*)", action: "ask" as const },
      { tool: "web_fetch(https://bücher.example/ü*)", action: "deny" as const },
      { tool: "web_fetch(https://admin@vault.example/*)", action: "deny" as const },
    ];
    const denied = [
      "https://evil.example",
      "https://EVIL.example/",
      "https://Intranet.example/payroll",
      "https://intranet.example/payroll",
      "https://api.example:443/keys",
      "https://api.example/keys",
      "https://BÜCHER.example/über",
      "https://vault.example/x",
      "https://admin@vault.example/x",
    ];
    for (const url of denied) {
      assert.deepEqual(permissionFor(rules, "web_fetch", subject(url)), { action: "deny" }, url);
    }
    assert.deepEqual(permissionFor(rules, "web_fetch", subject("http://docs.corp.example/Wiki/a")), { action: "ask" });
    for (
      const url of ["https://evil.example/page", "https://api.example:8443/keys", "http://docs.corp.example/wiki/a"]
    ) {
      assert.deepEqual(permissionFor(rules, "web_fetch", subject(url)), { action: "allow" }, url);
    }
  });
});
