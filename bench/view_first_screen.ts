/**
 * Benchmark: how fast the session timeline shows its first screen, in headless
 * Chromium (playwright-core driving the system's chromium, as the browser tests do).
 *
 * A stored session of 10,000 events (the loop benchmark's turn shape: a reasoning
 * block, a tool call, a result, then 40 text deltas) and one of ~100 events are
 * served by `createHarnessApp`; each page load is timed by the page itself
 * (`window.dshView.metrics`: navigation start to the first rendered screen, of which
 * fetching the log and folding it), median of 5 loads. The small session is the
 * baseline in the same run. Page weight: the HTML, the client script and the log JSON.
 * The target is a first screen under 1 s for 10,000 events; it is reported, never asserted.
 *
 * Runs on Node only (`node --import tsx bench/view_first_screen.ts`): on Deno and Bun it
 * prints why and exits 0. Needs Chromium (`CHROME_PATH` or /usr/bin/chromium).
 *
 * @module
 */

import process from "node:process";
import { createHarness } from "../sdk/harness.ts";
import { createHarnessApp } from "../sdk/http/create_harness_app.ts";
import { memoryStorage } from "../sdk/persistence/memory_storage.ts";
import { serveOnLoopback } from "../sdk/http/_test_server.ts";
import { launchBrowser, missingBrowser } from "../sdk/http/view/_test_browser.ts";
import { bigSession } from "../sdk/http/view/_test_view_sessions.ts";

const g = globalThis as { Deno?: unknown; Bun?: unknown };
if (g.Deno !== undefined || g.Bun !== undefined) {
  console.log("view_first_screen: runs on Node only (playwright-core); see the Node section");
  process.exit(0);
}
const missing = missingBrowser();
if (missing !== undefined) {
  console.log(`view_first_screen: not run — ${missing}`);
  process.exit(0);
}

const LOADS = 5;
const storage = memoryStorage();
await bigSession(storage, 10_000, "big");
await bigSession(storage, 100, "small");
const harness = await createHarness({ storage });
const token = "bench-token";
const app = createHarnessApp(harness, { token, log: false });
const server = await serveOnLoopback(app.fetch);
const browser = await launchBrowser();

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

async function measure(id: string) {
  const rows: Record<string, number>[] = [];
  for (let i = 0; i < LOADS; i++) {
    const page = await browser.context.newPage();
    await page.goto(`${server.url}/sessions/${id}/view#token=${token}`);
    await page.waitForSelector("#app[data-ready='1']", { timeout: 30_000 });
    rows.push(
      await page.evaluate(() =>
        (globalThis as unknown as { dshView: { metrics: Record<string, number> } }).dshView.metrics
      ),
    );
    await page.close();
  }
  return {
    events: rows[0].events,
    firstScreenMs: median(rows.map((r) => r.firstScreenMs)),
    fetchMs: median(rows.map((r) => r.fetchMs)),
    buildMs: median(rows.map((r) => r.buildMs)),
  };
}

async function bytes(path: string): Promise<number> {
  const response = await fetch(server.url + path, { headers: { authorization: `Bearer ${token}` } });
  return (await response.arrayBuffer()).byteLength;
}

try {
  const small = await measure("small");
  const big = await measure("big");
  const weight = {
    html: await bytes("/sessions/big/view"),
    script: await bytes("/view/client.js"),
    log: await bytes("/sessions/big/log"),
  };
  const ms = (x: number) => x.toFixed(0).padStart(6);
  console.log(`session timeline, first screen in headless Chromium (median of ${LOADS} loads)`);
  console.log("");
  console.log("| session                    | events | first screen ms | log fetch ms | fold ms |");
  console.log("| -------------------------- | ------ | --------------- | ------------ | ------- |");
  console.log(
    `| small (baseline)           | ${String(small.events).padStart(6)} | ${ms(small.firstScreenMs)}          | ${
      ms(small.fetchMs)
    }       | ${ms(small.buildMs)}  |`,
  );
  console.log(
    `| big                        | ${String(big.events).padStart(6)} | ${ms(big.firstScreenMs)}          | ${
      ms(big.fetchMs)
    }       | ${ms(big.buildMs)}  |`,
  );
  console.log("");
  console.log(
    `big / small first screen: ${
      (big.firstScreenMs / small.firstScreenMs).toFixed(2)
    }×; target < 1000 ms for 10,000 events: ${big.firstScreenMs < 1000 ? "met" : "missed"}`,
  );
  console.log(
    `page weight: HTML ${(weight.html / 1024).toFixed(1)} KB, client script ${
      (weight.script / 1024).toFixed(1)
    } KB, log of the big session ${(weight.log / 1024).toFixed(0)} KB (uncompressed JSON)`,
  );
  if (!(big.events >= 10_000)) throw new Error(`the big session has ${big.events} events`);
} finally {
  await browser.close();
  await server.close();
  await harness.dispose();
}
