/**
 * The low-balance notice (DESIGN §2): when a charge takes credits_left below 15% of the grant
 * (1,500), the member gets one message per crossing, re-armed when the balance is back at or
 * above 1,500. The notice is an outbox row written by charge_call in the charging transaction,
 * so it exists exactly when that charge committed. Then end to end: REST calls crossing the
 * threshold give one message at a fake Telegram, and a member with no chat gets none.
 */

import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount, getAccountSummary } from "../../src/accounts/accounts.ts";
import { hashApiKey } from "../../src/accounts/api-key.ts";
import { parseAlertSettings, saveAlertSettings } from "../../src/alerts/settings.ts";
import { chargeBatch, chargeCall, createChargeBatcher } from "../../src/billing/charge.ts";
import { adjustTokens, applyMonthlyGrant, lowBalanceThreshold } from "../../src/billing/tokens.ts";
import { mytDay, mytMonth } from "../../src/clock.ts";
import { type Limits, loadConfig } from "../../src/config.ts";
import { type DbHandle, openDb, resultRows } from "../../src/db/client.ts";
import { apiJson } from "../support/api-request.ts";
import { FAKE_BOT_TOKEN, type FakeTelegram, startFakeTelegram } from "../support/fake-telegram.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { createTestDb, type TestDb, usingPostgres } from "../support/test-db.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

const limits: Limits = loadConfig({}).limits;
const THRESHOLD = 1_500;
const NOV_15 = Date.parse("2026-11-15T04:00:00Z");
const DEC_2 = Date.parse("2026-12-02T04:00:00Z");

interface Notice {
  id: number;
  kind: string;
  chat_id: string | null;
  event_id: string | null;
  payload: { credits_left: number; threshold: number };
  attempts: number;
}

let tdb: TestDb;
let n = 0;

beforeAll(async () => {
  tdb = await createTestDb();
});
afterAll(async () => {
  await tdb?.drop();
});

async function newAccount(options: { chatId?: string; plan?: string; until?: Date } = {}) {
  const { summary, apiKey } = await createAccount(
    tdb.handle,
    {
      email: `low${++n}@example.test`,
      plan: options.plan ?? "node",
      subscriptionUntil: options.until ?? new Date(NOV_15 + 60 * 86_400_000),
    },
    limits,
    NOV_15,
  );
  if (options.chatId) {
    await saveAlertSettings(
      tdb.handle,
      summary.accountId,
      parseAlertSettings({ chatId: options.chatId, symbols: "BTC", timeframes: "4h" }),
    );
  }
  return { id: summary.accountId, keyHash: hashApiKey(apiKey) };
}

/** Sets the balance with a ledger adjustment (adjustments never write a notice themselves). */
async function setBalance(db: DbHandle, id: number, credits: number, now = NOV_15) {
  const s = await getAccountSummary(db, id, now);
  if (credits !== s.tokensLeft)
    expect(await adjustTokens(db, id, "adjustment", credits - s.tokensLeft, "test setup", limits)).toBe("ok");
}

async function notices(db: DbHandle, accountId: number): Promise<Notice[]> {
  const rows = await db.rows<Record<string, unknown>>(sql`
    SELECT id, kind, chat_id, event_id, payload, attempts FROM outbox WHERE account_id = ${accountId} ORDER BY id`);
  return rows.map((r) => ({
    id: Number(r.id),
    kind: String(r.kind),
    chat_id: r.chat_id as string | null,
    event_id: r.event_id as string | null,
    payload: (typeof r.payload === "string" ? JSON.parse(r.payload) : r.payload) as Notice["payload"],
    attempts: Number(r.attempts),
  }));
}

async function charge(keyHash: string, times = 1, now = NOV_15) {
  const results = [];
  for (let i = 0; i < times; i++) results.push(await chargeCall(tdb.handle, keyHash, limits, now));
  return results;
}

