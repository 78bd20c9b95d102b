/**
 * Storage of the pushed datasets (Drizzle over Postgres / PGlite): one transaction per pushed
 * stream, and the paged reads behind the free endpoints.
 *
 * Writes are idempotent: news is insert-if-absent, macro points are replaced only when their
 * value, unit or source changed (a revision), snapshots (derivatives per coin and venue,
 * fundamentals per coin) are replaced only by a later source time. So a stream that is resent
 * after a failure, or a file imported twice, changes nothing the second time.
 */
import { and, asc, desc, eq, gt, gte, inArray, lt, or, type SQL, sql } from "drizzle-orm";
import { type DbHandle, resultRows } from "../db/client.ts";
import { coinFundamentals, derivativesReadings, macroPoints, newsItems } from "../db/schema.ts";
import type { DerivativesRow, FundamentalsRow, MacroRow, NewsRow, PushedDataset, RowOf } from "./datasets.ts";
import type { Page } from "./request.ts";

/** Rows per INSERT statement (one array parameter per column, so the row count is not bounded by parameters). */
const CHUNK = 5_000;

type Tx = Parameters<Parameters<DbHandle["db"]["transaction"]>[0]>[0];

async function countWritten(tx: Tx, query: SQL): Promise<number> {
  const [row] = resultRows<{ n: number | string }>(await tx.execute(query));
  return Number(row?.n ?? 0);
}

const p = (values: unknown[]) => sql.param(values);

function insertChunk(dataset: PushedDataset, rows: unknown[], at: string, demo: boolean): SQL {
  switch (dataset) {
    case "derivatives": {
      const r = rows as DerivativesRow[];
      return sql`
        WITH written AS (
          INSERT INTO derivatives_readings AS d (symbol, venue, time, funding_rate, open_interest_usd, long_short_ratio,
          updated_at, demo)
          SELECT u.*, ${at}::timestamptz, ${demo}::boolean FROM unnest(
            ${p(r.map((x) => x.symbol))}::text[], ${p(r.map((x) => x.venue))}::text[],
            ${p(r.map((x) => x.time))}::bigint[],
            ${p(r.map((x) => x.fundingRate))}::float8[], ${p(r.map((x) => x.openInterestUsd))}::float8[],
            ${p(r.map((x) => x.longShortRatio))}::float8[]) AS u
          ORDER BY 1, 2
          ON CONFLICT (symbol, venue) DO UPDATE
            SET time = excluded.time, funding_rate = excluded.funding_rate,
            open_interest_usd = excluded.open_interest_usd,
                long_short_ratio = excluded.long_short_ratio, updated_at = excluded.updated_at
            WHERE excluded.time > d.time
          RETURNING 1)
        SELECT count(*)::int AS n FROM written`;
    }
    case "news": {
      const r = rows as NewsRow[];
      // Coins travel as one comma-joined string per item (codes cannot contain commas): a
      // two-dimensional array parameter would be flattened by unnest.
      return sql`
        WITH written AS (
          INSERT INTO news_items (id, time, title, source, url, coins, updated_at, demo)
          SELECT u.id, u.time, u.title, u.source, u.url, string_to_array(u.coins, ','), ${at}::timestamptz,
          ${demo}::boolean FROM unnest(
            ${p(r.map((x) => x.id))}::text[], ${p(r.map((x) => x.time))}::bigint[], ${p(r.map((x) => x.title))}::text[],
            ${p(r.map((x) => x.source))}::text[], ${p(r.map((x) => x.url))}::text[],
            ${p(r.map((x) => x.coins.join(",")))}::text[]) AS u(id, time, title, source, url, coins)
          ORDER BY 1
          ON CONFLICT (id) DO NOTHING
          RETURNING 1)
        SELECT count(*)::int AS n FROM written`;
    }
    case "macro": {
      const r = rows as MacroRow[];
      // A stored point with another value, unit or source is a revision (FRED revises past
      // observations): it is replaced; the same point again changes nothing and counts as a duplicate.
      return sql`
        WITH written AS (
          INSERT INTO macro_points AS m (series, time, value, unit, source, updated_at, demo)
          SELECT u.*, ${at}::timestamptz, ${demo}::boolean FROM unnest(
            ${p(r.map((x) => x.series))}::text[], ${p(r.map((x) => x.time))}::bigint[],
            ${p(r.map((x) => x.value))}::float8[],
            ${p(r.map((x) => x.unit))}::text[], ${p(r.map((x) => x.source))}::text[]) AS u
          ORDER BY 1, 2
          ON CONFLICT (series, time) DO UPDATE
            SET value = excluded.value, unit = excluded.unit, source = excluded.source, updated_at = excluded.updated_at
            WHERE (m.value, m.unit, m.source) IS DISTINCT FROM (excluded.value, excluded.unit, excluded.source)
          RETURNING 1)
        SELECT count(*)::int AS n FROM written`;
    }
    case "fundamentals": {
      const r = rows as FundamentalsRow[];
      return sql`
        WITH written AS (
          INSERT INTO coin_fundamentals AS f (symbol, time, circulating_supply, max_supply, market_cap_usd, rank,
          source,
            total_supply, fully_diluted_valuation_usd, ath_usd, ath_time, updated_at, demo)
          SELECT u.*, ${at}::timestamptz, ${demo}::boolean FROM unnest(
            ${p(r.map((x) => x.symbol))}::text[], ${p(r.map((x) => x.time))}::bigint[],
            ${p(r.map((x) => x.circulatingSupply))}::float8[],
            ${p(r.map((x) => x.maxSupply))}::float8[], ${p(r.map((x) => x.marketCapUsd))}::float8[],
            ${p(r.map((x) => x.rank))}::int[],
            ${p(r.map((x) => x.source))}::text[], ${p(r.map((x) => x.totalSupply))}::float8[],
            ${p(r.map((x) => x.fullyDilutedValuationUsd))}::float8[],
            ${p(r.map((x) => x.athUsd))}::float8[], ${p(r.map((x) => x.athTime))}::bigint[]) AS u
          ORDER BY 1
          ON CONFLICT (symbol) DO UPDATE
            SET time = excluded.time, circulating_supply = excluded.circulating_supply,
            max_supply = excluded.max_supply,
                market_cap_usd = excluded.market_cap_usd, rank = excluded.rank, source = excluded.source,
                total_supply = excluded.total_supply, fully_diluted_valuation_usd =
                excluded.fully_diluted_valuation_usd,
                ath_usd = excluded.ath_usd, ath_time = excluded.ath_time, updated_at = excluded.updated_at
            WHERE excluded.time > f.time
          RETURNING 1)
        SELECT count(*)::int AS n FROM written`;
    }
  }
}

