/**
 * Every led coin's kline stream over one websocket connection. ccxt files all of an exchange
 * instance's kline streams under one socket ("multipleOHLCV" in its Binance class); what it does
 * not do is group the subscriptions: a `watchOHLCV` per coin is one SUBSCRIBE message per coin,
 * which ccxt then paces at 4 a second, so 400 coins would take 100 s to subscribe after every
 * drop. Here the coins' subscriptions are grouped into SUBSCRIBE messages of up to 200 streams
 * (`watchOHLCVForSymbols`), at most 2 messages a second, inside Binance's limits of 1,024
 * streams per connection and 5 incoming messages a second (pings and pongs count too). Each
 * message is routed to its coin in arrival order, and a lost socket fails every coin
 * subscribed on it, so each one backfills and subscribes again.
 */
import type { Logger } from "pino";
import { errorSummary } from "../logger.ts";
import type { KlineMessage, SpotExchange } from "./exchange.ts";

/** Binance: "A single connection can listen to a maximum of 1024 streams." */
export const MAX_STREAMS_PER_CONNECTION = 1024;
/** Streams named in one SUBSCRIBE / UNSUBSCRIBE message. */
export const STREAMS_PER_MESSAGE = 200;
/** Our control messages a second; Binance allows 5 incoming messages a second, pings and pongs included. */
export const MESSAGES_PER_SECOND = 2;
/** How long a market waits for its UNSUBSCRIBE's answer before it may be subscribed again anyway. */
const UNSUBSCRIBE_ANSWER_MS = 10_000;

/** One coin's subscription: the updates since the last read, or the error that ended it. */
export interface KlineSubscription {
  /** Every update that arrived since the last call, waiting for at least one; rejects once the socket is lost. */
  next(): Promise<KlineMessage[]>;
  /** Unsubscribes (batched with others'); a closed subscription gets nothing more. */
  close(): void;
}

class Subscription implements KlineSubscription {
  readonly market: string;
  private queue: KlineMessage[] = [];
  private waiter: { resolve: (m: KlineMessage[]) => void; reject: (e: unknown) => void } | null = null;
  private error: unknown = null;
  /** True once its SUBSCRIBE went out on the current socket. */
  sent = false;
  private readonly onClose: (sub: Subscription) => void;

  constructor(market: string, onClose: (sub: Subscription) => void) {
    this.market = market;
    this.onClose = onClose;
  }

  /** Hands over what arrived unread (a coin taking up its kept subscription again). */
  takeUnread(): KlineMessage[] {
    return this.error === null ? this.queue.splice(0) : [];
  }

  deliver(message: KlineMessage): void {
    if (this.error !== null) return;
    this.queue.push(message);
    if (this.waiter) {
      const { resolve } = this.waiter;
      this.waiter = null;
      resolve(this.queue.splice(0));
    }
  }

  fail(error: unknown): void {
    if (this.error !== null) return;
    this.error = error ?? new Error("kline stream ended");
    if (this.waiter) {
      const { reject } = this.waiter;
      this.waiter = null;
      reject(this.error);
    }
  }

  next(): Promise<KlineMessage[]> {
    if (this.queue.length > 0) return Promise.resolve(this.queue.splice(0));
    if (this.error !== null) return Promise.reject(this.error);
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  close(): void {
    this.fail(new Error("subscription closed"));
    this.onClose(this);
  }
}

/** Multiplexes the coins' kline subscriptions of one timeframe onto the exchange's socket. */
export class KlineStream {
  private readonly exchange: SpotExchange;
  private readonly tf: string;
  private readonly logger: Logger;
  private readonly subs = new Map<string, Subscription>();
  private readonly toSubscribe = new Set<string>();
  private readonly toUnsubscribe = new Set<string>();
  /** Markets whose UNSUBSCRIBE is on its way: ccxt would not send a SUBSCRIBE for them before the answer. */
  private readonly unsubscribing = new Set<string>();
  /** Streams subscribed on the current socket (sent and not unsubscribed). */
  private readonly live = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private lastSentAt = 0;
  private stopped = false;
  /** Control messages sent (SUBSCRIBE + UNSUBSCRIBE), for tests and the bench. */
  messagesSent = 0;

  constructor(exchange: SpotExchange, tf: string, logger: Logger) {
    this.exchange = exchange;
    this.tf = tf;
    this.logger = logger;
    exchange.onKline = (message) => this.route(message);
    exchange.onSocketLost = (_url, error) => this.socketLost(error);
  }