describe("the low-balance notice", () => {
  it("is written once, by the charge that takes credits_left below 1,500", async () => {
    const { id, keyHash } = await newAccount({ chatId: "777" });
    await setBalance(tdb.handle, id, 1_502);
    const [to1501, to1500] = await charge(keyHash, 2);
    expect([to1501!.tokensLeft, to1500!.tokensLeft]).toEqual([1_501, 1_500]);
    // 1,500 is not below the threshold.
    expect(await notices(tdb.handle, id)).toEqual([]);
    const [to1499] = await charge(keyHash);
    expect(to1499).toMatchObject({ outcome: "ok", tokensLeft: 1_499, lowBalanceCrossed: true });
    const [notice] = await notices(tdb.handle, id);
    expect(notice).toMatchObject({
      kind: "low_balance",
      chat_id: "777",
      event_id: null,
      payload: { credits_left: 1_499, threshold: THRESHOLD },
      attempts: 0,
    });

    // Further charges below the threshold: still exactly one notice.
    const below = await charge(keyHash, 5);
    expect(below.map((r) => r.lowBalanceCrossed)).toEqual([false, false, false, false, false]);
    expect(await notices(tdb.handle, id)).toHaveLength(1);
    expect(ledgerBalances(await ledgerCheck(tdb.handle, id))).toBe(true);
  });

  it("is re-armed by a Token pack taking the balance back to 1,500 (not 1,499), then fires once more", async () => {
    const { id, keyHash } = await newAccount({ chatId: "778" });
    await setBalance(tdb.handle, id, 1_500);
    await charge(keyHash); // 1,499: first notice
    await charge(keyHash, 3); // 1,496
    expect(await notices(tdb.handle, id)).toHaveLength(1);

    // A pack that leaves the balance below the threshold does not re-arm it.
    expect(await adjustTokens(tdb.handle, id, "pack", 3, "pack of 3", limits)).toBe("ok"); // 1,499
    await charge(keyHash); // 1,498
    expect(await notices(tdb.handle, id)).toHaveLength(1);

    // Back at exactly 1,500 ("at or above"): re-armed.
    expect(await adjustTokens(tdb.handle, id, "pack", 2, "pack of 2", limits)).toBe("ok"); // 1,500
    expect((await charge(keyHash))[0]).toMatchObject({ tokensLeft: 1_499, lowBalanceCrossed: true });
    await charge(keyHash, 3);
    const all = await notices(tdb.handle, id);
    expect(all.map((x) => x.payload)).toEqual([
      { credits_left: 1_499, threshold: THRESHOLD },
      { credits_left: 1_499, threshold: THRESHOLD },
    ]);
    expect(ledgerBalances(await ledgerCheck(tdb.handle, id))).toBe(true);
  });

  it("is re-armed by a positive adjustment and by the monthly grant", async () => {
    const { id, keyHash } = await newAccount({ chatId: "779" });
    await setBalance(tdb.handle, id, 1_500);
    await charge(keyHash, 2); // 1,499: notice 1; then 1,498
    expect(await adjustTokens(tdb.handle, id, "adjustment", 100, "goodwill", limits)).toBe("ok"); // 1,598: re-armed
    await setBalance(tdb.handle, id, 1_500); // a negative adjustment writes no notice of its own
    expect(await notices(tdb.handle, id)).toHaveLength(1);
    await charge(keyHash); // 1,499: notice 2
    expect(await notices(tdb.handle, id)).toHaveLength(2);

    // December's grant resets the bucket to 10,000: re-armed; spending down to 1,499 again
    // in December fires a third notice.
    await applyMonthlyGrant(tdb.handle, id, limits, DEC_2);
    await setBalance(tdb.handle, id, 1_500, DEC_2);
    expect((await charge(keyHash, 1, DEC_2))[0]).toMatchObject({ tokensLeft: 1_499, lowBalanceCrossed: true });
    expect((await notices(tdb.handle, id)).map((x) => x.payload.credits_left)).toEqual([1_499, 1_499, 1_499]);
  });

  it("follows the configured grant and percentage (threshold in the payload)", async () => {
    const small: Limits = { ...limits, monthlyGrant: 1_000, lowBalancePct: 20 };
    expect(lowBalanceThreshold(small)).toBe(200);
    const { id, keyHash } = await newAccount({ chatId: "780" });
    await setBalance(tdb.handle, id, 201);
    await chargeCall(tdb.handle, keyHash, small, NOV_15); // 200
    expect(await notices(tdb.handle, id)).toHaveLength(0);
    expect(await chargeCall(tdb.handle, keyHash, small, NOV_15)).toMatchObject({
      tokensLeft: 199,
      lowBalanceCrossed: true,
    });
    expect((await notices(tdb.handle, id)).map((x) => x.payload)).toEqual([{ credits_left: 199, threshold: 200 }]);
  });

  it("is written exactly once when many concurrent charges cross together", async () => {
    const { id, keyHash } = await newAccount({ chatId: "781" });
    await setBalance(tdb.handle, id, 1_520);
    const charger = createChargeBatcher(tdb.handle, limits);
    const results = await Promise.all(Array.from({ length: 60 }, () => charger(keyHash, NOV_15)));
    expect(results.filter((r) => r.outcome === "ok")).toHaveLength(60);
    expect(results.filter((r) => r.lowBalanceCrossed).map((r) => r.tokensLeft)).toEqual([1_499]);
    expect((await notices(tdb.handle, id)).map((x) => x.payload)).toEqual([
      { credits_left: 1_499, threshold: THRESHOLD },
    ]);
  });

  it("is captured with a null chat id when the member has no alert settings", async () => {
    const { id, keyHash } = await newAccount();
    await setBalance(tdb.handle, id, 1_500);
    await charge(keyHash);
    expect(await notices(tdb.handle, id)).toEqual([
      expect.objectContaining({
        kind: "low_balance",
        chat_id: null,
        payload: { credits_left: 1_499, threshold: THRESHOLD },
      }),
    ]);
  });
});

