// Test support (not published): headless Chromium for the timeline's browser tests,
// driven by playwright-core. The browser is the system's (`CHROME_PATH`, else
// /usr/bin/chromium); Playwright's own browser download is never used.

import { after, before, describe } from "node:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import type { Harness } from "../../harness.ts";
import { createHarnessApp } from "../create_harness_app.ts";
import { type LoopbackServer, serveOnLoopback } from "../_test_server.ts";

/** Where the browser tests save their screenshots (git-ignored). */
export const SCREENSHOT_DIR: string = fileURLToPath(new URL("../../../.tmp/view/", import.meta.url));

/** The page's document, as page functions see it (the package's type check has no DOM library). */
export type PageDocument = { querySelector(selector: string): { textContent: string | null } | null };

/** The bearer token of the apps the browser tests serve. */
export const TOKEN = "view-token-42";

/** The Chromium binary to drive, or `undefined` when none is installed. */
export function findChromium(): string | undefined {
  const given = process.env.CHROME_PATH;
  // A CHROME_PATH that is set is the only candidate: a wrong one must not be papered over.
  const candidates = given !== undefined && given !== "" ? [given] : ["/usr/bin/chromium", "/usr/bin/chromium-browser"];
  return candidates.find((path) => existsSync(path));
}

/** Why the browser tests cannot run, or `undefined` when they can. */
export function missingBrowser(): string | undefined {
  if (findChromium() !== undefined) return undefined;
  return "No Chromium found (CHROME_PATH names no file, or it is unset and /usr/bin/chromium does not exist). Install it " +
    "(apt-get install -y chromium; .ci/run does this) or set CHROME_PATH. To run the suite without the browser " +
    "tests, set DSH_NO_BROWSER=1 explicitly.";
}

/** A headless browser with a fresh profile. */
export interface TestBrowser {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/** Launch headless Chromium with a fresh user-data dir. */
export async function launchBrowser(): Promise<TestBrowser> {
  const executablePath = findChromium();
  if (executablePath === undefined) throw new Error(missingBrowser());
  const profile = mkdtempSync(join(tmpdir(), "dsh-view-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  let closed = false;
  return {
    context,
    close: async () => {
      if (closed) return;
      closed = true;
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * A suite that drives Chromium: fails when no Chromium is found, unless DSH_NO_BROWSER=1 opts out.
 * A watchdog closes the browser after `budgetMs` so that a stuck page fails its test instead of
 * keeping the test process (and the whole run) alive.
 */
export function browserSuite(name: string, body: (browser: () => TestBrowser) => void, budgetMs = 28_000): void {
  const missing = missingBrowser();
  const optOut = process.env.DSH_NO_BROWSER === "1";
  describe(name, { skip: missing !== undefined && optOut ? "DSH_NO_BROWSER=1" : false }, () => {
    let browser: TestBrowser | undefined;
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    before(async () => {
      if (missing !== undefined) throw new Error(missing);
      browser = await launchBrowser();
      watchdog = setTimeout(() => void browser?.close(), budgetMs);
      (watchdog as { unref?: () => void }).unref?.();
    });
    after(async () => {
      clearTimeout(watchdog);
      await browser?.close();
    });
    body(() => browser!);
  });
}

/** Serve a harness's app; event-stream responses can be cut from the server side. */
export async function serve(harness: Harness) {
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

export async function opened(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.waitForSelector("#app[data-ready='1']", { timeout: 20_000 });
}

export async function shot(page: Page, name: string): Promise<void> {
  await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
  await page.screenshot({ path: join(SCREENSHOT_DIR, name), fullPage: true });
}

export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  return errors;
}
