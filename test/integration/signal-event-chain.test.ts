/**
 * The tamper-evident chain of live signal events over a real database (PGlite, or Postgres with
 * DATABASE_URL): persistMarket chains every live event in the transaction that stores it (not
 * the imported ones), the stored log verifies, live events stored before the chain existed are
 * chained first, a fork is refused by the database itself, and many writers on separate
 * connections (as separate server processes have) keep one linear chain.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DbHandle, openDb } from "../../src/db/client.ts";
import {
  chainHash,
  confirmedAtOf,
  formatChainLog,
  GENESIS_HASH,
  verifyChainLog,
} from "../../src/market/event-chain.ts";
import { type PendingSignalEvent, signalEventId } from "../../src/market/signal-events.ts";
import { persistMarket } from "../../src/market/store.ts";
import { chainLogPages } from "../../src/track-record/event-log.ts";
import { createTestDb, type TestDb, usingPostgres } from "../support/test-db.ts";

const H = 3_600_000;
const T0 = 1_750_000_000_000 - (1_750_000_000_000 % H);

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(async () => {
  await db?.drop();
});

let hour = 0;
function event(symbol: string, live: boolean, signal: PendingSignalEvent["signal"] = "LONG"): PendingSignalEvent {
  const candleOpenTime = T0 + hour++ * H;
  return {
    id: signalEventId(symbol, "1h", candleOpenTime),
    symbol,
    tf: "1h",
    signal,
    price: 100 + hour / 8,
    defense: signal === "NONE" ? null : 90.5,
    atrPct: 1.2,
    candleOpenTime,
    live,
  };
}

async function store(handle: DbHandle, events: PendingSignalEvent[]): Promise<void> {
  await persistMarket(handle, { rows: [], touched: [], events, writer: "test", now: Date.now() });
}

async function storedLog(handle: DbHandle): Promise<string> {
  let text = "";
  for await (const page of chainLogPages(handle, 7)) text += formatChainLog(page);
  return text;
}

type Row = { seq: number | string; id: string; live: boolean; chain_prev: string | null; chain_hash: string | null };
const rows = (handle: DbHandle) =>
  handle.rows<Row>(sql`SELECT seq, id, live, chain_prev, chain_hash FROM signal_events ORDER BY seq`);

describe("the signal event chain", () => {
  it(
    "chains live events in the storing transaction, in " + "seq order from the genesis; imported ones stay out",
    async () => {
      const batch = [event("BTC", true), event("ETH", false), event("BTC", true, "NONE"), event("SOL", true, "SHORT")];
      await store(db.handle, batch);
      const stored = await rows(db.handle);
      expect(stored.map((r) => [r.id, r.chain_hash !== null])).toEqual(batch.map((e) => [e.id, e.live]));
      const live = stored.filter((r) => r.live);
      expect(live[0]!.chain_prev).toBe(GENESIS_HASH);
      const first = batch[0]!;
      expect(live[0]!.chain_hash).toBe(
        chainHash(GENESIS_HASH, {
          symbol: "BTC",
          tf: "1h",
          signal: "LONG",
          confirmedAt: confirmedAtOf("1h", first.candleOpenTime),
          price: first.price,
          defense: first.defense,
        }),
      );
      for (let i = 1; i < live.length; i++) expect(live[i]!.chain_prev).toBe(live[i - 1]!.chain_hash);
      const verdict = verifyChainLog(await storedLog(db.handle));
      expect(verdict).toEqual({ ok: true, events: 3, head: live[2]!.chain_hash });
    },
  );

  it("a replayed event (same candle) stores nothing and leaves the chain as it was", async () => {
    const before = await rows(db.handle);
    const [again] = before.filter((r) => r.live);
    const replay = { ...event("BTC", true), id: again!.id };
    await store(db.handle, [replay]);
    expect(await rows(db.handle)).toEqual(before);
  });

  it("chains live events stored before the chain existed, before the next new one", async () => {
    const legacy = event("XRP", true);
    await db.handle.rows(sql`INSERT INTO signal_events (id, symbol, tf, signal, price, defense, atr_pct,
      candle_open_time, live)
      VALUES (${legacy.id}, 'XRP', '1h', 'LONG', ${legacy.price}, ${legacy.defense}, 1, ${legacy.candleOpenTime},
      true)`);
    const next = event("BTC", true, "SHORT");
    await store(db.handle, [next]);
    const stored = await rows(db.handle);
    const [legacyRow, nextRow] = [stored.find((r) => r.id === legacy.id)!, stored.find((r) => r.id === next.id)!];
    expect(legacyRow.chain_hash).not.toBeNull();
    expect(nextRow.chain_prev).toBe(legacyRow.chain_hash);
    expect(verifyChainLog(await storedLog(db.handle))).toMatchObject({ ok: true, events: 5 });
  });

  it("refuses a fork: no two events may follow the same hash", async () => {
    const [a, b] = (await rows(db.handle)).filter((r) => r.live);
    await expect(
      db.handle.rows(sql`UPDATE signal_events SET chain_prev = ${a!.chain_prev} WHERE id = ${b!.id}`),
    ).rejects.toThrow();
  });

  it("stays one linear chain with many concurrent writers on separate connections", async () => {
    const second = usingPostgres
      ? await openDb({ databaseUrl: db.url, dataDir: "memory://", poolSize: 10 })
      : db.handle;
    try {
      const before = (await rows(db.handle)).filter((r) => r.live).length;
      const writes: Promise<void>[] = [];
      for (let i = 0; i < 24; i++) {
        const handle = i % 2 === 0 ? db.handle : second;
        writes.push(
          store(handle, [event(`C${i % 6}`, true), event(`C${i % 6}`, i % 3 === 0), event(`D${i % 4}`, true, "SHORT")]),
        );
      }
      await Promise.all(writes);
      const live = (await rows(db.handle)).filter((r) => r.live);
      expect(live.length).toBe(before + 24 * 2 + 8);
      for (let i = 1; i < live.length; i++)
        expect(live[i]!.chain_prev, `seq ${live[i]!.seq}`).toBe(live[i - 1]!.chain_hash);
      expect(verifyChainLog(await storedLog(db.handle))).toMatchObject({ ok: true, events: live.length });
    } finally {
      if (second !== db.handle) await second.close();
    }
  });
});