describe("the notice and its charge are one transaction", () => {
  /** charge_call inside a caller's transaction (chargeBatch runs the same function). */
  const chargeSql = (keyHash: string, now = NOV_15) => sql`
    SELECT * FROM charge_call(${keyHash}, ${new Date(now).toISOString()}::timestamptz, ${mytDay(now)}::date,
    ${mytMonth(now)}::date,
      ${limits.dailyCap}::integer, ${limits.monthlyGrant}::bigint, ${lowBalanceThreshold(limits)}::bigint)`;

  it("leaves no notice when the crossing charge rolls back, and the next committed crossing writes it", async () => {
    const { id, keyHash } = await newAccount({ chatId: "790" });
    await setBalance(tdb.handle, id, 1_500);
    const before = await ledgerCheck(tdb.handle, id);
    let seenInside: Notice[] = [];
    let seenOutside: number | null = null;
    const rollback = new Error("the request failed after the charge");
    await expect(
      tdb.handle.db.transaction(async (tx) => {
        const [row] = resultRows<{ outcome: string; low_balance_crossed: boolean }>(
          await tx.execute(chargeSql(keyHash)),
        );
        expect(row).toMatchObject({ outcome: "ok", low_balance_crossed: true });
        const inside = resultRows<Record<string, unknown>>(
          await tx.execute(sql`SELECT id, payload FROM outbox WHERE account_id = ${id}`),
        );
        seenInside = inside as unknown as Notice[];
        if (usingPostgres) {
          // Another connection does not see the notice before the charge commits.
          const other = await openDb({ databaseUrl: tdb.url, dataDir: "memory://", poolSize: 1 });
          try {
            seenOutside = (await notices(other, id)).length;
          } finally {
            await other.close();
          }
        }
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(seenInside).toHaveLength(1);
    if (usingPostgres) expect(seenOutside).toBe(0);
    // Rolled back together: no notice, no charge, and the crossing is still armed.
    expect(await notices(tdb.handle, id)).toEqual([]);
    expect(await ledgerCheck(tdb.handle, id)).toEqual(before);
    expect((await charge(keyHash))[0]).toMatchObject({ tokensLeft: 1_499, lowBalanceCrossed: true });
    expect(await notices(tdb.handle, id)).toHaveLength(1);
  });

  it("writes no notice for a refused call, even one that would have crossed", async () => {
    const tight: Limits = { ...limits, dailyCap: 1 };
    const capped = await newAccount({ chatId: "791" });
    await setBalance(tdb.handle, capped.id, 1_501);
    expect(await chargeCall(tdb.handle, capped.keyHash, tight, NOV_15)).toMatchObject({
      outcome: "ok",
      tokensLeft: 1_500,
    });
    expect(await chargeCall(tdb.handle, capped.keyHash, tight, NOV_15)).toMatchObject({
      outcome: "rate_limited",
      lowBalanceCrossed: false,
    });
    expect(await notices(tdb.handle, capped.id)).toEqual([]);
    // The next MYT day the same call is charged and crosses.
    expect(await chargeCall(tdb.handle, capped.keyHash, tight, NOV_15 + 86_400_000)).toMatchObject({
      outcome: "ok",
      lowBalanceCrossed: true,
    });
    expect(await notices(tdb.handle, capped.id)).toHaveLength(1);

    const lapsed = await newAccount({ chatId: "792", until: new Date(NOV_15 - 1000) });
    await setBalance(tdb.handle, lapsed.id, 1_500);
    expect((await charge(lapsed.keyHash))[0]).toMatchObject({
      outcome: "subscription_inactive",
      lowBalanceCrossed: false,
    });
    expect(await notices(tdb.handle, lapsed.id)).toEqual([]);

    // Below the threshold but never notified (an adjustment took it there), and empty.
    const empty = await newAccount({ chatId: "793" });
    await setBalance(tdb.handle, empty.id, 0);
    expect((await charge(empty.keyHash))[0]).toMatchObject({
      outcome: "insufficient_credits",
      lowBalanceCrossed: false,
    });
    expect(await notices(tdb.handle, empty.id)).toEqual([]);
  });

  it("writes exactly the crossing's notice in a group that also holds refused calls", async () => {
    const a = await newAccount({ chatId: "794" });
    const b = await newAccount({ chatId: "795" });
    await setBalance(tdb.handle, a.id, 1_501);
    await setBalance(tdb.handle, b.id, 0);
    const unknown = hashApiKey(`sig_live_${"Q".repeat(32)}`);
    const results = await chargeBatch(
      tdb.handle,
      [a, b, a, { keyHash: unknown }, a].map((x) => ({ keyHash: x.keyHash, now: NOV_15 })),
      limits,
    );
    expect(results.map((r) => [r.outcome, r.tokensLeft, r.lowBalanceCrossed])).toEqual([
      ["ok", 1_500, false],
      ["insufficient_credits", 0, false],
      ["ok", 1_499, true],
      ["invalid_api_key", null, false],
      ["ok", 1_498, false],
    ]);
    expect((await notices(tdb.handle, a.id)).map((x) => x.payload)).toEqual([
      { credits_left: 1_499, threshold: THRESHOLD },
    ]);
    expect(await notices(tdb.handle, b.id)).toEqual([]);
  });
});

describe("end to end: REST calls crossing the threshold", () => {
  let telegram: FakeTelegram;
  let server: TestServer;

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    server = await startTestServer({
      env: { TELEGRAM_API_BASE: telegram.apiBase, TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN, ALERT_RETRY_BASE_MS: "50" },
    });
  });
  afterAll(async () => {
    await server?.close();
    await telegram?.close();
  });

  async function call(apiKey: string): Promise<number> {
    return (await apiJson(server.baseUrl, "/api/v1/signals?symbols=BTC&tf=1h", apiKey)).credits_left as number;
  }

  async function finished(
    accountId: number,
  ): Promise<{ sent: boolean; failed: boolean; attempts: number; last_error: string | null }[]> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const rows = await server.db.handle.rows<{
        sent: boolean;
        failed: boolean;
        attempts: number | string;
        last_error: string | null;
      }>(sql`
        SELECT sent_at IS NOT NULL AS sent, failed_at IS NOT NULL AS failed, attempts, last_error FROM outbox
        WHERE account_id = ${accountId} ORDER BY id`);
      if (rows.length > 0 && rows.every((r) => r.sent || r.failed))
        return rows.map((r) => ({ ...r, attempts: Number(r.attempts) }));
      if (Date.now() > deadline)
        throw new Error(`outbox rows of account ${accountId} not finished: ${JSON.stringify(rows)}`);
      await new Promise((r) => setTimeout(r, 15));
    }
  }

  it("sends the member exactly one message, with the credits left", async () => {
    const { accountId, apiKey } = await server.account();
    await saveAlertSettings(
      server.db.handle,
      accountId,
      parseAlertSettings({ chatId: "-1009001", symbols: "BTC", timeframes: "1h" }),
    );
    await setBalance(server.db.handle, accountId, 1_502, server.clock());
    const left = [];
    for (let i = 0; i < 6; i++) left.push(await call(apiKey));
    expect(left).toEqual([1_501, 1_500, 1_499, 1_498, 1_497, 1_496]);
    const [message] = await telegram.waitForDelivered(1);
    expect(message!.chatId).toBe("-1009001");
    expect(message!.text).toContain("1499 left (below 1500)");
    expect(message!.text).toContain(`${server.config.publicBaseUrl}/account`);
    expect(await finished(accountId)).toEqual([{ sent: true, failed: false, attempts: 1, last_error: null }]);
    expect(telegram.received).toHaveLength(1);
  });

  it("records a member's notice as failed ('no chat id') without any request when no chat is set", async () => {
    const { accountId, apiKey } = await server.account();
    const requestsBefore = telegram.received.length;
    await setBalance(server.db.handle, accountId, 1_500, server.clock());
    expect(await call(apiKey)).toBe(1_499);
    const [row] = await finished(accountId);
    expect(row).toEqual({
      sent: false,
      failed: true,
      attempts: 1,
      last_error: "no chat id configured for this account",
    });
    expect(telegram.received).toHaveLength(requestsBefore);
  });
});
