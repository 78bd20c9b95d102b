/**
 * The Token ledger and the check-and-charge function on a real database (PGlite by default,
 * Postgres with DATABASE_URL), with an injected clock for MYT day and month boundaries.
 */

import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount, getAccountSummary } from "../../src/accounts/accounts.ts";
import { hashApiKey } from "../../src/accounts/api-key.ts";
import { chargeBatch, chargeCall, createChargeBatcher } from "../../src/billing/charge.ts";
import { adjustTokens, applyMonthlyGrant } from "../../src/billing/tokens.ts";
import { type Limits, loadConfig } from "../../src/config.ts";
import { resultRows } from "../../src/db/client.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { createTestDb, type TestDb, usingPostgres } from "../support/test-db.ts";

const limits: Limits = loadConfig({}).limits;
const NOV_15 = Date.parse("2026-11-15T04:00:00Z");
const LAST_MS_OF_NOV_MYT = Date.parse("2026-11-30T15:59:59.999Z");
const FIRST_MS_OF_DEC_MYT = Date.parse("2026-11-30T16:00:00.000Z");

let tdb: TestDb;
let n = 0;

beforeAll(async () => {
  tdb = await createTestDb();
});
afterAll(async () => {
  await tdb.drop();
});

async function newAccount(plan = "node", now = NOV_15, until = new Date(now + 60 * 86400_000)) {
  const { summary, apiKey } = await createAccount(
    tdb.handle,
    { email: `b${++n}@example.test`, plan, subscriptionUntil: until },
    limits,
    now,
  );
  return { id: summary.accountId, keyHash: hashApiKey(apiKey) };
}

async function setBalance(id: number, credits: number, now = NOV_15) {
  const s = await getAccountSummary(tdb.handle, id, now);
  const delta = credits - s.tokensLeft;
  if (delta !== 0) expect(await adjustTokens(tdb.handle, id, "adjustment", delta, "test setup", limits)).toBe("ok");
}

async function expectLedgerSums(id: number) {
  const check = await ledgerCheck(tdb.handle, id);
  expect(ledgerBalances(check), JSON.stringify(check)).toBe(true);
  return check;
}

describe("monthly grant", () => {
  it("a new node account starts with the full grant of its first month", async () => {
    const { id } = await newAccount();
    const s = await getAccountSummary(tdb.handle, id, NOV_15);
    expect(s).toMatchObject({ grantBalance: 10_000, packBalance: 0, tokensLeft: 10_000, grantMonth: "2026-11" });
    await expectLedgerSums(id);
  });

  it("other plans get no grant", async () => {
    const { id } = await newAccount("pro");
    expect((await getAccountSummary(tdb.handle, id, NOV_15)).tokensLeft).toBe(0);
  });

  it("resets (not accumulates) the grant bucket at 00:00 MYT on the 1st and writes off the rest", async () => {
    const { id, keyHash } = await newAccount();
    await setBalance(id, 40);
    expect((await chargeCall(tdb.handle, keyHash, limits, LAST_MS_OF_NOV_MYT)).tokensLeft).toBe(39);
    const dec = await chargeCall(tdb.handle, keyHash, limits, FIRST_MS_OF_DEC_MYT);
    expect(dec).toMatchObject({ outcome: "ok", tokensLeft: 9_999 });
    const kinds = await tdb.handle.rows<{ kind: string; grant_delta: string | number }>(
      sql`SELECT kind, grant_delta FROM ledger_entries WHERE account_id = ${id} ORDER BY id DESC LIMIT 3`,
    );
    expect(kinds.map((k) => [k.kind, Number(k.grant_delta)])).toEqual([
      ["charge", -1],
      ["grant", 10_000],
      ["expiry", -39],
    ]);
    await expectLedgerSums(id);
  });

  it("applies each month's grant once, however many calls race for it", async () => {
    const { id, keyHash } = await newAccount();
    const results = await Promise.all(
      Array.from({ length: 20 }, () => chargeCall(tdb.handle, keyHash, limits, FIRST_MS_OF_DEC_MYT)),
    );
    expect(results.every((r) => r.outcome === "ok")).toBe(true);
    const [grants] = await tdb.handle.rows<{ n: string | number }>(
      sql`SELECT count(*) AS n FROM ledger_entries WHERE account_id = ${id} AND kind = 'grant'`,
    );
    expect(Number(grants!.n)).toBe(2);
    expect((await getAccountSummary(tdb.handle, id, FIRST_MS_OF_DEC_MYT)).tokensLeft).toBe(10_000 - 20);
    await expectLedgerSums(id);
  });

  it("keeps packs across the month change and spends them only after the grant", async () => {
    const { id, keyHash } = await newAccount();
    await setBalance(id, 2);
    expect(await adjustTokens(tdb.handle, id, "pack", 5, "pack of 5", limits)).toBe("ok");
    for (let i = 0; i < 3; i++) await chargeCall(tdb.handle, keyHash, limits, NOV_15);
    let s = await getAccountSummary(tdb.handle, id, NOV_15);
    expect(s).toMatchObject({ grantBalance: 0, packBalance: 4 });
    await applyMonthlyGrant(tdb.handle, id, limits, FIRST_MS_OF_DEC_MYT);
    s = await getAccountSummary(tdb.handle, id, FIRST_MS_OF_DEC_MYT);
    expect(s).toMatchObject({ grantBalance: 10_000, packBalance: 4, tokensLeft: 10_004 });
    await expectLedgerSums(id);
  });
});

