/**
 * The /docs reference page in real headless Chromium: Redoc (served from node_modules by this
 * server) renders the OpenAPI document with every operation and its code samples in curl,
 * TypeScript and Python, the error tables as tables and the recorded answers as response
 * samples; no request goes to another host and the page's CSP is never violated.
 */
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumAvailable, launchChromium, RESULTS_DIR } from "../support/browser.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

// Callbacks given to page.evaluate run in the browser; the tsconfig has no DOM lib.
declare const document: any;
declare const window: any;

describe.skipIf(!chromiumAvailable)("/docs in headless Chromium", () => {
  let server: TestServer;
  let browser: Browser;
  beforeAll(async () => {
    server = await startTestServer();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it("renders every operation and the code samples, with no request to another host and no CSP violation", async () => {
    const context = await browser.newContext();
    const requests: string[] = [];
    const failed: string[] = [];
    context.on("request", (r) => requests.push(r.url()));
    context.on("requestfailed", (r) => failed.push(`${r.url()} ${r.failure()?.errorText}`));
    await context.addInitScript(() => {
      const w = window as unknown as { cspViolations: string[] };
      w.cspViolations = [];
      document.addEventListener("securitypolicyviolation", (e: { violatedDirective: string; blockedURI: string }) =>
        w.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`),
      );
    });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    const res = await page.goto(`${server.baseUrl}/docs`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()["content-security-policy"]).toContain("default-src 'none'");
    await page.waitForFunction(() => document.body.innerText.includes("GetUsage"), undefined, { timeout: 30_000 });
    const text = await page.locator("body").innerText();
    for (const op of [
      "GetSignals",
      "GetMovers",
      "GetDerivatives",
      "GetNews",
      "GetMacro",
      "GetFundamentals",
      "GetUsage",
    ])
      expect(text).toContain(op);
    for (const route of ["/api/v1/signals", "/api/v1/usage"]) expect(text).toContain(route);
    // The code samples: curl, TypeScript (connect-es) and Python (requests).
    for (const label of ["curl", "TypeScript (connect-es)", "Python (requests)"]) expect(text, label).toContain(label);
    expect(text).toContain(`curl -s -H "x-api-key: $KEY"`);
    // The proto comments' error table is a table, and the response samples are real answers.
    expect(await page.locator("table", { hasText: "insufficient_credits" }).count()).toBeGreaterThan(0);
    expect(await page.locator("table", { hasText: "insufficient_credits" }).first().locator("tr").count()).toBe(7);
    await page.waitForFunction(() => document.body.innerText.includes("1718541432345"), undefined, { timeout: 30_000 });
    await page.getByText("Python (requests)", { exact: true }).first().click();
    await page.waitForFunction(() => document.body.innerText.includes("requests.get("), undefined, { timeout: 30_000 });
    await page.screenshot({ path: path.join(RESULTS_DIR, "docs-page.png") });
    const origin = new URL(server.baseUrl).origin;
    const foreign = requests.filter(
      (u) => !u.startsWith("data:") && !u.startsWith("blob:") && new URL(u).origin !== origin,
    );
    expect(foreign).toEqual([]);
    expect(failed).toEqual([]);
    expect(await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)).toEqual([]);
    expect(errors).toEqual([]);
    expect(requests).toContain(`${origin}/api/v1/openapi.json`);
    await context.close();
  });

  it("serves Redoc's bundle from this server, and only GET", async () => {
    const js = await fetch(`${server.baseUrl}/docs/redoc.standalone.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toMatch(/javascript/);
    expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
    const post = await fetch(`${server.baseUrl}/api/v1/openapi.json`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(await post.json()).toMatchObject({ ok: false, error: "method_not_allowed" });
  });
});
