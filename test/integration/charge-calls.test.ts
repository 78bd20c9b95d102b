/**
 * The set-based group charge (`charge_calls`, the product path through chargeBatch) against the
 * per-call one it replaced (`charge_call` once per call, the old group statement kept here as
 * the reference): two fresh databases get the same accounts, the same random states (small
 * balances split between grant and packs, daily caps near the limit, stale grant months,
 * expired and expiring subscriptions, other plans, revoked and unknown keys, low-balance flags
 * around the threshold) and the same random groups (repeated accounts, calls straddling MYT
 * midnight and the month's end), and must give the same answer to every call and end with the
 * same balances, ledgers and notices.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { createTestDb, type TestDb } from "../support/test-db.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { loadConfig, type Limits } from "../../src/config.ts";
import { createAccount } from "../../src/accounts/accounts.ts";
import { chargeBatch, toResult, type ChargeResult, type ChargeRow } from "../../src/billing/charge.ts";
import { mytDay, mytMonth } from "../../src/clock.ts";
import { lowBalanceThreshold } from "../../src/billing/tokens.ts";
import type { ChargeRequest } from "../../src/billing/charge-statement.ts";

/** The group statement before charge_calls: one charge_call per call, in the order given. */
const PER_CALL_SQL = `
  SELECT k.ord, c.*
    FROM unnest($1::text[], $2::timestamptz[], $3::date[], $4::date[]) WITH ORDINALITY AS k(key_hash, at, day, month, ord)
   CROSS JOIN LATERAL charge_call(k.key_hash, k.at, k.day, k.month, $5::integer, $6::bigint, $7::bigint) AS c
   ORDER BY k.ord`;

const ACCOUNTS = 7;
const ROUNDS = 80;
const SEED = Number(process.env.CHARGE_CALLS_SEED ?? Date.now() % 1_000_000);
const base: Limits = loadConfig({}).limits;
const NOV_15 = Date.parse("2026-11-15T04:00:00Z");
const LAST_MS_OF_NOV_15_MYT = Date.parse("2026-11-15T15:59:59.999Z");
const LAST_MS_OF_NOV_MYT = Date.parse("2026-11-30T15:59:59.999Z");

let reference: TestDb;
let product: TestDb;
const ids: number[] = [];
const keyHashes: string[] = [];

/** mulberry32: a seeded generator, so a failing run can be repeated with CHARGE_CALLS_SEED. */
function generator(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)]!;
  return { next, int, pick };
}

beforeAll(async () => {
  [reference, product] = await Promise.all([createTestDb(), createTestDb()]);
  for (let i = 0; i < ACCOUNTS; i++) {
    const keyHash = `hash-${String(i).padStart(2, "0")}`;
    for (const db of [reference, product]) {
      const { summary } = await createAccount(db.handle, { email: `c${i}@example.test`, plan: "node", subscriptionUntil: new Date(NOV_15 + 86400_000) }, base, NOV_15);
      // The same key hash on both databases, so both sort a group alike.
      await db.handle.rows(sql`UPDATE api_keys SET key_hash = ${keyHash} WHERE account_id = ${summary.accountId}`);
      if (i % 2 === 0) {
        await db.handle.rows(sql`INSERT INTO alert_settings (account_id, chat_id, symbols, timeframes) VALUES (${summary.accountId}, ${`chat-${i}`}, '{BTC}', '{1h}')`);
      }
      if (db === product) ids.push(summary.accountId);
    }
    keyHashes.push(keyHash);
  }
}, 60_000);
afterAll(async () => {
  await Promise.all([reference?.drop(), product?.drop()]);
});

/** Sets one account's state the way money moves (an adjustment row keeps the ledger summing). */
async function setState(db: TestDb, id: number, s: Record<string, unknown>) {
  await db.handle.rows(sql`
    WITH cur AS (SELECT grant_balance AS g, pack_balance AS p FROM accounts WHERE id = ${id}),
    moved AS (
      INSERT INTO ledger_entries (account_id, kind, grant_delta, pack_delta, grant_after, pack_after, reason)
      SELECT ${id}, 'adjustment', ${s.grant}::bigint - cur.g, ${s.pack}::bigint - cur.p, ${s.grant}::bigint, ${s.pack}::bigint, 'test state'
        FROM cur WHERE cur.g <> ${s.grant}::bigint OR cur.p <> ${s.pack}::bigint)
    UPDATE accounts
       SET plan = ${s.plan}, subscription_until = ${s.until}::timestamptz, grant_balance = ${s.grant}::bigint,
           pack_balance = ${s.pack}::bigint, grant_month = ${s.grantMonth}::date, usage_day = ${s.usageDay}::date,
           calls_today = ${s.callsToday}::integer, low_balance_notified = ${s.notified}::boolean
     WHERE id = ${id}`);
}

