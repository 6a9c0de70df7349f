// End-to-end tests of the session timeline in headless Chromium (playwright-core
// driving the system's chromium). They run on Node only (scripts/test.mjs leaves
// `*_browser_test.ts` out of the Deno and Bun steps): the route, fold and surface
// logic they exercise is also covered on all three runtimes by _view_routes_test.ts.
// Without a Chromium they fail, unless DSH_NO_BROWSER=1 says to leave them out.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import type { Page } from "playwright-core";
import { createHarness, type Harness } from "../../harness.ts";
import { memoryStorage } from "../../persistence/memory_storage.ts";
import type { SessionStorage } from "../../persistence/session_storage.ts";
import { Session } from "../../session/session.ts";
import type { SessionEvent } from "../../session/session_events.ts";
import { scriptedAdapter, toolCallResponse } from "../../../testing/scripted_adapter.ts";
import { loadFixture, replayAdapter } from "../../../replay/mod.ts";
import { fixtureDir, runScenario, SCENARIOS, WEATHER_TABLE } from "../../../examples/weather_agent.ts";
import { createHarnessApp } from "../create_harness_app.ts";
import { type LoopbackServer, serveOnLoopback } from "../_test_server.ts";
import { launchBrowser, missingBrowser, SCREENSHOT_DIR, type TestBrowser } from "./_test_browser.ts";
import { bigSession, lookupTool, makeViewSessions, pacedAdapter, streamedText } from "./_test_view_sessions.ts";

const TOKEN = "view-token-42";
const missing = missingBrowser();
const optOut = process.env.DSH_NO_BROWSER === "1";

