/**
 * Real headless Chromium for the web page tests: Debian's `chromium` package driven through
 * playwright-core (no browser download). Suites skip cleanly when it is not installed;
 * .ci/run installs it.
 */
import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Browser, chromium } from "playwright-core";

/** Where Debian puts the browser (CHROMIUM_PATH overrides, e.g. to check that suites skip). */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** True when the browser is installed. */
export const chromiumAvailable = existsSync(CHROMIUM_PATH);

/** test-results/ at the project root (gitignored): screenshots of a run land here. */
export const RESULTS_DIR = fileURLToPath(new URL("../../test-results/", import.meta.url));

/** Launches headless Chromium with the flags this machine needs (no sandbox as root, no GPU, no network chatter). */
export function launchChromium(): Promise<Browser> {
  mkdirSync(RESULTS_DIR, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
}

/**
 * Runs `work` for every item, at most `limit` at a time: pages that do not depend on each other
 * load side by side, so one page's network and script waits overlap another's rendering.
 */
export async function eachConcurrently<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}
