// End-to-end tests of the session timeline in headless Chromium (playwright-core driving the
// system's chromium): stored sessions and the comparison page. The browser tests run on Node only
// (scripts/test.mjs leaves `*_browser_test.ts` out of the Deno and Bun steps); the routes, the log
// fold and the derived history they show are also tested on all three runtimes by
// _view_routes_test.ts. Without a Chromium they fail, unless DSH_NO_BROWSER=1 leaves them out.

import { it } from "node:test";
import assert from "node:assert/strict";
import { createHarness } from "../../harness.ts";
import { memoryStorage } from "../../persistence/memory_storage.ts";
import type { SessionStorage } from "../../persistence/session_storage.ts";
import { Session } from "../../session/session.ts";
import type { SessionEvent } from "../../session/session_events.ts";
import { loadFixture, replayAdapter } from "../../../replay/mod.ts";
import { fixtureDir, runScenario, SCENARIOS, WEATHER_TABLE } from "../../../examples/weather_agent.ts";
import { browserSuite, opened, SCREENSHOT_DIR, serve, shot, TOKEN, watchErrors } from "./_test_browser.ts";
import { join } from "node:path";
import { makeViewSessions, resumedSessions } from "./_test_view_sessions.ts";

browserSuite("session timeline in Chromium: stored sessions and comparison", (browser) => {
  it("opens stored sessions: a tool turn, a cancelled turn, a compaction and a fork", async () => {
    const storage = memoryStorage();
    const made = await makeViewSessions(storage, 1);
    const requests = made.requests;
    await made.harness.dispose();
    const harness = await createHarness({ storage });
    const served = await serve(harness);
    const page = await browser().context.newPage();
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
    const page = await browser().context.newPage();
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

  it("shows tool calls whose ids are Object.prototype names", async () => {
    const ids = ["constructor", "toString", "__proto__"];
    const storage = memoryStorage();
    await store(storage, "protos", turnWithTools("Weather?", ids));
    const harness = await createHarness({ storage });
    const served = await serve(harness);
    const page = await browser().context.newPage();
    const errors = watchErrors(page);
    try {
      await opened(page, `${served.url}/sessions/protos/view#token=${TOKEN}`);
      assert.deepEqual(
        await page.locator("#t1s1 [data-call-id]").evaluateAll((els) =>
          els.map((el) => el.getAttribute("data-call-id"))
        ),
        ids,
      );
      for (const id of ids) {
        const tool = page.locator(`#t1s1 [data-call-id='${id}'] details.tool`);
        await tool.locator("summary").click();
        assert.equal(await tool.locator(".tool-result").textContent(), `result of ${id}`);
      }
      assert.deepEqual(await page.evaluate(() => Object.keys(Object.prototype)), []);
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
      await served.server.close();
      await harness.dispose();
    }
  });

  it("lists every session of a fork cycle on the index and in the tree", async () => {
    const storage = memoryStorage();
    // a and b are each the other's parent (fork a into b, delete a, fork b into a new a); c is below the
    // cycle; self is its own parent.
    const parents: Record<string, string | undefined> = { a: "b", b: "a", c: "a", self: "self", plain: undefined };
    for (const [id, parentSession] of Object.entries(parents)) {
      await store(storage, id, turnWithTools(`I am ${id}`), parentSession ? { parentSession } : {});
    }
    const harness = await createHarness({ storage });
    const served = await serve(harness);
    const page = await browser().context.newPage();
    const errors = watchErrors(page);
    try {
      await opened(page, `${served.url}/view#token=${TOKEN}`);
      const rows = await page.locator("tr[data-session]").evaluateAll((els) =>
        els.map((el) => el.getAttribute("data-session"))
      );
      assert.deepEqual([...rows].sort(), ["a", "b", "c", "plain", "self"]);
      for (const id of ["a", "self"]) {
        await opened(page, `${served.url}/sessions/${id}/view`);
        await page.waitForSelector("#tree a.node");
        const tree = await page.locator("#tree a.node").allTextContents();
        assert.deepEqual([...tree].sort(), id === "a" ? ["a", "b", "c"] : ["self"]);
        assert.equal(await page.locator("#tree a.node.current").textContent(), id);
      }
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
      await served.server.close();
      await harness.dispose();
    }
  });

  it("marks where a resumed session resumed, and shows only a fork's seed as inherited", async () => {
    const storage = memoryStorage();
    await resumedSessions(storage);
    const harness = await createHarness({ storage });
    const served = await serve(harness);
    const page = await browser().context.newPage();
    const errors = watchErrors(page);
    try {
      await opened(page, `${served.url}/sessions/plain/view#token=${TOKEN}`);
      assert.equal(await page.locator("section.turn").count(), 3);
      assert.equal(await page.locator("section.turn.inherited").count(), 0);
      assert.doesNotMatch(await page.locator("#blocks").textContent() ?? "", /Forked here|inherited from parent/);
      assert.equal(await page.locator(".resumed").count(), 2);

      await opened(page, `${served.url}/sessions/plain-fork/view`);
      assert.deepEqual(
        await page.locator("section.turn").evaluateAll((els) => els.map((el) => el.classList.contains("inherited"))),
        [true, true, true, false, false],
      );
      assert.equal((await page.locator("#blocks").textContent() ?? "").match(/Forked here/g)?.length, 1);
      assert.equal(await page.locator(".resumed").count(), 3);
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
      await served.server.close();
      await harness.dispose();
    }
  });

  it("asks for the token, saying why, when the address holds a malformed token", async () => {
    const storage = memoryStorage();
    await store(storage, "s", turnWithTools("Hello"));
    const harness = await createHarness({ storage });
    const served = await serve(harness);
    const page = await browser().context.newPage();
    const errors = watchErrors(page);
    try {
      await page.goto(`${served.url}/view#token=%E0%A4%A`);
      await page.waitForSelector("#login");
      assert.match(await page.locator("#login .status").textContent() ?? "", /#token= in the address is not valid/);
      assert.equal(page.url(), `${served.url}/view`, "the fragment leaves the address bar");
      errors.length = 0; // the 401 answer that made the page ask for the token
      await page.fill("#token", TOKEN);
      await page.click("#login button[type=submit]");
      await page.waitForSelector("#app[data-ready='1']");
      assert.deepEqual(await page.locator("tr[data-session]").count(), 1);
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
      await served.server.close();
      await harness.dispose();
    }
  });
});

async function store(
  storage: SessionStorage,
  id: string,
  events: readonly SessionEvent[],
  header: { parentSession?: string } = {},
): Promise<void> {
  await storage.create({ id, createdAt: events[0]?.time ?? 0, ...header });
  if (events.length) await storage.append(id, events, { expectedSeq: 0 });
}

/** One completed turn (one step) asking `text`, whose model calls a tool per id in `callIds`. */
function turnWithTools(text: string, callIds: readonly string[] = []): SessionEvent[] {
  const turn = 1;
  const step = 1;
  const data = [
    { type: "turn/start", data: { turn } },
    { type: "step/start", data: { turn, step } },
    {
      type: "user/message",
      data: { id: "u1", role: "user", content: [{ type: "text", text }], source: { kind: "user" } },
      surfaceOp: "append",
    },
    {
      type: "assistant/message",
      data: {
        turn,
        step,
        message: {
          id: "a1",
          role: "assistant",
          content: callIds.map((id) => ({ type: "tool-call", id, name: "lookup", arguments: `{"city":"${id}"}` })),
          source: { kind: "model", provider: "p", model: "m" },
        },
        usage: { inputTokens: 5, outputTokens: 3 },
      },
      surfaceOp: "append",
    },
    ...callIds.flatMap((id, i) => [
      { type: "tool/call", data: { turn, step, callId: id, name: "lookup", arguments: `{"city":"${id}"}` } },
      {
        type: "tool/result",
        data: {
          turn,
          step,
          message: {
            id: `r${i}`,
            role: "user",
            content: [{ type: "tool-result", toolCallId: id, content: [{ type: "text", text: `result of ${id}` }] }],
            source: { kind: "tool", callId: id },
          },
        },
        surfaceOp: "append",
      },
    ]),
    { type: "step/end", data: { turn, step } },
    { type: "turn/end", data: { turn, reason: { kind: "completed" } } },
  ];
  return data.map((e, seq) => ({ ...e, seq, time: 1000 + seq }) as unknown as SessionEvent);
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
