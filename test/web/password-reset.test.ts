/**
 * Password reset by email and the end of sessions, against a real server and a real SMTP server
 * on loopback (smtp-server, messages parsed with mailparser): the main flow in headless Chromium
 * (ask for a link, receive it, choose a new password, the other browser is signed out), then
 * over plain HTTP: a link works once and for one hour, is stored hashed and never logged, the
 * answer is the same for unknown addresses (and no mail leaves), the budgets per address and per
 * client, a password change ends the other sessions only, "Sign out everywhere" ends all, and
 * without SMTP_URL there is no link and no route.
 */
import { createHash } from "node:crypto";
import { PassThrough } from "node:stream";
import { sql } from "drizzle-orm";
import type { ParsedMail } from "mailparser";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { createPasswordLink, PASSWORD_LINK_TTL_MS } from "../../src/accounts/sign-in/password-links.ts";
import { loadConfig } from "../../src/config.ts";

const RESET_LINK_TTL_MS = PASSWORD_LINK_TTL_MS.reset;

import { RESET_THROTTLE } from "../../src/web/routes/forgot-password.ts";
import { chromiumAvailable, launchChromium, RESULTS_DIR } from "../support/browser.ts";
import { type FakeSmtp, startFakeSmtp } from "../support/fake-smtp.ts";
import { usingPostgres } from "../support/test-db.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";
import { csrfTokenOf, WebClient } from "../support/web-client.ts";

// Callbacks given to page.evaluate run in the browser (the project's tsconfig has no DOM lib).
declare const document: any;

const PUBLIC_BASE_URL = "http://signals.test";
const MAIL_FROM = "Signals <no-reply@signals.test>";
const OLD_PASSWORD = "the old long password";
const DB_SUFFIX = usingPostgres ? "postgres" : "pglite";

let smtp: FakeSmtp;
let server: TestServer;
const logLines: string[] = [];
let addressCounter = 10;

beforeAll(async () => {
  smtp = await startFakeSmtp();
  const logs = new PassThrough();
  logs.setEncoding("utf8").on("data", (chunk: string) => logLines.push(...chunk.split("\n").filter(Boolean)));
  server = await startTestServer({ logs, env: { LOG_LEVEL: "debug", SMTP_URL: smtp.url, MAIL_FROM, PUBLIC_BASE_URL } });
});
afterAll(async () => {
  await server?.close();
  await smtp?.close();
});

/** A member with a password, under a fresh email. */
async function member(name: string): Promise<{ accountId: number; email: string }> {
  const email = `${name}-${DB_SUFFIX}@example.test`;
  const { accountId } = await server.account({ email });
  await setMemberPassword(server.db.handle, accountId, OLD_PASSWORD, server.config.passwordHashCost);
  return { accountId, email };
}

/** A client from its own loopback address (its own budget per client address). */
function client(): WebClient {
  return new WebClient(server.baseUrl, { localAddress: `127.0.0.${++addressCounter}` });
}

async function signedIn(email: string, password = OLD_PASSWORD): Promise<WebClient> {
  const c = client();
  const res = await c.signIn(email, password);
  expect(res.status, res.body.slice(0, 300)).toBe(303);
  return c;
}

async function askForLink(c: WebClient, email: string) {
  const form = await c.get("/forgot-password");
  expect(form.status).toBe(200);
  return c.post("/forgot-password", { csrf_token: csrfTokenOf(form.body), email });
}

/** The reset link of a mail (checked to be the same in its text and HTML parts). */
function linkOf(mail: ParsedMail): string {
  const inText = /http:\/\/signals\.test\/reset-password\?token=[A-Za-z0-9_-]{43}/.exec(mail.text ?? "")?.[0];
  expect(inText, mail.text).toBeDefined();
  expect(String(mail.html)).toContain(`href="${inText}"`);
  return inText!;
}

/** The path of a link, to open it on the test server (the mail names PUBLIC_BASE_URL). */
const pathOf = (link: string) => link.slice(PUBLIC_BASE_URL.length);

