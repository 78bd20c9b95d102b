/**
 * The text of each message. Short enough to read in a phone notification; plain text (no
 * Telegram parse mode, so nothing needs escaping). Rendered from the stored row every time,
 * so a retried message is identical to the first and carries the same event id.
 */
import { formatMyt } from "../clock.ts";
import { TIMEFRAME_MS } from "../market/timeframes.ts";
import type { Timeframe } from "../market/timeframes.ts";

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
    `${facts.symbol} ${facts.tf}: ${HEADLINES[facts.signal] ?? facts.signal}`,
    levels.join(" · "),
    `Confirmed at the ${facts.tf} close, ${formatMyt(closeTime)}`,
    chartUrl(publicBaseUrl, facts.symbol, facts.tf),
    `Signal ${facts.eventId}`,
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
