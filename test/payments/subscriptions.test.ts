/**
 * Sign-up and subscriptions through Stripe against a real server and the local fake Stripe:
 * sign up (free, no key, no Tokens) → Subscribe (Checkout in subscription mode) → invoice.paid
 * (plan, paid period + grace, the month's full grant) → the first key → calls work; a deletion
 * at period end → 403 subscription_inactive; a renewal → the same key works at once; unpaid
 * invoices lapse after period end + grace; events out of order converge by their timestamps.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiRequest } from "../support/api-request.ts";
import {
  type CheckoutSessionRecord,
  completedSubscriptionSession,
  deliver,
  type FakeStripe,
  PRICE_FOUNDING_SEAT,
  PRICE_NODE,
  paidInvoice,
  signedEvent,
  startFakeStripe,
  subscriptionObject,
} from "../support/fake-stripe.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";
import { csrfTokenOf, WebClient } from "../support/web-client.ts";

const DAY_S = 24 * 3600;
const FULL_KEY = /sig_live_[0-9A-Za-z]{36}/;
let stripe: FakeStripe;
let server: TestServer;
let counter = 0;

beforeAll(async () => {
  stripe = await startFakeStripe();
  server = await startTestServer({ env: stripe.env() });
});
afterAll(async () => {
  await server?.close();
  await stripe?.close();
});

const nowS = () => Math.floor(server.clock() / 1000);

async function send(type: string, object: Record<string, unknown>, createdS = nowS()): Promise<void> {
  const answer = await deliver(server.baseUrl, signedEvent(type, object, { timestampS: nowS(), createdS }));
  expect(answer.status).toBe(200);
}

async function account(accountId: number) {
  const [row] = await server.db.handle.rows<{
    plan: string;
    subscription_until: Date | string | null;
    grant_balance: string | number;
    pack_balance: string | number;
    stripe_customer_id: string | null;
  }>(
    sql`SELECT plan, subscription_until, grant_balance, pack_balance, stripe_customer_id FROM accounts
      WHERE id = ${accountId}`,
  );
  return {
    plan: row!.plan,
    until: row!.subscription_until === null ? null : new Date(row!.subscription_until).getTime(),
    grant: Number(row!.grant_balance),
    pack: Number(row!.pack_balance),
    customer: row!.stripe_customer_id,
  };
}

async function signUp(): Promise<{ web: WebClient; accountId: number; email: string }> {
  const email = `new${++counter}@example.test`;
  const web = new WebClient(server.baseUrl);
  const form = await web.get("/signup");
  expect(form.status).toBe(200);
  const res = await web.post("/signup", {
    csrf_token: csrfTokenOf(form.body),
    email,
    password: "my new password 123",
    confirm: "my new password 123",
  });
  // The same answer whether or not the email had an account; then the member signs in (without
  // SMTP_URL the account is confirmed at once: test/web/sign-up-verification.test.ts has the mail).
  expect(res.status).toBe(200);
  expect((await web.signIn(email, "my new password 123")).status).toBe(303);
  const [row] = await server.db.handle.rows<{ id: string | number }>(
    sql`SELECT id FROM accounts WHERE email = ${email}`,
  );
  return { web, accountId: Number(row!.id), email };
}

async function subscribe(web: WebClient, plan: "node" | "founding_seat"): Promise<CheckoutSessionRecord> {
  const res = await web.post("/account/subscribe", { csrf_token: await web.sessionCsrfToken(), plan });
  expect(res.status).toBe(303);
  const session = stripe.checkoutSessions.at(-1)!;
  expect(res.headers.location).toBe(session.url);
  return session;
}

async function callApi(apiKey: string): Promise<{ status: number; error?: string }> {
  const { status, body } = await apiRequest(server.baseUrl, "/api/v1/signals?symbols=BTC", { key: apiKey });
  return { status, ...(body.error ? { error: body.error as string } : {}) };
}

async function createKey(web: WebClient): Promise<string> {
  const { posted, shown } = await web.regenerateKey();
  expect(posted.status).toBe(303);
  expect(shown.status).toBe(200);
  return FULL_KEY.exec(shown.body)![0];
}

describe("sign-up", () => {
  it("creates a free account with no key and no Tokens, signed in, ready to subscribe", async () => {
    const { web, accountId } = await signUp();
    expect(await account(accountId)).toMatchObject({ plan: "free", until: null, grant: 0, pack: 0 });
    expect(await server.db.handle.rows(sql`SELECT 1 FROM api_keys WHERE account_id = ${accountId}`)).toHaveLength(0);
    expect(await server.db.handle.rows(sql`SELECT 1 FROM ledger_entries WHERE account_id = ${accountId}`)).toHaveLength(
      0,
    );
    const page = await web.get("/account");
    expect(page.status).toBe(200);
    expect(page.body).toContain("Subscribe: Node");
    expect(page.body).toContain('value="founding_seat"');
    // No key before the plan is paid.
    expect((await web.post("/account/key", { csrf_token: await web.sessionCsrfToken(), confirm: "yes" })).status).toBe(
      403,
    );
  });

  it(
    "answers a taken email as any other, and refuses a short " +
      "or mismatched password and a form without its CSRF token",
    async () => {
      const { email } = await signUp();
      const web = new WebClient(server.baseUrl);
      const token = csrfTokenOf((await web.get("/signup")).body);
      expect(
        (
          await web.post("/signup", {
            csrf_token: token,
            email: email.toUpperCase(),
            password: "another password 1",
            confirm: "another password 1",
          })
        ).status,
      ).toBe(200);
      // The taken account keeps its password.
      expect((await new WebClient(server.baseUrl).signIn(email, "another password 1")).status).toBe(401);
      expect(
        (
          await web.post("/signup", {
            csrf_token: token,
            email: "short@example.test",
            password: "short",
            confirm: "short",
          })
        ).status,
      ).toBe(400);
      expect(
        (
          await web.post("/signup", {
            csrf_token: token,
            email: "mismatch@example.test",
            password: "one long password",
            confirm: "two long password",
          })
        ).status,
      ).toBe(400);
      expect(
        (
          await web.post("/signup", {
            email: "nocsrf@example.test",
            password: "one long password",
            confirm: "one long password",
          })
        ).status,
      ).toBe(403);
      expect(
        await server.db.handle.rows(
          sql`SELECT 1 FROM accounts WHERE email IN ('short@example.test', 'mismatch@example.test',
          'nocsrf@example.test')`,
        ),
      ).toHaveLength(0);
    },
  );
});

describe("subscriptions", () => {
  it(
    "subscribe → invoice.paid (before checkout.session.completed) → full grant and " +
      "the first key works; deletion at period end → 403; renewal → same key at once",
    async () => {
      const { web, accountId, email } = await signUp();
      const session = await subscribe(web, "node");
      expect(session.mode).toBe("subscription");
      expect(session.form["line_items[0][price]"]).toBe(PRICE_NODE);
      expect(session.form["subscription_data[metadata][account_id]"]).toBe(String(accountId));
      const customer = session.customer!;
      const start = nowS();
      const end = start + 30 * DAY_S;
      // Stripe may deliver the invoice before the checkout completion.
      await send(
        "invoice.paid",
        paidInvoice({
          customer,
          subscription: "sub_test_a1",
          price: PRICE_NODE,
          periodStartS: start,
          periodEndS: end,
          paidAtS: start,
          billingReason: "subscription_create",
        }),
      );
      let state = await account(accountId);
      expect(state.plan).toBe("node");
      expect(state.until).toBe((end + DAY_S) * 1000); // period end + 1 day of grace
      expect(state.grant).toBe(10_000);
      const [grantRow] = await server.db.handle.rows<{ grant_delta: string | number }>(
        sql`SELECT grant_delta FROM ledger_entries WHERE account_id = ${accountId} AND kind = 'grant'`,
      );
      expect(Number(grantRow!.grant_delta)).toBe(10_000);
      await send("checkout.session.completed", completedSubscriptionSession(session, "sub_test_a1"));
      expect(await account(accountId)).toEqual(state);

      const apiKey = await createKey(web);
      expect(await callApi(apiKey)).toEqual({ status: 200 });

      // Cancelled at period end: Stripe deletes the subscription when the period ends.
      await send(
        "customer.subscription.deleted",
        subscriptionObject({
          id: "sub_test_a1",
          customer,
          price: PRICE_NODE,
          status: "canceled",
          periodStartS: start,
          periodEndS: end,
          createdS: start,
          endedAtS: end,
          canceledAtS: start + DAY_S,
        }),
        start + DAY_S,
      );
      state = await account(accountId);
      expect(state.until).toBe(end * 1000); // no grace after a deletion
      expect(state.plan).toBe("node"); // the plan is kept
      server.clock.set(end * 1000 + 60_000);
      expect(await callApi(apiKey)).toEqual({ status: 403, error: "subscription_inactive" });
      await web.signIn(email, "my new password 123"); // a month later the web session has expired
      const page = await web.get("/account");
      expect(page.body).toContain("Subscribe: Node");

      // Renewal: a new subscription is paid; the same key works at once.
      const renewal = await subscribe(web, "node");
      expect(renewal.customer).toBe(customer);
      const start2 = nowS();
      await send(
        "invoice.paid",
        paidInvoice({
          customer,
          subscription: "sub_test_a2",
          price: PRICE_NODE,
          periodStartS: start2,
          periodEndS: start2 + 30 * DAY_S,
          paidAtS: start2,
        }),
      );
      expect(await callApi(apiKey)).toEqual({ status: 200 });
      expect(ledgerBalances(await ledgerCheck(server.db.handle, accountId))).toBe(true);
    },
  );

  it(
    "an unpaid renewal lapses after the period end plus the " + "grace; paying later makes the same key work again",
    async () => {
      const { web, accountId } = await signUp();
      const session = await subscribe(web, "founding_seat");
      const customer = session.customer!;
      const start = nowS();
      const end = start + 30 * DAY_S;
      await send(
        "invoice.paid",
        paidInvoice({
          customer,
          subscription: "sub_test_b1",
          price: PRICE_FOUNDING_SEAT,
          periodStartS: start,
          periodEndS: end,
          paidAtS: start,
        }),
      );
      expect((await account(accountId)).plan).toBe("founding_seat");
      const apiKey = await createKey(web);
      await send(
        "customer.subscription.updated",
        subscriptionObject({
          id: "sub_test_b1",
          customer,
          price: PRICE_FOUNDING_SEAT,
          status: "past_due",
          periodStartS: end,
          periodEndS: end + 30 * DAY_S,
          createdS: start,
        }),
        end + 60,
      );
      server.clock.set((end + DAY_S) * 1000 - 60_000);
      expect((await callApi(apiKey)).status).toBe(200);
      server.clock.set((end + DAY_S) * 1000 + 60_000);
      expect(await callApi(apiKey)).toEqual({ status: 403, error: "subscription_inactive" });
      await send(
        "invoice.paid",
        paidInvoice({
          customer,
          subscription: "sub_test_b1",
          price: PRICE_FOUNDING_SEAT,
          periodStartS: end,
          periodEndS: end + 30 * DAY_S,
          paidAtS: nowS(),
        }),
      );
      expect(await callApi(apiKey)).toEqual({ status: 200 });
      expect(ledgerBalances(await ledgerCheck(server.db.handle, accountId))).toBe(true);
    },
  );

  it(
    "out-of-order events converge: an older subscription " + "state or an older invoice never undoes a newer one",
    async () => {
      const { web, accountId } = await signUp();
      const session = await subscribe(web, "node");
      const customer = session.customer!;
      const t = nowS();
      const p1 = t + 30 * DAY_S;
      const p2 = p1 + 30 * DAY_S;
      // The second period's invoice arrives before the first's.
      await send(
        "invoice.paid",
        paidInvoice({
          customer,
          subscription: "sub_test_c1",
          price: PRICE_NODE,
          periodStartS: p1,
          periodEndS: p2,
          paidAtS: p1,
        }),
        p1,
      );
      await send(
        "invoice.paid",
        paidInvoice({
          customer,
          subscription: "sub_test_c1",
          price: PRICE_NODE,
          periodStartS: t,
          periodEndS: p1,
          paidAtS: t,
        }),
        t,
      );
      expect((await account(accountId)).until).toBe((p2 + DAY_S) * 1000);
      // An upgrade (newer) is delivered before an older update that still names node.
      const base = { id: "sub_test_c1", customer, status: "active", periodStartS: t, periodEndS: p1, createdS: t };
      await send(
        "customer.subscription.updated",
        subscriptionObject({ ...base, price: PRICE_FOUNDING_SEAT }),
        p1 + 200,
      );
      await send("customer.subscription.updated", subscriptionObject({ ...base, price: PRICE_NODE }), p1 + 100);
      expect((await account(accountId)).plan).toBe("founding_seat");
      // The newest state still wins when it comes last.
      await send("customer.subscription.updated", subscriptionObject({ ...base, price: PRICE_NODE }), p1 + 300);
      expect((await account(accountId)).plan).toBe("node");
      // A deletion followed by a late invoice of the last period: still ends at the deletion.
      await send(
        "customer.subscription.deleted",
        subscriptionObject({ ...base, price: PRICE_NODE, status: "canceled", endedAtS: p2, canceledAtS: p1 + 400 }),
        p2,
      );
      await send(
        "invoice.paid",
        paidInvoice({
          customer,
          subscription: "sub_test_c1",
          price: PRICE_NODE,
          periodStartS: p1,
          periodEndS: p2,
          paidAtS: p1,
        }),
        p1 + 1,
      );
      expect((await account(accountId)).until).toBe(p2 * 1000);
      expect(ledgerBalances(await ledgerCheck(server.db.handle, accountId))).toBe(true);
    },
  );

  it("an upgrade's invoice (a negative proration line for the old plan) sets the plan charged for", async () => {
    const { web, accountId } = await signUp();
    const customer = (await subscribe(web, "node")).customer!;
    const t = nowS();
    await send(
      "invoice.paid",
      paidInvoice({
        customer,
        subscription: "sub_test_d1",
        price: PRICE_NODE,
        periodStartS: t,
        periodEndS: t + 30 * DAY_S,
        paidAtS: t,
      }),
    );
    expect((await account(accountId)).plan).toBe("node");
    await send(
      "invoice.paid",
      paidInvoice({
        customer,
        subscription: "sub_test_d1",
        price: PRICE_FOUNDING_SEAT,
        periodStartS: t + DAY_S,
        periodEndS: t + 30 * DAY_S,
        paidAtS: t + DAY_S,
        billingReason: "subscription_update",
        extraLines: [{ price: PRICE_NODE, amount: -9000 }],
      }),
      t + DAY_S,
    );
    expect((await account(accountId)).plan).toBe("founding_seat");
  });

  it(
    "an invoice that cannot be tied to an account yet is answered " +
      "500 (Stripe retries), and applies once the checkout links it",
    async () => {
      const { web, accountId } = await signUp();
      const session = await subscribe(web, "node");
      const t = nowS();
      // A Customer this service has not seen and no metadata: only the checkout completion links it.
      const invoice = paidInvoice({
        customer: "cus_test_unlinked",
        subscription: "sub_test_e1",
        price: PRICE_NODE,
        periodStartS: t,
        periodEndS: t + 30 * DAY_S,
        paidAtS: t,
      });
      const early = signedEvent("invoice.paid", invoice, { timestampS: t });
      expect((await deliver(server.baseUrl, early)).status).toBe(500);
      expect((await account(accountId)).plan).toBe("free");
      await send("checkout.session.completed", {
        ...completedSubscriptionSession(session, "sub_test_e1"),
        customer: "cus_test_unlinked",
      });
      expect((await deliver(server.baseUrl, early)).status).toBe(200); // Stripe's retry
      expect(await account(accountId)).toMatchObject({ plan: "node", until: (t + 31 * DAY_S) * 1000, grant: 10_000 });
      expect(ledgerBalances(await ledgerCheck(server.db.handle, accountId))).toBe(true);
    },
  );

  it("opens the Billing Portal for the account's own Customer", async () => {
    const { web, accountId } = await signUp();
    await subscribe(web, "node");
    const customer = (await account(accountId)).customer!;
    expect(customer).toMatch(/^cus_/);
    const page = await web.get("/account");
    expect(page.body).toContain('action="/account/billing-portal"');
    const res = await web.post("/account/billing-portal", {
      csrf_token: await web.sessionCsrfToken(),
      customer: "cus_someone_else",
    });
    expect(res.status).toBe(303);
    const portal = stripe.portalSessions.at(-1)!;
    expect(res.headers.location).toBe(portal.url);
    expect(portal.customer).toBe(customer);
    expect(portal.returnUrl).toBe(`${server.config.publicBaseUrl}/account`);
  });
});
