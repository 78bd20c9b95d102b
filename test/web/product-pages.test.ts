/**
 * The product's public pages and the way from "what is this?" to a working key, in real
 * headless Chromium against the local fake Stripe:
 * - landing → pricing → sign-up → the mailed link (a real SMTP server on loopback) → Confirm →
 *   sign in → Subscribe (fake Checkout, then Stripe's signed invoice.paid) → Create key → a paid
 *   call made here with the exact curl line the page showed; before the link, the account page
 *   asks for the confirmation and offers no Subscribe, Buy or key;
 * - the live watchlist changes on a pushed close, before its stream's heartbeat would have read
 *   the readings again, equal to the API's answer then;
 * - every page has no sideways scroll at 390 px and at 1280 px;
 * - the landing page's HTML is under 50 KB without any script, and its size and time are logged.
 * (every-page.test.ts checks the same pages for axe, other origins and console errors.)
 */
import { pino } from "pino";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSession } from "../../src/accounts/sign-in/sessions.ts";
import { saveWatchlist } from "../../src/accounts/watchlist.ts";
import { startDemoFeed } from "../../src/market/demo-feed.ts";
import { SESSION_COOKIE } from "../../src/web/page-kit.ts";
import { WATCH_HEARTBEAT_MS } from "../../src/web/routes/watch.ts";
import { chromiumAvailable, eachConcurrently, launchChromium } from "../support/browser.ts";
import { type FakeSmtp, startFakeSmtp } from "../support/fake-smtp.ts";
import {
  deliver,
  type FakeStripe,
  PRICE_NODE,
  paidInvoice,
  signedEvent,
  startFakeStripe,
} from "../support/fake-stripe.ts";
import { structureBreak } from "../support/structure-break.ts";
import { createTestClock, startTestServer, type TestServer } from "../support/test-server.ts";

// Callbacks given to page.evaluate run in the browser (the project's tsconfig has no DOM lib).
declare const document: any;

const H = 3_600_000;
const DAY_S = 24 * 3600;
const WATCH_COIN = "WPX";
const PASSWORD = "a long and correct password";

