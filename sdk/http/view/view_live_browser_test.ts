// End-to-end test of the timeline's live follow in headless Chromium (Node only; see
// view_browser_test.ts): a scripted model streams while the test cuts the event stream.

import { it } from "node:test";
import assert from "node:assert/strict";
import { createHarness } from "../../harness.ts";
import { scriptedAdapter, toolCallResponse } from "../../../testing/scripted_adapter.ts";
import { browserSuite, opened, type PageDocument, serve, shot, TOKEN, watchErrors } from "./_test_browser.ts";
import { bigSession, lookupTool, pacedAdapter, streamedText } from "./_test_view_sessions.ts";
import { memoryStorage } from "../../persistence/memory_storage.ts";
import { incarnationOf } from "../../session/_incarnation.ts";

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
      // With the id of the last event it had, its life included.
      assert.equal(served.lastEventIds[1]?.split(":")[0], incarnationOf(agent.session.header));
      assert.match(served.lastEventIds[1] ?? "", /^[0-9a-z]{1,16}:\d+$/);
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

  it("shows an approval already pending when the page opens, and drops an answered one's card on reconnect", async () => {
    const model = scriptedAdapter([
      toolCallResponse([{ id: "call-ask", name: "lookup", arguments: '{"city":"Oslo"}' }]),
      streamedText("Sunny."),
    ]);
    const harness = await createHarness({
      adapters: [model],
      model: { provider: "scripted", model: "scripted-model" },
      tools: [lookupTool],
    });
    harness.ctx.on("tools/pre-execute", () => ({ kind: "ask" as const, reason: "lookups need approval" }));
    const served = await serve(harness);
    const page = await browser().context.newPage();
    const errors = watchErrors(page);
    const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
    try {
      const agent = await harness.createAgent({ id: "ask" });
      agent.followup("Weather in Oslo?");
      // Asked before the page opens: the page's only news of it is what its stream says on joining.
      while (true) {
        const listed = await (await fetch(`${served.url}/sessions/ask/approvals`, { headers })).json();
        if (listed.approvals.length === 1) break;
      }
      await opened(page, `${served.url}/sessions/ask/view#token=${TOKEN}`);
      await page.waitForSelector("#approvals .card.approvals");
      assert.match(await page.locator("#approvals").textContent() ?? "", /Waiting for approval.*lookup/);

      // The stream is cut; the question is answered while the page is away, then the page reconnects.
      let reconnect!: () => void;
      const held = new Promise<void>((resolve) => (reconnect = resolve));
      await page.route("**/sessions/ask/events*", async (route) => {
        await held;
        await route.continue();
      });
      served.cutStreams();
      const answered = await fetch(`${served.url}/sessions/ask/approvals/call-ask`, {
        method: "POST",
        headers,
        body: JSON.stringify({ decision: "allow" }),
      });
      assert.equal(answered.status, 200);
      await agent.whenIdle();
      reconnect();
      await page.waitForFunction(
        (n) => (window as unknown as { dshView: { model: { events: unknown[] } } }).dshView.model.events.length === n,
        agent.session.seq,
      );
      assert.equal(await page.locator("#approvals .card").count(), 0, "no card for an answered question");
      const cutShown = /ERR_INCOMPLETE_CHUNKED_ENCODING|ERR_CONNECTION_RESET/;
      assert.deepEqual(errors.filter((e) => !cutShown.test(e)), []);
    } finally {
      await page.close();
      await served.server.close();
      await harness.dispose();
    }
  });

  it("redraws only the turn that changes while following, even when a step longer than any before streams", async () => {
    const storage = memoryStorage();
    await bigSession(storage, 300);
    const words = Array.from({ length: 30 }, (_, i) => `w${i}`).join(" ");
    const harness = await createHarness({
      adapters: [pacedAdapter(scriptedAdapter([streamedText(words)]), 20)],
      model: { provider: "scripted", model: "scripted-model" },
      storage,
    });
    const served = await serve(harness);
    const page = await browser().context.newPage();
    const errors = watchErrors(page);
    try {
      const agent = await harness.resumeAgent("big");
      await opened(page, `${served.url}/sessions/big/view#token=${TOKEN}`);
      await page.waitForSelector("#follow-status[data-phase='following']");
      const stored = await page.locator("section.turn").count();
      assert.ok(stored >= 3, `${stored} stored turns`);
      const scaleBefore = await page.evaluate(() =>
        Number(
          (globalThis as unknown as PageGlobals).document.getElementById("blocks").style.getPropertyValue("--scale-ms"),
        )
      );
      await page.evaluate(() => {
        const w = window as unknown as { removed: string[] };
        w.removed = [];
        const g = globalThis as unknown as PageGlobals;
        new g.MutationObserver((records) => records.forEach((r) => r.removedNodes.forEach((n) => w.removed.push(n.id))))
          .observe(g.document.getElementById("blocks"), { childList: true });
      });
      await agent.run("Count slowly.");
      await page.waitForFunction(
        (n) => (window as unknown as { dshView: { model: { events: unknown[] } } }).dshView.model.events.length === n,
        agent.session.seq,
      );
      const last = `turn-${stored + 1}`;
      await page.waitForFunction(
        (id) =>
          (globalThis as unknown as { document: PageDocument }).document.querySelector(`#${id} .turn-reason`)
            ?.textContent ===
            "completed",
        last,
      );
      const removed = await page.evaluate(() => (window as unknown as { removed: string[] }).removed);
      // Only the new turn (and the band before it) were redrawn, never a stored turn.
      assert.ok(removed.length > 0);
      assert.deepEqual(removed.filter((id) => id.startsWith("turn-") && id !== last), []);
      assert.equal(await page.locator("#turn-nav a").count(), stored + 1);
      // The scale caught up with the new, longer step once it ended.
      await page.waitForFunction((before) =>
        Number(
          (globalThis as unknown as PageGlobals).document.getElementById("blocks").style.getPropertyValue("--scale-ms"),
        ) > before, scaleBefore);
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
      await served.server.close();
      await harness.dispose();
    }
  });
});

/** The page's globals, as these page functions use them (the package's type check has no DOM library). */
type PageGlobals = {
  document: { getElementById(id: string): { style: { getPropertyValue(name: string): string } } };
  MutationObserver: new (
    callback: (records: { removedNodes: { id: string }[] }[]) => void,
  ) => { observe(target: unknown, options: { childList: boolean }): void };
};