/**
 * The table of each dataset and whether its rows belong to one coin (derivatives, fundamentals) or to the whole dataset
 * (news, macro).
 */
const PROVENANCE_SCOPE: Record<PushedDataset, { table: SQL; perCoin: boolean }> = {
  derivatives: { table: sql`derivatives_readings`, perCoin: true },
  fundamentals: { table: sql`coin_fundamentals`, perCoin: true },
  news: { table: sql`news_items`, perCoin: false },
  macro: { table: sql`macro_points`, perCoin: false },
};

/**
 * Keeps demo and real rows apart (docs/feeder.md, "Demo data and real data"): real rows replace
 * the demo rows of their scope (a coin's, or the whole dataset's), and demo rows are dropped
 * where real rows are held (for a coin: real rows of the dataset, or real candles). Returns the
 * rows to write.
 */
async function separateProvenance<D extends PushedDataset>(
  tx: Tx,
  dataset: D,
  rows: RowOf<D>[],
  demo: boolean,
): Promise<RowOf<D>[]> {
  const { table, perCoin } = PROVENANCE_SCOPE[dataset];
  const symbols = perCoin ? [...new Set((rows as { symbol: string }[]).map((r) => r.symbol))] : [];
  const scope = perCoin ? sql` AND symbol = ANY (${p(symbols)}::text[])` : sql``;
  if (!demo) {
    await tx.execute(sql`DELETE FROM ${table} WHERE demo${scope}`);
    return rows;
  }
  // Per coin, real rows are held where the dataset has real rows for the coin or the coin's candles are real.
  const realCoins = perCoin ? sql` UNION SELECT symbol FROM coins WHERE NOT demo${scope}` : sql``;
  const held = resultRows<{ symbol: string | null }>(
    await tx.execute(
      sql`SELECT DISTINCT ${
        perCoin
          ? sql`symbol`
          : sql`NULL::text
        AS symbol`
      } FROM ${table}
        WHERE NOT demo${scope}${realCoins}`,
    ),
  );
  if (held.length === 0) return rows;
  if (!perCoin) return [];
  const real = new Set(held.map((r) => r.symbol));
  return rows.filter((r) => !real.has((r as { symbol: string }).symbol));
}

/**
 * Writes the rows of one stream in ONE transaction and returns how many changed the store
 * (the rest were already there, or older than what is stored) and how many demo rows were
 * refused because real rows are held. Rows are sorted by key in each statement, so concurrent
 * writers lock rows in the same order.
 */
export async function writeDataset<D extends PushedDataset>(
  handle: DbHandle,
  dataset: D,
  rows: RowOf<D>[],
  receivedAt: number,
  { demo = false }: { demo?: boolean } = {},
): Promise<{ written: number; refused: number }> {
  if (rows.length === 0) return { written: 0, refused: 0 };
  const at = new Date(receivedAt).toISOString();
  return handle.db.transaction(async (tx) => {
    const admitted = await separateProvenance(tx, dataset, rows, demo);
    let written = 0;
    for (let i = 0; i < admitted.length; i += CHUNK)
      written += await countWritten(tx, insertChunk(dataset, admitted.slice(i, i + CHUNK), at, demo));
    return { written, refused: rows.length - admitted.length };
  });
}

