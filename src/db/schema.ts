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
  customType,
  date,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
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
    /** The Stripe Customer of this account (created at its first checkout), e.g. cus_123. */
    stripeCustomerId: text("stripe_customer_id"),
    /**
     * False for a self-service sign-up until its emailed link is opened:
     * such an account cannot subscribe, buy or make a key. Accounts the operator makes are true.
     */
    emailVerified: boolean("email_verified").notNull().default(true),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("accounts_email_key").on(sql`lower(${t.email})`),
    uniqueIndex("accounts_stripe_customer_key").on(t.stripeCustomerId),
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
    /**
     * The last accepted call with this key, to within the coalescing window: written in batches
     * by accounts/key-last-used.ts, never by the call itself (null: not used yet).
     */
    lastUsedAt: timestamp("last_used_at", { withTimezone: true }),
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
    // The account page's usage: charges grouped by MYT day (billing/ledger-history.ts), read
    // newest day first; the expression must stay the one LEDGER_DAY there uses.
    index("ledger_entries_charge_day_idx")
      .on(t.accountId, sql`((${t.createdAt} AT TIME ZONE 'Asia/Kuala_Lumpur')::date)`)
      .where(sql`${t.kind} = 'charge'`),
    // Grants, packs and adjustments without walking past every charge (charges skip this index).
    index("ledger_entries_balance_moves_idx").on(t.accountId, t.id).where(sql`${t.kind} <> 'charge'`),
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
  /**
   * Provenance: true for the demo feed's synthetic rows, false for a real push (docs/feeder.md, "Demo data and real
   * data").
   */
  demo: boolean("demo").notNull().default(false),
  /**
   * Raised by every market transaction that touches the coin, in that transaction: a server
   * process whose copy of the coin is older than this catches up before it answers
   * (docs/decisions.md, "One signal at one moment on every process").
   */
  version: bigint("version", { mode: "number" }).notNull().default(0),
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
    /**
     * Provenance: true for the demo feed's synthetic rows, false for a real push (docs/feeder.md, "Demo data and real
     * data").
     */
    demo: boolean("demo").notNull().default(false),
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

/**
 * A signal change at a candle close (a new break, or an invalidation back to NONE). The id is
 * `<SYMBOL>-<tf>-<open time of the closing candle, ms>`: the candle that set the signal names it,
 * so the API, the alert and the stream carry the same id, and a replay of the same candle can
 * never make a second event. `seq` orders events by commit (writers take an advisory lock).
 */
