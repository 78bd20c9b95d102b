/**
 * One coin's candle feed while this feeder leads it: REST backfill from where the service's
 * history ends, then the exchange's websocket. A candle is pushed as closed only when the
 * exchange marked it closed on the stream, or when the exchange's next candle has begun (its
 * final values are then read over REST); never by this process's clock. Any gap (reconnect,
 * silence, seam between REST and stream) is filled over REST before the stream resumes.
 */
import type { Logger } from "pino";
import type { Candle } from "../engine/candle.ts";
import { errorSummary } from "../logger.ts";
import { backoffMs } from "../retry.ts";
import { ccxtErrors, type OhlcvRow, type SpotExchange } from "./exchange.ts";
import type { CoinHealth, FeedMetrics } from "./feed-metrics.ts";
import type { KlineStream, KlineSubscription } from "./kline-stream.ts";
import type { Pusher } from "./pusher.ts";
import { sleep } from "./timing.ts";

export interface CoinFeedDeps {
  readonly exchange: SpotExchange;
  /** The shared websocket: every led coin's kline stream on one connection. */
  readonly klines: KlineStream;
  readonly pusher: Pusher;
  readonly metrics: FeedMetrics;
  readonly logger: Logger;
  readonly tf: string;
  readonly tfMs: number;
  readonly historyCandles: number;
  readonly silenceMs: number;
  readonly auditEveryMs: number;
  readonly now: () => number;
}

const PAGE = 1000;
const FORMING_PUSH_MS = 1_000;
const AUDIT_CANDLES = 50;
/** Closed candles remembered for the audit. */
const KEPT_CLOSED = 200;

class SilenceError extends Error {
  override name = "SilenceError";
}

const toCandle = (r: OhlcvRow): Candle => ({
  openTime: r[0],
  open: r[1],
  high: r[2],
  low: r[3],
  close: r[4],
  volume: r[5],
});
const sameValues = (a: Candle, b: Candle) =>
  a.open === b.open && a.high === b.high && a.low === b.low && a.close === b.close && a.volume === b.volume;

/** Classifies a ccxt error for metrics and backoff. */
export function errorKind(
  err: unknown,
): "rate_limit" | "ban" | "unavailable" | "timeout" | "network" | "bad_symbol" | "other" {
  const { BadSymbol, DDoSProtection, ExchangeNotAvailable, NetworkError, RateLimitExceeded, RequestTimeout } =
    ccxtErrors;
  const message = String((err as Error)?.message ?? "");
  // ccxt files both under DDoSProtection / RateLimitExceeded; the HTTP status in its message tells them apart.
  if (/\b429\b/.test(message)) return "rate_limit";
  if (/\b418\b/.test(message)) return "ban";
  // Subclasses before their parents (OnMaintenance is an ExchangeNotAvailable; all but BadSymbol are NetworkErrors).
  if (err instanceof DDoSProtection) return "ban";
  if (err instanceof RateLimitExceeded) return "rate_limit";
  if (err instanceof RequestTimeout) return "timeout";
  if (err instanceof ExchangeNotAvailable) return "unavailable";
  if (err instanceof NetworkError) return "network";
  if (err instanceof BadSymbol) return "bad_symbol";
  return "other";
}

export class CoinFeed {
  readonly symbol: string;
  private readonly market: string;
  private readonly deps: CoinFeedDeps;
  private readonly abort = new AbortController();
  private running: Promise<void> | null = null;
  /** Open time of the last closed candle pushed (or stored by the service). */
  private lastClosed: number | null;
  /** True while nothing of this coin was ever stored: its history is pushed as backfill. */
  private coldStart: boolean;
  private forming: Candle | null = null;
  private formingTimer: NodeJS.Timeout | null = null;
  private lastFormingPush = 0;
  private readonly pushedClosed = new Map<number, Candle>();
  private readonly revised = new Set<string>();
  private state: CoinHealth["state"] = "backfilling";
  private lastMessageAt: number | null = null;
  private nextAudit: number;
  /** The subscription kept over a silence, until the stream is read again or the feed stops. */
  private keptSubscription: KlineSubscription | null = null;