/** Serve a harness's app; event-stream responses can be cut from the server side. */
async function serve(harness: Harness) {
  const app = createHarnessApp(harness, { token: TOKEN, log: false });
  const cuts = new Set<() => void>();
  const lastEventIds: (string | null)[] = [];
  const server: LoopbackServer = await serveOnLoopback(async (request) => {
    const response = await app.fetch(request);
    if (!new URL(request.url).pathname.endsWith("/events") || response.body === null) return response;
    lastEventIds.push(request.headers.get("last-event-id"));
    const reader = response.body.getReader();
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const cut = () => {
      cuts.delete(cut);
      try {
        controller.error(new Error("connection cut by the test"));
      } catch { /* already closed */ }
      reader.cancel().catch(() => {});
    };
    cuts.add(cut);
    const body = new ReadableStream<Uint8Array>({
      start: (c) => void (controller = c),
      pull: async (c) => {
        const { done, value } = await reader.read();
        if (done) {
          cuts.delete(cut);
          c.close();
        } else c.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, { status: response.status, headers: response.headers });
  });
  return { server, url: server.url, cutStreams: () => [...cuts].forEach((c) => c()), lastEventIds };
}

async function opened(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.waitForSelector("#app[data-ready='1']", { timeout: 20_000 });
}

async function shot(page: Page, name: string): Promise<void> {
  await page.evaluate(() => globalThis.scrollTo(0, 0));
  await page.screenshot({ path: join(SCREENSHOT_DIR, name), fullPage: true });
}

function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  return errors;
}

describe("session timeline in Chromium", { skip: missing !== undefined && optOut ? "DSH_NO_BROWSER=1" : false }, () => {
  let browser: TestBrowser;
  before(async () => {
    if (missing !== undefined) throw new Error(missing);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  it("opens stored sessions: a tool turn, a cancelled turn, a compaction and a fork", async () => {
    const storage = memoryStorage();
    const made = await makeViewSessions(storage, 4);
    const requests = made.requests;
    await made.harness.dispose();
    const harness = await createHarness({ storage });
    const served = await serve(harness);
    const page = await browser.context.newPage();
    const errors = watchErrors(page);
    try {
      // No token yet: the page asks for it, then sends it on its own requests.
      await page.goto(`${served.url}/sessions/main/view`);
      await page.waitForSelector("#login");
      await page.fill("#token", TOKEN);
      await page.click("#login button[type=submit]");
      await page.waitForSelector("#app[data-ready='1']");
      errors.length = 0; // the 401 answers that made the page ask for the token

      assert.equal(await page.locator("section.turn").count(), 5);
      const reasons = await page.locator(".turn-reason").allTextContents();
      assert.deepEqual(reasons, ["completed", "aborted (user)", "completed", "completed", "completed"]);
      // The input that entered, the cancelled turn's interrupted prefix.
      assert.equal(await page.locator("#t1s1 .input .input-text").textContent(), "What is the weather in Paris?");
      assert.match(await page.locator("#t2s1 .assistant-text").textContent() ?? "", /Roses are red/);
      assert.equal(await page.locator("#t2s1 .badge.interrupted").count(), 1);
      // A tool call expands to its arguments and result; errors and approvals are shown.
      const lookup = page.locator("#t1s1 [data-call-id='call-1'] details.tool");
      assert.equal(await lookup.getAttribute("open"), null);
      await lookup.locator("summary").click();
      assert.equal(await lookup.getAttribute("open"), "");
      assert.deepEqual(JSON.parse(await lookup.locator(".tool-args").textContent() ?? ""), { city: "Paris" });
      assert.equal(await lookup.locator(".tool-result").textContent(), "Paris: sunny, 21 °C");
      assert.match(await page.locator("#t1s1 [data-call-id='call-2'] summary").textContent() ?? "", /TOOL_FAILED/);
      assert.match(
        await page.locator("#t3s1 [data-call-id='call-3'] summary").textContent() ?? "",
        /approval: rejected/,
      );
      // Reasoning is collapsed; the system-prompt change is a diff; the compaction is a band.
      assert.equal(await page.locator("#t1s1 details.reasoning[open]").count(), 0);
      assert.match(await page.locator("#t4s1 .header-change summary").textContent() ?? "", /system \+\d+ −0/);
      await page.locator("#t4s1 .header-change summary").click();
      assert.deepEqual(
        await page.locator("#t4s1 .header-change .diff .add").allTextContents(),
        [
          " ",
          "Answer in one sentence.",
          "Be cheerful.",
        ].filter((t) => t !== " " || true).slice(-3),
      );
      assert.match(await page.locator(".band").textContent() ?? "", /Compaction \(manual\)/);
      // Usage and timing bars per step.
      assert.equal(await page.locator("#t1s1 .bars .bar").count(), 2);
      assert.ok(await page.locator("#t1s1 .bars .bar .input").count() === 1);
      await shot(page, "session.png");

      // What the model saw at turn 5, step 1 (after the compaction), beside the full log.
      const events: readonly SessionEvent[] = (await storage.inspect("main")).events;
      const panel = page.locator("#t5s1 details.surface");
      await panel.locator("summary").click();
      await panel.locator(".surface-messages .msg").first().waitFor();
      const at = Number(await panel.locator(".surface-messages").getAttribute("data-at"));
      const shown = await panel.locator(".surface-messages .msg").evaluateAll((els) =>
        els.map((
          el,
        ) => [el.getAttribute("data-id"), el.getAttribute("data-role"), el.querySelector(".msg-text")?.textContent])
      );
      const derived = Session.create("probe", events.slice(0, at)).deriveMessages();
      assert.deepEqual(shown.map(([id, role]) => [id, role]), derived.map((m) => [m.id, m.role]));
      assert.deepEqual(shown.map(([id]) => id), requests.main.at(-1)!.messages.map((m) => m.id));
      assert.match(shown[0][2] ?? "", /Summary of the earlier conversation/);
      assert.equal(await panel.locator(".msg.replace").count(), 1);
      assert.ok(await panel.locator(".logrow.shadowed").count() >= 6);
      await panel.screenshot({ path: join(SCREENSHOT_DIR, "surface.png") });

      // The fork: its inherited turn, where it forked, and the tree.
      await opened(page, `${served.url}/sessions/main-fork/view`);
      assert.equal(await page.locator("section.turn.inherited").count(), 1);
      assert.match(await page.locator("#turn-1").textContent() ?? "", /inherited from parent/);
      assert.equal(
        await page.locator(".turn-body a[href$='/sessions/main/view'], .band a[href$='/sessions/main/view']").count(),
        1,
      );
      await page.waitForSelector("#tree a.node");
      assert.deepEqual(await page.locator("#tree a.node").allTextContents(), ["main", "main-fork"]);
      assert.equal(await page.locator("#tree a.node.current").textContent(), "main-fork");
      await shot(page, "fork.png");

      await opened(page, `${served.url}/view`);
      assert.deepEqual(await page.locator("table.sessions td.id a").allTextContents(), ["main", "main-fork"]);
      await shot(page, "index.png");
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
      await served.server.close();
      await harness.dispose();
    }
  });

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
    const page = await browser.context.newPage();
    const errors = watchErrors(page);
    try {
      const agent = await harness.createAgent({ id: "live" });
      await opened(page, `${served.url}/sessions/live/view#token=${TOKEN}`);
      await page.waitForSelector("#follow-status[data-phase='following']");
      assert.equal(page.url(), `${served.url}/sessions/live/view`, "the token leaves the address bar");

      agent.followup("Tell me a long story about Oslo.");
      await page.waitForFunction(() =>
        /word1\d /.test(document.querySelector("#t1s2 .assistant-text")?.textContent ?? "")
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
          document.querySelector("#turn-1 .turn-reason")?.textContent === "completed";
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
      assert.deepEqual(errors.filter((e) => !e.includes("ERR_INCOMPLETE_CHUNKED_ENCODING")), []);
    } finally {
      await page.close();
      await served.server.close();
      await harness.dispose();
    }
  });

  it("compares a diverging replay with its fixture and highlights the first diverging step", async () => {
    const [weather] = SCENARIOS;
    const fixture = await loadFixture(fixtureDir(weather.name));
    const rainy = { ...WEATHER_TABLE, "san francisco": { conditions: "Heavy rain", temperatureC: 9, windKph: 40 } };
    const replay = replayAdapter({ fixture });
    const { session } = await runScenario(weather, replay.adapters, { table: rainy });
    const storage = memoryStorage();
    await store(storage, "fixture", fixture.sessions[0].events);
    await store(storage, "replay", session.events);
    const harness = await createHarness({ storage });
    const served = await serve(harness);
    const page = await browser.context.newPage();
    const errors = watchErrors(page);
    try {
      await opened(page, `${served.url}/view/compare?a=fixture&b=replay#token=${TOKEN}`);
      const first = page.locator("[data-first-divergence]");
      assert.equal(await first.count(), 1);
      const where = [await first.getAttribute("data-turn"), await first.getAttribute("data-step")];
      const expected = firstDivergence(fixture.sessions[0].events, session.events);
      assert.deepEqual(where, expected);
      assert.match(await first.getAttribute("data-differs") ?? "", /tool results/);
      assert.match(
        await page.locator("#verdict").textContent() ?? "",
        new RegExp(`turn ${expected[0]}, step ${expected[1]}`),
      );
      // Rows before it are the same.
      const before = await page.locator(".cmp .where").evaluateAll((els) =>
        els.slice(0, els.findIndex((el) => el.hasAttribute("data-first-divergence"))).filter((el) =>
          el.hasAttribute("data-differs")
        ).length
      );
      assert.equal(before, 0);
      assert.ok(await first.isVisible());
      await shot(page, "compare.png");
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
      await served.server.close();
      await harness.dispose();
    }
  });

  it("renders the first screen of a 10,000-event session (figure written for bench/)", async () => {
    const storage = memoryStorage();
    const events = await bigSession(storage, 10_000);
    const harness = await createHarness({ storage });
    const served = await serve(harness);
    const page = await browser.context.newPage();
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

async function store(storage: SessionStorage, id: string, events: readonly SessionEvent[]): Promise<void> {
  await storage.create({ id, createdAt: events[0]?.time ?? 0 });
  await storage.append(id, events, { expectedSeq: 0 });
}

/** The first (turn, step) whose tool results differ, found without the page. */
function firstDivergence(a: readonly SessionEvent[], b: readonly SessionEvent[]): [string, string] {
  const results = (events: readonly SessionEvent[]) =>
    events.flatMap((e) =>
      e.type === "tool/result"
        ? [{ at: [String(e.data.turn), String(e.data.step)], text: JSON.stringify(e.data.message.content) }]
        : []
    );
  const ra = results(a);
  const rb = results(b);
  const i = ra.findIndex((r, k) => rb[k] === undefined || r.text !== rb[k].text);
  assert.ok(i >= 0, "the replay diverges");
  return ra[i].at as [string, string];
}
