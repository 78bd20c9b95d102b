/**
 * `signals payments list --account ID [--json]` and `account show` as an operator runs them (a
 * child process) over a database where signed Stripe webhooks (applied by the real handler)
 * credited a pack, took part of it back in a refund, and opened a dispute.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount } from "../../src/accounts/accounts.ts";
import { loadConfig } from "../../src/config.ts";
import { migrateDb, openDb } from "../../src/db/client.ts";
import { createStripeClient } from "../../src/payments/stripe-client.ts";
import { handleStripeWebhook } from "../../src/payments/webhook.ts";
import { disputeObject, refundedCharge, signedEvent, startFakeStripe } from "../support/fake-stripe.ts";
import { unpackMigratedTemplate } from "../support/migrated-pglite.ts";
import { childEnv, runCli } from "../support/processes.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";

let env: NodeJS.ProcessEnv;
let dataDir: string;
let dropDatabase: (() => Promise<void>) | null = null;
let accountId = 0;
const NOW = Date.parse("2026-11-15T04:00:00Z");

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), "signals-payments-cli-"));
  let databaseUrl: string | null = null;
  if (usingPostgres) {
    const database = await createPostgresDatabase();
    dropDatabase = database.drop;
    databaseUrl = database.url;
  } else {
    unpackMigratedTemplate(dataDir);
  }
  env = childEnv(databaseUrl ? { DATABASE_URL: databaseUrl } : { DATA_DIR: dataDir });
  const fake = await startFakeStripe();
  const config = loadConfig({
    ...fake.env(),
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : { DATA_DIR: dataDir }),
  });
  const db = await openDb({ databaseUrl, dataDir, poolSize: 2 });
  try {
    await migrateDb(db);
    const { summary } = await createAccount(
      db,
      { email: "payer@example.test", plan: "node", subscriptionUntil: new Date(NOW + 30 * 86_400_000) },
      config.limits,
      NOW,
    );
    accountId = summary.accountId;
    await db.rows(sql`UPDATE accounts SET stripe_customer_id = 'cus_test_cli' WHERE id = ${accountId}`);
    const deps = {
      db,
      logger: pino({ level: "silent" }),
      limits: config.limits,
      payments: config.payments,
      now: () => NOW,
      stripe: createStripeClient(config.payments.stripe!),
      settings: config.payments.stripe!,
    };
    const t = Math.floor(NOW / 1000);
    const session = {
      id: "cs_test_cli",
      object: "checkout.session",
      mode: "payment",
      status: "complete",
      payment_status: "paid",
      customer: "cus_test_cli",
      metadata: { account_id: String(accountId), kind: "pack", pack_id: "5000-usd", tokens: "5000" },
      amount_total: 2500,
      currency: "usd",
      payment_intent: "pi_test_cli",
    };
    for (const d of [
      signedEvent("checkout.session.completed", session, { timestampS: t }),
      signedEvent(
        "charge.refunded",
        { ...refundedCharge({ paymentIntent: "pi_test_cli", amount: 2500, amountRefunded: 500 }), id: "ch_test_cli" },
        { timestampS: t },
      ),
      signedEvent(
        "charge.dispute.created",
        disputeObject({ paymentIntent: "pi_test_cli", charge: "ch_test_cli", amount: 2000 }),
        { timestampS: t },
      ),
    ]) {
      expect(
        (await handleStripeWebhook(deps, { rawBody: Buffer.from(d.payload), signature: d.signature })).status,
      ).toBe(200);
    }
  } finally {
    await db.close();
    await fake.close();
  }
});
afterAll(async () => {
  rmSync(dataDir, { recursive: true, force: true });
  await dropDatabase?.();
});

describe("payments list", () => {
  it("--json lists each payment with its Stripe ids and its ledger row, newest first", async () => {
    const result = await runCli(["payments", "list", "--account", String(accountId), "--json"], env);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
    const out = JSON.parse(result.stdout) as {
      account_id: number;
      stripe_customer_id: string;
      payments: Array<Record<string, unknown>>;
    };
    expect(out.account_id).toBe(accountId);
    expect(out.stripe_customer_id).toBe("cus_test_cli");
    expect(out.payments.map((p) => p.kind)).toEqual(["dispute", "refund", "pack"]);
    const [dispute, refund, pack] = out.payments;
    expect(pack).toMatchObject({
      checkout_session_id: "cs_test_cli",
      payment_intent_id: "pi_test_cli",
      amount: 2500,
      currency: "usd",
      tokens: 5000,
    });
    expect(pack!.ledger_entry).toMatchObject({ kind: "pack", pack_delta: 5000, grant_delta: 0 });
    expect(String(pack!.stripe_event_id)).toMatch(/^evt_/);
    expect(refund).toMatchObject({
      charge_id: "ch_test_cli",
      payment_intent_id: "pi_test_cli",
      amount: 500,
      tokens: 1000,
      shortfall: 0,
    });
    expect(refund!.ledger_entry).toMatchObject({ kind: "adjustment", pack_delta: -1000 });
    expect(dispute).toMatchObject({ charge_id: "ch_test_cli", amount: 2000, detail: "fraudulent", ledger_entry: null });
  });

  it("prints a line per payment for people, and account show names the Stripe customer", async () => {
    const list = await runCli(["payments", "list", "--account", String(accountId)], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain("3 payment(s)");
    expect(list.stdout).toContain("cs_test_cli");
    const show = await runCli(["account", "show", "--account", String(accountId), "--json"], env);
    expect(JSON.parse(show.stdout).stripe_customer_id).toBe("cus_test_cli");
    const missing = await runCli(["payments", "list", "--json"], env);
    expect(missing.code).toBe(2);
  });
});
