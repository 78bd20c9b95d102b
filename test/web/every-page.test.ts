/**
 * Every web page in real headless Chromium, once in the light colour scheme and once in the dark
 * one (the browser's prefers-color-scheme, as a system setting sets it), with every request to
 * another origin than the server's cut off:
 * - axe-core finds no serious or critical violation (contrast among them) in either scheme;
 * - the scheme is really applied (the page background, and the chart's own canvas, follow it);
 * - the page needs nothing beyond the server: no request leaves for another origin, none fails,
 *   and the console shows no error.
 * The pages cover each layout state a member meets: notices (ok, warn, error), forms, tables,
 * the billing card (payments on, through the local fake Stripe), the one-time key page and its
 * "already shown" answer, message pages (an invalid link, payments unavailable) and the chart.
 * Each page is opened in both schemes at once, each scheme with a member of its own (the key
 * pages change what the member's next visit shows): one browser renders and scans the one while
 * the server answers the other.
 */
import { AxeBuilder } from "@axe-core/playwright";
import { pino } from "pino";
import type { Browser, BrowserContext, Page, Response } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { createPasswordLink } from "../../src/accounts/sign-in/password-links.ts";
import { createSession } from "../../src/accounts/sign-in/sessions.ts";
import { startDemoFeed } from "../../src/market/demo-feed.ts";
import { SESSION_COOKIE } from "../../src/web/page-kit.ts";
import { chromiumAvailable, launchChromium } from "../support/browser.ts";
import { type FakeStripe, startFakeStripe } from "../support/fake-stripe.ts";
import { createTestClock, startTestServer, type TestServer } from "../support/test-server.ts";

// Callbacks given to page.evaluate run in the browser (the project's tsconfig has no DOM lib).
declare const document: any;
declare const getComputedStyle: any;

const EMAIL = "scheme.member@example.test";
const PASSWORD = "a long and correct password";
const SCHEMES = ["light", "dark"] as const;
type Scheme = (typeof SCHEMES)[number];
/** The page background of each scheme (app.css --bg). */
const BACKGROUND: Record<Scheme, string> = { light: "rgb(255, 255, 255)", dark: "rgb(18, 20, 24)" };

/** A browser context in one scheme, and what went wrong in it since it was last looked at. */
interface SchemeContext {
  readonly context: BrowserContext;
  readonly problems: string[];
}

/** One scheme's signed-out visitor and signed-in member, each with a page of its own. */
interface SchemeBrowsing {
  readonly visitor: SchemeContext;
  readonly member: SchemeContext;
  readonly pages: { readonly visitor: Page; readonly member: Page };
}

/** The most frequent colour of the chart's largest canvas (the price pane): its background. */
function canvasBackground(page: Page): Promise<string> {
  return page.$$eval("#chart canvas", (canvases) => {
    const largest = (canvases as any[]).reduce((a, b) => (b.width * b.height > a.width * a.height ? b : a));
    const pixels = largest.getContext("2d").getImageData(0, 0, largest.width, largest.height).data;
    const counts = new Map<string, number>();
    for (let i = 0; i < pixels.length; i += 4) {
      const key = `rgb(${pixels[i]}, ${pixels[i + 1]}, ${pixels[i + 2]})`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts].sort((a, b) => b[1] - a[1])[0]![0];
  });
}

/** One page to check: how to reach it (a visit may press buttons) and the status it answers with. */
interface Visit {
  readonly name: string;
  /** Opened with the member's session, or as a signed-out visitor. */
  readonly member: boolean;
  readonly status: number;
  /** Calls to the fake Stripe that fail (an outage) while one scheme opens the page. */
  readonly stripeFailures?: number;
  /**
   * The visit checks a password: the schemes take turns, since the server refuses a second check from an
   * address that has one in flight (429).
   */
  readonly checksPassword?: boolean;
  open(page: Page): Promise<Response | null>;
}

