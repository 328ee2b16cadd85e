// What the console's browser suites share (console-e2e, console-operators,
// console-sessions-e2e): Chromium's flags, where screenshots go, the two widths every page is
// captured at, and how a page is known to be settled and checked for overflow.
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import type { ChromiumBinary } from "./chromium.ts";

/** Without these Chromium keeps reaching for Google's services. */
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
export const SHOTS = fileURLToPath(new URL("../../test-output/console-screenshots/", import.meta.url));
export const WIDE = { width: 1280, height: 800 };
export const NARROW = { width: 390, height: 844 };

export function launchChromium(binary: ChromiumBinary): Promise<Browser> {
  return chromium.launch({
    executablePath: binary.executablePath,
    env: binary.env,
    headless: true,
    args: CHROMIUM_FLAGS,
  });
}

/** Waits until the page's title is there and nothing is loading any more. */
export async function settled(page: Page): Promise<void> {
  await page.locator("#page-title").first().waitFor();
  // the first render shows "Loading…" until the data is there (a locator, not a function
  // evaluated in the page: the console's Content-Security-Policy forbids eval)
  await page.locator(".loading").first().waitFor({ state: "detached" });
}

/**
 * Captures a page at both widths: a full-page screenshot each, and at 390 px the document
 * must not be wider than the window (tables scroll inside their own box). `path`: the page
 * below /console to open first; null: the page as it is.
 */
export async function capture(page: Page, path: string | null, name: string): Promise<void> {
  for (const size of [WIDE, NARROW]) {
    await page.setViewportSize(size);
    if (path !== null) await page.goto(`${new URL(page.url()).origin}/console${path}`);
    await settled(page);
    await page.screenshot({ path: join(SHOTS, `${name}-${size.width}.png`), fullPage: true });
    if (size === NARROW) {
      const overflow = await page.evaluate(() => {
        // runs in the page; this project's types have no DOM
        const win = globalThis as any;
        return {
          scrollWidth: win.document.documentElement.scrollWidth as number,
          innerWidth: win.innerWidth as number,
        };
      });
      assert.ok(
        overflow.scrollWidth <= overflow.innerWidth,
        `${path ?? name} overflows at 390 px: the document is ${overflow.scrollWidth} px wide`,
      );
    }
  }
  await page.setViewportSize(WIDE);
}