export const signalEvents = pgTable(
  "signal_events",
  {
    seq: bigint("seq", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    id: text("id").notNull(),
    symbol: text("symbol").notNull(),
    tf: text("tf").notNull(),
    signal: text("signal").notNull(),
    /** Close of the candle that set the signal. */
    price: doublePrecision("price").notNull(),
    defense: doublePrecision("defense"),
    atrPct: doublePrecision("atr_pct"),
    /** Open time (epoch ms) of the candle whose close set the signal. */
    candleOpenTime: bigint("candle_open_time", { mode: "number" }).notNull(),
    /** The candle closed in real time (alerts go out); false for imports and backfills. */
    live: boolean("live").notNull(),
    /**
     * Provenance: true for the demo feed's synthetic rows, false for a real push (docs/feeder.md, "Demo data and real
     * data").
     */
    demo: boolean("demo").notNull().default(false),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    /**
     * Tamper-evident log (market/event-chain.ts): a live event's predecessor's hash and its own,
     * written in the transaction that stores it; null for events that are not live.
     */
    chainPrev: text("chain_prev"),
    chainHash: text("chain_hash"),
  },
  (t) => [
    uniqueIndex("signal_events_id_key").on(t.id),
    index("signal_events_series_idx").on(t.symbol, t.tf, t.candleOpenTime),
    // At most one event follows any hash: the chain cannot fork, whatever the writers do.
    uniqueIndex("signal_events_chain_prev_key").on(t.chainPrev).where(sql`chain_prev IS NOT NULL`),
    // The chain's head, and the live events still to chain, without scanning imported history.
    index("signal_events_chained_idx").on(t.seq).where(sql`chain_hash IS NOT NULL`),
    index("signal_events_unchained_idx").on(t.seq).where(sql`live AND chain_hash IS NULL`),
  ],
);

/** Where and about what a member is alerted (one row per account). */
export const alertSettings = pgTable("alert_settings", {
  accountId: bigint("account_id", { mode: "number" })
    .primaryKey()
    .references(() => accounts.id),
  /**
   * Telegram chat id (a number, or @channelname); null when no chat is connected (the coins and
   * timeframes are kept, nothing is queued until a chat is connected again).
   */
  chatId: text("chat_id"),
  /**
   * The chat was bound by the bot's `/start <token>` (the member proved it is theirs) and has
   * not been changed since; false for a typed chat id. Test alerts go only to a proven chat.
   */
  chatVerified: boolean("chat_verified").notNull().default(false),
  symbols: text("symbols").array().notNull(),
  timeframes: text("timeframes").array().notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

export const outboxKinds = ["signal_alert", "low_balance"] as const;
export type OutboxKind = (typeof outboxKinds)[number];

/**
 * Transactional outbox: a message to deliver, written in the same transaction as the fact it
 * reports. The worker leases rows (lease_until), so a crashed worker's row is retried after
 * the lease; sent_at or failed_at ends a row's life.
 */
export const outbox = pgTable(
  "outbox",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    kind: text("kind").$type<OutboxKind>().notNull(),
    accountId: bigint("account_id", { mode: "number" })
      .notNull()
      .references(() => accounts.id),
    /** Destination captured when the row was written; null when the member has none. */
    chatId: text("chat_id"),
    eventId: text("event_id"),
    /** Kind-specific facts (low_balance: credits_left and threshold). */
    payload: jsonb("payload"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true }).notNull().defaultNow(),
    leaseUntil: timestamp("lease_until", { withTimezone: true }),
    sentAt: timestamp("sent_at", { withTimezone: true }),
    failedAt: timestamp("failed_at", { withTimezone: true }),
    lastError: text("last_error"),
  },
  (t) => [
    index("outbox_pending_idx").on(t.nextAttemptAt, t.id).where(sql`${t.sentAt} IS NULL AND ${t.failedAt} IS NULL`),
    uniqueIndex("outbox_event_account_key").on(t.eventId, t.accountId).where(sql`${t.eventId} IS NOT NULL`),
    check("outbox_kind_check", sql`${t.kind} IN ('signal_alert','low_balance')`),
  ],
);

/** Web sign-in: the member's password (scrypt, self-describing string), set by the operator. */
export const memberPasswords = pgTable("member_passwords", {
  accountId: bigint("account_id", { mode: "number" })
    .primaryKey()
    .references(() => accounts.id),
  passwordHash: text("password_hash").notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/** Server-side web sessions; only a SHA-256 of the session token is stored. */
export const webSessions = pgTable(
  "web_sessions",
  {
    tokenHash: text("token_hash").primaryKey(),
    accountId: bigint("account_id", { mode: "number" })
      .notNull()
      .references(() => accounts.id),
    /** Per-session secret the CSRF tokens of its forms are derived from. */
    csrfSecret: text("csrf_secret").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  },
  (t) => [index("web_sessions_account_idx").on(t.accountId)],
);

/**
 * One-time links to choose a password: `setup` links the operator hands out (the CLI, 24 hours)
 * and `reset` links a member asks for by email ("Forgot password?", 1 hour). Only the SHA-256 of
 * the link's random token is stored; a link works once (`used_at`) and until `expires_at`. An
 * account has at most one row: making a link deletes the account's earlier ones.
 */
export const passwordLinks = pgTable(
  "password_links",
  {
    tokenHash: text("token_hash").primaryKey(),
    accountId: bigint("account_id", { mode: "number" })
      .notNull()
      .references(() => accounts.id),
    kind: text("kind").notNull().$type<"setup" | "reset">(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    usedAt: timestamp("used_at", { withTimezone: true }),
  },
  (t) => [
    index("password_links_account_idx").on(t.accountId),
    check("password_links_kind_check", sql`${t.kind} IN ('setup','reset')`),
  ],
);

/**
 * A new API key waiting for its one display (POST -> 303 -> GET). The key is sealed with
 * AES-256-GCM under a key derived from a random token that only the member's browser holds
 * (a short-lived cookie); the row is found by the token's hash and deleted by the GET that
 * shows it. Rows live a few minutes.
 */
export const keyReveals = pgTable("key_reveals", {
  tokenHash: text("token_hash").primaryKey(),
  accountId: bigint("account_id", { mode: "number" })
    .notNull()
    .references(() => accounts.id),
  /** base64url of IV (12 bytes) | GCM tag (16 bytes) | ciphertext. */
  sealedKey: text("sealed_key").notNull(),
  expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
});

/**
 * One-time links that connect a Telegram chat (docs/alerts.md): the bot's `/start <token>` binds
 * the chat that sent it to the account. Only the token's SHA-256 is stored; a row is deleted
 * as it is used, so a token works once.
 */
export const telegramConnectTokens = pgTable("telegram_connect_tokens", {
  tokenHash: text("token_hash").primaryKey(),
  accountId: bigint("account_id", { mode: "number" })
    .notNull()
    .references(() => accounts.id),
  expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
});

/**
 * Links that confirm a sign-up's email (docs/accounts.md): only the token's SHA-256 is kept, at
 * most one row per account (a new link replaces the old), deleted as it is used.
 */
export const emailVerifications = pgTable("email_verifications", {
  tokenHash: text("token_hash").primaryKey(),
  accountId: bigint("account_id", { mode: "number" })
    .notNull()
    .unique()
    .references(() => accounts.id),
  expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
});

/** Failed sign-ins per throttle key (address or email), for a bounded retry budget. */
export const signInFailures = pgTable("sign_in_failures", {
  throttleKey: text("throttle_key").primaryKey(),
  failures: integer("failures").notNull(),
  windowStart: timestamp("window_start", { withTimezone: true }).notNull(),
});

/**
 * Addresses an account has signed in from (docs/accounts.md, "Sign-in budgets"): a known
 * address is not slowed down when strangers have guessed at the account's email. Only the
 * SHA-256 of `<account id>:<address>` is kept (IPv6 as its /64, like the throttle).
 */
export const knownSignInAddresses = pgTable(
  "known_sign_in_addresses",
  {
    accountId: bigint("account_id", { mode: "number" })
      .notNull()
      .references(() => accounts.id),
    addressHash: text("address_hash").notNull(),
    lastSignInAt: timestamp("last_sign_in_at", { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.addressHash] })],
);

/** Raw bytes (a serialized protobuf message). */
const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({ dataType: () => "bytea" });

/**
 * Paid calls made with an Idempotency-Key: the first call's answer, stored in the transaction
 * that charged it, so a retry within 24 h gets that answer back and is not charged again.
 * Scoped by API key; `fingerprint` is the normalised request, so reusing a key for a different
 * request is refused instead of answered with the wrong data.
 */
export const idempotentCalls = pgTable(
  "idempotent_calls",
  {
    keyHash: text("key_hash").notNull(),
    idempotencyKey: text("idempotency_key").notNull(),
    fingerprint: text("fingerprint").notNull(),
    /** The serialized GetSignalsResponse of the first call. */
    response: bytea("response").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.keyHash, t.idempotencyKey] }),
    index("idempotent_calls_created_idx").on(t.createdAt),
  ],
);