describe.skipIf(!chromiumAvailable)("every page in light and dark, with no network beyond the server", () => {
  let stripe: FakeStripe;
  let server: TestServer;
  let browser: Browser;
  /** Each scheme's member (the first one also has the email the refused sign-in uses). */
  const memberIds = {} as Record<Scheme, number>;
  let setupToken: string;
  let stopDemoFeed = () => {};

  beforeAll(async () => {
    stripe = await startFakeStripe();
    // An SMTP address (never used here: no mail is asked for) so the "Forgot password?" pages exist.
    server = await startTestServer({
      env: { ...stripe.env(), SMTP_URL: "smtp://127.0.0.1:9", MAIL_FROM: "Signals <no-reply@example.test>" },
      feed: true,
      clock: createTestClock(Date.now()),
    });
    // The demo feed's synthetic candles and their signal events: a chart with markers and levels.
    // Its hourly tick never comes during the test.
    stopDemoFeed = await startDemoFeed(server.feed!, server.clock, pino({ level: "silent" }), 3_600_000);
    for (const scheme of SCHEMES) {
      const account = await server.account({ email: scheme === SCHEMES[0] ? EMAIL : `${scheme}.${EMAIL}` });
      memberIds[scheme] = account.accountId;
      await setMemberPassword(server.db.handle, account.accountId, PASSWORD, server.config.passwordHashCost);
      // A few paid calls, so the ledger table has rows.
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${server.baseUrl}/api/v1/signals?symbols=BTC&tf=1h`, {
          headers: { "x-api-key": account.apiKey },
        });
        expect(res.status).toBe(200);
      }
    }
    const other = await server.account({ email: "link.member@example.test" });
    setupToken = (await createPasswordLink(server.db.handle, other.accountId, "setup", server.clock())).token;
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    stopDemoFeed();
    await browser?.close();
    await server?.close();
    await stripe?.close();
  });

  const goto = (path: string) => (page: Page) => page.goto(`${server.baseUrl}${path}`);
  /** Clicks a button and answers with the response of the navigation it starts (the page after any redirect). */
  const press = (path: string, button: string, expectedUrl: RegExp) => async (page: Page) => {
    await page.goto(`${server.baseUrl}${path}`);
    const [response] = await Promise.all([
      page.waitForResponse(
        (r) =>
          expectedUrl.test(r.url()) && r.request().isNavigationRequest() && !(r.status() >= 300 && r.status() < 400),
      ),
      page.getByRole("button", { name: button }).click(),
    ]);
    await page.waitForLoadState("load");
    return response;
  };

  const visits: Visit[] = [
    { name: "landing", member: false, status: 200, open: goto("/") },
    { name: "landing, signed in", member: true, status: 200, open: goto("/") },
    { name: "pricing", member: false, status: 200, open: goto("/pricing") },
    { name: "getting started", member: false, status: 200, open: goto("/getting-started") },
    {
      name: "watchlist",
      member: true,
      status: 200,
      async open(page) {
        const response = await page.goto(`${server.baseUrl}/watch`);
        // The live rows have arrived over the stream (and replaced the server-rendered ones).
        await page.waitForSelector("#watch[data-updated]");
        return response;
      },
    },
    { name: "sign in", member: false, status: 200, open: goto("/signin") },
    { name: "sign in, signed out notice", member: false, status: 200, open: goto("/signin?signed-out") },
    {
      name: "sign in refused",
      member: false,
      status: 401,
      checksPassword: true,
      async open(page) {
        await page.goto(`${server.baseUrl}/signin`);
        await page.getByLabel("Email").fill(EMAIL);
        await page.getByLabel("Password").fill("not the password at all");
        const [response] = await Promise.all([
          page.waitForResponse((r) => r.request().method() === "POST"),
          page.getByRole("button", { name: "Sign in" }).click(),
        ]);
        await page.waitForLoadState("load");
        return response;
      },
    },
    { name: "sign up", member: false, status: 200, open: goto("/signup") },
    {
      name: "set a password",
      member: false,
      status: 200,
      open: (page) => page.goto(`${server.baseUrl}/setup-password?token=${setupToken}`),
    },
    { name: "invalid password link", member: false, status: 404, open: goto("/setup-password?token=not-a-token") },
    { name: "forgot password", member: false, status: 200, open: goto("/forgot-password") },
    { name: "status", member: false, status: 200, open: goto("/status") },
    { name: "status, signed in", member: true, status: 200, open: goto("/status") },
    { name: "track record", member: false, status: 200, open: goto("/track-record") },
    { name: "account", member: true, status: 200, open: goto("/account") },
    { name: "account, payment notice", member: true, status: 200, open: goto("/account?checkout=success") },
    { name: "change password", member: true, status: 200, open: goto("/account/password") },
    { name: "key confirmation", member: true, status: 200, open: goto("/account/key") },
    {
      name: "new key, shown once",
      member: true,
      status: 200,
      open: press("/account/key", "Regenerate the key now", /\/account\/key\/new$/),
    },
    { name: "new key, already shown", member: true, status: 410, open: goto("/account/key/new") },
    {
      name: "payments unavailable",
      member: true,
      status: 502,
      // Both tries of the Stripe client (it retries once) meet an outage of the fake.
      stripeFailures: 2,
      open: press("/account", "Buy 5,000 Tokens", /\/account\/buy$/),
    },
    { name: "chart index", member: true, status: 200, open: goto("/charts") },
    {
      name: "chart, its canvas in the page's scheme",
      member: true,
      status: 200,
      async open(page) {
        const response = await page.goto(`${server.baseUrl}/charts/BTC?tf=1h`);
        await page.waitForSelector("#chart[data-chart-ready]");
        // The chart draws in the page's scheme (the body's background is the scheme's, checked after this).
        expect(await canvasBackground(page)).toBe(
          await page.evaluate(() => getComputedStyle(document.body).backgroundColor),
        );
        return response;
      },
    },
  ];

  /** A context in `scheme` that lets only the server's own origin through and records what else happened. */
  async function schemeContext(scheme: Scheme, member: boolean): Promise<SchemeContext> {
    const context: BrowserContext = await browser.newContext({
      colorScheme: scheme,
      viewport: { width: 1280, height: 900 },
    });
    if (member) {
      const accountId = memberIds[scheme];
      const { token } = await createSession(server.db.handle, accountId, server.clock(), server.config.sessionTtlMs);
      await context.addCookies([
        { name: SESSION_COOKIE, value: token, url: server.baseUrl, httpOnly: true, sameSite: "Strict" },
      ]);
    }
    const origin = new URL(server.baseUrl).origin;
    const problems: string[] = [];
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith("data:") || new URL(url).origin === origin) return route.continue();
      problems.push(`blocked ${url}`);
      return route.abort("blockedbyclient");
    });
    context.on("requestfailed", (request) => {
      // The watchlist's event stream never ends by itself: leaving the page cuts it (as it should).
      if (new URL(request.url()).pathname === "/watch/stream" && request.failure()?.errorText === "net::ERR_ABORTED")
        return;
      problems.push(`failed ${request.url()} ${request.failure()?.errorText}`);
    });
    context.on("console", (message) => {
      if (message.type() === "error") problems.push(`console ${message.text()} at ${message.location().url}`);
    });
    context.on("weberror", (error) => problems.push(`page error ${error.error().message}`));
    return { context, problems };
  }

  /** Opens `visit` in `scheme` and checks the page: status, scheme, axe, and nothing beyond the server. */
  async function checkVisit(browsing: SchemeBrowsing, scheme: Scheme, visit: Visit): Promise<void> {
    const page = visit.member ? browsing.pages.member : browsing.pages.visitor;
    const response = await visit.open(page);
    expect(response?.status(), scheme).toBe(visit.status);
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), scheme).toBe(BACKGROUND[scheme]);
    // Legacy mode runs axe in the page itself (same-origin frames included). The default mode also
    // opens a blank page and injects axe again there, to merge results from cross-origin frames,
    // which cannot load here: the same rules and findings for about a quarter of the time.
    const results = await new AxeBuilder({ page }).setLegacyMode().analyze();
    // axe ran its rules (a page that failed to load would give it nothing to check).
    expect(results.passes.length, scheme).toBeGreaterThan(10);
    const serious = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    expect(
      serious.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`),
      scheme,
    ).toEqual([]);
    // Chromium notes a document's own error status on the console (this page's, checked above).
    const ownStatus = `console Failed to load resource: the server responded with a status of ${visit.status} `;
    const problems = [...browsing.visitor.problems.splice(0), ...browsing.member.problems.splice(0)];
    expect(
      problems.filter((p) => !(p.startsWith(ownStatus) && p.endsWith(` at ${response!.url()}`))),
      scheme,
    ).toEqual([]);
  }

  describe("both schemes at once: no serious axe violation, no request beyond the server, no console error", () => {
    const browsing = {} as Record<Scheme, SchemeBrowsing>;
    beforeAll(async () => {
      for (const scheme of SCHEMES) {
        const visitor = await schemeContext(scheme, false);
        const member = await schemeContext(scheme, true);
        browsing[scheme] = {
          visitor,
          member,
          pages: { visitor: await visitor.context.newPage(), member: await member.context.newPage() },
        };
      }
    });
    afterAll(async () => {
      for (const scheme of SCHEMES) {
        await browsing[scheme]?.visitor.context.close();
        await browsing[scheme]?.member.context.close();
      }
    });

    // In order: "already shown" follows "shown once".
    for (const visit of visits) {
      it(visit.name, async () => {
        if (visit.stripeFailures) stripe.fail(visit.stripeFailures * SCHEMES.length);
        const check = (scheme: Scheme) => checkVisit(browsing[scheme], scheme, visit);
        if (visit.checksPassword) for (const scheme of SCHEMES) await check(scheme);
        else await Promise.all(SCHEMES.map(check));
      });
    }
  });
});
