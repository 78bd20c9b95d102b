/**
 * Screenshots of the pages for the README: docs/screenshots/<page>-<screen>.png (light colour
 * scheme) and <page>-<screen>-dark.png, each page on a desktop (1280×800) and a phone (390×844);
 * the public pages as a visitor sees them, the member pages signed in.
 *
 * It runs the service as an operator would, on a fresh temporary data directory (embedded
 * PGlite): `signals account create` and `signals account password` make a member, then
 * `src/main.ts` starts with the demo feed (synthetic candles, labelled as such on the pages), the
 * member makes a few API calls, signs in in headless Chromium and the pages are photographed.
 * The data directory is removed afterwards.
 *
 * Run: npm run docs:screenshots   (needs /usr/bin/chromium, or CHROMIUM_PATH)
 * To add a page, add a line to PAGES. A page the server does not have (404) is skipped with a
 * message, and its old pictures are left as they are.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { BrowserContextOptions, Page } from "playwright-core";
import { CHROMIUM_PATH, chromiumAvailable, launchChromium } from "../test/support/browser.ts";
import { startFakeStripe } from "../test/support/fake-stripe.ts";
import {
  childEnv,
  runCli,
  runCliWithInput,
  type ServerProcess,
  startServerProcess,
} from "../test/support/processes.ts";

// Callbacks given to page.evaluate run in the browser (the project's tsconfig has no DOM lib).
declare const document: { documentElement: { scrollHeight: number } };

interface Shot {
  /** File name stem: docs/screenshots/<name>-desktop.png and -phone.png. */
  readonly name: string;
  readonly path: string;
  /** A selector that exists once the page has finished drawing (a chart has drawn). */
  readonly readyWhen?: string;
  /** Shown as a signed-out visitor sees it (default: signed in as the member). */
  readonly visitor?: boolean;
}

const PAGES: readonly Shot[] = [
  { name: "landing", path: "/", visitor: true },
  { name: "pricing", path: "/pricing", visitor: true },
  { name: "account", path: "/account" },
  { name: "watchlist", path: "/watch", readyWhen: "#watch[data-updated]" },
  { name: "chart", path: "/charts/BTC?tf=1h", readyWhen: "#chart[data-chart-ready]" },
  { name: "track-record", path: "/track-record" },
];

const SCREENS = {
  desktop: { viewport: { width: 1280, height: 800 } },
  phone: { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true },
} satisfies Record<string, BrowserContextOptions & { viewport: { width: number; height: number } }>;
/** A picture shows at most this many screens' height of a long page (the chart page's history is long). */
const MAX_SCREENS = 2;

const OUT_DIR = fileURLToPath(new URL("./screenshots/", import.meta.url));
const EMAIL = "member@example.com";
const PASSWORD = "screenshots only, a long password";
/** API calls the member makes first, so the balance, today's usage and the ledger show some. */
const API_CALLS = 12;

/** Runs a CLI command that must succeed; returns its one JSON line. */
async function cli(args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<Record<string, unknown>> {
  const result =
    input === undefined
      ? await runCli([...args, "--json"], env)
      : await runCliWithInput([...args, "--json"], env, input);
  if (result.code !== 0)
    throw new Error(`signals ${args.join(" ")} failed (${result.code}): ${result.stdout}${result.stderr}`);
  return JSON.parse(result.stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
}

async function signIn(page: Page, baseUrl: string): Promise<void> {
  await page.goto(`${baseUrl}/signin`);
  await page.getByLabel("Email").fill(EMAIL);
  await page.getByLabel("Password").fill(PASSWORD);
  await Promise.all([page.waitForURL(`${baseUrl}/account`), page.getByRole("button", { name: "Sign in" }).click()]);
}

async function main(): Promise<void> {
  if (!chromiumAvailable)
    throw new Error(`no Chromium at ${CHROMIUM_PATH} (install Debian's chromium, or set CHROMIUM_PATH)`);
  const dataDir = mkdtempSync(path.join(tmpdir(), "signals-screenshots-"));
  // Payments on, against the local fake Stripe (its Prices: USD 49.00 and 29.00 a month), so the
  // pricing and account pages show what a selling server shows; no request leaves the machine.
  const stripe = await startFakeStripe();
  const env = childEnv({
    DATA_DIR: dataDir,
    DEMO_FEED: "true",
    DEMO_ACCOUNT: "false",
    PORT: "0",
    INTERNAL_PORT: "0",
    LOG_LEVEL: "info",
    ...stripe.env(),
  });
  let server: ServerProcess | null = null;
  const browser = await launchChromium();
  try {
    const created = await cli(["account", "create", "--email", EMAIL, "--plan", "node"], env);
    await cli(["account", "password", "--account", String(created.account_id)], env, `${PASSWORD}\n`);
    server = await startServerProcess(env, 120_000);
    for (let i = 0; i < API_CALLS; i++) {
      const res = await fetch(`${server.baseUrl}/api/v1/signals?symbols=BTC,ETH&tf=1h`, {
        headers: { "x-api-key": String(created.api_key) },
      });
      if (res.status !== 200) throw new Error(`API call answered ${res.status}: ${await res.text()}`);
    }
    mkdirSync(OUT_DIR, { recursive: true });
    const skipped = new Set<string>();
    for (const [screen, options] of Object.entries(SCREENS))
      for (const scheme of ["light", "dark"] as const) {
        const context = await browser.newContext({ ...options, colorScheme: scheme });
        const visitorContext = await browser.newContext({ ...options, colorScheme: scheme });
        const member = await context.newPage();
        const visitor = await visitorContext.newPage();
        await signIn(member, server.baseUrl);
        for (const shot of PAGES) {
          const page = shot.visitor ? visitor : member;
          const response = await page.goto(`${server.baseUrl}${shot.path}`);
          if (response?.status() === 404) {
            if (!skipped.has(shot.path))
              console.warn(`skipped ${shot.path}: the server answers 404 (this page does not exist on this version)`);
            skipped.add(shot.path);
            continue;
          }
          if (response?.status() !== 200) throw new Error(`${shot.path} answered ${response?.status()}`);
          if (shot.readyWhen) await page.waitForSelector(shot.readyWhen);
          const file = path.join(OUT_DIR, `${shot.name}-${screen}${scheme === "dark" ? "-dark" : ""}.png`);
          const height = Math.min(
            await page.evaluate(() => document.documentElement.scrollHeight),
            options.viewport.height * MAX_SCREENS,
          );
          await page.screenshot({
            path: file,
            fullPage: true,
            clip: { x: 0, y: 0, width: options.viewport.width, height },
          });
          console.log(`wrote ${path.relative(process.cwd(), file)}`);
        }
        await context.close();
        await visitorContext.close();
      }
  } finally {
    await browser.close();
    await server?.stop();
    await stripe.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
