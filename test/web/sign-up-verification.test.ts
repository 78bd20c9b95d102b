/**
 * Issue 23, item 10: sign-up tells nobody whether an email has an account, and an address is
 * confirmed by a mailed link before the account may subscribe, buy or make a key. A real
 * server beside a real SMTP server on loopback (npm `smtp-server`), nodemailer in between, on
 * PGlite or Postgres (DATABASE_URL).
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { type FakeSmtp, startFakeSmtp } from "../support/fake-smtp.ts";
import { usingPostgres } from "../support/test-db.ts";
import { INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";
import { csrfTokenOf, WebClient, type WebResult } from "../support/web-client.ts";

const PUBLIC_BASE_URL = "http://signals.test";
const PASSWORD = "a long sign-up password";
const DB_SUFFIX = usingPostgres ? "postgres" : "pglite";

let smtp: FakeSmtp;
let server: TestServer;
let addressCounter = 40;

beforeAll(async () => {
  smtp = await startFakeSmtp();
  server = await startTestServer({
    env: { SMTP_URL: smtp.url, MAIL_FROM: "Signals <no-reply@signals.test>", PUBLIC_BASE_URL },
  });
});
afterAll(async () => {
  await server?.close();
  await smtp?.close();
});

const client = () => new WebClient(server.baseUrl, { localAddress: `127.0.0.${++addressCounter}` });

async function postSignUp(web: WebClient, email: string, password = PASSWORD): Promise<WebResult> {
  const form = await web.get("/signup");
  return web.post("/signup", { csrf_token: csrfTokenOf(form.body), email, password, confirm: password });
}

async function hashesHashed(): Promise<number> {
  const text = await (
    await fetch(`${server.internalUrl}/metrics`, { headers: { authorization: `Bearer ${INTERNAL_TOKEN}` } })
  ).text();
  return Number(/^signals_password_hashes_total\{outcome="hashed"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

const verified = async (email: string) =>
  (
    await server.db.handle.rows<{ email_verified: boolean }>(
      sql`SELECT email_verified FROM accounts WHERE lower(email) = lower(${email})`,
    )
  )[0]?.email_verified;

/** The link of a mail, as a path of this site. */
function linkPath(text: string): string {
  const match = /http:\/\/signals\.test(\/verify-email\?token=[A-Za-z0-9_-]{43})/.exec(text);
  if (!match) throw new Error(`no confirmation link in: ${text}`);
  return match[1]!;
}

describe("sign-up answers the same whether or not the email has an account", () => {
  it("same status, same page, one hash each; a new address gets a link, a taken one a note", async () => {
    const taken = `taken-${DB_SUFFIX}@example.test`;
    const { accountId } = await server.account({ email: taken });
    await setMemberPassword(server.db.handle, accountId, "the member's own password", server.config.passwordHashCost);
    const fresh = `fresh-${DB_SUFFIX}@example.test`;

    const before = await hashesHashed();
    let started = performance.now();
    const forFresh = await postSignUp(client(), fresh);
    const freshMs = performance.now() - started;
    const afterFresh = await hashesHashed();
    started = performance.now();
    const forTaken = await postSignUp(client(), taken);
    const takenMs = performance.now() - started;
    const afterTaken = await hashesHashed();
    console.log(
      `[reliability figures] sign-up answer ms: new email ${Math.round(freshMs)}, ` +
        `taken email ${Math.round(takenMs)}`,
    );

    expect(forFresh.status).toBe(200);
    expect(forTaken.status).toBe(200);
    expect(forFresh.body.replace(fresh, "EMAIL")).toBe(forTaken.body.replace(taken, "EMAIL"));
    // Neither is signed in (a session for one only would tell).
    expect(forFresh.setCookies.some((c) => c.startsWith("sid="))).toBe(false);
    expect(forTaken.setCookies.some((c) => c.startsWith("sid="))).toBe(false);
    // The same work before each answer: one password hash.
    expect(afterFresh - before).toBe(1);
    expect(afterTaken - afterFresh).toBe(1);

    expect(linkPath((await smtp.mailTo(fresh)).text ?? "")).toMatch(/^\/verify-email\?token=/);
    const note = await smtp.mailTo(taken);
    expect(note.subject).toBe("You already have an account");
    expect(note.text).not.toContain("verify-email");
    // The taken account keeps its password and stays as it was.
    expect(await verified(taken)).toBe(true);
    expect((await client().signIn(taken, PASSWORD)).status).toBe(401);
  });
});

describe("an unconfirmed account", () => {
  it(
    "cannot subscribe, buy or make a key (403 email_unverified, " + "nothing changes) until its link is used once",
    async () => {
      const email = `unconfirmed-${DB_SUFFIX}@example.test`;
      const web = client();
      expect((await postSignUp(web, email)).status).toBe(200);
      const firstLink = linkPath((await smtp.mailTo(email)).text ?? "");
      expect(await verified(email)).toBe(false);

      // It may sign in, and its page says what to do.
      expect((await web.signIn(email, PASSWORD)).status).toBe(303);
      const page = await web.get("/account");
      expect(page.body).toContain("Confirm your email address.");
      const csrf = csrfTokenOf(page.body);
      for (const [path, fields] of [
        ["/account/subscribe", { plan: "node" }],
        ["/account/buy", { pack: "small" }],
        ["/account/key", { confirm: "yes" }],
      ] as const) {
        const res = await web.post(path, { csrf_token: csrf, ...fields });
        expect(res.status, path).toBe(403);
        expect(res.headers["x-error-code"], path).toBe("email_unverified");
        expect(res.body, path).toContain("Confirm your email first");
      }
      const [row] = await server.db.handle.rows<{ id: number }>(sql`SELECT id FROM accounts WHERE email = ${email}`);
      expect(await server.db.handle.rows(sql`SELECT 1 FROM api_keys WHERE account_id = ${row!.id}`)).toHaveLength(0);

      // A new link replaces the first one.
      expect((await web.post("/account/verify-email", { csrf_token: csrf })).status).toBe(303);
      const secondLink = linkPath((await smtp.mailTo(email, 1)).text ?? "");
      expect(secondLink).not.toBe(firstLink);
      expect((await client().get(firstLink)).status).toBe(410);

      // Opening the link only shows a button (a mail scanner's preview confirms nothing).
      const opener = client();
      const shown = await opener.get(secondLink);
      expect(shown.status).toBe(200);
      expect(await verified(email)).toBe(false);
      const token = new URL(secondLink, PUBLIC_BASE_URL).searchParams.get("token")!;
      const confirmed = await opener.post("/verify-email", { csrf_token: csrfTokenOf(shown.body), token });
      expect(confirmed.status).toBe(303);
      expect(confirmed.headers.location).toBe("/signin?email-verified");
      expect(await verified(email)).toBe(true);
      // Once only.
      expect((await opener.post("/verify-email", { csrf_token: csrfTokenOf(shown.body), token })).status).toBe(410);

      // Confirmed, the forms are no longer refused for the address (a free plan still needs a subscription for a key).
      const afterwards = await web.post("/account/key", { csrf_token: csrf, confirm: "yes" });
      expect(afterwards.headers["x-error-code"]).toBeUndefined();
      expect(afterwards.body).toContain("Subscribe first");
      expect((await web.get("/account")).body).not.toContain("Confirm your email address.");
    },
  );
});
