/**
 * A Token pack bought end to end in real headless Chromium: sign in, press Buy on the account
 * page, the browser follows the 303 to the Checkout Session's url (the local fake's stand-in
 * checkout page; the page's CSP form-action must allow it), Stripe's signed
 * `checkout.session.completed` arrives, and the account page then shows the new balance and a
 * pack ledger row; the API's credits_left agrees. Skips when Chromium is not installed.
 */

import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { chromiumAvailable, launchChromium, RESULTS_DIR } from "../support/browser.ts";
import {
  completedPackSession,
  deliver,
  type FakeStripe,
  signedEvent,
  startFakeStripe,
} from "../support/fake-stripe.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { createTestClock, startTestServer, type TestServer } from "../support/test-server.ts";

declare const window: any;
declare const document: any;

const EMAIL = "pack.buyer@example.test";
const PASSWORD = "a long and correct password";

describe.skipIf(!chromiumAvailable)("buying a Token pack in headless Chromium", () => {
  let stripe: FakeStripe;
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let account: { accountId: number; apiKey: string };

  beforeAll(async () => {
    stripe = await startFakeStripe();
    server = await startTestServer({ env: stripe.env(), clock: createTestClock(Date.now()) });
    account = await server.account({ email: EMAIL });
    await setMemberPassword(server.db.handle, account.accountId, PASSWORD, server.config.passwordHashCost);
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addInitScript(() => {
      const w = window as { cspViolations: string[] };
      w.cspViolations = [];
      document.addEventListener("securitypolicyviolation", (e: { violatedDirective: string; blockedURI: string }) =>
        w.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`),
      );
    });
    page = await context.newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await stripe?.close();
  });

  it("Buy → Stripe checkout → signed webhook → the page shows the pack and the new balance", async () => {
    await page.goto(`${server.baseUrl}/signin`);
    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password").fill(PASSWORD);
    await Promise.all([
      page.waitForURL(`${server.baseUrl}/account`),
      page.getByRole("button", { name: "Sign in" }).click(),
    ]);
    expect(await page.locator("#tokens-left").textContent()).toBe("10,000");

    await Promise.all([
      page.waitForURL(/\/c\/pay\/cs_test_/),
      page.getByRole("button", { name: "Buy 5,000 Tokens" }).click(),
    ]);
    expect(await page.locator("#fake-stripe").textContent()).toBe("Stripe test page");
    const session = stripe.checkoutSessions.at(-1)!;
    expect(page.url()).toBe(session.url);
    expect(session.metadata.account_id).toBe(String(account.accountId));

    // The member comes back before Stripe's webhook: nothing is credited by the redirect.
    await page.goto(`${server.baseUrl}/account?checkout=success`);
    expect(await page.locator("#tokens-left").textContent()).toBe("10,000");
    expect(await page.getByRole("status").first().textContent()).toContain("Stripe is confirming your payment");

    const delivery = signedEvent(
      "checkout.session.completed",
      completedPackSession(session, { paymentIntent: "pi_test_browser" }),
      { timestampS: Math.floor(server.clock() / 1000) },
    );
    expect((await deliver(server.baseUrl, delivery)).status).toBe(200);

    await page.reload();
    expect(await page.locator("#tokens-left").textContent()).toBe("15,000");
    expect(await page.locator("#pack-balance").textContent()).toContain("5,000");
    const newest = await page.locator("#ledger tbody tr").first().textContent();
    expect(newest).toContain("Token pack");
    expect(newest).toContain("+5,000");
    expect(newest).toContain(session.id);
    await page.screenshot({ path: `${RESULTS_DIR}payments-pack-bought.png`, fullPage: true });

    const api = await fetch(`${server.baseUrl}/api/v1/signals?symbols=BTC`, {
      headers: { "x-api-key": account.apiKey },
    });
    expect(((await api.json()) as { credits_left: number }).credits_left).toBe(14_999);
    expect(await page.evaluate(() => (window as { cspViolations: string[] }).cspViolations)).toEqual([]);
    expect(ledgerBalances(await ledgerCheck(server.db.handle, account.accountId))).toBe(true);
  });
});