// ---------------------------------------------------------------------------------------------
// Reads: one page of at most `limit` rows plus whether more follow (one extra row is read).
// ---------------------------------------------------------------------------------------------

function page<R>(rows: R[], limit: number): Page<R> {
  return rows.length > limit ? { rows: rows.slice(0, limit), more: true } : { rows, more: false };
}

const ms = (d: Date) => d.getTime();

export interface StoredDerivatives extends DerivativesRow {
  updatedAt: number;
}
export interface StoredNews extends NewsRow {
  updatedAt: number;
}
export interface StoredMacro extends MacroRow {
  updatedAt: number;
}
export interface StoredFundamentals extends FundamentalsRow {
  updatedAt: number;
}

/** Derivatives rows by symbol, then venue, after the cursor's (symbol, venue). */
export async function readDerivatives(
  handle: DbHandle,
  filter: { symbols: string[]; after: [string, string] | null; limit: number },
): Promise<Page<StoredDerivatives>> {
  const t = derivativesReadings;
  const where = and(
    filter.symbols.length > 0 ? inArray(t.symbol, filter.symbols) : undefined,
    filter.after
      ? or(gt(t.symbol, filter.after[0]), and(eq(t.symbol, filter.after[0]), gt(t.venue, filter.after[1])))
      : undefined,
  );
  const rows = await handle.db
    .select()
    .from(t)
    .where(where)
    .orderBy(asc(t.symbol), asc(t.venue))
    .limit(filter.limit + 1);
  return page(
    rows.map((r) => ({ ...r, time: Number(r.time), updatedAt: ms(r.updatedAt) })),
    filter.limit,
  );
}

/** News newest first (time, then id, descending), before the cursor's (time, id). */
export async function readNews(
  handle: DbHandle,
  filter: { symbols: string[]; since: number | null; before: [number, string] | null; limit: number },
): Promise<Page<StoredNews>> {
  const t = newsItems;
  const where = and(
    filter.symbols.length > 0 ? sql`${t.coins} && ${sql.param(filter.symbols)}::text[]` : undefined,
    filter.since !== null ? gte(t.time, filter.since) : undefined,
    filter.before
      ? or(lt(t.time, filter.before[0]), and(eq(t.time, filter.before[0]), lt(t.id, filter.before[1])))
      : undefined,
  );
  const rows = await handle.db
    .select()
    .from(t)
    .where(where)
    .orderBy(desc(t.time), desc(t.id))
    .limit(filter.limit + 1);
  return page(
    rows.map((r) => ({ ...r, time: Number(r.time), updatedAt: ms(r.updatedAt) })),
    filter.limit,
  );
}

/** Macro points newest first (time descending, then series name ascending), after the cursor. */
export async function readMacro(
  handle: DbHandle,
  filter: { series: string[]; since: number | null; after: [number, string] | null; limit: number },
): Promise<Page<StoredMacro>> {
  const t = macroPoints;
  const where = and(
    filter.series.length > 0 ? inArray(t.series, filter.series) : undefined,
    filter.since !== null ? gte(t.time, filter.since) : undefined,
    filter.after
      ? or(lt(t.time, filter.after[0]), and(eq(t.time, filter.after[0]), gt(t.series, filter.after[1])))
      : undefined,
  );
  const rows = await handle.db
    .select()
    .from(t)
    .where(where)
    .orderBy(desc(t.time), asc(t.series))
    .limit(filter.limit + 1);
  return page(
    rows.map((r) => ({ ...r, time: Number(r.time), updatedAt: ms(r.updatedAt) })),
    filter.limit,
  );
}

/** Fundamentals by symbol, after the cursor's symbol. */
export async function readFundamentals(
  handle: DbHandle,
  filter: { symbols: string[]; after: string | null; limit: number },
): Promise<Page<StoredFundamentals>> {
  const t = coinFundamentals;
  const where = and(
    filter.symbols.length > 0 ? inArray(t.symbol, filter.symbols) : undefined,
    filter.after !== null ? gt(t.symbol, filter.after) : undefined,
  );
  const rows = await handle.db
    .select()
    .from(t)
    .where(where)
    .orderBy(asc(t.symbol))
    .limit(filter.limit + 1);
  return page(
    rows.map((r) => ({
      ...r,
      time: Number(r.time),
      athTime: r.athTime === null ? null : Number(r.athTime),
      updatedAt: ms(r.updatedAt),
    })),
    filter.limit,
  );
}
