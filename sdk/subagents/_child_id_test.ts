import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { validateSessionId } from "../persistence/_header.ts";
import { childIdBase } from "./_child_id.ts";

const uuid = "5d298310-1cc9-44df-baef-bb0991c66f30";
const callId = (n: number) => "toolu_01" + String(n).repeat(22);

describe("childIdBase()", () => {
  it("is <parent>.<callId> when that is a valid session id", () => {
    assert.equal(childIdBase("parent", "call_0"), "parent.call_0");
    assert.equal(childIdBase(uuid, callId(1)), `${uuid}.${callId(1)}`);
    assert.equal(childIdBase("parent", "ümlaut"), "parent.ümlaut");
  });

  it("names a call id with a path separator, a control character or too many characters by a stable hash", () => {
    const odd = ["../../escape", "a/b", "a\\b", "x".repeat(300), "tab\tnl\n", "\u007f"];
    const ids = odd.map((id) => childIdBase("parent", id));
    for (const id of ids) {
      assert.match(id, /^parent\.[A-Za-z0-9_-]{0,16}-[0-9a-f]{12}$/);
      validateSessionId(`${id}.9999999`);
    }
    assert.equal(ids[1].startsWith("parent.a_b-"), true);
    assert.equal(new Set(ids).size, odd.length);
    assert.deepEqual(odd.map((id) => childIdBase("parent", id)), ids, "the same ids again");
  });

  it("cuts a parent id that leaves no room, keeping its start and a hash of the whole", () => {
    let parent = uuid;
    const seen = new Set<string>();
    for (let depth = 1; depth <= 8; depth++) {
      const child = childIdBase(parent, callId(depth));
      validateSessionId(`${child}.9999999`);
      assert.equal(child.startsWith(uuid.slice(0, 8)), true, child);
      assert.equal(childIdBase(parent, callId(depth)), child);
      seen.add(child);
      parent = child;
    }
    assert.equal(seen.size, 8);
    const long = "p".repeat(128);
    const a = childIdBase(long, "c1");
    const b = childIdBase("p".repeat(127) + "q", "c1");
    assert.notEqual(a, b, "two long parents that share a prefix");
    assert.match(a, /^p+~[0-9a-f]{12}\.c1-[0-9a-f]{12}$/);
  });

  it("keeps the escaped name within what a file system takes (capitals and non-ASCII count more)", () => {
    for (const parent of ["Ü".repeat(60), "A".repeat(100)]) {
      const child = childIdBase(parent, "C".repeat(40));
      validateSessionId(`${child}.9999999`);
    }
  });
});
