/**
 * Security of the web pages over real HTTP against a real server: session cookie flags, CSRF
 * (every POST without a valid token or from a foreign origin is refused and changes nothing),
 * no full key in any page or API answer except the one-time display, members isolated from
 * each other, secrets hashed at rest and absent from the logs, the failed sign-in throttle,
 * one-time setup links, session expiry and revocation, safe redirects, and bad form bodies.
 */
import { createHash } from "node:crypto";
import http from "node:http";
import { PassThrough } from "node:stream";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_THROTTLE } from "../../src/accounts/attempt-throttle.ts";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { createPasswordLink } from "../../src/accounts/sign-in/password-links.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import { TEST_PASSWORD_COST } from "../support/password-cost.ts";
import { waitFor } from "../support/reliability.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";
import { csrfTokenOf, keyConfirmFormOf, setCookieOf, WebClient, type WebResult } from "../support/web-client.ts";

const FULL_KEY = /sig_live_[0-9A-Za-z]{32,36}/g;
const HOUR = 3_600_000;
const ANA = { email: "ana@example.test", password: "ana's long password 1" };
const BOB = { email: "bob@example.test", password: "bob's long password 2" };

let server: TestServer;
const logLines: string[] = [];
let ana: { accountId: number; apiKey: string };
let bob: { accountId: number; apiKey: string };

/** A deterministic zig-zag of closed 1h candles ending before the test clock. */
function zigzagCandles(symbol: string, count: number, end: number): CandleUpdate[] {
  const out: CandleUpdate[] = [];
  const start = Math.floor(end / HOUR) * HOUR - count * HOUR;
  let price = 100;
  for (let i = 0; i < count; i++) {
    const step = Math.sin(i / 7) * 2 + Math.sin(i / 23) * 3;
    const open = price;
    const close = Math.max(10, price + step);
    out.push({
      symbol,
      tf: "1h",
      openTime: start + i * HOUR,
      open,
      high: Math.max(open, close) + 1,
      low: Math.min(open, close) - 1,
      close,
      volume: 10,
      closed: true,
    });
    price = close;
  }
  return out;
}

beforeAll(async () => {
  const logs = new PassThrough();
  logs.setEncoding("utf8").on("data", (chunk: string) => logLines.push(...chunk.split("\n").filter(Boolean)));
  server = await startTestServer({ feed: true, logs, env: { LOG_LEVEL: "debug" } });
  ana = await server.account({ email: ANA.email });
  bob = await server.account({ email: BOB.email });
  await setMemberPassword(server.db.handle, ana.accountId, ANA.password, server.config.passwordHashCost);
  await setMemberPassword(server.db.handle, bob.accountId, BOB.password, server.config.passwordHashCost);
  const summary = await server.feed!.ingest(zigzagCandles("ZIG", 400, server.clock()));
  expect(summary.rejected).toBe(0);
});
afterAll(async () => {
  await server?.close();
});

async function signedIn(who: { email: string; password: string }, localAddress?: string): Promise<WebClient> {
  const client = new WebClient(server.baseUrl, localAddress ? { localAddress } : {});
  const res = await client.signIn(who.email, who.password);
  expect(res.status, res.body.slice(0, 400)).toBe(303);
  return client;
}

async function activeKeyHashes(accountId: number): Promise<string[]> {
  const rows = await server.db.handle.rows<{ key_hash: string }>(
    sql`SELECT key_hash FROM api_keys WHERE account_id = ${accountId} AND revoked_at IS NULL`,
  );
  return rows.map((r) => r.key_hash);
}

async function restStatus(key: string): Promise<number> {
  return (await fetch(`${server.baseUrl}/api/v1/signals?symbols=ZIG&tf=1h`, { headers: { "x-api-key": key } })).status;
}

/** The page text with the per-request tokens blanked, to compare two answers. */
function withoutTokens(body: string): string {
  return body.replace(/name="csrf_token" value="[^"]*"/g, "").replace(/value="[^"]*@example\.test"/g, "");
}

