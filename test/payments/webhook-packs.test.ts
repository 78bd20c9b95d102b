/**
 * Token packs through Stripe, against a real server and a local fake of Stripe's API: Buy
 * creates a Checkout Session for the session's own account (303 to its url), and the pack is
 * credited only by the signed `checkout.session.completed` webhook, exactly once whatever the
 * duplication (replays, 20 concurrent deliveries, a second event for the same session, a
 * failed attempt then Stripe's retry). Unsigned, mis-signed, stale or tampered deliveries
 * change nothing. Refunds take Tokens back (never below zero); disputes are recorded.
 */
import { PassThrough } from "node:stream";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import {
  type CheckoutSessionRecord,
  completedPackSession,
  deliver,
  disputeObject,
  FAKE_STRIPE_SECRET_KEY,
  FAKE_WEBHOOK_SECRET,
  type FakeStripe,
  refundedCharge,
  signedEvent,
  startFakeStripe,
} from "../support/fake-stripe.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";
import { WebClient } from "../support/web-client.ts";

let stripe: FakeStripe;
let server: TestServer;
const logLines: string[] = [];
let counter = 0;

beforeAll(async () => {
  stripe = await startFakeStripe();
  const logs = new PassThrough();
  logs.setEncoding("utf8").on("data", (chunk: string) => logLines.push(...chunk.split("\n").filter(Boolean)));
  server = await startTestServer({ env: stripe.env({ LOG_LEVEL: "debug" }), logs });
});
afterAll(async () => {
  await server?.close();
  await stripe?.close();
});

const nowS = () => Math.floor(server.clock() / 1000);

async function member(plan = "node"): Promise<{ accountId: number; apiKey: string; web: WebClient; email: string }> {
  const email = `buyer${++counter}@example.test`;
  const password = "a long enough password 1";
  const { accountId, apiKey } = await server.account({ email, plan });
  await setMemberPassword(server.db.handle, accountId, password, server.config.passwordHashCost);
  const web = new WebClient(server.baseUrl);
  expect((await web.signIn(email, password)).status).toBe(303);
  return { accountId, apiKey, web, email };
}

async function balances(accountId: number): Promise<{ grant: number; pack: number }> {
  const [row] = await server.db.handle.rows<{ grant_balance: string | number; pack_balance: string | number }>(
    sql`SELECT grant_balance, pack_balance FROM accounts WHERE id = ${accountId}`,
  );
  return { grant: Number(row!.grant_balance), pack: Number(row!.pack_balance) };
}

async function packRows(accountId: number): Promise<number> {
  const [row] = await server.db.handle.rows<{ n: string | number }>(
    sql`SELECT count(*) AS n FROM ledger_entries WHERE account_id = ${accountId} AND kind = 'pack'`,
  );
  return Number(row!.n);
}

async function expectLedgerHolds(accountId: number): Promise<void> {
  expect(ledgerBalances(await ledgerCheck(server.db.handle, accountId))).toBe(true);
}

/** Buy through the account page; returns the session the fake was asked to create. */
async function buy(web: WebClient, pack = "5000-usd"): Promise<CheckoutSessionRecord> {
  const before = stripe.checkoutSessions.length;
  const res = await web.post("/account/buy", { csrf_token: await web.sessionCsrfToken(), pack });
  expect(res.status).toBe(303);
  expect(stripe.checkoutSessions.length).toBe(before + 1);
  const session = stripe.checkoutSessions.at(-1)!;
  expect(res.headers.location).toBe(session.url);
  return session;
}

