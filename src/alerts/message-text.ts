/**
 * The text of each message. Short enough to read in a phone notification; plain text (no
 * Telegram parse mode, so nothing needs escaping). Rendered from the stored row every time,
 * so a retried message is identical to the first and carries the same event id.
 */
import { formatMyt } from "../clock.ts";
import { shortHash } from "../market/event-chain.ts";
import { DEMO_DATA_LABEL } from "../market/provenance.ts";
import type { Timeframe } from "../market/timeframes.ts";
import { TIMEFRAME_MS } from "../market/timeframes.ts";

export const DISCLAIMER = "Educational information, not investment advice.";

export interface SignalAlertFacts {
  eventId: string;
  symbol: string;
  tf: Timeframe;
  signal: string;
  price: number;
  defense: number | null;
  atrPct: number | null;
  candleOpenTime: number;
  /** The event's hash in the tamper-evident log (null when it has none, e.g. a test alert). */
  chainHash?: string | null;
  /** The event comes from the demo feed's synthetic prices: the message says so first. */
  demo?: boolean;
}

/** Enough significant digits for any coin's price, without float noise (64210.5, 0.00001234). */
export function formatPrice(value: number): string {
  return String(Number(value.toPrecision(8)));
}

const HEADLINES: Record<string, string> = {
  STRONG_LONG: "STRONG LONG ▲ (break with the trend)",
  LONG: "LONG ▲ (change of character)",
  STRONG_SHORT: "STRONG SHORT ▼ (break with the trend)",
  SHORT: "SHORT ▼ (change of character)",
  NONE: "signal ended (NONE): the close went through the defense",
};

/** Link to the coin's chart page on the web site. */
export function chartUrl(publicBaseUrl: string, symbol: string, tf: Timeframe): string {
  return `${publicBaseUrl}/charts/${encodeURIComponent(symbol)}?tf=${tf}`;
}

export function signalAlertText(facts: SignalAlertFacts, publicBaseUrl: string): string {
  const closeTime = facts.candleOpenTime + TIMEFRAME_MS[facts.tf];
  const levels = [`Price ${formatPrice(facts.price)}`];
  if (facts.defense !== null) levels.push(`Defense ${formatPrice(facts.defense)}`);
  if (facts.atrPct !== null) levels.push(`ATR ${facts.atrPct.toFixed(2)}%`);
  return [
    ...(facts.demo ? [`[${DEMO_DATA_LABEL}, not a market]`] : []),
    `${facts.symbol} ${facts.tf}: ${HEADLINES[facts.signal] ?? facts.signal}`,
    levels.join(" · "),
    `Confirmed at the ${facts.tf} close, ${formatMyt(closeTime)}`,
    chartUrl(publicBaseUrl, facts.symbol, facts.tf),
    `Signal ${facts.eventId}`,
    // Its own line, so the signal line stays as it was: lets a member find this exact event in the published log
    // (/track-record).
    ...(facts.chainHash ? [`Log ${shortHash(facts.chainHash)}`] : []),
    DISCLAIMER,
  ].join("\n");
}

export function lowBalanceText(tokensLeft: number, threshold: number, publicBaseUrl: string): string {
  return [
    `Signals API: your Token balance is low: ${tokensLeft} left (below ${threshold}).`,
    "Each call costs 1 Token. Add a Token pack, or wait for the monthly grant on the 1st at 00:00 MYT.",
    `${publicBaseUrl}/account`,
  ].join("\n");
}