/**
 * One row per grouped charge statement (billing/charge.ts), inserted by that very statement
 * with the group's outcomes. Its id (a time-ordered UUIDv7) is chosen by the server before the
 * statement is sent, so when the connection breaks before the answer arrives the server can
 * learn what happened: the row exists with results (the group committed: answer them) or the
 * server inserts the id itself without results, a fence that the lost statement's own insert
 * collides with, so it can never commit later (nothing charged: answer 503). Rows are needed
 * for minutes; older ones are purged by id.
 */
export const chargeAttempts = pgTable("charge_attempts", {
  id: uuid("id").primaryKey(),
  /** The group's charge_call rows (with `ord`); null for a fence. */
  results: jsonb("results"),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

/**
 * Free-endpoint calls per API key in the current fixed window (aligned to the window length,
 * e.g. the minute), counted by the `free_call` SQL function in the same statement that checks
 * the key and the subscription. One row per key that has made a free call.
 */
/**
 * Views of pages that show the current signal (accounts/page-views.ts), in fixed windows: one row per
 * session (`session:<token hash>`, per minute) and one per account (`account:<id>`, per MYT day).
 */
export const pageViewWindows = pgTable("page_view_windows", {
  viewKey: text("view_key").primaryKey(),
  windowStart: timestamp("window_start", { withTimezone: true }).notNull(),
  views: integer("views").notNull(),
});

export const freeCallWindows = pgTable("free_call_windows", {
  keyHash: text("key_hash").primaryKey(),
  windowStart: timestamp("window_start", { withTimezone: true }).notNull(),
  calls: integer("calls").notNull(),
});

/**
 * Failed API keys per caller address (IPv4, or IPv6 /64) in fixed windows: the failed-key
 * budget, counted in one statement so it is exact across server processes.
 * Only calls that present an invalid key write here; a valid key never does.
 */
export const failedKeyWindows = pgTable("failed_key_windows", {
  address: text("address").primaryKey(),
  windowStart: timestamp("window_start", { withTimezone: true }).notNull(),
  failures: integer("failures").notNull(),
});

/** Latest derivatives reading per coin and venue (GET /api/v1/derivatives); a later `time` replaces it. */
export const derivativesReadings = pgTable(
  "derivatives_readings",
  {
    symbol: text("symbol").notNull(),
    venue: text("venue").notNull(),
    /** Source time (epoch ms) of the values. */
    time: bigint("time", { mode: "number" }).notNull(),
    fundingRate: doublePrecision("funding_rate"),
    openInterestUsd: doublePrecision("open_interest_usd"),
    longShortRatio: doublePrecision("long_short_ratio"),
    /**
     * Provenance: true for the demo feed's synthetic rows, false for a real push (docs/feeder.md, "Demo data and real
     * data").
     */
    demo: boolean("demo").notNull().default(false),
    /** When this service received the row. */
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.symbol, t.venue] })],
);

