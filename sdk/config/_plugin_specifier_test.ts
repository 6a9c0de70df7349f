import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fileUrlOf, resolvePluginSpecifier } from "./_plugin_specifier.ts";

describe("fileUrlOf()", () => {
  it("turns POSIX and Windows paths into file URLs", () => {
    assert.equal(fileUrlOf("/srv/me/a b#1.jsonc")?.href, "file:///srv/me/a%20b%231.jsonc");
    assert.equal(fileUrlOf("C:\\Data\\me\\base.jsonc")?.href, "file:///C:/Data/me/base.jsonc");
    assert.equal(fileUrlOf("\\\\server\\share\\base.jsonc")?.href, "file://server/share/base.jsonc");
  });

  it("keeps URLs, and needs cwd for relative paths", () => {
    assert.equal(fileUrlOf("https://example.com/base.jsonc")?.href, "https://example.com/base.jsonc");
    assert.equal(fileUrlOf("profiles/base.jsonc"), undefined);
    assert.equal(fileUrlOf("profiles/base.jsonc", "/srv")?.href, "file:///srv/profiles/base.jsonc");
    assert.equal(fileUrlOf("../base.jsonc", "/srv/app/")?.href, "file:///srv/base.jsonc");
  });
});

describe("resolvePluginSpecifier()", () => {
  it("resolves ./ and ../ against the base and keeps everything else", () => {
    const base = new URL("file:///srv/me/.dsh/profiles/web.jsonc");
    assert.equal(resolvePluginSpecifier("./audit.ts", base), "file:///srv/me/.dsh/profiles/audit.ts");
    assert.equal(resolvePluginSpecifier("../plugins/x.ts", base), "file:///srv/me/.dsh/plugins/x.ts");
    for (const kept of ["npm:dsh-audit", "jsr:@acme/p", "@acme/p", "/abs/p.ts", "https://example.com/p.ts"]) {
      assert.equal(resolvePluginSpecifier(kept, base), kept);
    }
  });
});
