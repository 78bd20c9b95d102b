/**
 * The web pages in real headless Chromium (Debian's package through playwright-core), against a
 * real server on a fresh database with real BTC candles imported through the market feed:
 * sign in with the keyboard, watch the balance drop after a REST call, regenerate the key and
 * see the new one exactly once (the old one gets 401 at once), and open the chart page, which
 * must draw a non-empty chart and show the track record computed from the stored events.
 * Along the way: no request leaves the server, no CSP violation, no full key outside the
 * one-time page, and no horizontal scrolling on a phone. Screenshots go to test-results/.
 *
 * The tests run in order and share one browser, one server and one member.
 */
import path from "node:path";
import { sql } from "drizzle-orm";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { nextMytMonthStart } from "../../src/clock.ts";
import { readCandleFile } from "../../src/market/csv-candles.ts";
import { formatMyt } from "../../src/web/format.ts";
import { chromiumAvailable, eachConcurrently, launchChromium, RESULTS_DIR } from "../support/browser.ts";
import { REAL_CANDLES_DIR, realCandlesAvailable } from "../support/real-candles.ts";
import { usingPostgres } from "../support/test-db.ts";
import { createTestClock, startTestServer, type TestServer } from "../support/test-server.ts";

// Callbacks given to page.evaluate run in the browser. The project's tsconfig has no DOM lib
// (it clashes with Node's types), so the few browser globals they use are declared loosely.
declare const document: any;
declare const window: any;
declare const getComputedStyle: any;

const EMAIL = "ana.member@example.test";
const PASSWORD = "a long and correct password";
const FULL_KEY = /sig_live_[0-9A-Za-z]{32,36}/g;
const DB_SUFFIX = usingPostgres ? "postgres" : "pglite";

