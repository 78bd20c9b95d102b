/**
 * The SQL that enforces the entitlement rule inside one statement agrees with the rule
 * (accounts/entitlement.ts) for every plan and subscription state, the subscription's last
 * millisecond and its end included: charge_call refuses plan or subscription exactly when the
 * account may not call the paid endpoint, free_call admits exactly the accounts the free
 * endpoints admit, and the alert queue writes rows exactly for the accounts whose plan has alerts.
 */

import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount } from "../../src/accounts/accounts.ts";
import { hashApiKey } from "../../src/accounts/api-key.ts";
import { entitlement, mayCallPaidEndpoint, viewerOf } from "../../src/accounts/entitlement.ts";
import { queueSignalAlerts } from "../../src/alerts/signal-alerts.ts";
import { chargeCallStatement } from "../../src/billing/charge-statement.ts";
import { loadConfig } from "../../src/config.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";

const H = 3_600_000;
const NOW = Date.parse("2026-11-15T04:00:00Z");
const limits = loadConfig({}).limits;
const PLANS = ["node", "founding_seat", "basic", "free", "pro"];
const ENDS: ReadonlyArray<readonly [string, number | null]> = [
  ["active", NOW + 30 * 24 * H],
  ["active, its last millisecond", NOW + 1],
  ["lapsed at this very moment", NOW],
  ["lapsed", NOW - H],
  ["never subscribed", null],
];
const CASES = PLANS.flatMap((plan) => ENDS.map(([state, until]) => ({ plan, state, until })));

let tdb: TestDb;
const accounts: Array<{ plan: string; state: string; until: number | null; accountId: number; keyHash: string }> = [];

beforeAll(async () => {
  tdb = await createTestDb();
  let n = 0;
  for (const c of CASES) {
    const { summary, apiKey } = await createAccount(
      tdb.handle,
      { email: `e${++n}@example.test`, plan: c.plan, subscriptionUntil: new Date(c.until ?? NOW + H) },
      limits,
      NOW,
    );
    if (c.until === null)
      await tdb.handle.rows(sql`UPDATE accounts SET subscription_until = NULL WHERE id = ${summary.accountId}`);
    await tdb.handle.rows(
      sql`INSERT INTO alert_settings (account_id, chat_id, symbols, timeframes) VALUES (${summary.accountId},
        ${String(1000 + n)}, ARRAY['ZZA'], ARRAY['1h'])`,
    );
    accounts.push({ ...c, accountId: summary.accountId, keyHash: hashApiKey(apiKey) });
  }
}, 60_000);
afterAll(async () => {
  await tdb?.drop();
});

const viewer = (a: { plan: string; until: number | null }) =>
  viewerOf({ plan: a.plan, subscriptionUntil: a.until === null ? null : new Date(a.until) }, NOW);

describe("the database's checks agree with the entitlement rule", () => {
  it("charge_call refuses plan or subscription exactly when the account may not call the paid endpoint", async () => {
    for (const a of accounts) {
      const [row] = await tdb.handle.rows<{ outcome: string }>(
        chargeCallStatement({ keyHash: a.keyHash, now: NOW }, limits),
      );
      const mayCall = mayCallPaidEndpoint(viewer(a));
      expect(row!.outcome, `${a.plan}, ${a.state}`).toBe(
        mayCall ? "ok" : ["node", "founding_seat"].includes(a.plan) ? "subscription_inactive" : "node_tier_required",
      );
      expect(entitlement(viewer(a), "paid_endpoint").admitted).toBe(mayCall);
    }
  });

  it("free_call admits exactly the accounts the free endpoints admit", async () => {
    for (const a of accounts) {
      const [row] = await tdb.handle.rows<{ outcome: string }>(
        sql`SELECT outcome FROM free_call(${a.keyHash}, ${new Date(NOW).toISOString()}::timestamptz, 100, 60000)`,
      );
      expect(row!.outcome === "ok", `${a.plan}, ${a.state}`).toBe(entitlement(viewer(a), "free_endpoints").admitted);
    }
  });

  it("the alert queue writes a row exactly for the accounts whose plan has alerts", async () => {
    const event = { seq: 1, id: "ZZA-1h-1", symbol: "ZZA", tf: "1h", live: true };
    await tdb.handle.db.transaction((tx) => queueSignalAlerts(tx, [event], NOW));
    const rows = await tdb.handle.rows<{ account_id: string }>(
      sql`SELECT account_id::text FROM outbox WHERE event_id = ${event.id}`,
    );
    const queued = new Set(rows.map((r) => Number(r.account_id)));
    for (const a of accounts)
      expect(queued.has(a.accountId), `${a.plan}, ${a.state}`).toBe(entitlement(viewer(a), "alerts").admitted);
    // The premise: both answers occur.
    expect(queued.size).toBeGreaterThan(0);
    expect(queued.size).toBeLessThan(accounts.length);
  });
});
