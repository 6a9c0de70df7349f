// The timeline's first screen for a 10,000-event session, in headless Chromium (Node only; see
// view_browser_test.ts). The figure is written to .tmp/view/first-screen.json and printed, never
// asserted; bench/view_first_screen.ts reports it as a benchmark.

import { it } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createHarness } from "../../harness.ts";
import { memoryStorage } from "../../persistence/memory_storage.ts";
import { browserSuite, opened, SCREENSHOT_DIR, serve, TOKEN, watchErrors } from "./_test_browser.ts";
import { bigSession } from "./_test_view_sessions.ts";

browserSuite("session timeline in Chromium: a 10,000-event session", (browser) => {
  it("renders the first screen of a 10,000-event session (figure written for bench/)", async () => {
    const storage = memoryStorage();
    const events = await bigSession(storage, 10_000);
    const harness = await createHarness({ storage });
    const served = await serve(harness);
    const page = await browser().context.newPage();
    const errors = watchErrors(page);
    try {
      await opened(page, `${served.url}/sessions/big/view#token=${TOKEN}`);
      const metrics = await page.evaluate(() =>
        (window as unknown as { dshView: { metrics: Record<string, number> } }).dshView.metrics
      );
      assert.equal(metrics.events, events);
      assert.ok(await page.locator("section.turn").count() >= 1);
      const figure = {
        events,
        firstScreenMs: metrics.firstScreenMs,
        fetchMs: metrics.fetchMs,
        buildMs: metrics.buildMs,
      };
      writeFileSync(join(SCREENSHOT_DIR, "first-screen.json"), JSON.stringify(figure, null, 2) + "\n");
      console.log(`timeline first screen: ${JSON.stringify(figure)}`);
      await page.screenshot({ path: join(SCREENSHOT_DIR, "big.png") });
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
      await served.server.close();
      await harness.dispose();
    }
  });
});