describe("charge_call", () => {
  it("charges exactly 1 Token and counts the call", async () => {
    const { id, keyHash } = await newAccount();
    const r = await chargeCall(tdb.handle, keyHash, limits, NOV_15);
    expect(r).toEqual({
      market: null,
      outcome: "ok",
      accountId: id,
      plan: "node",
      tokensLeft: 9_999,
      callsToday: 1,
      lowBalanceCrossed: false,
    });
    expect((await expectLedgerSums(id)).charges).toBe(1);
  });

  it("accepts founding_seat as the node tier", async () => {
    const { keyHash } = await newAccount("founding_seat");
    expect((await chargeCall(tdb.handle, keyHash, limits, NOV_15)).outcome).toBe("ok");
  });

  it("refuses an unknown key", async () => {
    expect((await chargeCall(tdb.handle, hashApiKey(`sig_live_${"x".repeat(32)}`), limits, NOV_15)).outcome).toBe(
      "invalid_api_key",
    );
  });

  it("checks in the contract's order and changes nothing when refusing", async () => {
    // pro plan + expired + no credits → tier first
    const pro = await newAccount("pro", NOV_15, new Date(NOV_15 - 1000));
    expect((await chargeCall(tdb.handle, pro.keyHash, limits, NOV_15)).outcome).toBe("node_tier_required");
    // expired + no credits → subscription
    const expired = await newAccount("node", NOV_15, new Date(NOV_15 - 1000));
    await setBalance(expired.id, 0);
    expect((await chargeCall(tdb.handle, expired.keyHash, limits, NOV_15)).outcome).toBe("subscription_inactive");
    // no credits + cap reached → credits
    const tight = { ...limits, dailyCap: 2 };
    const both = await newAccount();
    await setBalance(both.id, 2);
    await chargeCall(tdb.handle, both.keyHash, tight, NOV_15);
    await chargeCall(tdb.handle, both.keyHash, tight, NOV_15);
    expect((await chargeCall(tdb.handle, both.keyHash, tight, NOV_15)).outcome).toBe("insufficient_credits");
    await setBalance(both.id, 5);
    expect((await chargeCall(tdb.handle, both.keyHash, tight, NOV_15)).outcome).toBe("rate_limited");
    for (const acc of [pro, expired, both]) {
      const before = await ledgerCheck(tdb.handle, acc.id);
      await chargeCall(tdb.handle, acc.keyHash, tight, NOV_15);
      expect(await ledgerCheck(tdb.handle, acc.id)).toEqual(before);
      expect(ledgerBalances(before)).toBe(true);
    }
  });

  it("treats the subscription end as exclusive and renewal as immediate", async () => {
    const until = new Date(NOV_15 + 1000);
    const { keyHash } = await newAccount("node", NOV_15, until);
    expect((await chargeCall(tdb.handle, keyHash, limits, NOV_15 + 999)).outcome).toBe("ok");
    expect((await chargeCall(tdb.handle, keyHash, limits, NOV_15 + 1000)).outcome).toBe("subscription_inactive");
  });

  it("resets the daily cap at 00:00 MYT, not UTC", async () => {
    const tight = { ...limits, dailyCap: 3 };
    const { keyHash } = await newAccount();
    const beforeMidnight = Date.parse("2026-11-15T15:59:59Z");
    for (let i = 1; i <= 3; i++)
      expect(await chargeCall(tdb.handle, keyHash, tight, beforeMidnight)).toMatchObject({
        outcome: "ok",
        callsToday: i,
      });
    const refused = await chargeCall(tdb.handle, keyHash, tight, beforeMidnight);
    expect(refused).toMatchObject({ outcome: "rate_limited", callsToday: 3, tokensLeft: 9_997 });
    expect(await chargeCall(tdb.handle, keyHash, tight, Date.parse("2026-11-15T16:00:00Z"))).toMatchObject({
      outcome: "ok",
      callsToday: 1,
    });
  });

  it("flags the low-balance crossing once per crossing and re-arms at or above the threshold", async () => {
    const { id, keyHash } = await newAccount();
    await setBalance(id, 1_501);
    const crossings: boolean[] = [];
    for (let i = 0; i < 3; i++)
      crossings.push((await chargeCall(tdb.handle, keyHash, limits, NOV_15)).lowBalanceCrossed);
    expect(crossings).toEqual([false, true, false]); // 1500 (not below), 1499 (crossed), 1498
    expect(await adjustTokens(tdb.handle, id, "pack", 3, "pack of 3", limits)).toBe("ok"); // 1501: re-armed
    crossings.length = 0;
    for (let i = 0; i < 3; i++)
      crossings.push((await chargeCall(tdb.handle, keyHash, limits, NOV_15)).lowBalanceCrossed);
    expect(crossings).toEqual([false, true, false]);
    await expectLedgerSums(id);
  });

  it("is exact under concurrency: 300 calls on 100 Tokens give 100 charges", async () => {
    const { id, keyHash } = await newAccount();
    await setBalance(id, 100);
    const results = await Promise.all(
      Array.from({ length: 300 }, () => chargeCall(tdb.handle, keyHash, limits, NOV_15)),
    );
    const outcomes = results.map((r) => r.outcome);
    expect(outcomes.filter((o) => o === "ok")).toHaveLength(100);
    expect(outcomes.filter((o) => o === "insufficient_credits")).toHaveLength(200);
    expect(new Set(results.filter((r) => r.outcome === "ok").map((r) => r.tokensLeft)).size).toBe(100);
    const check = await expectLedgerSums(id);
    expect(check.charges).toBe(100);
    expect(check.grantBalance + check.packBalance).toBe(0);
    expect((await getAccountSummary(tdb.handle, id, NOV_15)).callsToday).toBe(100);
  });
});