describe("buying a pack", () => {
  it(
    "creates a payment-mode Checkout Session with the account " + "and pack in its metadata and redirects to it",
    async () => {
      const m = await member();
      const session = await buy(m.web);
      expect(session.mode).toBe("payment");
      expect(session.metadata).toEqual({
        account_id: String(m.accountId),
        kind: "pack",
        pack_id: "5000-usd",
        tokens: "5000",
      });
      expect(session.form["payment_intent_data[metadata][account_id]"]).toBe(String(m.accountId));
      expect(session.form["line_items[0][price_data][unit_amount]"]).toBe("2500");
      expect(session.form["line_items[0][price_data][currency]"]).toBe("usd");
      expect(session.form.success_url).toBe(`${server.config.publicBaseUrl}/account?checkout=success`);
      // The account's Stripe Customer was created once and is reused.
      expect(session.customer).toMatch(/^cus_/);
      const again = await buy(m.web, "20000-usd");
      expect(again.customer).toBe(session.customer);
      expect(stripe.customers.filter((c) => c.metadata.account_id === String(m.accountId))).toHaveLength(1);
      // Nothing is credited by starting (or returning from) a checkout.
      expect((await m.web.get("/account?checkout=success")).status).toBe(200);
      expect(await balances(m.accountId)).toEqual({ grant: 10_000, pack: 0 });
    },
  );

  it("buys only for the signed-in account, whatever the form says", async () => {
    const m = await member();
    const other = await member();
    const res = await m.web.post("/account/buy", {
      csrf_token: await m.web.sessionCsrfToken(),
      pack: "5000-usd",
      account_id: String(other.accountId),
      account: String(other.accountId),
    });
    expect(res.status).toBe(303);
    expect(stripe.checkoutSessions.at(-1)!.metadata.account_id).toBe(String(m.accountId));
  });

  it(
    "refuses a post without the CSRF token, from another origin, " +
      "or for a pack not on offer, and asks Stripe nothing",
    async () => {
      const m = await member();
      const before = stripe.calls.length;
      expect((await m.web.post("/account/buy", { pack: "5000-usd" })).status).toBe(403);
      expect(
        (
          await m.web.post(
            "/account/buy",
            { csrf_token: await m.web.sessionCsrfToken(), pack: "5000-usd" },
            { origin: "https://evil.example" },
          )
        ).status,
      ).toBe(403);
      expect(
        (await m.web.post("/account/buy", { csrf_token: await m.web.sessionCsrfToken(), pack: "1-usd" })).status,
      ).toBe(400);
      const anonymous = new WebClient(server.baseUrl);
      expect((await anonymous.post("/account/buy", { pack: "5000-usd" })).status).toBe(303);
      expect(stripe.calls.length).toBe(before);
    },
  );

  it("answers 502 with nothing charged when Stripe is unreachable", async () => {
    const m = await member();
    stripe.fail(4);
    const res = await m.web.post("/account/buy", { csrf_token: await m.web.sessionCsrfToken(), pack: "5000-usd" });
    stripe.fail(0);
    expect(res.status).toBe(502);
    expect(res.body).toContain("Nothing was charged");
    expect(res.body).not.toContain(FAKE_STRIPE_SECRET_KEY);
  });

  it(
    "lets the browser follow the redirect: the page's form-action " + "allows Stripe's checkout and billing origins",
    async () => {
      const m = await member();
      const page = await m.web.get("/account");
      const csp = String(page.headers["content-security-policy"]);
      expect(csp).toMatch(/form-action 'self'[^;]* https:\/\/checkout\.stripe\.com/);
      expect(csp).toMatch(/form-action[^;]* https:\/\/billing\.stripe\.com/);
      expect(page.body).toContain('action="/account/buy"');
      expect(page.body).toContain("5,000 Tokens");
    },
  );
});

