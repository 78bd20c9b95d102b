/**
 * Market versions (issue 22 §1) on one database (PGlite by default, Postgres with DATABASE_URL):
 * a market transaction raises its coins' versions; the writer publishes readings at the
 * committed version; another process's feed catches up to a version on demand, or says it
 * could not by the deadline; and a paid call whose process is behind the store is answered
 * 503 with Retry-After and charged nothing, then 200 once its process has the version.
 */

import { sql } from "drizzle-orm";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Candle } from "../../src/engine/index.ts";
import { MarketFeed } from "../../src/market/feed.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import { ledgerCheck } from "../support/ledger.ts";
import { structureBreak } from "../support/structure-break.ts";
import { createTestClock, startTestServer, type TestServer } from "../support/test-server.ts";

const H = 3_600_000;
const COIN = "MVA";
const update = (c: Candle): CandleUpdate => ({ symbol: COIN, tf: "1h", ...c, closed: true });

let server: TestServer;
let follower: MarketFeed;
const clock = createTestClock(Date.parse("2026-11-15T04:00:00Z"));
const { history, breaker } = structureBreak(clock() - 70 * H);

async function storedVersion(): Promise<number> {
  const [row] = await server.db.handle.rows<{ version: number | string }>(
    sql`SELECT version FROM coins WHERE symbol = ${COIN}`,
  );
  return Number(row!.version);
}

beforeAll(async () => {
  // A catch-up that must succeed has all the time the configuration allows (a loaded machine reloads slowly);
  // the server that must give up has its own, short CATCH_UP_MS below.
  server = await startTestServer({ feed: true, clock, env: { CATCH_UP_MS: "60000" } });
  // Another server process's feed over the same database (it writes nothing).
  follower = new MarketFeed({
    db: server.db.handle,
    clock,
    logger: pino({ level: "silent" }),
    staleAfterMs: server.config.staleAfterMs,
    alertMaxDelayMs: 0,
  });
  await follower.load();
});

afterAll(async () => {
  await server?.close();
});

describe("market versions", () => {
  it(
    "each market transaction raises the coin's version, and " + "the writer publishes its readings at that version",
    async () => {
      await server.feed!.ingest(history.map(update), { alerts: false });
      const afterHistory = await storedVersion();
      expect(afterHistory).toBeGreaterThanOrEqual(1);
      expect(server.feed!.versions([COIN, "NOPE"])).toEqual({ [COIN]: afterHistory, NOPE: 0 });
      await server.feed!.ingest([update(breaker)]);
      const afterBreak = await storedVersion();
      expect(afterBreak).toBe(afterHistory + 1);
      expect(server.feed!.versions([COIN])).toEqual({ [COIN]: afterBreak });
      const found = server.feed!.lookup(COIN, "1h", clock());
      expect(found).toMatchObject({
        ok: true,
        reading: { signal: "LONG", confirmed: true, signalId: `${COIN}-1h-${breaker.openTime}`, price: breaker.close },
      });
    },
  );

  it(
    "another process's feed catches up to a stored version " + "on demand and then answers what the writer answers",
    async () => {
      const version = await storedVersion();
      expect(await follower.catchUp({ [COIN]: version }, Date.now() + 5_000)).toBe(true);
      expect(follower.versions([COIN])[COIN]).toBeGreaterThanOrEqual(version);
      expect(follower.lookup(COIN, "1h", clock())).toEqual(server.feed!.lookup(COIN, "1h", clock()));
    },
  );

  it("a catch-up to a version the store does not reach by the deadline says so", async () => {
    const version = await storedVersion();
    const started = Date.now();
    expect(await follower.catchUp({ [COIN]: version + 1 }, started + 200)).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
  });
});

describe("a paid call on a process behind the store", () => {
  const url = () => `${server.baseUrl}/api/v1/signals?symbols=${COIN}&tf=1h`;

  it("catches up (the reload reads the store's version) and is then charged once", async () => {
    const member = await server.account();
    const before = await ledgerCheck(server.db.handle, member.accountId);
    // As if another process had committed a newer market transaction for the coin.
    await server.db.handle.rows(sql`UPDATE coins SET version = version + 10 WHERE symbol = ${COIN}`);
    const stored = await storedVersion();
    expect(server.feed!.versions([COIN])[COIN]).toBeLessThan(stored);
    const res = await fetch(url(), { headers: { "x-api-key": member.apiKey } });
    expect(res.status).toBe(200);
    expect(server.feed!.versions([COIN])[COIN]).toBe(stored);
    expect((await ledgerCheck(server.db.handle, member.accountId)).charges).toBe(before.charges + 1);
  });

  it(
    "that cannot catch up within CATCH_UP_MS is answered 503 with Retry-After " +
      "and not charged, grouped or with an Idempotency-Key",
    async () => {
      // A second server process over the same database whose snapshot never reaches the store.
      const feed = server.feed!;
      const stuck = await startTestServer({
        db: server.db,
        clock,
        env: { CATCH_UP_MS: "200" },
        snapshot: {
          lookup: (symbol, tf, now) => feed.lookup(symbol, tf, now),
          versions: (symbols) => Object.fromEntries(symbols.map((s) => [s, 0])),
          catchUp: async () => false,
        },
      });
      try {
        const member = await stuck.account();
        const before = await ledgerCheck(server.db.handle, member.accountId);
        const stuckUrl = `${stuck.baseUrl}/api/v1/signals?symbols=${COIN}&tf=1h`;
        for (const headers of [
          { "x-api-key": member.apiKey },
          { "x-api-key": member.apiKey, "idempotency-key": "behind-1" },
        ]) {
          const res = await fetch(stuckUrl, { headers });
          expect(res.status).toBe(503);
          expect(res.headers.get("retry-after")).toBe("1");
          expect(await res.json()).toMatchObject({ ok: false, error: "unavailable" });
        }
        expect(await ledgerCheck(server.db.handle, member.accountId)).toEqual(before);
        const [account] = await server.db.handle.rows<{ calls_today: number }>(
          sql`SELECT calls_today FROM accounts WHERE id = ${member.accountId}`,
        );
        expect(Number(account!.calls_today)).toBe(0);
        // A coin the store does not hold is nobody's to catch up on: answered and charged.
        const unknown = await fetch(`${stuck.baseUrl}/api/v1/signals?symbols=NOSUCH&tf=1h`, {
          headers: { "x-api-key": member.apiKey },
        });
        expect(unknown.status).toBe(200);
      } finally {
        await stuck.close();
      }
    },
  );
});