describe.skipIf(!chromiumAvailable)("the product pages in a browser", () => {
  let stripe: FakeStripe;
  let smtp: FakeSmtp;
  let server: TestServer;
  let browser: Browser;
  let stopDemoFeed = () => {};
  const now = Date.now();
  const { history, breaker } = structureBreak(Math.floor(now / H) * H - 62 * H);

  beforeAll(async () => {
    stripe = await startFakeStripe();
    smtp = await startFakeSmtp();
    server = await startTestServer({
      env: { ...stripe.env(), SMTP_URL: smtp.url, MAIL_FROM: "Signals <no-reply@example.test>" },
      feed: true,
      clock: createTestClock(now),
    });
    stopDemoFeed = await startDemoFeed(server.feed!, server.clock, pino({ level: "silent" }), 3_600_000);
    await server.feed!.ingest(history.map((c) => ({ symbol: WATCH_COIN, tf: "1h", ...c, closed: true })));
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    stopDemoFeed();
    await browser?.close();
    await server?.close();
    await stripe?.close();
    await smtp?.close();
  });

  /** A context that lets only the server through and fails the test on any other request or console error. */
  async function strictContext(width = 1280, height = 900): Promise<{ context: BrowserContext; problems: string[] }> {
    const context = await browser.newContext({ viewport: { width, height } });
    const origin = new URL(server.baseUrl).origin;
    const stripeOrigin = new URL(stripe.apiBase).origin;
    const problems: string[] = [];
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith("data:") || new URL(url).origin === origin || new URL(url).origin === stripeOrigin)
        return route.continue();
      problems.push(`blocked ${url}`);
      return route.abort("blockedbyclient");
    });
    context.on("console", (m) => {
      if (m.type() === "error") problems.push(`console ${m.text()}`);
    });
    return { context, problems };
  }

  async function memberContext(accountId: number, width: number, height = 900): Promise<BrowserContext> {
    const context = await browser.newContext({ viewport: { width, height } });
    const { token } = await createSession(server.db.handle, accountId, server.clock(), server.config.sessionTtlMs);
    await context.addCookies([
      { name: SESSION_COOKIE, value: token, url: server.baseUrl, httpOnly: true, sameSite: "Strict" },
    ]);
    return context;
  }

  /** Signs in on the page's /signin form and waits for the account page. */
  async function signIn(page: Page, email: string): Promise<void> {
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(PASSWORD);
    await Promise.all([
      page.waitForURL(`${server.baseUrl}/account`),
      page.getByRole("button", { name: "Sign in" }).click(),
    ]);
  }

  it(
    "landing → pricing → sign-up → mailed link → sign in → subscribe " +
      "→ key → the page's curl line makes a paid call",
    async () => {
      const { context, problems } = await strictContext();
      const page = await context.newPage();
      await page.goto(`${server.baseUrl}/`);
      // The example is the API's JSON, and its signal came into force more than a day ago (an ended one).
      const example = JSON.parse((await page.locator("#example-answer").textContent())!) as {
        ts: number;
        signals: Array<{ ok: boolean; confirmed?: boolean }>;
      };
      expect(example.signals[0]).toMatchObject({ ok: true, confirmed: true });
      expect(example.ts).toBeLessThanOrEqual(server.clock() - 24 * H);
      await Promise.all([
        page.waitForURL(`${server.baseUrl}/pricing`),
        page.getByRole("link", { name: "See pricing" }).click(),
      ]);
      // The fake Stripe's node Price is 4900 usd a month; the pack catalogue is the default one.
      expect(await page.locator('[data-plan="node"] [data-field="price"]').textContent()).toBe("USD 49.00 / month");
      expect(await page.locator("#packs").textContent()).toContain("5,000 Tokens for USD 25.00");
      expect(await page.locator("#example-share").textContent()).toBe("86%");

      await Promise.all([page.waitForURL(/\/signup$/), page.getByRole("link", { name: "Sign up for Node" }).click()]);
      const email = `funnel-${process.pid}@example.test`;
      await page.getByLabel("Email").fill(email);
      await page.locator("#password").fill(PASSWORD);
      await page.getByLabel("Repeat the password").fill(PASSWORD);
      await page.getByRole("button", { name: "Create account" }).click();
      await page.getByRole("heading", { name: "Check your mail" }).waitFor();
      const mail = await smtp.mailTo(email);

      // Signed in before confirming: asked to confirm, offered a new link, and nothing to pay or a key.
      await page.goto(`${server.baseUrl}/signin`);
      await signIn(page, email);
      expect(await page.getByText("Confirm your email address.").count()).toBe(1);
      expect(await page.getByRole("button", { name: "Mail the link again" }).count()).toBe(1);
      expect(await page.getByRole("button", { name: /^(Subscribe|Buy)/ }).count()).toBe(0);
      expect(await page.getByRole("link", { name: /Create key|Regenerate key/ }).count()).toBe(0);
      // (Asked with the context's cookies outside the page: a 403 document would log a console error.)
      expect((await page.request.get(`${server.baseUrl}/account/key`, { maxRedirects: 0 })).status()).toBe(403);
      await Promise.all([
        page.waitForURL(/\/signin\?signed-out$/),
        page.getByRole("button", { name: "Sign out", exact: true }).click(),
      ]);

      // The mailed link opens a page with one button; confirmed, the sign-in page says so.
      const link = /\/verify-email\?token=[A-Za-z0-9_-]+/.exec(mail.text ?? "")?.[0];
      expect(link).toBeDefined();
      await page.goto(`${server.baseUrl}${link}`);
      await Promise.all([
        page.waitForURL(/\/signin\?email-verified$/),
        page.getByRole("button", { name: "Confirm", exact: true }).click(),
      ]);
      expect(await page.getByText("Your email address is confirmed.").count()).toBe(1);
      await signIn(page, email);
      expect(await page.getByText("Confirm your email address.").count()).toBe(0);

      // A free plan: told what it can do, offered the plan with its price, never Buy Tokens or Create key.
      expect(await page.locator("#upgrade").count()).toBe(1);
      expect(await page.getByRole("button", { name: /^Buy / }).count()).toBe(0);
      expect(await page.getByRole("link", { name: /Create key/ }).count()).toBe(0);
      const subscribe = page.getByRole("button", { name: "Subscribe: Node · USD 49.00 / month" });
      await Promise.all([page.waitForURL(/\/c\/pay\/cs_test_/), subscribe.click()]);
      const session = stripe.checkoutSessions.at(-1)!;
      const start = Math.floor(server.clock() / 1000);
      const invoice = paidInvoice({
        customer: session.customer!,
        subscription: "sub_funnel",
        price: PRICE_NODE,
        periodStartS: start,
        periodEndS: start + 30 * DAY_S,
        paidAtS: start,
        billingReason: "subscription_create",
      });
      expect(
        (await deliver(server.baseUrl, signedEvent("invoice.paid", invoice, { timestampS: start, createdS: start })))
          .status,
      ).toBe(200);

      await page.goto(`${server.baseUrl}/account`);
      expect(await page.locator("#upgrade").count()).toBe(0);
      await Promise.all([page.waitForURL(/\/account\/key$/), page.getByRole("link", { name: "Create key…" }).click()]);
      await Promise.all([
        page.waitForURL(/\/account\/key\/new$/),
        page.getByRole("button", { name: "Create the key now" }).click(),
      ]);
      const curl = (await page.locator("#first-call").textContent())!;
      const [, key, url] = /^curl -s -H 'x-api-key: (\S+)' '(\S+)'$/.exec(curl)!;
      expect(key).toBe(await page.locator("#new-key").textContent());
      expect(url!.startsWith(server.config.publicBaseUrl)).toBe(true);
      expect(new URL(url!).pathname + new URL(url!).search).toBe("/api/v1/signals?symbols=BTC,ETH&tf=4h");
      const res = await fetch(`${server.baseUrl}${new URL(url!).pathname}${new URL(url!).search}`, {
        headers: { "x-api-key": key! },
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { ok: boolean; credits_left: number };
      expect(body.ok).toBe(true);
      expect(body.credits_left).toBe(server.config.limits.monthlyGrant - 1);
      expect(problems).toEqual([]);
      await context.close();
    },
  );

  it("the watchlist changes on a pushed close, not at its next heartbeat, equal to the API's answer then", async () => {
    const member = await server.account({ plan: "node" });
    await saveWatchlist(
      server.db.handle,
      member.accountId,
      { symbols: [WATCH_COIN, "BTC"], timeframes: ["1h"] },
      server.clock(),
    );
    const context = await memberContext(member.accountId, 1280);
    const page = await context.newPage();
    // The stream reads the readings when it opens, then when the feed wakes it, and otherwise once
    // a heartbeat (WATCH_HEARTBEAT_MS) has passed: a change seen before `heartbeat` came from the wake-up.
    const heartbeat = Date.now() + WATCH_HEARTBEAT_MS;
    await page.goto(`${server.baseUrl}/watch`);
    const cell = page.locator(`tr[data-cell="${WATCH_COIN}/1h"]`);
    // The stream's first event has replaced the rows.
    await page.waitForSelector("#watch[data-updated]");
    expect(await cell.locator('[data-field="signal"]').getAttribute("data-value")).not.toBe("LONG");

    await server.feed!.ingest([{ symbol: WATCH_COIN, tf: "1h", ...breaker, closed: true }]);
    await page.waitForSelector(`tr[data-cell="${WATCH_COIN}/1h"] [data-field="price"][data-value="${breaker.close}"]`, {
      timeout: Math.max(1, heartbeat - Date.now()),
    });
    expect(Date.now()).toBeLessThan(heartbeat);

    const shown = await cell.evaluate((row: any) =>
      Object.fromEntries(
        [...row.querySelectorAll("[data-field]")].map((td: any) => [td.dataset.field, td.dataset.value]),
      ),
    );
    const api = await fetch(`${server.baseUrl}/api/v1/signals?symbols=${WATCH_COIN}&tf=1h`, {
      headers: { "x-api-key": member.apiKey },
    });
    const entry = ((await api.json()) as { signals: Record<string, unknown>[] }).signals[0]!;
    expect(shown).toMatchObject({
      signal: entry.signal,
      confirmed: String(entry.confirmed),
      defense: entry.defense === null ? "null" : String(entry.defense),
      arming: JSON.stringify(entry.arming ?? null),
      atr_pct: String(entry.atr_pct),
      price: String(entry.price),
    });
    expect(shown.signal).toBe("LONG");
    await context.close();
  });

  const PAGES = [
    "/",
    "/pricing",
    "/getting-started",
    "/signin",
    "/signup",
    "/status",
    "/track-record",
    "/account",
    "/watch",
    "/charts",
    "/charts/BTC?tf=1h",
  ];
  for (const width of [390, 1280]) {
    it(`no page scrolls sideways at ${width} px`, async () => {
      const member = await server.account({ plan: "node" });
      const context = await memberContext(member.accountId, width, 844);
      const visitor = await browser.newContext({ viewport: { width, height: 844 } });
      const wide: string[] = [];
      // Every page is only read: four load at a time.
      const visits = PAGES.flatMap((path) => [context, visitor].map((ctx) => ({ path, ctx })));
      await eachConcurrently(visits, 4, async ({ path, ctx }) => {
        const page = await ctx.newPage();
        await page.goto(`${server.baseUrl}${path}`);
        const { scroll, client } = await page.evaluate(() => ({
          scroll: document.documentElement.scrollWidth,
          client: document.documentElement.clientWidth,
        }));
        if (scroll > client) wide.push(`${path} (${ctx === context ? "member" : "visitor"}): ${scroll} > ${client}`);
        await page.close();
      });
      wide.sort();
      await context.close();
      await visitor.close();
      expect(wide).toEqual([]);
    });
  }

  it("the landing page is under 50 KB of HTML and needs no script", async () => {
    const started = performance.now();
    const res = await fetch(`${server.baseUrl}/`);
    const text = await res.text();
    const ms = performance.now() - started;
    const bytes = Buffer.byteLength(text);
    console.log(`landing page: ${bytes} bytes of HTML, ${ms.toFixed(1)} ms`);
    expect(res.status).toBe(200);
    expect(bytes).toBeLessThan(50 * 1024);
    expect(text).not.toMatch(/<script(?![^>]*type="application\/json")/);
    expect(text).not.toMatch(/(src|href)="https?:\/\//);
  });
});
