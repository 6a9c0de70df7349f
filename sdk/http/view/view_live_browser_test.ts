// End-to-end test of the timeline's live follow in headless Chromium (Node only; see
// view_browser_test.ts): a scripted model streams while the test cuts the event stream.

import { it } from "node:test";
import assert from "node:assert/strict";
import { createHarness } from "../../harness.ts";
import { scriptedAdapter, toolCallResponse } from "../../../testing/scripted_adapter.ts";
import { browserSuite, opened, type PageDocument, serve, shot, TOKEN, watchErrors } from "./_test_browser.ts";
import { lookupTool, pacedAdapter, streamedText } from "./_test_view_sessions.ts";

browserSuite("session timeline in Chromium: live follow", (browser) => {
  it("follows a live session while the model streams, and resumes after a cut without loss or repeats", async () => {
    const story = Array.from({ length: 70 }, (_, i) => `word${i}`).join(" ") + ".";
    const model = scriptedAdapter([
      toolCallResponse([{ id: "call-live", name: "lookup", arguments: '{"city":"Oslo"}' }]),
      streamedText(story, { reasoning: "Tell it slowly, one word at a time." }),
    ]);
    const harness = await createHarness({
      adapters: [pacedAdapter(model, 25)],
      model: { provider: "scripted", model: "scripted-model" },
      tools: [lookupTool],
    });
    const served = await serve(harness);
    const page = await browser().context.newPage();
    const errors = watchErrors(page);
    try {
      const agent = await harness.createAgent({ id: "live" });
      await opened(page, `${served.url}/sessions/live/view#token=${TOKEN}`);
      await page.waitForSelector("#follow-status[data-phase='following']");
      assert.equal(page.url(), `${served.url}/sessions/live/view`, "the token leaves the address bar");

      agent.followup("Tell me a long story about Oslo.");
      await page.waitForFunction(() =>
        /word1\d /.test(
          (globalThis as unknown as { document: PageDocument }).document.querySelector("#t1s2 .assistant-text")
            ?.textContent ?? "",
        )
      );
      await shot(page, "live-streaming.png");
      served.cutStreams();
      await page.waitForFunction(() =>
        (window as unknown as { dshView: { follow: { reconnects: number } } }).dshView.follow.reconnects >= 1
      );
      await agent.whenIdle();
      const total = agent.session.seq;
      await page.waitForFunction((n) => {
        const view = (window as unknown as { dshView: { model: { events: unknown[] } } }).dshView;
        return view.model.events.length === n &&
          (globalThis as unknown as { document: PageDocument }).document.querySelector("#turn-1 .turn-reason")
              ?.textContent === "completed";
      }, total);
      const status = await page.locator("#follow-status").textContent();
      assert.match(status ?? "", / 0 gaps · 0 duplicates · [1-9]\d* reconnect/);
      const seen = await page.evaluate(() =>
        (window as unknown as { dshView: { model: { events: { seq: number; type: string }[] } } }).dshView.model.events
          .map((e) => `${e.seq} ${e.type}`)
      );
      assert.deepEqual(seen, agent.session.events.map((e) => `${e.seq} ${e.type}`));
      assert.equal(await page.locator("#t1s2 .assistant-text").textContent(), story);
      // The second connection asked to resume after the last seq the page had.
      assert.equal(served.lastEventIds[0], null);
      assert.ok(served.lastEventIds.length >= 2);
      assert.match(served.lastEventIds[1] ?? "", /^\d+$/);
      await shot(page, "live-done.png");
      // The cut itself shows as an incomplete chunked body (Node's and Deno's servers) or a reset connection
      // (Bun's server ends an errored body with a reset); nothing else may fail.
      const cutShown = /ERR_INCOMPLETE_CHUNKED_ENCODING|ERR_CONNECTION_RESET/;
      assert.ok(errors.filter((e) => cutShown.test(e)).length <= served.lastEventIds.length - 1, errors.join("\n"));
      assert.deepEqual(errors.filter((e) => !cutShown.test(e)), []);
    } finally {
      await page.close();
      await served.server.close();
      await harness.dispose();
    }
  });
});