/** The old path: the group sorted as chargeBatch sorts it, one charge_call per call. */
async function chargePerCall(db: TestDb, requests: ChargeRequest[], limits: Limits): Promise<ChargeResult[]> {
  const order = requests.map((_, i) => i).sort((a, b) => (requests[a]!.keyHash < requests[b]!.keyHash ? -1 : requests[a]!.keyHash > requests[b]!.keyHash ? 1 : a - b));
  const sorted = order.map((i) => requests[i]!);
  const rows = await db.handle.prepared<ChargeRow>(PER_CALL_SQL, [
    sorted.map((r) => r.keyHash),
    sorted.map((r) => new Date(r.now).toISOString()),
    sorted.map((r) => mytDay(r.now)),
    sorted.map((r) => mytMonth(r.now)),
    limits.dailyCap,
    limits.monthlyGrant,
    lowBalanceThreshold(limits),
  ]);
  const results = new Array<ChargeResult>(requests.length);
  rows.forEach((row, position) => (results[order[position]!] = toResult(row)));
  return results;
}

async function snapshot(db: TestDb) {
  const n = (rows: Record<string, unknown>[]) => rows.map((r) => JSON.parse(JSON.stringify(r, (_, v) => (typeof v === "bigint" ? Number(v) : v))));
  return {
    accounts: n(await db.handle.rows(sql`
      SELECT plan, grant_balance::int AS g, pack_balance::int AS p, grant_month::text AS gm, usage_day::text AS ud, calls_today, low_balance_notified
        FROM accounts ORDER BY id`)),
    ledger: n(await db.handle.rows(sql`
      SELECT account_id::int AS a, kind, grant_delta::int AS gd, pack_delta::int AS pd, grant_after::int AS ga, pack_after::int AS pa, reason
        FROM ledger_entries ORDER BY account_id, id`)),
    outbox: n(await db.handle.rows(sql`SELECT account_id::int AS a, kind, chat_id, payload FROM outbox ORDER BY account_id, id`)),
  };
}

it(`gives every call of random groups the answer and the ledger charge_call gives (seed ${SEED})`, async () => {
  const rnd = generator(SEED);
  const seen = new Map<string, number>();
  for (let round = 0; round < ROUNDS; round++) {
    const grant = rnd.int(3, 12);
    const limits: Limits = { ...base, dailyCap: rnd.int(1, 6), monthlyGrant: grant, lowBalancePct: rnd.pick([20, 40, 60]) };
    const threshold = lowBalanceThreshold(limits);
    // The group's first moment: an ordinary one, or just before MYT midnight or the month's end.
    const start = rnd.pick([NOV_15, NOV_15, NOV_15, LAST_MS_OF_NOV_15_MYT - 1, LAST_MS_OF_NOV_MYT - 1]);
    for (let i = 0; i < ACCOUNTS; i++) {
      const state = {
        plan: rnd.pick(["node", "node", "node", "node", "founding_seat", "pro"]),
        // Expired, ending within the group (its calls are 0–3 ms apart), or running.
        until: rnd.pick([null, start - 1000, start, start + 1, start + 2, start + 86400_000, start + 86400_000]),
        grant: 0,
        pack: 0,
        grantMonth: rnd.pick([mytMonth(start), mytMonth(start), mytMonth(start), "2026-10-01", null]),
        usageDay: rnd.pick([mytDay(start), mytDay(start), "2026-11-01"]),
        callsToday: rnd.int(0, limits.dailyCap),
        notified: rnd.next() < 0.3,
      };
      // Balances near zero and near the low-balance threshold.
      const total = rnd.pick([0, 1, 2, 3, threshold, threshold + 1, threshold + 2, rnd.int(0, 30)]);
      state.grant = rnd.int(0, total);
      state.pack = total - state.grant;
      for (const db of [reference, product]) {
        await setState(db, ids[i]!, { ...state, until: state.until === null ? null : new Date(state.until).toISOString() });
      }
    }
    const size = rnd.int(1, 24);
    // A few accounts per group, so most groups repeat an account.
    const members = Array.from({ length: rnd.int(1, 4) }, () => rnd.int(0, ACCOUNTS - 1));
    const requests: ChargeRequest[] = Array.from({ length: size }, (_, i) => {
      const r = rnd.next();
      const keyHash = r < 0.05 ? "unknown-hash" : keyHashes[rnd.pick(members)]!;
      return { keyHash, now: start + Math.min(i, 3) };
    });
    const expected = await chargePerCall(reference, requests, limits);
    const actual = await chargeBatch(product.handle, requests, limits);
    expect(actual, `seed ${SEED}, round ${round}: ${JSON.stringify(requests)}`).toEqual(expected);
    for (const r of expected) {
      const kind = r.outcome + (r.lowBalanceCrossed ? "+crossed" : "");
      seen.set(kind, (seen.get(kind) ?? 0) + 1);
    }
  }
  const [want, got] = await Promise.all([snapshot(reference), snapshot(product)]);
  expect(got.accounts).toEqual(want.accounts);
  expect(got.ledger).toEqual(want.ledger);
  expect(got.outbox).toEqual(want.outbox);
  for (const id of ids) expect(ledgerBalances(await ledgerCheck(product.handle, id))).toBe(true);
  // The random groups did reach every outcome, a crossing, and the monthly grant (expiry rows).
  for (const kind of ["ok", "ok+crossed", "invalid_api_key", "node_tier_required", "subscription_inactive", "insufficient_credits", "rate_limited"]) {
    expect(seen.get(kind) ?? 0, `${kind} in ${JSON.stringify([...seen])}`).toBeGreaterThan(0);
  }
  expect(want.ledger.some((row: { kind: string }) => row.kind === "grant")).toBe(true);
}, 120_000);