/** News items by the feeder's id (GET /api/v1/news); never edited. */
export const newsItems = pgTable(
  "news_items",
  {
    id: text("id").primaryKey(),
    /** Publication time, epoch ms. */
    time: bigint("time", { mode: "number" }).notNull(),
    title: text("title").notNull(),
    source: text("source").notNull(),
    url: text("url").notNull(),
    coins: text("coins").array().notNull(),
    /**
     * Provenance: true for the demo feed's synthetic rows, false for a real push (docs/feeder.md, "Demo data and real
     * data").
     */
    demo: boolean("demo").notNull().default(false),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull(),
  },
  (t) => [index("news_items_time_idx").on(t.time, t.id)],
);

/**
 * Points of macro-economic series (GET /api/v1/macro); a changed value for a stored (series, time) is a revision and
 * replaces it.
 */
export const macroPoints = pgTable(
  "macro_points",
  {
    series: text("series").notNull(),
    /** Time the observation refers to, epoch ms. */
    time: bigint("time", { mode: "number" }).notNull(),
    value: doublePrecision("value").notNull(),
    unit: text("unit").notNull(),
    /**
     * Provenance: true for the demo feed's synthetic rows, false for a real push (docs/feeder.md, "Demo data and real
     * data").
     */
    demo: boolean("demo").notNull().default(false),
    source: text("source").notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.series, t.time] }), index("macro_points_time_idx").on(t.time, t.series)],
);

/** Latest supply and market-cap figures per coin (GET /api/v1/fundamentals); a later `time` replaces them. */
export const coinFundamentals = pgTable("coin_fundamentals", {
  symbol: text("symbol").primaryKey(),
  /** Source time (epoch ms) of the figures. */
  time: bigint("time", { mode: "number" }).notNull(),
  circulatingSupply: doublePrecision("circulating_supply").notNull(),
  maxSupply: doublePrecision("max_supply"),
  marketCapUsd: doublePrecision("market_cap_usd").notNull(),
  rank: integer("rank"),
  source: text("source").notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull(),
  totalSupply: doublePrecision("total_supply"),
  fullyDilutedValuationUsd: doublePrecision("fully_diluted_valuation_usd"),
  athUsd: doublePrecision("ath_usd"),
  /** When the all-time high was reached, epoch ms. */
  athTime: bigint("ath_time", { mode: "number" }),
  /**
   * Provenance: true for the demo feed's synthetic rows, false for a real push (docs/feeder.md, "Demo data and real
   * data").
   */
  demo: boolean("demo").notNull().default(false),
});

/**
 * Which feeder leads each coin (FeederService). `expires_at` is set from the database's own
 * clock, so feeders on machines with skewed clocks still agree on who holds a lease.
 */
export const feedLeases = pgTable("feed_leases", {
  symbol: text("symbol").primaryKey(),
  holder: text("holder").notNull(),
  expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  /** Bumped each time the lease changes hands (a fencing number for logs). */
  generation: bigint("generation", { mode: "number" }).notNull().default(1),
});

/**
 * Stripe webhook events whose effect is committed: inserted by the same SQL function (one
 * transaction) that applies the event, so a replayed or duplicated delivery changes nothing.
 */