describe("session cookie", () => {
  it("is HttpOnly, SameSite=Strict, Path=/ with the configured lifetime, and not Secure over plain HTTP", async () => {
    const client = new WebClient(server.baseUrl);
    const form = await client.get("/signin");
    expect(setCookieOf(form, "csrf")).toMatch(
      /^csrf=[A-Za-z0-9_-]{43}; Max-Age=7200; Path=\/; HttpOnly; SameSite=Strict$/,
    );
    const res = await client.post("/signin", {
      csrf_token: csrfTokenOf(form.body),
      email: ANA.email,
      password: ANA.password,
    });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe("/account");
    expect(setCookieOf(res, "sid")).toMatch(
      /^sid=[A-Za-z0-9_-]{43}; Max-Age=604800; Path=\/; HttpOnly; SameSite=Strict$/,
    );
  });

  it("is stored only as a SHA-256 hash, with its own CSRF secret", async () => {
    const client = await signedIn(ANA);
    const token = client.cookies.get("sid")!;
    const rows = await server.db.handle.rows<{ token_hash: string; csrf_secret: string }>(
      sql`SELECT token_hash, csrf_secret FROM web_sessions`,
    );
    expect(rows.some((r) => r.token_hash === token || r.csrf_secret === token)).toBe(false);
    expect(rows.map((r) => r.token_hash)).toContain(createHash("sha256").update(token).digest("hex"));
  });

  it("is Secure when the public URL is https, and forms from that origin are accepted", async () => {
    const tls = await startTestServer({ env: { PUBLIC_BASE_URL: "https://signals.example.test" } });
    try {
      const member = await tls.account({ email: "tls@example.test" });
      await setMemberPassword(tls.db.handle, member.accountId, "a long password for tls", tls.config.passwordHashCost);
      const client = new WebClient(tls.baseUrl);
      const form = await client.get("/signin");
      expect(setCookieOf(form, "csrf")).toMatch(/; Secure; SameSite=Strict$/);
      const res = await client.post(
        "/signin",
        { csrf_token: csrfTokenOf(form.body), email: "tls@example.test", password: "a long password for tls" },
        { origin: "https://signals.example.test" },
      );
      expect(res.status).toBe(303);
      expect(setCookieOf(res, "sid")).toMatch(/; Max-Age=604800; Path=\/; HttpOnly; Secure; SameSite=Strict$/);
    } finally {
      await tls.close();
    }
  });

  it("ends after SESSION_TTL_HOURS, and a sign-out or a new password ends it on the server", async () => {
    const client = await signedIn(ANA);
    expect((await client.get("/account")).status).toBe(200);
    server.clock.advance(7 * 24 * HOUR + 60_000);
    try {
      const expired = await client.get("/account");
      expect(expired.status).toBe(303);
      expect(expired.headers.location).toBe("/signin");
    } finally {
      server.clock.advance(-(7 * 24 * HOUR + 60_000));
    }
    const again = await signedIn(ANA);
    const stolen = again.cookies.get("sid")!;
    const { sessionsRevoked } = await setMemberPassword(
      server.db.handle,
      ana.accountId,
      ANA.password,
      server.config.passwordHashCost,
    );
    expect(sessionsRevoked).toBeGreaterThanOrEqual(1);
    expect((await new WebClient(server.baseUrl).get("/account", { cookie: `sid=${stolen}` })).status).toBe(303);
  });
});

