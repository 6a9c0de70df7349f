// Test support (not published): headless Chromium for the timeline's browser tests,
// driven by playwright-core. The browser is the system's (`CHROME_PATH`, else
// /usr/bin/chromium); Playwright's own browser download is never used.

import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { type BrowserContext, chromium } from "playwright-core";

/** Where the browser tests save their screenshots (git-ignored). */
export const SCREENSHOT_DIR: string = fileURLToPath(new URL("../../../.tmp/view/", import.meta.url));

/** The Chromium binary to drive, or `undefined` when none is installed. */
export function findChromium(): string | undefined {
  const candidates = [process.env.CHROME_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"];
  return candidates.find((path) => path !== undefined && path !== "" && existsSync(path));
}

/** Why the browser tests cannot run, or `undefined` when they can. */
export function missingBrowser(): string | undefined {
  if (findChromium() !== undefined) return undefined;
  return "No Chromium found (CHROME_PATH is unset or wrong and /usr/bin/chromium does not exist). Install it " +
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
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