describe("grouped charges", () => {
  it("answers each call of a group in its own position, in arrival order per key", async () => {
    const a = await newAccount();
    const b = await newAccount();
    await setBalance(a.id, 2);
    const unknown = hashApiKey(`sig_live_${"Z".repeat(32)}`);
    const results = await chargeBatch(
      tdb.handle,
      [a, b, a, { keyHash: unknown }, a].map((x) => ({ keyHash: x.keyHash, now: NOV_15 })),
      limits,
    );
    expect(results.map((r) => r.outcome)).toEqual(["ok", "ok", "ok", "invalid_api_key", "insufficient_credits"]);
    expect(results.map((r) => r.tokensLeft)).toEqual([1, 9_999, 0, null, 0]);
    await expectLedgerSums(a.id);
    await expectLedgerSums(b.id);
  });

  it("keeps exact accounting when the batcher groups many concurrent calls", async () => {
    const accountsUnderTest = await Promise.all([newAccount(), newAccount(), newAccount()]);
    for (const acc of accountsUnderTest) await setBalance(acc.id, 20);
    const charge = createChargeBatcher(tdb.handle, limits);
    const results = await Promise.all(
      Array.from({ length: 150 }, (_, i) => charge(accountsUnderTest[i % 3]!.keyHash, NOV_15)),
    );
    expect(results.filter((r) => r.outcome === "ok")).toHaveLength(60);
    expect(results.filter((r) => r.outcome === "insufficient_credits")).toHaveLength(90);
    for (const acc of accountsUnderTest) {
      const check = await expectLedgerSums(acc.id);
      expect(check.charges).toBe(20);
    }
  });

  /**
   * Charges two calls made one turn of the event loop apart; returns the statements sent (in all, and
   * before the second call was made) and the outcomes. A group's statement is sent synchronously when
   * it is flushed, so `sentBeforeSecond` says whether the first call's group was still gathering.
   */
  async function twoCallsATurnApart(groupWaitMs?: number) {
    const { id, keyHash } = await newAccount();
    let statements = 0;
    const counting = {
      ...tdb.handle,
      prepared: (text: string, params: unknown[]) => {
        statements++;
        return tdb.handle.prepared(text, params);
      },
    } as typeof tdb.handle;
    const charge = createChargeBatcher(counting, limits, groupWaitMs === undefined ? {} : { groupWaitMs });
    const first = charge(keyHash, NOV_15);
    await new Promise((resolve) => setImmediate(resolve));
    const sentBeforeSecond = statements;
    const second = charge(keyHash, NOV_15);
    const results = await Promise.all([first, second]);
    return {
      statements,
      sentBeforeSecond,
      tokensLeft: results.map((r) => r.tokensLeft),
      check: await expectLedgerSums(id),
    };
  }

  it("sends the calls of one turn of the event loop as a group, a later call in its own statement", async () => {
    const { statements, tokensLeft, check } = await twoCallsATurnApart();
    expect(statements).toBe(2);
    // Two statements in flight on a pool may take the account's row in either order.
    expect([...tokensLeft].sort()).toEqual([9_998, 9_999]);
    expect(check.charges).toBe(2);
  });

  it("with groupWaitMs, sends the calls made within it of a group's first call in one statement", async () => {
    // The second call comes one turn after the first, far inside the wait: one statement for both.
    // A machine that stalls this process for the whole wait between the two (the next turn runs
    // timers first) rightly sends the first alone; such a try is made again, counted, not timed. A
    // batcher that does not wait sends every first call alone, and fails here.
    let attempt = await twoCallsATurnApart(1_000);
    for (let tries = 1; attempt.sentBeforeSecond > 0 && tries < 5; tries++) attempt = await twoCallsATurnApart(1_000);
    const { statements, sentBeforeSecond, tokensLeft, check } = attempt;
    expect(sentBeforeSecond, "the first call's group was sent before the second call, in each of 5 tries").toBe(0);
    expect(statements).toBe(1);
    expect(tokensLeft).toEqual([9_999, 9_998]);
    expect(check.charges).toBe(2);
  });

  it("refuses every call of a group, charging nothing, when the statement fails", async () => {
    const { id, keyHash } = await newAccount();
    const before = await ledgerCheck(tdb.handle, id);
    // The database connection drops while the group's statement is in flight, and the database
    // stays unreachable: the outcome cannot be resolved in time (test/reliability/db-faults.test.ts
    // covers the resolution itself).
    const failing = {
      ...tdb.handle,
      prepared: () => Promise.reject(new Error("connection lost")),
    } as typeof tdb.handle;
    const charge = createChargeBatcher(failing, limits, { resolveWithinMs: 100, retryEveryMs: 20 });
    const outcomes = await Promise.allSettled([charge(keyHash, NOV_15), charge(keyHash, NOV_15)]);
    expect(outcomes.every((o) => o.status === "rejected")).toBe(true);
    expect(await ledgerCheck(tdb.handle, id)).toEqual(before);
  });
});