export const stripeEvents = pgTable("stripe_events", {
  eventId: text("event_id").primaryKey(),
  type: text("type").notNull(),
  /** Event creation time (Stripe's `created`, seconds since the epoch). */
  eventCreated: timestamp("event_created", { withTimezone: true }).notNull(),
  /** What the handler did: applied, duplicate_object, unmatched, ignored. */
  outcome: text("outcome").notNull(),
  processedAt: timestamp("processed_at", { withTimezone: true }).notNull().defaultNow(),
});

export const paymentKinds = ["pack", "subscription", "refund", "dispute"] as const;
export type PaymentKind = (typeof paymentKinds)[number];

/**
 * Money movements reported by Stripe, each with its Stripe ids and (when Tokens moved) its
 * ledger row. A Checkout Session is credited once (unique per pack session, whatever the event),
 * an invoice is recorded once, a dispute once.
 */
export const payments = pgTable(
  "payments",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    /** Null when Stripe reported money this service cannot tie to an account (logged for the operator). */
    accountId: bigint("account_id", { mode: "number" }).references(() => accounts.id),
    kind: text("kind").$type<PaymentKind>().notNull(),
    stripeEventId: text("stripe_event_id").notNull(),
    checkoutSessionId: text("checkout_session_id"),
    paymentIntentId: text("payment_intent_id"),
    invoiceId: text("invoice_id"),
    subscriptionId: text("subscription_id"),
    chargeId: text("charge_id"),
    disputeId: text("dispute_id"),
    /** Minor units (cents), positive; a refund's is the amount refunded by this event. */
    amount: bigint("amount", { mode: "number" }),
    currency: text("currency"),
    /** Tokens this payment moved (pack: credited; refund: taken back). */
    tokens: bigint("tokens", { mode: "number" }).notNull().default(0),
    /** Refunds: Tokens that could not be taken back because the balance was too low. */
    shortfall: bigint("shortfall", { mode: "number" }).notNull().default(0),
    ledgerEntryId: bigint("ledger_entry_id", { mode: "number" }).references(() => ledgerEntries.id),
    /** Dispute reason, plan of a subscription invoice, … */
    detail: text("detail"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("payments_account_idx").on(t.accountId, t.id),
    uniqueIndex("payments_pack_session_key").on(t.checkoutSessionId).where(sql`${t.kind} = 'pack'`),
    uniqueIndex("payments_invoice_key").on(t.invoiceId).where(sql`${t.kind} = 'subscription'`),
    uniqueIndex("payments_dispute_key").on(t.disputeId).where(sql`${t.kind} = 'dispute'`),
    index("payments_payment_intent_idx").on(t.paymentIntentId),
    check("payments_kind_check", sql`${t.kind} IN ('pack','subscription','refund','dispute')`),
  ],
);

/**
 * What this service knows of each Stripe subscription. Fields only move forward by the
 * objects' own timestamps, so events applied in any order converge: `paidThrough` is the
 * latest paid period end, `endedAt` is set by the deletion, and the plan follows the newest
 * subscription state (`planVersion`). The account's subscription_until is derived from these rows.
 */
export const stripeSubscriptions = pgTable(
  "stripe_subscriptions",
  {
    subscriptionId: text("subscription_id").primaryKey(),
    accountId: bigint("account_id", { mode: "number" })
      .notNull()
      .references(() => accounts.id),
    customerId: text("customer_id"),
    plan: text("plan"),
    /** Stripe `created` of the newest subscription state applied to `plan` / `status`. */
    planVersion: timestamp("plan_version", { withTimezone: true }),
    status: text("status"),
    paidThrough: timestamp("paid_through", { withTimezone: true }),
    endedAt: timestamp("ended_at", { withTimezone: true }),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("stripe_subscriptions_account_idx").on(t.accountId)],
);

/** A paying member's live watchlist (/watch): the coins and timeframes of their grid, one row per account. */
export const watchlists = pgTable("watchlists", {
  accountId: bigint("account_id", { mode: "number" })
    .primaryKey()
    .references(() => accounts.id, { onDelete: "cascade" }),
  symbols: text("symbols").array().notNull(),
  timeframes: text("timeframes").array().notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/**
 * The one live watchlist stream a web session may hold: a new stream takes the row, and the
 * stream it replaced (on any server process) sees that at its next check and ends.
 */
export const watchStreams = pgTable("watch_streams", {
  sessionTokenHash: text("session_token_hash")
    .primaryKey()
    .references(() => webSessions.tokenHash, { onDelete: "cascade" }),
  streamId: text("stream_id").notNull(),
  startedAt: timestamp("started_at", { withTimezone: true }).notNull(),
});
