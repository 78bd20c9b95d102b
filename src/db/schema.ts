/**
 * Drizzle schema: the system of record. Balances live on the account row and are only moved
 * by the SQL functions in the custom migration (charge_call, apply_monthly_grant,
 * ledger_adjust), each of which writes the matching ledger row in the same statement.
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  check,
  date,
  doublePrecision,
  index,
  jsonb,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";

export const accounts = pgTable(
  "accounts",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    email: text("email").notNull(),
    plan: text("plan").notNull(),
    subscriptionUntil: timestamp("subscription_until", { withTimezone: true }),
    grantBalance: bigint("grant_balance", { mode: "number" }).notNull().default(0),
    packBalance: bigint("pack_balance", { mode: "number" }).notNull().default(0),
    /** First day of the MYT month the grant bucket belongs to; null before the first grant. */
    grantMonth: date("grant_month", { mode: "string" }),
    /** MYT day that calls_today counts; a charge on a later day starts again from 0. */
    usageDay: date("usage_day", { mode: "string" }),
    /** Charged calls on usage_day (the daily cap); kept on the row so a charge is one row update. */
    callsToday: integer("calls_today").notNull().default(0),
    /** Set when a charge crossed below the low-balance threshold; cleared when back above. */
    lowBalanceNotified: boolean("low_balance_notified").notNull().default(false),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("accounts_email_key").on(sql`lower(${t.email})`),
    check("accounts_grant_nonneg", sql`${t.grantBalance} >= 0`),
    check("accounts_pack_nonneg", sql`${t.packBalance} >= 0`),
  ],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    accountId: bigint("account_id", { mode: "number" })
      .notNull()
      .references(() => accounts.id),
    /** Hex SHA-256 of the full key; the key itself is never stored. */
    keyHash: text("key_hash").notNull(),
    /** Short display prefix, e.g. "sig_live_AbCd". */
    displayPrefix: text("display_prefix").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
  },
  (t) => [
    uniqueIndex("api_keys_hash_key").on(t.keyHash),
    // At most one valid key per account, enforced by the database.
    uniqueIndex("api_keys_one_active_per_account").on(t.accountId).where(sql`${t.revokedAt} IS NULL`),
  ],
);

export const ledgerKinds = ["grant", "expiry", "pack", "charge", "adjustment"] as const;
export type LedgerKind = (typeof ledgerKinds)[number];

export const ledgerEntries = pgTable(
  "ledger_entries",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    accountId: bigint("account_id", { mode: "number" })
      .notNull()
      .references(() => accounts.id),
    kind: text("kind").$type<LedgerKind>().notNull(),
    grantDelta: bigint("grant_delta", { mode: "number" }).notNull(),
    packDelta: bigint("pack_delta", { mode: "number" }).notNull(),
    grantAfter: bigint("grant_after", { mode: "number" }).notNull(),
    packAfter: bigint("pack_after", { mode: "number" }).notNull(),
    reason: text("reason"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("ledger_entries_account_idx").on(t.accountId, t.id),
    check("ledger_entries_kind_check", sql`${t.kind} IN ('grant','expiry','pack','charge','adjustment')`),
  ],
);

/** One row per coin a feeder has sent; its base timeframe is fixed by its first candle. */
export const coins = pgTable("coins", {
  symbol: text("symbol").primaryKey(),
  /** The finest timeframe the feeder sends; the others are built from it. */
  baseTf: text("base_tf").notNull(),
  /** When the feed last delivered an update (forming or closed), for the `stale` check. */
  lastUpdateAt: timestamp("last_update_at", { withTimezone: true, mode: "date" }).notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

/** Candles of every timeframe, the forming one with closed = false until its close arrives. */
export const candles = pgTable(
  "candles",
  {
    symbol: text("symbol").notNull(),
    tf: text("tf").notNull(),
    /** Epoch milliseconds (UTC) of the candle's start. */
    openTime: bigint("open_time", { mode: "number" }).notNull(),
    open: doublePrecision("open").notNull(),
    high: doublePrecision("high").notNull(),
    low: doublePrecision("low").notNull(),
    close: doublePrecision("close").notNull(),
    volume: doublePrecision("volume").notNull(),
    closed: boolean("closed").notNull(),
  },
  (t) => [primaryKey({ columns: [t.symbol, t.tf, t.openTime] })],
);

/**
 * Engine checkpoint per (coin, timeframe), written in the same transaction as the candles it
 * has folded, so a restart resumes exactly where the store is.
 */
export const seriesState = pgTable(
  "series_state",
  {
    symbol: text("symbol").notNull(),
    tf: text("tf").notNull(),
    state: jsonb("state").notNull(),
    lastClosedOpenTime: bigint("last_closed_open_time", { mode: "number" }),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.symbol, t.tf] })],
);