  constructor(
    symbol: string,
    market: string,
    resume: { known: boolean; lastClosedOpenTime: number },
    deps: CoinFeedDeps,
  ) {
    this.symbol = symbol;
    this.market = market;
    this.deps = deps;
    this.lastClosed = resume.known && resume.lastClosedOpenTime > 0 ? resume.lastClosedOpenTime : null;
    this.coldStart = this.lastClosed === null;
    this.nextAudit = deps.now() + deps.auditEveryMs;
  }

  /** Feed state for metrics, /healthz and logs. */
  health(): CoinHealth {
    return {
      symbol: this.symbol,
      state: this.state,
      lastClosedOpenTime: this.lastClosed,
      lastMessageAt: this.lastMessageAt,
    };
  }

  /** Starts feeding and the periodic audit (resolves at once). */
  start(): void {
    this.running ??= Promise.all([this.run(), this.auditLoop()]).then(() => {});
  }

  private async auditLoop(): Promise<void> {
    while (!this.stopped) {
      await sleep(Math.max(0, this.nextAudit - this.deps.now()), this.abort.signal);
      if (this.stopped) return;
      if (this.deps.now() < this.nextAudit) continue;
      try {
        await this.audit();
      } catch (err) {
        if (!this.stopped)
          this.deps.logger.warn({ symbol: this.symbol, err: errorSummary(err) }, "candle audit failed");
        this.nextAudit = this.deps.now() + this.deps.auditEveryMs;
      }
    }
  }