describe("crediting from the signed webhook", () => {
  it(
    "credits the pack once: a pack ledger row with the session " +
      "and payment-intent ids, and the API's credits_left agrees",
    async () => {
      const m = await member();
      const session = await buy(m.web);
      const delivery = signedEvent(
        "checkout.session.completed",
        completedPackSession(session, { paymentIntent: "pi_test_credit_1" }),
        { timestampS: nowS() },
      );
      const first = await deliver(server.baseUrl, delivery);
      expect(first.status).toBe(200);
      expect(await balances(m.accountId)).toEqual({ grant: 10_000, pack: 5_000 });
      const [row] = await server.db.handle.rows<{ reason: string; pack_delta: string | number }>(
        sql`SELECT reason, pack_delta FROM ledger_entries WHERE account_id = ${m.accountId} AND kind = 'pack'`,
      );
      expect(Number(row!.pack_delta)).toBe(5000);
      expect(row!.reason).toContain(session.id);
      expect(row!.reason).toContain("pi_test_credit_1");
      // A replay of the same delivery credits nothing.
      expect((await deliver(server.baseUrl, delivery)).status).toBe(200);
      expect(await packRows(m.accountId)).toBe(1);
      const api = await fetch(`${server.baseUrl}/api/v1/signals?symbols=BTC`, { headers: { "x-api-key": m.apiKey } });
      expect(api.status).toBe(200);
      expect(((await api.json()) as { credits_left: number }).credits_left).toBe(15_000 - 1);
      const page = await m.web.get("/account");
      expect(page.body).toContain("Token pack");
      await expectLedgerHolds(m.accountId);
    },
  );

  it("re-arms the low-balance notice when the pack takes the balance back above the threshold", async () => {
    const m = await member();
    await server.db.handle.rows(
      sql`SELECT ledger_adjust(${m.accountId}::bigint, 'adjustment', -9000::bigint, 'spent (test)', 1500::bigint)`,
    );
    await server.db.handle.rows(sql`UPDATE accounts SET low_balance_notified = true WHERE id = ${m.accountId}`);
    const session = await buy(m.web);
    await deliver(
      server.baseUrl,
      signedEvent("checkout.session.completed", completedPackSession(session), { timestampS: nowS() }),
    );
    const [row] = await server.db.handle.rows<{ low_balance_notified: boolean }>(
      sql`SELECT low_balance_notified FROM accounts WHERE id = ${m.accountId}`,
    );
    expect(row!.low_balance_notified).toBe(false);
    expect(await balances(m.accountId)).toEqual({ grant: 1_000, pack: 5_000 });
    await expectLedgerHolds(m.accountId);
  });

  it("credits once when the same event arrives 20 times at once", async () => {
    const m = await member();
    const session = await buy(m.web);
    const delivery = signedEvent("checkout.session.completed", completedPackSession(session), { timestampS: nowS() });
    const answers = await Promise.all(Array.from({ length: 20 }, () => deliver(server.baseUrl, delivery)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(await balances(m.accountId)).toEqual({ grant: 10_000, pack: 5_000 });
    expect(await packRows(m.accountId)).toBe(1);
    await expectLedgerHolds(m.accountId);
  });

  it(
    "credits a session once even when Stripe sends another " + "event for it (async_payment_succeeded after completed)",
    async () => {
      const m = await member();
      const session = await buy(m.web);
      const object = completedPackSession(session);
      expect(
        (await deliver(server.baseUrl, signedEvent("checkout.session.completed", object, { timestampS: nowS() })))
          .status,
      ).toBe(200);
      expect(
        (
          await deliver(
            server.baseUrl,
            signedEvent("checkout.session.async_payment_succeeded", object, { timestampS: nowS() }),
          )
        ).status,
      ).toBe(200);
      expect(await packRows(m.accountId)).toBe(1);
      await expectLedgerHolds(m.accountId);
    },
  );

  it(
    "waits for a delayed payment: completed but unpaid credits " + "nothing, async_payment_succeeded credits it",
    async () => {
      const m = await member();
      const session = await buy(m.web);
      await deliver(
        server.baseUrl,
        signedEvent("checkout.session.completed", completedPackSession(session, { paymentStatus: "unpaid" }), {
          timestampS: nowS(),
        }),
      );
      expect((await balances(m.accountId)).pack).toBe(0);
      await deliver(
        server.baseUrl,
        signedEvent("checkout.session.async_payment_succeeded", completedPackSession(session), { timestampS: nowS() }),
      );
      expect((await balances(m.accountId)).pack).toBe(5000);
      await expectLedgerHolds(m.accountId);
    },
  );

  it(
    "refuses a bad signature, a missing one, a stale timestamp " + "and a tampered body with 400, changing nothing",
    async () => {
      const m = await member();
      const session = await buy(m.web);
      const object = completedPackSession(session);
      const good = signedEvent("checkout.session.completed", object, { timestampS: nowS() });
      const wrongSecret = signedEvent("checkout.session.completed", object, {
        timestampS: nowS(),
        secret: "whsec_not_the_right_secret_at_all",
      });
      const stale = signedEvent("checkout.session.completed", object, { timestampS: nowS() - 301 });
      const future = signedEvent("checkout.session.completed", object, { timestampS: nowS() + 301 });
      const tampered = {
        payload: good.payload.replace('"tokens":"5000"', '"tokens":"500000"'),
        signature: good.signature,
      };
      expect(tampered.payload).not.toBe(good.payload);
      const eventsBefore = await server.db.handle.rows(sql`SELECT event_id FROM stripe_events`);
      for (const delivery of [
        wrongSecret,
        stale,
        future,
        tampered,
        { payload: good.payload, signature: null },
        { payload: good.payload, signature: "t=1,v1=abc" },
        { payload: "", signature: good.signature },
      ]) {
        const answer = await deliver(server.baseUrl, delivery);
        expect(answer.status, `${delivery.payload.slice(0, 20)} ${delivery.signature}`).toBe(400);
        expect(answer.body.error).toBe("invalid_signature");
      }
      expect(await balances(m.accountId)).toEqual({ grant: 10_000, pack: 0 });
      expect(await server.db.handle.rows(sql`SELECT event_id FROM stripe_events`)).toHaveLength(eventsBefore.length);
      expect(logLines.join("\n")).not.toContain(FAKE_WEBHOOK_SECRET);
      // The genuine delivery still works afterwards.
      expect((await deliver(server.baseUrl, good)).status).toBe(200);
      expect((await balances(m.accountId)).pack).toBe(5000);
    },
  );

  it("answers 500 when the effect fails, and Stripe's retry then credits exactly once", async () => {
    const m = await member();
    const session = await buy(m.web);
    const delivery = signedEvent("checkout.session.completed", completedPackSession(session), { timestampS: nowS() });
    // A real fault inside the crediting transaction, after the event id was recorded in it.
    await server.db.handle.rows(
      sql.raw(
        `CREATE FUNCTION fail_payments() RETURNS trigger LANGUAGE plpgsql ` +
          `AS $$ BEGIN RAISE EXCEPTION 'disk full (test)'; END $$`,
      ),
    );
    await server.db.handle.rows(
      sql.raw(`CREATE TRIGGER fail_payments BEFORE INSERT ON payments FOR EACH ROW EXECUTE FUNCTION fail_payments()`),
    );
    try {
      const failed = await deliver(server.baseUrl, delivery);
      expect(failed.status).toBe(500);
      expect(JSON.stringify(failed.body)).not.toContain("disk full");
      expect(await balances(m.accountId)).toEqual({ grant: 10_000, pack: 0 });
      expect(
        await server.db.handle.rows(sql`SELECT 1 FROM stripe_events WHERE event_id = ${delivery.eventId}`),
      ).toHaveLength(0);
    } finally {
      await server.db.handle.rows(sql.raw(`DROP TRIGGER fail_payments ON payments`));
      await server.db.handle.rows(sql.raw(`DROP FUNCTION fail_payments()`));
    }
    expect((await deliver(server.baseUrl, delivery)).status).toBe(200);
    expect((await deliver(server.baseUrl, delivery)).status).toBe(200);
    expect(await balances(m.accountId)).toEqual({ grant: 10_000, pack: 5_000 });
    expect(await packRows(m.accountId)).toBe(1);
    await expectLedgerHolds(m.accountId);
  });

  it("answers 200 to event types it does not use, changing nothing", async () => {
    const answer = await deliver(
      server.baseUrl,
      signedEvent("customer.created", { id: "cus_test_x", object: "customer" }, { timestampS: nowS() }),
    );
    expect(answer.status).toBe(200);
    expect(answer.body.handled).toBe("ignored");
  });

  it(
    "the webhook is the only POST that takes no CSRF token; every " +
      "other POST refuses a bare request and changes nothing",
    async () => {
      expect((await fetch(`${server.baseUrl}/webhooks/stripe`)).status).toBe(405);
      const m = await member();
      const before = {
        calls: stripe.calls.length,
        accounts: (await server.db.handle.rows(sql`SELECT id FROM accounts`)).length,
      };
      const routes = [
        "/signin",
        "/signup",
        "/signout",
        "/setup-password",
        "/account/key",
        "/account/alerts",
        "/account/buy",
        "/account/subscribe",
        "/account/billing-portal",
      ];
      const fields = {
        email: "x@example.test",
        password: "a long enough password",
        confirm: "a long enough password",
        pack: "5000-usd",
        plan: "node",
        confirm_key: "yes",
        chat_id: "1",
        symbols: "BTC",
        timeframes: "1h",
      };
      for (const route of routes) {
        const anonymous = await new WebClient(server.baseUrl).post(route, fields);
        const signedInWithoutToken = await m.web.post(route, fields);
        for (const res of [anonymous, signedInWithoutToken]) {
          expect(
            res.status === 403 || (res.status === 303 && res.headers.location === "/signin"),
            `${route}: ${res.status} ${res.headers.location}`,
          ).toBe(true);
        }
      }
      expect(stripe.calls.length).toBe(before.calls);
      expect(await server.db.handle.rows(sql`SELECT id FROM accounts`)).toHaveLength(before.accounts);
      expect((await m.web.get("/account")).status).toBe(200); // still signed in: the bare sign-out was refused
    },
  );

  it("no Stripe secret appears in the logs or the pages", async () => {
    const m = await member();
    await buy(m.web);
    const page = await m.web.get("/account");
    for (const secret of [FAKE_STRIPE_SECRET_KEY, FAKE_WEBHOOK_SECRET]) {
      expect(logLines.join("\n")).not.toContain(secret);
      expect(page.body).not.toContain(secret);
    }
  });
});

describe("refunds and disputes", () => {
  async function boughtPack(paymentIntent: string) {
    const m = await member();
    const session = await buy(m.web);
    await deliver(
      server.baseUrl,
      signedEvent("checkout.session.completed", completedPackSession(session, { paymentIntent }), {
        timestampS: nowS(),
      }),
    );
    expect((await balances(m.accountId)).pack).toBe(5000);
    return m;
  }

  it(
    "takes a refunded pack's Tokens back with an adjustment " + "row, partial refunds in proportion, once per event",
    async () => {
      const m = await boughtPack("pi_test_refund_1");
      const half = signedEvent(
        "charge.refunded",
        refundedCharge({ paymentIntent: "pi_test_refund_1", amount: 2500, amountRefunded: 1250 }),
        { timestampS: nowS() },
      );
      expect((await deliver(server.baseUrl, half)).status).toBe(200);
      expect((await deliver(server.baseUrl, half)).status).toBe(200);
      expect(await balances(m.accountId)).toEqual({ grant: 10_000, pack: 2_500 });
      // Stripe reports the cumulative amount refunded: the rest of the pack now.
      await deliver(
        server.baseUrl,
        signedEvent(
          "charge.refunded",
          refundedCharge({ paymentIntent: "pi_test_refund_1", amount: 2500, amountRefunded: 2500 }),
          { timestampS: nowS() },
        ),
      );
      expect(await balances(m.accountId)).toEqual({ grant: 10_000, pack: 0 });
      const rows = await server.db.handle.rows<{ kind: string; reason: string }>(
        sql`SELECT kind, reason FROM ledger_entries WHERE account_id = ${m.accountId} AND kind = 'adjustment'
          ORDER BY id`,
      );
      expect(rows).toHaveLength(2);
      expect(rows[0]!.reason).toContain("refund");
      await expectLedgerHolds(m.accountId);
    },
  );

  it(
    "never takes the balance below zero: the shortfall is recorded " +
      "on the payment row and the ledger reason, and logged",
    async () => {
      const m = await boughtPack("pi_test_refund_2");
      // The member spent almost everything (an operator adjustment stands in for 14,990 calls).
      await server.db.handle.rows(
        sql`SELECT ledger_adjust(${m.accountId}::bigint, 'adjustment', -14990::bigint, 'spent (test)', 1500::bigint)`,
      );
      expect(await balances(m.accountId)).toEqual({ grant: 0, pack: 10 });
      await deliver(
        server.baseUrl,
        signedEvent(
          "charge.refunded",
          refundedCharge({ paymentIntent: "pi_test_refund_2", amount: 2500, amountRefunded: 2500 }),
          { timestampS: nowS() },
        ),
      );
      expect(await balances(m.accountId)).toEqual({ grant: 0, pack: 0 });
      const [payment] = await server.db.handle.rows<{ tokens: string | number; shortfall: string | number }>(
        sql`SELECT tokens, shortfall FROM payments WHERE account_id = ${m.accountId} AND kind = 'refund'`,
      );
      expect(Number(payment!.tokens)).toBe(10);
      expect(Number(payment!.shortfall)).toBe(4990);
      const [row] = await server.db.handle.rows<{ reason: string }>(
        sql`SELECT reason FROM ledger_entries WHERE account_id = ${m.accountId} ORDER BY id DESC LIMIT 1`,
      );
      expect(row!.reason).toContain("shortfall 4990");
      expect(logLines.some((l) => l.includes("shortfall"))).toBe(true);
      await expectLedgerHolds(m.accountId);
    },
  );

  it("records a dispute for the operator without moving Tokens", async () => {
    const m = await boughtPack("pi_test_dispute_1");
    const delivery = signedEvent(
      "charge.dispute.created",
      disputeObject({ paymentIntent: "pi_test_dispute_1", amount: 2500 }),
      { timestampS: nowS() },
    );
    expect((await deliver(server.baseUrl, delivery)).status).toBe(200);
    expect((await deliver(server.baseUrl, delivery)).status).toBe(200);
    const disputes = await server.db.handle.rows(
      sql`SELECT * FROM payments WHERE account_id = ${m.accountId} AND kind = 'dispute'`,
    );
    expect(disputes).toHaveLength(1);
    expect(await balances(m.accountId)).toEqual({ grant: 10_000, pack: 5_000 });
    expect(logLines.some((l) => l.includes("payment disputed"))).toBe(true);
  });
});

describe("payments off", () => {
  it("without STRIPE_SECRET_KEY the webhook is 404 and the account page has no purchase buttons", async () => {
    const plain = await startTestServer();
    try {
      const delivery = signedEvent(
        "checkout.session.completed",
        { id: "cs_x", object: "checkout.session" },
        { timestampS: Math.floor(plain.clock() / 1000) },
      );
      expect((await deliver(plain.baseUrl, delivery)).status).toBe(404);
      const { accountId } = await plain.account({ email: "plain@example.test" });
      await setMemberPassword(plain.db.handle, accountId, "a long enough password 1", plain.config.passwordHashCost);
      const web = new WebClient(plain.baseUrl);
      await web.signIn("plain@example.test", "a long enough password 1");
      const page = await web.get("/account");
      expect(page.status).toBe(200);
      expect(page.body).not.toContain("/account/buy");
      expect(page.body).not.toContain("/account/subscribe");
      expect(
        (await web.post("/account/buy", { csrf_token: await web.sessionCsrfToken(), pack: "5000-usd" })).status,
      ).toBe(404);
    } finally {
      await plain.close();
    }
  });
});