describe("a process behind the store's market version", () => {
  // Coins with market versions as a market transaction leaves them (market/store.ts raises them).
  beforeAll(async () => {
    await tdb.handle.rows(
      sql`INSERT INTO coins (symbol, base_tf, last_update_at, version) VALUES ('VERA', '1h', now(), 3), ('VERB', '1h',
        now(), 5)`,
    );
  });

  it(
    "is refused 'behind' with the store's versions of the coins " +
      "it is behind on, and charged nothing, grouped or alone",
    async () => {
      const { id, keyHash } = await newAccount();
      const before = await ledgerCheck(tdb.handle, id);
      const grouped = await chargeBatch(
        tdb.handle,
        [{ keyHash, now: NOV_15, known: { VERA: 2, VERB: 5, NEWCOIN: 0 } }],
        limits,
      );
      const charge = createChargeBatcher(tdb.handle, limits);
      const batched = await charge(keyHash, NOV_15, undefined, { VERA: 3, VERB: 4 });
      expect(grouped[0]).toMatchObject({ outcome: "behind", market: { VERA: 3 }, tokensLeft: null, callsToday: null });
      expect(batched).toMatchObject({ outcome: "behind", market: { VERB: 5 } });
      expect(await ledgerCheck(tdb.handle, id)).toEqual(before);
      const [row] = await tdb.handle.rows<{ calls_today: number }>(
        sql`SELECT calls_today FROM accounts WHERE id = ${id}`,
      );
      expect(Number(row!.calls_today)).toBe(0);
    },
  );

  it(
    "is charged once its versions are the store's (or newer), " +
      "and a call without versions is never refused for them",
    async () => {
      const { id, keyHash } = await newAccount();
      const results = await chargeBatch(
        tdb.handle,
        [
          { keyHash, now: NOV_15, known: { VERA: 3, VERB: 6 } },
          { keyHash, now: NOV_15, known: null },
          { keyHash, now: NOV_15 },
        ],
        limits,
      );
      expect(results.map((r) => [r.outcome, r.market])).toEqual([
        ["ok", null],
        ["ok", null],
        ["ok", null],
      ]);
      expect((await expectLedgerSums(id)).charges).toBe(3);
    },
  );
});

