/**
 * Normalisation of the `symbols` and `tf` request parameters, exactly as the contract says, and
 * what it changed that the caller should hear about (warnings.ts).
 */

import { symbolList } from "../market/symbols.ts";
import { TIMEFRAMES, type Timeframe } from "../market/timeframes.ts";
import { quoted } from "./warnings.ts";

export const DEFAULT_TIMEFRAME: Timeframe = "4h";
export const DEFAULT_SYMBOLS = ["BTC", "ETH", "SOL", "BNB", "XRP"] as const;

/** Any value that is not exactly one of the five timeframes silently becomes 4h. */
export function normaliseTimeframe(raw: string | undefined): Timeframe {
  return (TIMEFRAMES as readonly string[]).includes(raw ?? "") ? (raw as Timeframe) : DEFAULT_TIMEFRAME;
}

/** The warning for a `tf` that is not one of the five timeframes (4h is served instead). */
export function timeframeWarning(rawTf: string): string {
  return `tf ${quoted(rawTf)} is not offered, ${DEFAULT_TIMEFRAME} used`;
}

/**
 * Split on commas, trim, upper-case, drop empties and duplicates (first kept), keep the first
 * `max`. Nothing left means the default list.
 */
export function normaliseSymbols(raw: string | undefined, max: number): string[] {
  const symbols = symbolList(raw, max);
  return symbols.length > 0 ? symbols : DEFAULT_SYMBOLS.slice(0, max);
}

/** A paid request as served: the timeframe, the symbols, and what the caller should hear (null when nothing). */
export interface SignalsRequestRead {
  readonly tf: Timeframe;
  readonly symbols: string[];
  readonly tfWarning: string | null;
  readonly symbolWarnings: string[] | null;
}

/**
 * Reads `symbols` and `tf` as normaliseSymbols / normaliseTimeframe do, noting what the contract
 * silently changed: a timeframe not offered (4h used), duplicates dropped, symbols beyond the
 * limit. The common call (a valid tf, a few distinct symbols) builds no warning at all.
 */
export function readSignalsRequest(
  rawSymbols: string | undefined,
  rawTf: string | undefined,
  max: number,
): SignalsRequestRead {
  const tf = normaliseTimeframe(rawTf);
  const seen = new Set<string>();
  let duplicates: Set<string> | null = null;
  let beyond: Set<string> | null = null;
  for (const part of (rawSymbols ?? "").split(",")) {
    const symbol = part.trim().toUpperCase();
    if (symbol === "") continue;
    if (seen.has(symbol)) (duplicates ??= new Set()).add(symbol);
    else if (seen.size < max) seen.add(symbol);
    else (beyond ??= new Set()).add(symbol);
  }
  let symbolWarnings: string[] | null = null;
  if (beyond)
    (symbolWarnings ??= []).push(`${beyond.size} symbol${beyond.size === 1 ? "" : "s"} beyond ${max} ignored`);
  if (duplicates) {
    const named = [...duplicates].slice(0, 3).map((d) => `duplicate symbol ${quoted(d)} ignored`);
    (symbolWarnings ??= []).push(
      ...named,
      ...(duplicates.size > 3 ? [`${duplicates.size - 3} more duplicate symbols ignored`] : []),
    );
  }
  return {
    tf,
    symbols: seen.size > 0 ? [...seen] : DEFAULT_SYMBOLS.slice(0, max),
    tfWarning: tf !== rawTf && rawTf ? timeframeWarning(rawTf) : null,
    symbolWarnings,
  };
}