  /** Subscribes a market; its updates arrive through the returned subscription. */
  open(market: string): KlineSubscription {
    const previous = this.subs.get(market);
    const sub = new Subscription(market, (closed) => this.release(closed));
    // A subscription kept over a silence: what arrived meanwhile is read by the new one, in order.
    if (previous) for (const message of previous.takeUnread()) sub.deliver(message);
    previous?.fail(new Error("subscription replaced"));
    this.subs.set(market, sub);
    if (this.toUnsubscribe.delete(market) || this.live.has(market)) {
      // Still subscribed on the socket: nothing to send.
      sub.sent = true;
      return sub;
    }
    if (this.live.size + this.toSubscribe.size >= MAX_STREAMS_PER_CONNECTION) {
      sub.fail(
        new Error(
          `more than ${MAX_STREAMS_PER_CONNECTION} kline streams on one connection; run another feeder for the rest`,
        ),
      );
      return sub;
    }
    this.toSubscribe.add(market);
    this.schedule();
    return sub;
  }

  /** Stops sending (feeder shutdown). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.exchange.onKline = null;
    this.exchange.onSocketLost = null;
  }

  private route(message: KlineMessage): void {
    if (message.timeframe !== this.tf) return;
    this.subs.get(message.market)?.deliver(message);
  }

  private socketLost(error: unknown): void {
    this.live.clear();
    this.toUnsubscribe.clear();
    this.unsubscribing.clear();
    for (const sub of [...this.subs.values()]) {
      if (!sub.sent) continue;
      this.subs.delete(sub.market);
      sub.fail(error);
    }
  }

  private release(sub: Subscription): void {
    if (this.subs.get(sub.market) !== sub) return;
    this.subs.delete(sub.market);
    if (this.toSubscribe.delete(sub.market)) return;
    if (this.live.has(sub.market)) {
      this.toUnsubscribe.add(sub.market);
      this.schedule();
    }
  }

  private schedule(): void {
    if (this.timer || this.stopped) return;
    const wait = Math.max(0, this.lastSentAt + 1_000 / MESSAGES_PER_SECOND - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.sendOne();
    }, wait);
  }

  /** Sends one UNSUBSCRIBE or SUBSCRIBE message of up to STREAMS_PER_MESSAGE streams, then schedules the next. */
  private sendOne(): void {
    if (this.stopped) return;
    const pairs = (markets: string[]) => markets.map((m) => [m, this.tf]);
    if (this.toUnsubscribe.size > 0) {
      const batch = [...this.toUnsubscribe].slice(0, STREAMS_PER_MESSAGE);
      for (const m of batch) {
        this.toUnsubscribe.delete(m);
        this.live.delete(m);
        this.unsubscribing.add(m);
      }
      this.sent();
      let timer: NodeJS.Timeout | undefined;
      const unanswered = new Promise<void>((resolve) => (timer = setTimeout(resolve, UNSUBSCRIBE_ANSWER_MS)));
      Promise.race([this.exchange.unWatchOHLCVForSymbols(pairs(batch)), unanswered])
        .catch(() => {}) // a dead socket has nothing left to unsubscribe
        .finally(() => {
          clearTimeout(timer);
          for (const m of batch) this.unsubscribing.delete(m);
          if (this.toSubscribe.size > 0) this.schedule();
        });
    } else {
      const batch = [...this.toSubscribe].filter((m) => !this.unsubscribing.has(m)).slice(0, STREAMS_PER_MESSAGE);
      if (batch.length === 0) return; // the rest waits for its UNSUBSCRIBE's answer
      const subs = batch.map((m) => this.subs.get(m)!);
      for (const [i, m] of batch.entries()) {
        this.toSubscribe.delete(m);
        this.live.add(m);
        subs[i]!.sent = true;
      }
      this.sent();
      this.exchange.watchOHLCVForSymbols(pairs(batch)).catch((err: unknown) => {
        // The socket failed (socketLost has told the coins already) or the exchange refused.
        this.logger.debug({ streams: batch.length, err: errorSummary(err) }, "kline subscription ended");
        for (const [i, m] of batch.entries()) {
          if (this.subs.get(m) !== subs[i]) continue;
          this.subs.delete(m);
          this.live.delete(m);
          subs[i]!.fail(err);
        }
      });
    }
    if (this.toSubscribe.size > 0 || this.toUnsubscribe.size > 0) this.schedule();
  }

  private sent(): void {
    this.lastSentAt = Date.now();
    this.messagesSent++;
  }
}