describe("ledger", () => {
  it("is append-only", async () => {
    const { id } = await newAccount();
    const refusal = (err: unknown) => /append-only/.test(String((err as { cause?: Error }).cause?.message ?? err));
    await expect(
      tdb.handle.rows(sql`UPDATE ledger_entries SET grant_delta = 0 WHERE account_id = ${id}`),
    ).rejects.toSatisfy(refusal);
    await expect(tdb.handle.rows(sql`DELETE FROM ledger_entries WHERE account_id = ${id}`)).rejects.toSatisfy(refusal);
    expect(ledgerBalances(await ledgerCheck(tdb.handle, id))).toBe(true);
  });

  it("refuses an adjustment below zero and changes nothing", async () => {
    const { id } = await newAccount();
    await setBalance(id, 3);
    const before = await ledgerCheck(tdb.handle, id);
    expect(await adjustTokens(tdb.handle, id, "adjustment", -4, "too much", limits)).toBe("insufficient_credits");
    expect(await ledgerCheck(tdb.handle, id)).toEqual(before);
  });

  it("takes negative adjustments from the grant first, then packs", async () => {
    const { id } = await newAccount();
    await setBalance(id, 10);
    await adjustTokens(tdb.handle, id, "pack", 5, "pack", limits);
    await adjustTokens(tdb.handle, id, "adjustment", -12, "refund reversal", limits);
    expect(await getAccountSummary(tdb.handle, id, NOV_15)).toMatchObject({ grantBalance: 0, packBalance: 3 });
    await expectLedgerSums(id);
  });

  it("stores only a hash of the key", async () => {
    const { summary, apiKey } = await createAccount(
      tdb.handle,
      { email: `h${++n}@example.test`, plan: "node", subscriptionUntil: new Date(NOV_15 + 1e9) },
      limits,
      NOV_15,
    );
    const rows = await tdb.handle.rows<Record<string, unknown>>(
      sql`SELECT * FROM api_keys WHERE account_id = ${summary.accountId}`,
    );
    expect(JSON.stringify(rows)).not.toContain(apiKey);
    expect(JSON.stringify(rows)).not.toContain(apiKey.slice(9, 20));
    expect(rows[0]!.key_hash).toBe(hashApiKey(apiKey));
  });
});

describe.runIf(usingPostgres)("a charge's lock on its account", () => {
  it("leaves foreign keys to the account free: a transaction queueing alerts never waits for a charge", async () => {
    const { id, keyHash } = await newAccount();
    // One connection holds a charge open (its row lock on the account stays until commit) while
    // another, as the market's transaction does, inserts an outbox row naming that account.
    const open = tdb.handle.db.transaction(async (tx) => {
      const [charged] = resultRows<{ outcome: string }>(
        await tx.execute(sql`SELECT outcome FROM charge_call(${keyHash}, ${new Date(NOV_15).toISOString()}::timestamptz,
          '2026-11-15'::date, '2026-11-01'::date, ${limits.dailyCap}, ${limits.monthlyGrant}, 0)`),
      );
      expect(charged?.outcome).toBe("ok");
      const inserted = tdb.handle.db.transaction(async (other) => {
        await other.execute(sql`SET LOCAL lock_timeout = '5s'`);
        await other.execute(sql`INSERT INTO outbox (kind, account_id, chat_id) VALUES ('signal_alert', ${id}, '1')`);
      });
      // The charge is still open here: with FOR UPDATE the insert waited for it, then timed out.
      await inserted;
    });
    await open;
    const [row] = await tdb.handle.rows<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM outbox WHERE account_id = ${id}`,
    );
    expect(row!.n).toBe(1);
  });
});