describe.skipIf(!chromiumAvailable)("reset in the browser", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it(
    "asks for a link from the sign-in page, sets the new password " +
      "through the mailed link, and signs the other browser out",
    async () => {
      const ana = await member("ana");
      const other = await browser.newContext();
      const otherPage = await other.newPage();
      await otherPage.goto(`${server.baseUrl}/signin`);
      await otherPage.getByLabel("Email").fill(ana.email);
      await otherPage.getByLabel("Password").fill(OLD_PASSWORD);
      await otherPage.getByRole("button", { name: "Sign in" }).click();
      await otherPage.waitForURL(/\/account$/);

      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${server.baseUrl}/signin`);
      await page.getByRole("link", { name: "Forgot password?" }).click();
      await page.waitForURL(/\/forgot-password$/);
      await page.getByLabel("Email").fill(ana.email.toUpperCase());
      await page.getByRole("button", { name: "Send the link" }).click();
      await expect
        .poll(() => page.locator("#reset-requested").textContent(), { timeout: 30_000 })
        .toContain("It works once, for 1 hour");
      await page.screenshot({ path: `${RESULTS_DIR}reset-requested-${DB_SUFFIX}.png` });

      const mail = await smtp.mailTo(ana.email);
      expect(mail.from?.value).toEqual([{ name: "Signals", address: "no-reply@signals.test" }]);
      expect(mail.subject).toBe("Reset your password");
      expect(mail.text).toContain("works once and for 1 hour");
      const link = linkOf(mail);

      await page.goto(`${server.baseUrl}${pathOf(link)}`);
      // The token left the address bar for a cookie.
      expect(page.url()).toBe(`${server.baseUrl}/reset-password`);
      await expect.poll(() => page.locator("h1").textContent(), { timeout: 30_000 }).toBe("Choose a new password");
      await page.locator("#password").fill("my brand new password");
      await page.locator("#confirm").fill("my brand new password");
      await page.getByRole("button", { name: "Set password" }).click();
      await page.waitForURL(/\/signin\?password-reset$/);
      expect(await page.getByRole("status").textContent()).toContain("every session of the account is signed out");
      await page.getByLabel("Email").fill(ana.email);
      await page.getByLabel("Password").fill("my brand new password");
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(/\/account$/);

      // The other browser's session ended with the reset.
      await otherPage.goto(`${server.baseUrl}/account`);
      expect(otherPage.url()).toBe(`${server.baseUrl}/signin`);
      // The link is used up.
      const again = await page.goto(`${server.baseUrl}${pathOf(link)}`);
      expect(again?.status()).toBe(410);

      // The new pages and the account page's card on a phone: nothing scrolls sideways.
      await page.setViewportSize({ width: 390, height: 844 });
      for (const pathname of ["/account", "/account/password", "/forgot-password"]) {
        await page.goto(`${server.baseUrl}${pathname}`);
        expect(await page.evaluate(() => document.documentElement.scrollWidth), pathname).toBeLessThanOrEqual(390);
      }
      await page.goto(`${server.baseUrl}/account`);
      await page.locator("#signin-h").scrollIntoViewIfNeeded();
      await page.screenshot({ path: `${RESULTS_DIR}account-sessions-card-${DB_SUFFIX}.png` });
      await context.close();
      await other.close();
    },
  );
});

describe("reset links", () => {
  it("work once: a second use of the link or of its form answers 410 and the first password stays", async () => {
    const bo = await member("bo");
    const c = client();
    expect((await askForLink(c, bo.email)).status).toBe(200);
    const link = linkOf(await smtp.mailTo(bo.email));
    const opened = await c.get(pathOf(link));
    expect(opened.status).toBe(303);
    const form = await c.get("/reset-password");
    const fields = {
      csrf_token: csrfTokenOf(form.body),
      password: "first new password",
      confirm: "first new password",
    };
    const done = await c.post("/reset-password", fields);
    expect(done.status).toBe(303);
    expect(done.headers.location).toBe("/signin?password-reset");
    // The form sent again (the cookie went with the success, so it is put back as a replay would).
    const replay = new WebClient(server.baseUrl, { localAddress: c.localAddress! });
    replay.cookies.set("csrf", c.cookies.get("csrf")!);
    replay.cookies.set("password_link", link.split("token=")[1]!);
    const second = await replay.post("/reset-password", {
      ...fields,
      password: "second new password",
      confirm: "second new password",
    });
    expect(second.status).toBe(410);
    expect(second.body).toContain("Link not valid");
    expect((await c.get(pathOf(link))).status).toBe(410);
    expect((await client().signIn(bo.email, "first new password")).status).toBe(303);
    expect((await client().signIn(bo.email, "second new password")).status).toBe(401);
  });

  it(
    "leave the operator's pending setup link working, each token works only " +
      "at its own kind's address, and the first one used retires the other",
    async () => {
      const kit = await member("kit");
      const setupToken = (await createPasswordLink(server.db.handle, kit.accountId, "setup", server.clock())).token;
      // Anyone who knows the address can ask for a reset link: that must not cancel the setup link.
      expect((await askForLink(client(), kit.email)).status).toBe(200);
      const resetToken = linkOf(await smtp.mailTo(kit.email)).split("token=")[1]!;
      // A token at the other kind's address is not a link there (each address answers its own "gone").
      const resetAtSetup = await client().get(`/setup-password?token=${resetToken}`);
      expect(resetAtSetup.status).toBe(404);
      expect(resetAtSetup.body).toContain("Link not valid");
      expect((await client().get(`/reset-password?token=${setupToken}`)).status).toBe(410);
      const crossPost = client();
      const resetForm = await crossPost.get("/forgot-password");
      crossPost.cookies.set("password_link", setupToken);
      const refused = await crossPost.post("/reset-password", {
        csrf_token: csrfTokenOf(resetForm.body),
        password: "cross kind password",
        confirm: "cross kind password",
      });
      expect(refused.status).toBe(410);
      // The setup link works at its own address, and once used the reset link is gone too.
      const c = client();
      expect((await c.get(`/setup-password?token=${setupToken}`)).status).toBe(303);
      const form = await c.get("/setup-password");
      expect(form.status).toBe(200);
      const set = await c.post("/setup-password", {
        csrf_token: csrfTokenOf(form.body),
        password: "set up password",
        confirm: "set up password",
      });
      expect(set.status).toBe(303);
      expect(set.headers.location).toBe("/signin?password-set");
      expect((await client().get(`/reset-password?token=${resetToken}`)).status).toBe(410);
      expect((await client().signIn(kit.email, "cross kind password")).status).toBe(401);
      expect((await client().signIn(kit.email, "set up password")).status).toBe(303);
    },
  );

  it("expire after one hour, whether opened before or after", async () => {
    const cy = await member("cy");
    const c = client();
    await askForLink(c, cy.email);
    const link = linkOf(await smtp.mailTo(cy.email));
    const opened = await c.get(pathOf(link));
    expect(opened.status).toBe(303);
    const form = await c.get("/reset-password");
    server.clock.advance(RESET_LINK_TTL_MS + 1000);
    try {
      const late = await c.post("/reset-password", {
        csrf_token: csrfTokenOf(form.body),
        password: "too late a password",
        confirm: "too late a password",
      });
      expect(late.status).toBe(410);
      expect((await client().get(pathOf(link))).status).toBe(410);
      expect((await client().signIn(cy.email, OLD_PASSWORD)).status).toBe(303);
    } finally {
      server.clock.advance(-(RESET_LINK_TTL_MS + 1000));
    }
  });

  it(
    "are stored only as a SHA-256, never logged, and refuse " + "a weak or mistyped password without using the link up",
    async () => {
      const di = await member("di");
      const c = client();
      await askForLink(c, di.email);
      const link = linkOf(await smtp.mailTo(di.email));
      const token = link.split("token=")[1]!;
      const rows = await server.db.handle.rows<{ token_hash: string }>(
        sql`SELECT token_hash FROM password_links WHERE account_id = ${di.accountId} AND kind = 'reset'`,
      );
      expect(rows.map((r) => r.token_hash)).toEqual([createHash("sha256").update(token).digest("hex")]);
      const opened = await c.get(pathOf(link));
      expect(opened.status).toBe(303);
      const form = await c.get("/reset-password");
      const csrf = csrfTokenOf(form.body);
      expect((await c.post("/reset-password", { csrf_token: csrf, password: "short", confirm: "short" })).status).toBe(
        400,
      );
      const mistyped = await c.post("/reset-password", {
        csrf_token: csrf,
        password: "a long new password",
        confirm: "a long new passwork",
      });
      expect(mistyped.status).toBe(400);
      expect(mistyped.body).toContain("The two passwords differ");
      expect(
        (
          await c.post("/reset-password", {
            csrf_token: "forged",
            password: "a long new password",
            confirm: "a long new password",
          })
        ).status,
      ).toBe(403);
      expect(
        (
          await c.post("/reset-password", {
            csrf_token: csrf,
            password: "a long new password",
            confirm: "a long new password",
          })
        ).status,
      ).toBe(303);
      const logs = logLines.join("\n");
      expect(logs).toContain("password reset mail sent");
      expect(logs).not.toContain(token);
      expect(logs).not.toContain("reset-password?token");
    },
  );

  it(
    "opened from another site (a webmail), continue through " + "a same-site reload that carries the token's cookie",
    async () => {
      const ka = await member("ka");
      const c = client();
      await askForLink(c, ka.email);
      const link = linkOf(await smtp.mailTo(ka.email));
      const opened = await c.get(pathOf(link), { "sec-fetch-site": "cross-site" });
      expect(opened.status).toBe(200);
      expect(opened.body).toContain('http-equiv="refresh"');
      expect(opened.body).toContain("/reset-password");
      expect(opened.body).not.toContain(link.split("token=")[1]!);
      const cookie = opened.setCookies.find((v) => v.startsWith("password_link="))!;
      expect(cookie).toMatch(/Max-Age=3600; Path=\/; HttpOnly; SameSite=Strict/);
      expect((await c.get("/reset-password")).status).toBe(200);
    },
  );

  it("a malformed or unknown token answers 410", async () => {
    expect((await client().get("/reset-password?token=nope")).status).toBe(410);
    expect((await client().get(`/reset-password?token=${"A".repeat(43)}`)).status).toBe(410);
    expect((await client().get("/reset-password")).status).toBe(410);
  });
});

describe("asking for a link", () => {
  it("answers the same for an unknown address, and sends it no mail", async () => {
    const ed = await member("ed");
    const unknown = `nobody-${DB_SUFFIX}@example.test`;
    const known = await askForLink(client(), ed.email);
    const notKnown = await askForLink(client(), unknown);
    expect(notKnown.status).toBe(known.status);
    expect(notKnown.body.replaceAll(unknown, "EMAIL")).toBe(known.body.replaceAll(ed.email, "EMAIL"));
    // A later mail to someone else has arrived: the unknown address's lookup was done long before.
    await smtp.mailTo(ed.email);
    const fy = await member("fy");
    await askForLink(client(), fy.email);
    await smtp.mailTo(fy.email);
    expect(smtp.countTo(unknown)).toBe(0);
  });

  it(
    "sends at most 3 mails per address per hour, answering the " +
      "same after; a client address over its budget gets 429",
    async () => {
      const gu = await member("gu");
      for (let i = 0; i < RESET_THROTTLE.perEmail + 1; i++)
        expect((await askForLink(client(), gu.email)).status).toBe(200);
      await smtp.mailTo(gu.email, RESET_THROTTLE.perEmail - 1);
      // A barrier: a later mail to another member has arrived, so the 4th request had its chance.
      const ha = await member("ha");
      await askForLink(client(), ha.email);
      await smtp.mailTo(ha.email);
      expect(smtp.countTo(gu.email)).toBe(RESET_THROTTLE.perEmail);

      const busy = client();
      for (let i = 0; i < RESET_THROTTLE.perAddress; i++)
        expect((await askForLink(busy, `someone${i}-${DB_SUFFIX}@example.test`)).status).toBe(200);
      const refused = await askForLink(busy, `someone-more-${DB_SUFFIX}@example.test`);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
      // An hour later the budgets are new.
      server.clock.advance(RESET_THROTTLE.windowMs);
      try {
        expect((await askForLink(busy, gu.email)).status).toBe(200);
        await smtp.mailTo(gu.email, RESET_THROTTLE.perEmail);
      } finally {
        server.clock.advance(-RESET_THROTTLE.windowMs);
      }
    },
  );

  it("refuses a form that is not an email or lacks the CSRF token", async () => {
    const c = client();
    const form = await c.get("/forgot-password");
    expect(
      (await c.post("/forgot-password", { csrf_token: csrfTokenOf(form.body), email: "not an email" })).status,
    ).toBe(400);
    expect((await c.post("/forgot-password", { csrf_token: "forged", email: "a@example.test" })).status).toBe(403);
  });
});

describe("ending sessions", () => {
  it(
    "changing the password ends every other session and keeps " + "this one; a wrong current password changes nothing",
    async () => {
      const io = await member("io");
      const here = await signedIn(io.email);
      const elsewhere = await signedIn(io.email);
      const form = await here.get("/account/password");
      expect(form.status).toBe(200);
      const csrf = csrfTokenOf(form.body);
      const wrong = await here.post("/account/password", {
        csrf_token: csrf,
        current: "not the password",
        password: "a changed long password",
        confirm: "a changed long password",
      });
      expect(wrong.status).toBe(400);
      expect((await elsewhere.get("/account")).status).toBe(200);
      const changed = await here.post("/account/password", {
        csrf_token: csrf,
        current: OLD_PASSWORD,
        password: "a changed long password",
        confirm: "a changed long password",
      });
      expect(changed.status).toBe(303);
      expect(changed.headers.location).toBe("/account/password?changed");
      expect((await here.get("/account")).status).toBe(200);
      const out = await elsewhere.get("/account");
      expect(out.status).toBe(303);
      expect(out.headers.location).toBe("/signin");
      expect((await client().signIn(io.email, "a changed long password")).status).toBe(303);
      expect((await client().signIn(io.email, OLD_PASSWORD)).status).toBe(401);
    },
  );

  it(
    '"Sign out everywhere" ends every session, this one ' + "included (POST with the session's CSRF token only)",
    async () => {
      const jo = await member("jo");
      const here = await signedIn(jo.email);
      const elsewhere = await signedIn(jo.email);
      const account = await here.get("/account");
      expect(account.body).toContain('action="/account/sessions/end"');
      expect((await here.post("/account/sessions/end", { csrf_token: "forged" })).status).toBe(403);
      expect((await here.get("/account/sessions/end")).status).toBe(405);
      const ended = await here.post("/account/sessions/end", { csrf_token: csrfTokenOf(account.body) });
      expect(ended.status).toBe(303);
      expect(ended.headers.location).toBe("/signin?signed-out-everywhere");
      for (const browser of [here, elsewhere]) expect((await browser.get("/account")).status).toBe(303);
      const rows = await server.db.handle.rows<{ n: number }>(
        sql`SELECT count(*)::int AS n FROM web_sessions WHERE account_id = ${jo.accountId}`,
      );
      expect(Number(rows[0]!.n)).toBe(0);
    },
  );
});

describe("without SMTP_URL", () => {
  it("offers no link and has no reset routes; the operator's setup links remain", async () => {
    const plain = await startTestServer();
    try {
      const c = new WebClient(plain.baseUrl);
      const signIn = await c.get("/signin");
      expect(signIn.body).not.toContain("/forgot-password");
      expect(signIn.body).toContain("Your operator sends you a one-time setup link");
      expect((await c.get("/forgot-password")).status).toBe(404);
      expect(
        (await c.post("/forgot-password", { csrf_token: csrfTokenOf(signIn.body), email: "a@example.test" })).status,
      ).toBe(404);
      expect((await c.get(`/reset-password?token=${"A".repeat(43)}`)).status).toBe(404);
    } finally {
      await plain.close();
    }
  });

  it("SMTP_URL needs MAIL_FROM, and a bad SMTP_URL is named without quoting it", async () => {
    expect(() => loadConfig({ SMTP_URL: "smtp://u:secret@127.0.0.1:25" })).toThrow(/MAIL_FROM is required/);
    expect(() => loadConfig({ SMTP_URL: "http://u:secret@mail.example", MAIL_FROM: MAIL_FROM })).toThrow(
      /^SMTP_URL must be an smtp/,
    );
    let message = "";
    try {
      loadConfig({ SMTP_URL: "imap://u:secret@mail.example", MAIL_FROM });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^SMTP_URL must be an smtp/);
    expect(message).not.toContain("secret");
    expect(loadConfig({ SMTP_URL: "smtps://u:p@mail.example:465", MAIL_FROM }).mail).toEqual({
      smtpUrl: "smtps://u:p@mail.example:465",
      from: MAIL_FROM,
    });
    expect(loadConfig({}).mail).toBeNull();
  });
});
