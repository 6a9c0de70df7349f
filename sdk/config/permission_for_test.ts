import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { permissionFor, type PermissionRule } from "./mod.ts";

describe("permissionFor()", () => {
  it("matches exact names and * wildcards against the whole name", () => {
    const rules: PermissionRule[] = [{ tool: "fs_*", action: "ask" }, { tool: "*_delete", action: "deny" }];
    assert.deepEqual(permissionFor(rules, "fs_read"), { action: "ask" });
    assert.deepEqual(permissionFor(rules, "fs_"), { action: "ask" }, "* matches an empty run");
    assert.deepEqual(permissionFor(rules, "db_delete"), { action: "deny" });
    assert.equal(permissionFor(rules, "my_fs_read"), undefined, "patterns are anchored");
    assert.equal(permissionFor(rules, "FS_READ"), undefined, "matching is case-sensitive");
    assert.deepEqual(permissionFor([{ tool: "a*b*c", action: "allow" }], "aXXbYc"), { action: "allow" });
    assert.deepEqual(permissionFor([{ tool: "*", action: "allow" }], "anything at all"), { action: "allow" });
  });

  it("lets the last matching rule win", () => {
    const rules: PermissionRule[] = [
      { tool: "*", action: "allow" },
      { tool: "fs_*", action: "ask", reason: "Files are sensitive" },
      { tool: "fs_read", action: "allow" },
      { tool: "rm", action: "deny", reason: "Never" },
    ];
    assert.deepEqual(permissionFor(rules, "add"), { action: "allow" });
    assert.deepEqual(permissionFor(rules, "fs_write"), { action: "ask", reason: "Files are sensitive" });
    assert.deepEqual(permissionFor(rules, "fs_read"), { action: "allow" });
    assert.deepEqual(permissionFor(rules, "rm"), { action: "deny", reason: "Never" });
    assert.deepEqual(permissionFor([...rules, { tool: "*", action: "deny" }], "fs_read"), { action: "deny" });
  });

  it("treats every character but * literally", () => {
    const rules: PermissionRule[] = [{ tool: "a.b", action: "deny" }, { tool: "x+(y)?", action: "ask" }];
    assert.deepEqual(permissionFor(rules, "a.b"), { action: "deny" });
    assert.equal(permissionFor(rules, "aXb"), undefined);
    assert.deepEqual(permissionFor(rules, "x+(y)?"), { action: "ask" });
    assert.equal(permissionFor(rules, "xx(y)"), undefined);
  });

  it("gives undefined when no rule matches", () => {
    assert.equal(permissionFor([], "add"), undefined);
  });

  it("matches tool(pattern) rules against the call's subject only", () => {
    const rules: PermissionRule[] = [
      { tool: "bash", action: "ask" },
      { tool: "bash(git *)", action: "allow" },
      { tool: "bash(git push*)", action: "deny", reason: "no pushing" },
      { tool: "*_file(secrets/*)", action: "deny" },
    ];
    assert.deepEqual(permissionFor(rules, "bash", "git status"), { action: "allow" });
    assert.deepEqual(permissionFor(rules, "bash", "git push origin"), { action: "deny", reason: "no pushing" });
    assert.deepEqual(permissionFor(rules, "bash", "ls"), { action: "ask" });
    assert.deepEqual(permissionFor(rules, "bash"), { action: "ask" });
    assert.deepEqual(permissionFor(rules, "write_file", "secrets/key"), { action: "deny" });
    assert.equal(permissionFor(rules, "write_file", "src/a.ts"), undefined);
    assert.equal(permissionFor(rules, "write_file"), undefined);
    assert.equal(permissionFor(rules, "bashful", "git status"), undefined);
  });

  it("matches a URL pattern in the spelling of a normalised URL too; an allow rule is not widened past its user", () => {
    const rules: PermissionRule[] = [
      { tool: "fetch(https://Docs.example:443)", action: "allow" },
      { tool: "fetch(https://me@docs.example/private/*)", action: "allow" },
      { tool: "fetch(https://root@docs.example/admin/*)", action: "deny" },
    ];
    assert.deepEqual(permissionFor(rules, "fetch", "https://docs.example/"), { action: "allow" });
    assert.deepEqual(permissionFor(rules, "fetch", "https://Docs.example:443"), { action: "allow" }, "as written");
    assert.equal(permissionFor(rules, "fetch", "https://docs.example/private/x"), undefined);
    assert.deepEqual(permissionFor(rules, "fetch", "https://me@docs.example/private/x"), { action: "allow" });
    assert.deepEqual(permissionFor(rules, "fetch", "https://docs.example/admin/x"), { action: "deny" });
    // Not a URL: matched as written only.
    assert.equal(permissionFor([{ tool: "bash(Git *)", action: "deny" }], "bash", "git status"), undefined);
  });

  it("judges a URL also as a server that decodes %2F and %5C or merges slashes reads it: its deny or ask stands", () => {
    const site = "https://site.example";
    const rules: PermissionRule[] = [
      { tool: "web_fetch", action: "allow" },
      { tool: `web_fetch(${site}/private/*)`, action: "deny" },
      { tool: `web_fetch(${site}/asked/*)`, action: "ask" },
      // Exceptions after the deny, as the rules advise: they must not open a way into it.
      { tool: `web_fetch(${site}/public/*)`, action: "allow" },
      { tool: `web_fetch(${site}/private/docs/*)`, action: "allow" },
    ];
    const verdict = (path: string) => permissionFor(rules, "web_fetch", `${site}${path}`)?.action;
    // What such a server serves from /private/ (the subject keeps the escapes and empty segments as written).
    for (
      const path of [
        "/private%2Fkey",
        "/private%5Ckey",
        "/private%2fkey",
        "/public/..%2Fprivate/key",
        "/public%2F..%2F..%2Fprivate%2Fkey",
        "/private/docs/..%2Fkey",
        "/a//..%2Fprivate/key",
        "/a/%2F..%2Fprivate/key",
        "/%2Fprivate/key",
        "//private/key",
        "/private%2F..%2Fpublic",
      ]
    ) assert.equal(verdict(path), "deny", path);
    assert.equal(verdict("/asked%2Fx"), "ask");
    assert.equal(verdict("/public/..%2Fasked/x"), "ask");
    // What stays where it is: the allows whose other readings no deny covers, an escape in the query, a doubly
    // escaped one (`%25` is a `%`: not covered), and a subject that is not an http(s) URL.
    for (const path of ["/public/a%2Fb", "/private/docs/a%2Fb", "/ok?next=%2Fprivate%2Fkey", "/private%252Fkey"]) {
      assert.equal(verdict(path), "allow", path);
    }
    assert.equal(permissionFor([{ tool: "bash(cat a/*)", action: "deny" }], "bash", "cat a%2Fb"), undefined);
    // An allow rule is not widened to another reading.
    const allowOnly: PermissionRule[] = [{ tool: `web_fetch(${site}/a/b)`, action: "allow" }];
    assert.equal(permissionFor(allowOnly, "web_fetch", `${site}/a%2Fb`), undefined);
    // A deny the URL as written met is never turned into an ask by another reading.
    const written: PermissionRule[] = [
      { tool: "web_fetch(*%2F*)", action: "deny", reason: "no escaped slashes" },
      { tool: `web_fetch(${site}/private/*)`, action: "ask" },
    ];
    assert.deepEqual(permissionFor(written, "web_fetch", `${site}/private%2Fkey`), {
      action: "deny",
      reason: "no escaped slashes",
    });
  });

  it("does not widen an allow rule whose * stands next to what the URL spelling drops; a deny or an ask rule is", () => {
    const verdict = (tool: string, action: "allow" | "deny", subject: string) =>
      permissionFor([{ tool, action }], "web_fetch", subject)?.action;
    const cases: [string, string][] = [
      // A default port dropped next to a `*` in the host: the `*` would take any port.
      ["web_fetch(http://*:80)", "http://internal:8080/"],
      ["web_fetch(http://*:80)", "http://evil.example/"],
      ["web_fetch(https://*:443/api/*)", "https://internal:8443/api/x"],
      // A fragment dropped after a `*`: the `*` would take every page.
      ["web_fetch(https://docs.example/*#frag)", "https://docs.example/secret"],
      // `%2A` is a `*` in a host to `new URL()`.
      ["web_fetch(https://%2A.example/*)", "https://evil.example/x"],
    ];
    for (const [tool, subject] of cases) {
      assert.equal(verdict(tool, "allow", subject), undefined, `${tool} allows ${subject}`);
      assert.equal(verdict(tool, "deny", subject), "deny", `${tool} does not deny ${subject}`);
    }
    // As written, they still match.
    assert.equal(verdict("web_fetch(http://*:80)", "allow", "http://internal:80"), "allow");
    assert.equal(verdict("web_fetch(https://docs.example/*#frag)", "allow", "https://docs.example/a#frag"), "allow");
    // An allow rule with no `*` next to what is dropped is spelled as a subject is.
    assert.equal(verdict("web_fetch(https://Docs.example:443/*)", "allow", "https://docs.example/a"), "allow");
    assert.equal(verdict("web_fetch(https://docs.example/a#frag)", "allow", "https://docs.example/a"), "allow");
  });

  it("spells a deny rule's host with a * as far as the * lets: punycode, IPv6, a default port under a * scheme", () => {
    const subject = (url: string) => new URL(url).href;
    const cases: [string, string][] = [
      ["web_fetch(https://*.bücher.example/*)", "https://www.bücher.example/x"],
      ["web_fetch(https://*.EVİL.example/*)", "https://a.EVİL.example/x"],
      ["web_fetch(https://*.Corp.example./*)", "https://a.corp.example/x"],
      ["web_fetch(https://*.１.example/*)", "https://a.1.example/x"],
      ["web_fetch(*://evil.example:443/*)", "https://evil.example/x"],
      ["web_fetch(h*://evil.example:80/*)", "http://evil.example/x"],
      ["web_fetch(http://[0:0::1]:*/*)", "http://[::1]:8080/x"],
      ["web_fetch(https://*:443/*)", "https://a.example/x"],
    ];
    for (const [tool, url] of cases) {
      assert.deepEqual(permissionFor([{ tool, action: "deny" }], "web_fetch", subject(url)), { action: "deny" }, tool);
      assert.deepEqual(permissionFor([{ tool, action: "ask" }], "web_fetch", subject(url)), { action: "ask" }, tool);
    }
    // A port of another scheme's default stays: http on 443 is not https.
    assert.equal(
      permissionFor(
        [{ tool: "web_fetch(*://evil.example:443/*)", action: "deny" }],
        "web_fetch",
        "http://evil.example/x",
      ),
      undefined,
    );
    assert.deepEqual(
      permissionFor(
        [{ tool: "web_fetch(*://evil.example:443/*)", action: "deny" }],
        "web_fetch",
        "http://evil.example:443/x",
      ),
      { action: "deny" },
    );
  });
});