describe("CSRF: a POST without a valid token, or from another origin, is refused and changes nothing", () => {
  const expectRefused = (res: WebResult) => {
    expect(res.status, res.body.slice(0, 300)).toBe(403);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.body).toContain("Nothing was changed");
    expect(setCookieOf(res, "sid")).toBeUndefined();
  };

  it("sign-in: no token, a token not matching the cookie, or no cookie at all", async () => {
    const client = new WebClient(server.baseUrl);
    const form = await client.get("/signin");
    const token = csrfTokenOf(form.body);
    expectRefused(await client.post("/signin", { email: ANA.email, password: ANA.password }));
    expectRefused(
      await client.post("/signin", {
        csrf_token: token.replace(/.$/, (c) => (c === "A" ? "B" : "A")),
        email: ANA.email,
        password: ANA.password,
      }),
    );
    expectRefused(
      await new WebClient(server.baseUrl).post("/signin", {
        csrf_token: token,
        email: ANA.email,
        password: ANA.password,
      }),
    );
    expectRefused(
      await client.post(
        "/signin",
        { csrf_token: token, email: ANA.email, password: ANA.password },
        { origin: "http://evil.test" },
      ),
    );
    expectRefused(
      await client.post("/signin", { csrf_token: token, email: ANA.email, password: ANA.password }, { origin: "null" }),
    );
    // The same form with its token, from our own origin, works.
    expect(
      (
        await client.post(
          "/signin",
          { csrf_token: token, email: ANA.email, password: ANA.password },
          { origin: server.baseUrl },
        )
      ).status,
    ).toBe(303);
  });

  it("key regeneration: no token, another member's token, or a foreign origin leave the key as it was", async () => {
    const anaClient = await signedIn(ANA);
    const bobClient = await signedIn(BOB);
    const bobToken = await bobClient.sessionCsrfToken();
    const before = await activeKeyHashes(ana.accountId);
    expectRefused(await anaClient.post("/account/key", { confirm: "yes" }));
    expectRefused(await anaClient.post("/account/key", { confirm: "yes", csrf_token: "" }));
    expectRefused(await anaClient.post("/account/key", { confirm: "yes", csrf_token: bobToken }));
    expectRefused(
      await anaClient.post(
        "/account/key",
        { confirm: "yes", csrf_token: await anaClient.sessionCsrfToken() },
        { origin: "http://evil.test" },
      ),
    );
    expect(await activeKeyHashes(ana.accountId)).toEqual(before);
    expect(await restStatus(ana.apiKey)).toBe(200);
  });

  it("alert settings and sign-out without a token change nothing", async () => {
    const client = await signedIn(ANA);
    expectRefused(
      await client.post("/account/alerts", { chat_id: "123456789", symbols: "BTC", timeframes: "4h", action: "save" }),
    );
    const [settings] = await server.db.handle.rows<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM alert_settings WHERE account_id = ${ana.accountId}`,
    );
    expect(settings!.n).toBe(0);
    expectRefused(await client.post("/signout", {}));
    expect((await client.get("/account")).status).toBe(200);
  });

  it("a signed-out POST changes nothing and goes to the sign-in page", async () => {
    const before = await activeKeyHashes(ana.accountId);
    const res = await new WebClient(server.baseUrl).post("/account/key", { confirm: "yes", csrf_token: "x" });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe("/signin");
    expect(await activeKeyHashes(ana.accountId)).toEqual(before);
  });

  it("the password setup form without its token leaves the link unused", async () => {
    const { token } = await createPasswordLink(server.db.handle, bob.accountId, "setup", server.clock());
    const client = new WebClient(server.baseUrl);
    expect((await client.openPasswordLink(`/setup-password?token=${token}`)).status).toBe(200);
    expectRefused(
      await client.post("/setup-password", { password: "a brand new password", confirm: "a brand new password" }),
    );
    const [row] = await server.db.handle.rows<{ used: boolean }>(
      sql`SELECT used_at IS NOT NULL AS used FROM password_links WHERE account_id = ${bob.accountId}`,
    );
    expect(row!.used).toBe(false);
    expect((await new WebClient(server.baseUrl).signIn(BOB.email, BOB.password)).status).toBe(303);
  });
});

describe("full keys", () => {
  it("appear in no page and no API answer, except the one response right after regeneration (no-store)", async () => {
    const client = await signedIn(ANA);
    const { token: setupToken } = await createPasswordLink(server.db.handle, ana.accountId, "setup", server.clock());
    const pages = [
      "/",
      "/signin",
      "/account",
      "/account/key",
      "/charts",
      "/charts/ZIG?tf=1h",
      "/charts/ZIG?tf=4h",
      "/charts/NOPE",
      `/setup-password?token=${setupToken}`,
    ];
    for (const path of pages) {
      const res = await client.get(path);
      expect(res.status, path).toBeLessThan(500);
      expect(res.body.match(FULL_KEY), path).toBeNull();
    }
    const api = await fetch(`${server.baseUrl}/api/v1/signals?symbols=ZIG&tf=1h`, {
      headers: { "x-api-key": ana.apiKey },
    });
    expect((await api.text()).match(FULL_KEY)).toBeNull();

    const { posted, shown: regenerated } = await client.regenerateKey();
    // POST -> 303 -> GET: the answer to the POST carries no key.
    expect(posted.status).toBe(303);
    expect(posted.headers.location).toBe("/account/key/new");
    expect(posted.body.match(FULL_KEY)).toBeNull();
    expect(regenerated.status).toBe(200);
    expect(regenerated.headers["cache-control"]).toBe("no-store");
    const shown = regenerated.body.match(FULL_KEY)!;
    // One key, twice: in its box and in the first call's curl line beneath it.
    expect(shown).toHaveLength(2);
    expect(shown[1]).toBe(shown[0]);
    expect(await activeKeyHashes(ana.accountId)).toEqual([createHash("sha256").update(shown[0]!).digest("hex")]);
    expect(await restStatus(ana.apiKey)).toBe(401);
    expect(await restStatus(shown[0]!)).toBe(200);
    const after = await client.get("/account");
    expect(after.body.match(FULL_KEY)).toBeNull();
    expect(after.body).toContain(shown[0]!.slice(0, 13) + "\u2022".repeat(28));
    ana = { ...ana, apiKey: shown[0]! };
  });

  it("a new key is shown once, only to its account, and is sealed while it waits", async () => {
    const client = await signedIn(ANA);
    const confirm = keyConfirmFormOf((await client.get("/account/key")).body);
    const posted = await client.post("/account/key", confirm);
    expect(posted.status).toBe(303);
    const revealCookie = client.cookies.get("key_reveal")!;
    // Sent again before the key was shown (a double click): no new key, on to the one waiting.
    const doubleClick = await client.post("/account/key", confirm);
    expect(doubleClick.status).toBe(303);
    expect(doubleClick.headers.location).toBe("/account/key/new");
    expect(client.cookies.get("key_reveal")).toBe(revealCookie);
    expect(revealCookie).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // What waits in the database is neither the key nor the token.
    const [waiting] = await server.db.handle.rows<{ token_hash: string; sealed_key: string }>(
      sql`SELECT token_hash, sealed_key FROM key_reveals WHERE account_id = ${ana.accountId}`,
    );
    expect(waiting!.sealed_key).not.toMatch(/sig_live_/);
    expect(waiting!.token_hash).not.toContain(revealCookie);
    // Another member holding the token opens nothing (and does not use it up).
    const bobClient = await signedIn(BOB);
    bobClient.cookies.set("key_reveal", revealCookie);
    const stolen = await bobClient.get("/account/key/new");
    expect(stolen.status).toBe(410);
    expect(stolen.body.match(FULL_KEY)).toBeNull();
    // A forged token opens nothing either.
    const forged = await signedIn(ANA);
    forged.cookies.set("key_reveal", "A".repeat(43));
    expect((await forged.get("/account/key/new")).status).toBe(410);
    // The first GET shows the key and removes the record; the second (a reload) shows no key.
    const first = await client.get("/account/key/new");
    expect(first.status).toBe(200);
    const key = first.body.match(FULL_KEY)![0];
    expect(
      await server.db.handle.rows(sql`SELECT 1 FROM key_reveals WHERE account_id = ${ana.accountId}`),
    ).toHaveLength(0);
    client.cookies.set("key_reveal", revealCookie);
    const again = await client.get("/account/key/new");
    expect(again.status).toBe(410);
    expect(again.headers["cache-control"]).toBe("no-store");
    expect(again.body.match(FULL_KEY)).toBeNull();
    // The same confirmation sent again (a re-sent POST) changes nothing.
    const resent = await client.post("/account/key", confirm);
    expect(resent.status).toBe(409);
    expect(resent.body).toContain("already used");
    expect(await activeKeyHashes(ana.accountId)).toEqual([createHash("sha256").update(key).digest("hex")]);
    expect(await restStatus(key)).toBe(200);
    ana = { ...ana, apiKey: key };
  });

  it("a regeneration POST without the confirmation goes back to the confirmation page", async () => {
    const client = await signedIn(ANA);
    const before = await activeKeyHashes(ana.accountId);
    const res = await client.post("/account/key", { csrf_token: await client.sessionCsrfToken() });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe("/account/key");
    expect(await activeKeyHashes(ana.accountId)).toEqual(before);
  });
});

describe("members are isolated", () => {
  it("a member sees only their own account and ledger, whatever the URL says", async () => {
    for (let i = 0; i < 7; i++) expect(await restStatus(bob.apiKey)).toBe(200);
    const client = await signedIn(ANA);
    for (const path of [
      "/account",
      `/account?account=${bob.accountId}`,
      `/account?account_id=${bob.accountId}&email=${BOB.email}`,
    ]) {
      const page = await client.get(path);
      expect(page.status).toBe(200);
      expect(page.body).toContain(ANA.email);
      expect(page.body).not.toContain(BOB.email);
    }
    const page = await client.get("/account");
    // Ledger lines: each non-charge row, and one line per MYT day of charges.
    const anaRows = await server.db.handle.rows<{ n: number }>(sql`
      SELECT (count(*) FILTER (WHERE kind <> 'charge') + count(DISTINCT (created_at AT TIME ZONE
      'Asia/Kuala_Lumpur')::date) FILTER (WHERE kind = 'charge'))::int AS n
        FROM ledger_entries WHERE account_id = ${ana.accountId}`);
    const shownRows = page.body
      .split('id="ledger"')[1]!
      .split("</tbody>")[0]!
      .match(/<tr class="(entry|charges)">/g)!.length;
    expect(shownRows).toBe(Math.min(20, anaRows[0]!.n));
    // Bob's seven calls left his balance at 9,993: that number is nowhere on Ana's page.
    expect(page.body).not.toContain("9,993");
  });

  it("a member's POST cannot touch another account: the account comes from the session only", async () => {
    const client = await signedIn(ANA);
    const bobKeys = await activeKeyHashes(bob.accountId);
    const res = await client.post("/account/alerts", {
      csrf_token: await client.sessionCsrfToken(),
      account_id: String(bob.accountId),
      chat_id: "987654321",
      symbols: "BTC",
      timeframes: "1h",
      action: "save",
    });
    expect(res.status).toBe(303);
    const rows = await server.db.handle.rows<{ account_id: number }>(sql`SELECT account_id FROM alert_settings`);
    expect(rows.map((r) => Number(r.account_id))).toEqual([ana.accountId]);
    expect(await activeKeyHashes(bob.accountId)).toEqual(bobKeys);
  });
});

describe("passwords and sign-in", () => {
  it("stores the password as a self-describing scrypt hash at the configured cost, never in clear", async () => {
    const [row] = await server.db.handle.rows<{ password_hash: string }>(
      sql`SELECT password_hash FROM member_passwords WHERE account_id = ${ana.accountId}`,
    );
    // The tests' low cost (the production default is checked in the passwords' and config's unit tests).
    const N = 2 ** server.config.passwordHashCost.logN;
    expect(N).toBe(2 ** TEST_PASSWORD_COST.logN);
    expect(row!.password_hash).toMatch(new RegExp(`^scrypt\\$${N}\\$8\\$1\\$[A-Za-z0-9_-]{22}\\$[A-Za-z0-9_-]{43}$`));
    expect(row!.password_hash).not.toContain(ANA.password);
  });

  it("re-hashes a password stored at another cost at the next sign-in, keeping its sessions", async () => {
    const email = "dora@example.test";
    const dora = await server.account({ email });
    const password = "dora's long password 4";
    const storedHash = async () =>
      (
        await server.db.handle.rows<{ password_hash: string }>(
          sql`SELECT password_hash FROM member_passwords WHERE account_id = ${dora.accountId}`,
        )
      )[0]!.password_hash;
    const otherCost = { ...server.config.passwordHashCost, logN: server.config.passwordHashCost.logN + 1 };
    await setMemberPassword(server.db.handle, dora.accountId, password, otherCost);
    const before = await storedHash();
    expect(before.split("$")[1]).toBe(String(2 ** otherCost.logN));
    const wrong = await new WebClient(server.baseUrl, { localAddress: "127.0.0.4" }).signIn(email, "not it at all");
    expect(wrong.status).toBe(401);
    expect(await storedHash()).toBe(before);
    const first = await signedIn({ email, password }, "127.0.0.4");
    const after = await storedHash();
    expect(after.split("$")[1]).toBe(String(2 ** server.config.passwordHashCost.logN));
    expect((await first.get("/account")).status).toBe(200);
    await signedIn({ email, password }, "127.0.0.4");
    expect(await storedHash()).toBe(after);
  });

  it("answers an unknown email and a wrong password the same way", async () => {
    const unknown = await new WebClient(server.baseUrl, { localAddress: "127.0.0.3" }).signIn(
      "nobody@example.test",
      "whatever password",
    );
    const wrong = await new WebClient(server.baseUrl, { localAddress: "127.0.0.3" }).signIn(
      ANA.email,
      "a wrong password",
    );
    expect(unknown.status).toBe(401);
    expect(wrong.status).toBe(401);
    expect(unknown.body).toContain("The email or password is not correct.");
    expect(withoutTokens(unknown.body)).toBe(withoutTokens(wrong.body));
  });

  it(`${DEFAULT_THROTTLE.perAddress} failures: the address gets 429, right password too; not the member`, async () => {
    const attacker = new WebClient(server.baseUrl, { localAddress: "127.0.0.2" });
    for (let i = 0; i < DEFAULT_THROTTLE.perAddress; i++) {
      const res = await attacker.signIn(ANA.email, `wrong password ${i}`);
      expect(res.status).toBe(401);
    }
    const blocked = await attacker.signIn(ANA.email, ANA.password);
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers["retry-after"])).toBeGreaterThan(0);
    expect(blocked.body).toContain("Too many failed sign-ins");
    expect(setCookieOf(blocked, "sid")).toBeUndefined();
    // Another email from the same address is blocked too: the budget is the address's.
    expect((await attacker.signIn(BOB.email, BOB.password)).status).toBe(429);
    // The member, from their own address, signs in at once.
    expect(
      (await new WebClient(server.baseUrl, { localAddress: "127.0.0.1" }).signIn(ANA.email, ANA.password)).status,
    ).toBe(303);
    // After the window, the address may try again.
    server.clock.advance(DEFAULT_THROTTLE.windowMs + 1000);
    try {
      expect((await attacker.signIn(ANA.email, ANA.password)).status).toBe(303);
    } finally {
      server.clock.advance(-(DEFAULT_THROTTLE.windowMs + 1000));
    }
  });

  it("never redirects to another site after sign-in", async () => {
    for (const next of ["//evil.test/x", "https://evil.test/", "/\\evil.test", "javascript:alert(1)"]) {
      const res = await new WebClient(server.baseUrl).signIn(ANA.email, ANA.password, { next });
      expect(res.status).toBe(303);
      expect(res.headers.location, next).toBe("/account");
    }
    const res = await new WebClient(server.baseUrl).signIn(ANA.email, ANA.password, { next: "/charts/ZIG?tf=1h" });
    expect(res.headers.location).toBe("/charts/ZIG?tf=1h");
  });
});

describe("one-time password setup link", () => {
  it("sets the password once, signs out the account's sessions, and cannot be used again", async () => {
    const carol = await server.account({ email: "carol@example.test" });
    await setMemberPassword(
      server.db.handle,
      carol.accountId,
      "carol's first password",
      server.config.passwordHashCost,
    );
    const carolSession = await signedIn({ email: "carol@example.test", password: "carol's first password" });
    const { token } = await createPasswordLink(server.db.handle, carol.accountId, "setup", server.clock());
    const client = new WebClient(server.baseUrl);
    const page = await client.openPasswordLink(`/setup-password?token=${token}`);
    expect(page.status).toBe(200);
    expect(page.body).toContain("carol@example.test");
    const csrf = csrfTokenOf(page.body);
    const differ = await client.post("/setup-password", {
      csrf_token: csrf,
      password: "carol's new password",
      confirm: "another password!",
    });
    expect(differ.status).toBe(400);
    const short = await client.post("/setup-password", { csrf_token: csrf, password: "short", confirm: "short" });
    expect(short.status).toBe(400);
    expect(short.body).toContain("at least 10 characters");
    const done = await client.post("/setup-password", {
      csrf_token: csrf,
      password: "carol's new password",
      confirm: "carol's new password",
    });
    expect(done.status).toBe(303);
    expect(done.headers.location).toBe("/signin?password-set");
    expect((await carolSession.get("/account")).status).toBe(303);
    expect((await new WebClient(server.baseUrl).signIn("carol@example.test", "carol's first password")).status).toBe(
      401,
    );
    expect((await new WebClient(server.baseUrl).signIn("carol@example.test", "carol's new password")).status).toBe(303);
    expect((await client.get(`/setup-password?token=${token}`)).status).toBe(404);
    const reuse = await client.post("/setup-password", {
      csrf_token: csrf,
      password: "a third password!!",
      confirm: "a third password!!",
    });
    expect(reuse.status).toBe(404);
    expect((await new WebClient(server.baseUrl).signIn("carol@example.test", "a third password!!")).status).toBe(401);
  });

  it("stops working after 24 hours, and when a newer link is made", async () => {
    const { token: first } = await createPasswordLink(server.db.handle, bob.accountId, "setup", server.clock());
    const { token: second } = await createPasswordLink(server.db.handle, bob.accountId, "setup", server.clock());
    const client = new WebClient(server.baseUrl);
    expect((await client.get(`/setup-password?token=${first}`)).status).toBe(404);
    expect((await client.get(`/setup-password?token=${second}`)).status).toBe(303);
    server.clock.advance(24 * HOUR + 1000);
    try {
      expect((await client.get(`/setup-password?token=${second}`)).status).toBe(404);
    } finally {
      server.clock.advance(-(24 * HOUR + 1000));
    }
    const [stored] = await server.db.handle.rows<{ token_hash: string }>(
      sql`SELECT token_hash FROM password_links WHERE account_id = ${bob.accountId}`,
    );
    expect(stored!.token_hash).toBe(createHash("sha256").update(second).digest("hex"));
  });
});

describe("HTTP details", () => {
  it("sends the security headers with every page", async () => {
    const res = await new WebClient(server.baseUrl).get("/signin");
    expect(res.headers["content-security-policy"]).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
        "form-action 'self' https://checkout.stripe.com https://billing.stripe.com; " +
        "frame-ancestors 'none'; base-uri 'none'",
    );
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    expect(res.headers["referrer-policy"]).toBe("same-origin");
    expect(res.headers["x-frame-options"]).toBe("DENY");
    expect(res.headers["cache-control"]).toBe("no-store");
  });

  it("refuses a wrong method, a form that is too large, and a body that is not a form", async () => {
    const client = await signedIn(ANA);
    const wrongMethod = await client.get("/signout");
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.allow).toBe("POST");
    const token = await client.sessionCsrfToken();
    const big = await client.post("/account/alerts", {
      csrf_token: token,
      chat_id: "1".repeat(20_000),
      symbols: "BTC",
      timeframes: "1h",
    });
    expect(big.status).toBe(413);
    const json = await client.request("POST", "/account/alerts", {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ csrf_token: token }),
    });
    expect(json.status).toBe(415);
    const [settings] = await server.db.handle.rows<{ chat_id: string }>(
      sql`SELECT chat_id FROM alert_settings WHERE account_id = ${ana.accountId}`,
    );
    expect(settings!.chat_id).toBe("987654321");
  });

  it("reads a form sent without Content-Length (chunked) under the same limits", async () => {
    const client = await signedIn(ANA);
    const token = await client.sessionCsrfToken();
    const postChunked = (form: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const cookie = [...client.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
        const req = http.request(
          {
            host: "127.0.0.1",
            port: server.port,
            path: "/account/alerts",
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded", cookie },
            agent: false,
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on("error", reject);
        const body = new URLSearchParams(form).toString();
        for (let i = 0; i < body.length; i += 1000) req.write(body.slice(i, i + 1000));
        req.end();
      });
    expect(
      await postChunked({ csrf_token: token, chat_id: "1".repeat(20_000), symbols: "BTC", timeframes: "1h" }),
    ).toBe(413);
    const [before] = await server.db.handle.rows<{ chat_id: string; symbols: string[]; timeframes: string[] }>(
      sql`SELECT chat_id, symbols, timeframes FROM alert_settings WHERE account_id = ${ana.accountId}`,
    );
    expect(
      await postChunked({
        csrf_token: token,
        chat_id: before!.chat_id,
        symbols: before!.symbols.join(","),
        timeframes: before!.timeframes[0]!,
      }),
    ).toBe(303);
    expect(await postChunked({ csrf_token: "wrong", chat_id: "1", symbols: "BTC", timeframes: "1h" })).toBe(403);
  });

  it("keeps API 404s as JSON and unknown coins as a 404 page", async () => {
    const api = await fetch(`${server.baseUrl}/api/v1/nothing`);
    expect(api.status).toBe(404);
    expect(await api.json()).toMatchObject({ ok: false, error: "not_found" });
    const client = await signedIn(ANA);
    const chart = await client.get("/charts/NOPE?tf=1h");
    expect(chart.status).toBe(404);
    expect(chart.body).toContain("No such coin");
    expect((await client.get("/charts/%3Cscript%3E")).body).not.toContain("<script>");
  });
});

describe("logs", () => {
  it("never contain a password, a session token, a setup token or a key", async () => {
    const client = await signedIn(ANA);
    await new WebClient(server.baseUrl).signIn(ANA.email, "a wrong password for the log");
    const { token } = await createPasswordLink(server.db.handle, bob.accountId, "setup", server.clock());
    const seen = logLines.length;
    await new WebClient(server.baseUrl).get(`/setup-password?token=${token}`);
    // The last request's access line is written when its response closes: every line is in by then.
    await waitFor(
      () => logLines.slice(seen).some((l) => l.includes('"msg":"request"') && l.includes('"path":"/setup-password"')),
      30_000,
      "the setup page's access log line",
      5,
    );
    const text = logLines.join("\n");
    expect(text).toContain("member signed in");
    for (const secret of [
      ANA.password,
      BOB.password,
      "a wrong password for the log",
      client.cookies.get("sid")!,
      token,
      ana.apiKey,
      bob.apiKey,
    ]) {
      expect(text.includes(secret), `log mentions a secret`).toBe(false);
    }
    expect(text.match(FULL_KEY)).toBeNull();
  });
});