  /** Stops feeding and waits for the loop to end. */
  async stop(): Promise<void> {
    this.abort.abort();
    this.keptSubscription?.close();
    if (this.formingTimer) clearTimeout(this.formingTimer);
    this.deps.pusher.discard(this.symbol);
    await this.running;
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  private async run(): Promise<void> {
    const { logger, metrics } = this.deps;
    let failures = 0;
    let first = true;
    while (!this.stopped) {
      try {
        // A silent coin stays stale until its stream speaks again, whatever REST delivered.
        if (this.state !== "stale") this.state = "backfilling";
        await this.backfillToPresent(first ? "start" : "reconnect");
        first = false;
        if (this.state !== "stale") this.state = "live";
        failures = 0;
        await this.stream();
      } catch (err) {
        if (this.stopped) break;
        const kind = err instanceof SilenceError ? "silence" : errorKind(err);
        if (kind !== "silence") metrics.exchangeErrors.inc({ symbol: this.symbol, kind });
        failures++;
        const delay =
          this.deps.exchange.coolDownUntil > Date.now()
            ? this.deps.exchange.coolDownUntil - Date.now()
            : backoffMs(failures, 500, 30_000);
        metrics.reconnects.inc({ symbol: this.symbol });
        logger.info(
          {
            symbol: this.symbol,
            reason: kind,
            err: kind === "silence" ? undefined : errorSummary(err),
            retryInMs: delay,
          },
          "feed reconnecting",
        );
        this.state = kind === "silence" ? "stale" : "backfilling";
        await sleep(delay, this.abort.signal);
      }
    }
  }

  /** Reads the websocket until it fails, falls silent or the feed stops. */
  private async stream(): Promise<void> {
    const { silenceMs } = this.deps;
    // One stop listener per stream, not per message (a listener per message would pile up).
    const stop = new Promise<null>((resolve) =>
      this.abort.signal.addEventListener("abort", () => resolve(null), { once: true }),
    );
    // Ended on the way out, except after a silence (below).
    const subscription = this.deps.klines.open(this.market);
    this.keptSubscription = null;
    try {
      while (!this.stopped) {
        let timer: NodeJS.Timeout | undefined;
        const silence = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new SilenceError(`no message for ${silenceMs} ms`)), silenceMs);
        });
        try {
          const messages = await Promise.race([subscription.next(), silence, stop]);
          if (messages === null) break;
          this.lastMessageAt = this.deps.now();
          this.state = "live";
          for (const message of messages) await this.onStreamCandle(message.row, message.closed);
        } finally {
          clearTimeout(timer);
        }
      }
    } catch (err) {
      // After a silence the subscription is kept: the coin takes it up again (KlineStream.open)
      // once its gap is backfilled, with no UNSUBSCRIBE / SUBSCRIBE round in between during which
      // a close could pass unseen. Anything else (a lost socket) ends it.
      if (err instanceof SilenceError) this.keptSubscription = subscription;
      else subscription.close();
      throw err;
    }
    // Stopped: unsubscribe.
    subscription.close();
  }

  private async onStreamCandle(row: OhlcvRow, closedByExchange: boolean): Promise<void> {
    if (this.stopped) return;
    const openTime = row[0];
    const { tfMs } = this.deps;
    if (this.lastClosed !== null && openTime <= this.lastClosed) return;
    const expected = this.lastClosed === null ? null : this.lastClosed + tfMs;
    // The exchange's candle `openTime` has begun: every earlier one is closed. Those the stream
    // did not close for us (a seam, a drop) are read over REST with their final values.
    if (expected !== null && openTime > expected) await this.backfillRange(expected, openTime, "gap");
    if (this.stopped) return;
    // Each message carries its own values (parsed from it, never ccxt's rows, which it updates in
    // place): a closed candle is the exchange's closing message; if the exchange closed this
    // candle during the wait above, its closing message is next in this coin's queue.
    if (closedByExchange) {
      this.pushClosed([toCandle(row)], "live");
      return;
    }
    this.setForming(toCandle(row));
  }

  private setForming(candle: Candle): void {
    this.forming = candle;
    if (this.formingTimer) return;
    const wait = Math.max(0, this.lastFormingPush + FORMING_PUSH_MS - Date.now());
    this.formingTimer = setTimeout(() => {
      this.formingTimer = null;
      const forming = this.forming;
      if (!forming || this.stopped || (this.lastClosed !== null && forming.openTime <= this.lastClosed)) return;
      this.lastFormingPush = Date.now();
      this.deps.pusher.enqueue([{ symbol: this.symbol, tf: this.deps.tf, candle: forming, closed: false }], "live");
    }, wait);
  }

  private pushClosed(candles: Candle[], mode: "live" | "backfill"): void {
    if (candles.length === 0) return;
    for (const c of candles) {
      this.pushedClosed.set(c.openTime, c);
      this.lastClosed = c.openTime;
    }
    while (this.pushedClosed.size > KEPT_CLOSED)
      this.pushedClosed.delete(this.pushedClosed.keys().next().value as number);
    if (this.forming && this.lastClosed !== null && this.forming.openTime <= this.lastClosed) this.forming = null;
    this.deps.pusher.enqueue(
      candles.map((candle) => ({ symbol: this.symbol, tf: this.deps.tf, candle, closed: true })),
      mode,
    );
  }

  /** One REST call, retried with backoff (and after any Retry-After) until it succeeds or the feed stops. */
  private async rest<T>(call: () => Promise<T>): Promise<T> {
    let attempt = 0;
    for (;;) {
      const wait = this.deps.exchange.coolDownUntil - Date.now();
      if (wait > 0) await sleep(wait, this.abort.signal);
      if (this.stopped) throw new Error("stopped");
      try {
        return await call();
      } catch (err) {
        const kind = errorKind(err);
        this.deps.metrics.exchangeErrors.inc({ symbol: this.symbol, kind });
        if (kind === "bad_symbol") throw err;
        attempt++;
        const delay =
          kind === "rate_limit" || kind === "ban"
            ? Math.max(this.deps.exchange.coolDownUntil - Date.now(), backoffMs(attempt, 1_000, 60_000))
            : backoffMs(attempt, 500, 30_000);
        this.deps.logger.warn(
          { symbol: this.symbol, kind, err: errorSummary(err), retryInMs: delay },
          "exchange REST call failed; backing off",
        );
        await sleep(delay, this.abort.signal);
      }
    }
  }

  private fetch(since: number | undefined, limit: number, until?: number): Promise<Candle[]> {
    const params = until === undefined ? {} : { until };
    return this.rest(() => this.deps.exchange.fetchOHLCV(this.market, this.deps.tf, since, limit, params)).then(
      (rows) => rows.map(toCandle),
    );
  }

  /**
   * Fetches everything after the last closed candle up to the exchange's present (the newest
   * candle the exchange returns is the forming one), pushes the closed ones in order.
   */
  private async backfillToPresent(reason: "start" | "reconnect"): Promise<void> {
    const { tfMs } = this.deps;
    let rows: Candle[];
    if (this.lastClosed === null) {
      // Never seen: the last FEED_HISTORY closed candles, paged backwards from the newest.
      rows = await this.fetch(undefined, Math.min(PAGE, this.deps.historyCandles + 1));
      while (rows.length > 0 && rows.length < this.deps.historyCandles + 1 && !this.stopped) {
        const older = await this.fetch(
          undefined,
          Math.min(PAGE, this.deps.historyCandles + 1 - rows.length),
          rows[0]!.openTime - 1,
        );
        if (older.length === 0) break;
        rows = [...older.filter((c) => c.openTime < rows[0]!.openTime), ...rows];
      }
    } else {
      rows = [];
      let since = this.lastClosed + tfMs;
      for (;;) {
        const page = await this.fetch(since, PAGE);
        rows.push(...page.filter((c) => c.openTime >= since));
        if (page.length < PAGE || this.stopped) break;
        since = page.at(-1)!.openTime + tfMs;
      }
    }
    if (this.stopped || rows.length === 0) return;
    const closed = rows.slice(0, -1).filter((c) => this.lastClosed === null || c.openTime > this.lastClosed);
    const newest = rows.at(-1)!;
    const mode = this.coldStart ? "backfill" : "live";
    this.coldStart = false;
    this.pushClosed(closed, mode);
    this.deps.metrics.backfilled.inc({ symbol: this.symbol }, closed.length);
    this.deps.logger.info(
      { symbol: this.symbol, reason, candles: closed.length, from: closed[0]?.openTime, to: closed.at(-1)?.openTime },
      "feed backfilled",
    );
    if (this.lastClosed === null || newest.openTime > this.lastClosed) this.setForming(newest);
  }

  /** Fetches the closed candles [from, until) over REST and pushes them (the exchange's candle `until` has begun). */
  private async backfillRange(from: number, until: number, reason: string): Promise<void> {
    const closed: Candle[] = [];
    let since = from;
    while (since < until && !this.stopped) {
      const page = (await this.fetch(since, PAGE)).filter((c) => c.openTime >= since && c.openTime < until);
      closed.push(...page);
      if (page.length === 0) break;
      since = page.at(-1)!.openTime + this.deps.tfMs;
    }
    if (this.stopped) return;
    this.pushClosed(closed, "live");
    // The exchange has nothing for the rest of the range (no trades, an outage on its side): move on.
    this.lastClosed = Math.max(this.lastClosed ?? 0, until - this.deps.tfMs);
    this.deps.metrics.backfilled.inc({ symbol: this.symbol }, closed.length);
    this.deps.logger.info({ symbol: this.symbol, reason, candles: closed.length, from, until }, "feed backfilled");
  }

  /** Re-reads the last 50 closed candles and counts (never applies) any the exchange has changed. */
  async audit(): Promise<number> {
    this.nextAudit = this.deps.now() + this.deps.auditEveryMs;
    const rows = await this.fetch(undefined, AUDIT_CANDLES + 1);
    let found = 0;
    for (const fresh of rows) {
      const pushed = this.pushedClosed.get(fresh.openTime);
      if (!pushed || sameValues(pushed, fresh)) continue;
      const key = `${fresh.openTime}|${fresh.open}|${fresh.high}|${fresh.low}|${fresh.close}|${fresh.volume}`;
      if (this.revised.has(key)) continue;
      this.revised.add(key);
      found++;
      this.deps.metrics.revisions.inc({ symbol: this.symbol });
      this.deps.logger.warn(
        { symbol: this.symbol, openTime: fresh.openTime, pushed, exchange: fresh },
        "exchange revised a closed candle; history kept as pushed",
      );
    }
    return found;
  }
}
