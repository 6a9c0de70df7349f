// End-to-end tests of the timeline's live follow across another life of the log, in headless Chromium (Node only;
// see view_browser_test.ts): while the page is away, its session is deleted (and created again, or not).

import { it } from "node:test";
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { createHarness } from "../../harness.ts";
import { memoryStorage } from "../../persistence/memory_storage.ts";
import { incarnationOf } from "../../session/_incarnation.ts";
import { scriptedAdapter, textResponse } from "../../../testing/scripted_adapter.ts";
import { browserSuite, opened, type PageDocument, serve, TOKEN, watchErrors } from "./_test_browser.ts";

/** What the tests read of the page's follow state. */
type Follow = { phase: string; reconnects: number; stopped: boolean };
type View = { dshView: { follow: Follow; model: { events: { seq: number; type: string }[] } } };

/** Hold the page's next requests for the session's event stream until the returned function is called. */
async function holdStreams(page: Page, id: string): Promise<() => void> {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  await page.route(`**/sessions/${id}/events*`, async (route) => {
    await held;
    await route.continue();
  });
  return release;
}

const cutShown = /ERR_INCOMPLETE_CHUNKED_ENCODING|ERR_CONNECTION_RESET/;

browserSuite("session timeline in Chromium: a followed session deleted while the page is away", (browser) => {
  it("a session deleted and created again under its id is shown as its new life, not spliced onto the old", async () => {
    const storage = memoryStorage();
    const harness = await createHarness({
      adapters: [
        scriptedAdapter([textResponse("OLD answer"), textResponse("NEW answer 1"), textResponse("NEW answer 2")]),
      ],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
    });
    const served = await serve(harness);
    const page = await browser().context.newPage();
    const errors = watchErrors(page);
    const headers = { authorization: `Bearer ${TOKEN}` };
    try {
      const old = await harness.createAgent({ id: "s" });
      await old.run("OLD question");
      const oldIncarnation = incarnationOf(old.session.header);
      await opened(page, `${served.url}/sessions/s/view#token=${TOKEN}`);
      await page.waitForSelector("#follow-status[data-phase='following']");

      // The stream drops; while the page waits to reconnect, the session is deleted and created again, longer.
      const release = await holdStreams(page, "s");
      served.cutStreams();
      await page.waitForFunction(() => (window as unknown as View).dshView.follow.reconnects >= 1);
      assert.equal((await fetch(`${served.url}/sessions/s`, { method: "DELETE", headers })).status, 204);
      const fresh = await harness.createAgent({ id: "s" });
      await fresh.run("NEW question 1");
      await fresh.run("NEW question 2");
      assert.ok(fresh.session.seq > old.session.seq);
      release();

      await page.waitForFunction(
        (n) => (window as unknown as View).dshView.model.events.length === n,
        fresh.session.seq,
      );
      const seen = await page.evaluate(() =>
        (window as unknown as View).dshView.model.events.map((e) => `${e.seq} ${e.type}`)
      );
      assert.deepEqual(seen, fresh.session.events.map((e) => `${e.seq} ${e.type}`));
      const text = await page.evaluate(() =>
        (globalThis as unknown as { document: PageDocument }).document.querySelector("#blocks")?.textContent ?? ""
      );
      assert.doesNotMatch(text, /OLD question|OLD answer/);
      assert.match(text, /NEW question 1[\s\S]*NEW question 2/);
      await page.waitForSelector("#follow-status[data-phase='following']");
      assert.match(await page.locator("#follow-status").textContent() ?? "", / 0 gaps · 0 duplicates · /);
      // The page resumed with the id of the last event it held, life included; the server answered event: reset.
      assert.equal(served.lastEventIds[1], `${oldIncarnation}:${old.session.seq - 1}`);
      assert.deepEqual(errors.filter((e) => !cutShown.test(e)), []);
    } finally {
      await page.close();
      await served.server.close();
      await harness.dispose();
    }
  });

  it("a session deleted for good stops the follow and says so, instead of reconnecting forever", async () => {
    const harness = await createHarness({
      adapters: [scriptedAdapter([textResponse("answer")])],
      model: { provider: "scripted", model: "scripted-model" },
      storage: memoryStorage(),
    });
    const served = await serve(harness);
    const page = await browser().context.newPage();
    const errors = watchErrors(page);
    try {
      await (await harness.createAgent({ id: "gone" })).run("question");
      await opened(page, `${served.url}/sessions/gone/view#token=${TOKEN}`);
      await page.waitForSelector("#follow-status[data-phase='following']");
      const release = await holdStreams(page, "gone");
      served.cutStreams();
      await page.waitForFunction(() => (window as unknown as View).dshView.follow.reconnects >= 1);
      const deleted = await fetch(`${served.url}/sessions/gone`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      assert.equal(deleted.status, 204);
      release();
      await page.waitForSelector("#follow-status[data-phase='stopped']", { timeout: 15_000 });
      assert.equal(await page.evaluate(() => (window as unknown as View).dshView.follow.stopped), true);
      assert.match(
        await page.locator("#follow-status").textContent() ?? "",
        /not following · Session "gone" does not exist \(SESSION_NOT_FOUND\)/,
      );
      assert.equal(await page.locator("#status-badge").textContent(), "not found");
      // What the page had stays on it.
      assert.match(await page.locator("#blocks").textContent() ?? "", /question/);
      // The refused reconnect shows in the console as the browser's own line about the 404; nothing else may fail.
      assert.deepEqual(errors.filter((e) => !cutShown.test(e) && !/404/.test(e)), []);
    } finally {
      await page.close();
      await served.server.close();
      await harness.dispose();
    }
  });
}, 60_000);