interface SeenResponse {
  url: string;
  method: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

describe.skipIf(!chromiumAvailable)("web pages in headless Chromium", () => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let apiKey: string;
  let newKey = "";
  /** The fields of the confirmation form that made newKey (to send it again). */
  let confirmForm: Record<string, string> = {};
  const requests: string[] = [];
  const responses: Array<Promise<SeenResponse>> = [];

  beforeAll(async () => {
    // The wall clock, so the ledger's database timestamps and the page's times agree in the screenshots.
    server = await startTestServer({ feed: true, clock: createTestClock(Date.now()) });
    const account = await server.account({ email: EMAIL });
    apiKey = account.apiKey;
    await setMemberPassword(server.db.handle, account.accountId, PASSWORD, server.config.passwordHashCost);
    // Somebody else, whose data must never show up on Ana's pages.
    const other = await server.account({ email: "bob.other@example.test" });
    await setMemberPassword(
      server.db.handle,
      other.accountId,
      "bob's own long password",
      server.config.passwordHashCost,
    );
    if (realCandlesAvailable) {
      const summary = await server.feed!.ingest(readCandleFile(`${REAL_CANDLES_DIR}BTCUSDT_1h.csv.gz`, "BTC", "1h"));
      expect(summary.rejected).toBe(0);
    }
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.baseUrl });
    await context.addInitScript(() => {
      const w = window as unknown as { cspViolations: string[] };
      w.cspViolations = [];
      document.addEventListener("securitypolicyviolation", (e: { violatedDirective: string; blockedURI: string }) =>
        w.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`),
      );
    });
    context.on("request", (request) => requests.push(request.url()));
    context.on("response", (response) => {
      responses.push(
        (async () => ({
          url: response.url(),
          method: response.request().method(),
          status: response.status(),
          headers: response.headers(),
          body: response.status() >= 300 && response.status() < 400 ? "" : await response.text().catch(() => ""),
        }))(),
      );
    });
    page = await context.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  async function focusedId(): Promise<string | undefined> {
    return page.evaluate(() => document.activeElement?.id);
  }

  async function cspViolations(p: Page = page): Promise<string[]> {
    return p.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations);
  }

  async function callRest(key: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${server.baseUrl}/api/v1/signals?symbols=BTC&tf=4h`, { headers: { "x-api-key": key } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it("sends a signed-out visitor to the sign-in page, and signs in with the keyboard alone", async () => {
    await page.goto(`${server.baseUrl}/account`);
    expect(new URL(page.url()).pathname).toBe("/signin");
    // Chromium applies `autofocus` at a rendering update after the load event that `goto` waits
    // for: on a loaded machine the check can come first (CI saw '' here), so it waits for the focus.
    await expect.poll(focusedId, { timeout: 30_000 }).toBe("email");
    await page.keyboard.type(EMAIL);
    await page.keyboard.press("Tab");
    expect(await focusedId()).toBe("password");
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press("Enter");
    await page.waitForURL(`${server.baseUrl}/account`);
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Your account");
    expect(await page.locator("#tokens-left").textContent()).toBe("10,000");
    expect(await page.locator("#calls-today").textContent()).toBe("0");
    const nextGrant = formatMyt(nextMytMonthStart(server.clock()));
    expect(nextGrant).toMatch(/^1 [A-Z][a-z]{2} \d{4} 00:00 MYT$/);
    expect(await page.locator("#next-grant").textContent()).toContain(nextGrant);
    expect(await page.locator("#usage-reset").textContent()).toContain("tomorrow 00:00 MYT");
    expect(await page.content()).not.toContain("bob.other@example.test");
  });

  it("gives every form field a label", async () => {
    const unlabelled = await page.$$eval("input:not([type=hidden]):not([hidden]), meter", (elements) =>
      elements
        .filter(
          (el) =>
            (el as { labels: unknown[] | null }).labels === null || (el as { labels: unknown[] }).labels.length === 0,
        )
        .map((el) => el.outerHTML),
    );
    expect(unlabelled).toEqual([]);
  });

  it("links the site's icon from every page, an SVG served by this server (also at /favicon.ico)", async () => {
    const icon = await page.$eval("link[rel=icon]", (link: any) => link.href as string);
    expect(icon).toBe(`${server.baseUrl}/assets/favicon.svg`);
    for (const pathname of ["/signin", "/signup", "/status", "/charts"]) {
      expect(await (await fetch(`${server.baseUrl}${pathname}`)).text(), pathname).toContain(
        '<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">',
      );
    }
    for (const url of [icon, `${server.baseUrl}/favicon.ico`]) {
      const res = await fetch(url);
      expect(res.status, url).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/svg+xml");
      expect(await res.text()).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    }
  });

  it("shows the balance one lower and the call in the ledger after a REST call", async () => {
    const call = await callRest(apiKey);
    expect(call.status).toBe(200);
    expect(call.body.credits_left).toBe(9_999);
    await page.reload();
    expect(await page.locator("#tokens-left").textContent()).toBe("9,999");
    expect(await page.locator("#calls-today").textContent()).toBe("1");
    const newest = await page.locator("#ledger tbody tr").first().textContent();
    expect(newest).toContain("API call");
    expect(newest).toContain("9,999");
  });

  it("regenerates the key after a confirmation and shows the new key exactly once, with a copy button", async () => {
    expect(await page.locator("#masked-key").textContent()).toBe(`${apiKey.slice(0, 13)}${"\u2022".repeat(28)}`);
    await page.getByRole("link", { name: "Regenerate key…" }).click();
    await page.waitForURL(`${server.baseUrl}/account/key`);
    expect(await page.getByRole("alert").textContent()).toContain("stops working at once");
    confirmForm = await page.$$eval("form[action='/account/key'] input[type=hidden]", (inputs) =>
      Object.fromEntries(inputs.map((i: any) => [i.name as string, i.value as string])),
    );
    // POST -> 303 -> GET: the page that shows the key is not the answer to the POST.
    const [posted, response] = await Promise.all([
      page.waitForResponse((r) => r.url() === `${server.baseUrl}/account/key` && r.request().method() === "POST"),
      page.waitForResponse((r) => r.url() === `${server.baseUrl}/account/key/new` && r.request().method() === "GET"),
      page.getByRole("button", { name: "Regenerate the key now" }).click(),
    ]);
    expect(posted.status()).toBe(303);
    expect(response.status()).toBe(200);
    expect(response.headers()["cache-control"]).toBe("no-store");
    newKey = (await page.locator("#new-key").textContent())!.trim();
    expect(newKey).toMatch(/^sig_live_[0-9A-Za-z]{36}$/);
    expect(newKey).not.toBe(apiKey);
    await page.getByRole("button", { name: "Copy key" }).click();
    await page.waitForFunction(() => document.getElementById("copy-status")?.textContent !== "");
    expect(await page.locator("#copy-status").textContent()).toBe("Copied to the clipboard.");
    expect(
      await page.evaluate(() =>
        (navigator as unknown as { clipboard: { readText(): Promise<string> } }).clipboard.readText(),
      ),
    ).toBe(newKey);
    await page.screenshot({ path: path.join(RESULTS_DIR, `new-key-once-${DB_SUFFIX}.png`) });
  });

  it("a reload or Back of the one-time page neither shows the key again nor regenerates it", async () => {
    const activeHashes = async () =>
      (
        await server.db.handle.rows<{ key_hash: string }>(
          sql`SELECT key_hash FROM api_keys WHERE revoked_at IS NULL AND key_hash = encode(sha256(convert_to(${newKey},
            'UTF8')), 'hex')`,
        )
      ).length;
    expect(await activeHashes()).toBe(1);
    const reloaded = await page.reload();
    expect(reloaded!.status()).toBe(410);
    expect(reloaded!.headers()["cache-control"]).toBe("no-store");
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("This key was already shown");
    expect((await page.content()).match(FULL_KEY)).toBeNull();
    // Back to the confirmation page and forward again: GETs only, nothing is regenerated.
    await page.goBack();
    expect(new URL(page.url()).pathname).toBe("/account/key");
    await page.goForward();
    expect(new URL(page.url()).pathname).toBe("/account/key/new");
    expect((await page.content()).match(FULL_KEY)).toBeNull();
    // The same confirmation sent again (a re-sent POST) changes nothing.
    const resent = await context.request.post(`${server.baseUrl}/account/key`, { form: confirmForm, maxRedirects: 0 });
    expect(resent.status()).toBe(409);
    expect((await resent.text()).match(FULL_KEY)).toBeNull();
    expect(await activeHashes()).toBe(1);
    expect((await callRest(newKey)).status).toBe(200);
    await page.goto(`${server.baseUrl}/account`);
    expect(await page.locator("#masked-key").textContent()).toBe(`${newKey.slice(0, 13)}${"\u2022".repeat(28)}`);
  });

  it("refuses the old key with 401 at once, and the new key works", async () => {
    const old = await callRest(apiKey);
    expect(old.status).toBe(401);
    expect(old.body.error).toBe("invalid_api_key");
    const fresh = await callRest(newKey);
    expect(fresh.status).toBe(200);
    expect(fresh.body.credits_left).toBe(9_997);
  });

  it("never shows the new key again: the account page has only its masked prefix", async () => {
    await page.goto(`${server.baseUrl}/account`);
    const html = await page.content();
    expect(html).not.toContain(newKey);
    expect(html.match(FULL_KEY)).toBeNull();
    expect(await page.locator("#masked-key").textContent()).toBe(`${newKey.slice(0, 13)}${"\u2022".repeat(28)}`);
    expect(await page.locator("#tokens-left").textContent()).toBe("9,997");
    // Going back to the one-time page does not bring the key back (no-store, and the record is gone).
    await page.goBack();
    expect(new URL(page.url()).pathname).toBe("/account/key/new");
    expect((await page.content()).match(FULL_KEY)).toBeNull();
    await page.goto(`${server.baseUrl}/account`);
    await page.screenshot({ path: path.join(RESULTS_DIR, `account-page-${DB_SUFFIX}.png`), fullPage: true });
  });

  it("saves alert settings from the account page and explains a refused value", async () => {
    await page.getByLabel("Telegram chat id").fill("not a chat");
    await page.getByLabel("Coins").fill("btc, eth");
    await page.getByRole("checkbox", { name: "4h", exact: true }).check();
    await page.getByRole("button", { name: "Save alert settings" }).click();
    expect(await page.locator("#alerts-error").textContent()).toContain("chat id");
    expect(await page.getByLabel("Coins").inputValue()).toBe("btc, eth");
    await page.getByLabel("Telegram chat id").fill("123456789");
    await page.getByRole("button", { name: "Save alert settings" }).click();
    await page.waitForURL(/\/account\?alerts-saved$/);
    expect(await page.getByRole("status").first().textContent()).toBe("Alert settings saved.");
    // The page shows the chat's last digits only.
    expect(await page.locator("#alerts-h + p").textContent()).toContain(
      "\u2022\u2022\u2022\u20226789 for BTC, ETH on 4h",
    );
  });

  describe.runIf(realCandlesAvailable)("chart page with real BTC candles", () => {
    it("lists BTC on the chart index and draws a non-empty chart with markers and levels", async () => {
      await page.goto(`${server.baseUrl}/charts`);
      await page.getByRole("navigation", { name: "BTC timeframes" }).getByRole("link", { name: "4h" }).click();
      await page.waitForURL(`${server.baseUrl}/charts/BTC?tf=4h`);
      await page.waitForSelector("#chart[data-chart-ready]");
      expect(Number(await page.locator("#chart").getAttribute("data-chart-ready"))).toBe(1500);
      // The candle canvas holds many colours, among them both candle colours.
      const drawn = await page.$$eval("#chart canvas", (canvases) => {
        let best = { colours: 0, long: 0, short: 0, width: 0 };
        for (const canvas of canvases as any[]) {
          const ctx = canvas.getContext("2d");
          if (!ctx || canvas.width < 100 || canvas.height < 100) continue;
          const pixels = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
          const colours = new Set<number>();
          let long = 0;
          let short = 0;
          for (let i = 0; i < pixels.length; i += 4) {
            const [r, g, b] = [pixels[i]!, pixels[i + 1]!, pixels[i + 2]!];
            colours.add((r << 16) | (g << 8) | b);
            if (r === 0x0a && g === 0x6b && b === 0x45) long++;
            if (r === 0xb3 && g === 0x26 && b === 0x1e) short++;
          }
          if (colours.size > best.colours) best = { colours: colours.size, long, short, width: canvas.width };
        }
        return best;
      });
      expect(drawn.colours).toBeGreaterThan(20);
      expect(drawn.long).toBeGreaterThan(500);
      expect(drawn.short).toBeGreaterThan(500);
      const chartData = JSON.parse((await page.locator("#chart-data").textContent())!) as {
        markers: unknown[];
        levels: Record<string, number | null> | null;
      };
      expect(chartData.markers.length).toBeGreaterThan(10);
      expect(chartData.levels).not.toBeNull();
      expect(await page.locator("#levels").textContent()).toContain("MYT");
    });

    it("shows the track record computed from the stored events: one trade per directional event", async () => {
      const [counts] = await server.db.handle.rows<{ directional: number; longs: number }>(
        sql`SELECT count(*) FILTER (WHERE signal <> 'NONE')::int AS directional, count(*)
          FILTER (WHERE signal = 'LONG')::int AS longs
              FROM signal_events WHERE symbol = 'BTC' AND tf = '4h'`,
      );
      expect(counts!.directional).toBeGreaterThan(50);
      const total = page.locator("#track-record tfoot tr td").first();
      expect(Number((await total.textContent())!.replace(/,/g, ""))).toBe(counts!.directional);
      const longRow = page.locator("#track-record tbody tr", { hasText: /^\s*Long\b/ }).first();
      expect(Number((await longRow.locator("td").first().textContent())!.replace(/,/g, ""))).toBe(counts!.longs);
      expect(await page.locator("#track-record tfoot").textContent()).toContain("%");
      expect(Number(await page.locator("#backtest-trades").textContent())).toBeGreaterThan(10);
      expect(await page.locator("#backtest-total").textContent()).toMatch(/^[+\u2212]?\d+\.\d{2}%$/);
      expect(await page.locator("#history tbody tr").count()).toBe(30);
      await page.screenshot({ path: path.join(RESULTS_DIR, `chart-page-full-${DB_SUFFIX}.png`), fullPage: true });
      // The part worth a picture: levels, chart, track record and backtest.
      await page.screenshot({
        path: path.join(RESULTS_DIR, `chart-page-${DB_SUFFIX}.png`),
        fullPage: true,
        clip: { x: 0, y: 0, width: 1280, height: 1560 },
      });
    });

    it("opens the chart signed in from a link on another site (SameSite=Strict cookie)", async () => {
      const other = await context.newPage();
      await other.route("http://elsewhere.test/**", (route) =>
        route.fulfill({
          contentType: "text/html",
          body: `<a id="go" href="${server.baseUrl}/charts/BTC?tf=1d">BTC 1d</a>`,
        }),
      );
      // Request headers, not response bodies: a body read after its page has already moved on
      // (the reload page refreshes at once) is gone, which made this test flaky under load.
      const chartUrl = `${server.baseUrl}/charts/BTC?tf=1d`;
      const navigations: Promise<{ cookie: boolean }>[] = [];
      other.on("request", (r) => {
        if (r.url() === chartUrl && r.isNavigationRequest())
          navigations.push(r.allHeaders().then((h) => ({ cookie: (h.cookie ?? "").includes("sid=") })));
      });
      await other.goto("http://elsewhere.test/alert");
      await other.click("#go");
      await other.waitForURL(chartUrl);
      await other.waitForSelector("#chart[data-chart-ready]");
      // The browser did not send the Strict cookie on the cross-site click: the server answered
      // the reload page, whose same-site reload then carried the session.
      expect(await Promise.all(navigations)).toEqual([{ cookie: false }, { cookie: true }]);
      expect(await other.getByRole("heading", { level: 1 }).textContent()).toContain("BTC");
      expect(await cspViolations(other)).toEqual([]);
      await other.close();
    });
  });

  it("fits a phone screen (390 px): no page scrolls sideways, and no table hides columns behind a scroll", async () => {
    const phoneOptions = {
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
    };
    async function expectFits(p: Page, label: string): Promise<void> {
      if (new URL(p.url()).pathname.startsWith("/charts/")) await p.waitForSelector("#chart[data-chart-ready]");
      expect(await p.evaluate(() => document.documentElement.scrollWidth), label).toBeLessThanOrEqual(390);
      // Nothing inside the page scrolls sideways either (a scrolling table wrapper would).
      const scrollers = await p.$$eval("body *", (elements) =>
        elements
          .filter(
            (e: any) =>
              e.scrollWidth > e.clientWidth + 1 &&
              ["auto", "scroll"].includes(getComputedStyle(e).overflowX) &&
              e.tagName !== "CANVAS",
          )
          .map((e: any) => e.id || e.className || e.tagName),
      );
      expect(scrollers, label).toEqual([]);
      await p.screenshot({
        path: path.join(RESULTS_DIR, `phone-${label.replace(/[^a-z0-9]+/gi, "-")}-${DB_SUFFIX}.png`),
        fullPage: true,
      });
    }

    // Signed out: the public pages (the charts ask to sign in first). Pages that only read load side by side.
    const visitor = await browser.newContext(phoneOptions);
    await eachConcurrently(["/signin", "/signup", "/status"], 3, async (pathname) => {
      const v = await visitor.newPage();
      expect((await v.goto(`${server.baseUrl}${pathname}`))!.status(), pathname).toBe(200);
      await expectFits(v, `public ${pathname}`);
      await v.close();
    });
    await visitor.close();

    // Signed in: the account, the key confirmation, the new key's page, the charts and /status.
    const phone = await browser.newContext({ ...phoneOptions, storageState: await context.storageState() });
    const signedIn = [
      "/account",
      "/account/key",
      "/charts",
      ...(realCandlesAvailable ? ["/charts/BTC?tf=4h"] : []),
      "/status",
    ];
    await eachConcurrently(signedIn, 3, async (pathname) => {
      const page = await phone.newPage();
      expect((await page.goto(`${server.baseUrl}${pathname}`))!.status(), pathname).toBe(200);
      if (pathname === "/account") expect(await page.locator("#ledger tbody tr").count()).toBeGreaterThan(0);
      await expectFits(page, pathname);
      await page.close();
    });
    const p = await phone.newPage();
    await p.goto(`${server.baseUrl}/account/key`);
    await Promise.all([
      p.waitForURL(`${server.baseUrl}/account/key/new`),
      p.getByRole("button", { name: "Regenerate the key now" }).click(),
    ]);
    expect(await p.locator("#new-key").textContent()).toMatch(/^sig_live_/);
    await expectFits(p, "/account/key/new");
    await phone.close();
  });

  it("signs out: the session ends on the server and the pages ask to sign in again", async () => {
    const cookies = await context.cookies(server.baseUrl);
    const sid = cookies.find((c) => c.name === "sid")!;
    expect(sid).toMatchObject({ httpOnly: true, sameSite: "Strict", secure: false, path: "/" });
    await page.goto(`${server.baseUrl}/account`);
    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await page.waitForURL(`${server.baseUrl}/signin?signed-out`);
    expect(await page.getByRole("status").textContent()).toBe("You are signed out.");
    // The old cookie value no longer opens anything.
    const res = await fetch(`${server.baseUrl}/account`, {
      headers: { cookie: `sid=${sid.value}` },
      redirect: "manual",
    });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/signin");
  });

  it("loaded nothing from elsewhere, broke no CSP rule, and sent no full key except on the one-time page", async () => {
    expect(await cspViolations()).toEqual([]);
    const foreign = requests.filter(
      (url) =>
        !url.startsWith(server.baseUrl) &&
        !url.startsWith("http://elsewhere.test/") &&
        !url.startsWith("data:") &&
        url !== "about:blank",
    );
    expect(foreign).toEqual([]);
    const seen = await Promise.all(responses);
    expect(seen.length).toBeGreaterThan(10);
    const withKey = seen.filter((r) => (r.body.match(FULL_KEY) ?? []).length > 0);
    expect(withKey.map((r) => `${r.method} ${new URL(r.url).pathname}`)).toEqual(["GET /account/key/new"]);
    // Twice in that one page: in its box and in the first call's curl line.
    expect(withKey[0]!.body.match(FULL_KEY)).toEqual([newKey, newKey]);
    for (const r of seen.filter(
      (s) => s.url.startsWith(server.baseUrl) && (s.headers["content-type"] ?? "").startsWith("text/html"),
    )) {
      expect(r.headers["cache-control"], r.url).toBe("no-store");
      expect(r.headers["content-security-policy"], r.url).toContain("script-src 'self'");
      expect(r.headers["x-frame-options"]).toBe("DENY");
    }
    // The chart library is served by this server, from node_modules (when a chart page was shown).
    expect(requests.some((url) => url.startsWith(`${server.baseUrl}/assets/lightweight-charts.js?v=`))).toBe(
      realCandlesAvailable,
    );
  });
});
