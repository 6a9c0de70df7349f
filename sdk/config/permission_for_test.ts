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

  it("matches a deny or an ask rule against a URL's path with %2F and %5C read as /, an allow rule as written", () => {
    const rules: PermissionRule[] = [
      { tool: "web_fetch", action: "allow" },
      { tool: "web_fetch(https://site.example/private/*)", action: "deny" },
      { tool: "web_fetch(https://site.example/asked/*)", action: "ask" },
      { tool: "web_fetch(https://site.example/files/a%2Fb)", action: "allow" },
    ];
    const verdict = (subject: string) => permissionFor(rules, "web_fetch", subject)?.action;
    // What a server that decodes the escapes before routing serves from /private/ or /asked/.
    for (
      const subject of [
        "https://site.example/private%2Fkey",
        "https://site.example/private%5Ckey",
        "https://site.example/private%2fkey",
        "https://site.example/public/..%2Fprivate/key",
        "https://site.example/public%2F..%2F..%2Fprivate%2Fkey",
        "https://site.example/%2E%2E%2Fprivate/key",
      ]
    ) assert.equal(verdict(subject), "deny", subject);
    assert.equal(verdict("https://site.example/asked%2Fx"), "ask");
    // An allow rule is not widened to the decoded spelling, and keeps matching what it names as written (the last
    // matching rule wins, so it stands after the deny it makes an exception to).
    assert.equal(verdict("https://site.example/files/a%2Fb"), "allow");
    assert.equal(
      permissionFor(
        [{ tool: "web_fetch(https://site.example/a/b)", action: "allow" }],
        "web_fetch",
        "https://site.example/a%2Fb",
      ),
      undefined,
    );
    // Left alone: an escape in the query, a doubly escaped one (`%25` is a `%`), a subject that is not an http(s) URL.
    assert.equal(verdict("https://site.example/ok?next=%2Fprivate%2Fkey"), "allow");
    assert.equal(verdict("https://site.example/private%252Fkey"), "allow");
    assert.equal(permissionFor([{ tool: "bash(cat a/*)", action: "deny" }], "bash", "cat a%2Fb"), undefined);
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
