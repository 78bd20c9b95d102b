/**
 * Which coins a headline is about. A committed, curated list (reasoning in
 * docs/context-data.md): CoinGecko's full list has thousands of tokens named after common
 * words ("THE", "AI", "ONE"), so matching every ticker would tag most headlines.
 *
 * Rules: a coin's names match case-insensitively as whole words ("Bitcoin", "bitcoin's");
 * its ticker matches as an upper-case whole word ("BTC") or as a cashtag ("$BTC"), except
 * tickers that are common words (ONE, GAS, BEST, LINK, NEAR, …), which need their cashtag or
 * one of the coin's names. Longer names win over shorter overlapping ones ("Bitcoin Cash" is
 * BCH, not BTC). An all-capitals headline is matched on names and cashtags only, since every
 * word in it looks like a ticker.
 */
export interface CoinNames {
  readonly symbol: string;
  /** Names that identify the coin on their own. */
  readonly names: readonly string[];
  /** The ticker is an ordinary word: only a cashtag or a name tags it. */
  readonly commonWord?: boolean;
}

export const COIN_NAMES: readonly CoinNames[] = [
  { symbol: "BTC", names: ["Bitcoin"] },
  { symbol: "ETH", names: ["Ethereum", "Ether"] },
  { symbol: "SOL", names: ["Solana"] },
  { symbol: "BNB", names: ["BNB Chain", "Binance Coin"] },
  { symbol: "XRP", names: ["XRP Ledger"] },
  { symbol: "ADA", names: ["Cardano"] },
  { symbol: "DOGE", names: ["Dogecoin"] },
  { symbol: "TRX", names: ["Tron"] },
  { symbol: "DOT", names: ["Polkadot"], commonWord: true },
  { symbol: "LINK", names: ["Chainlink"], commonWord: true },
  { symbol: "LTC", names: ["Litecoin"] },
  { symbol: "MATIC", names: ["Polygon MATIC"] },
  { symbol: "POL", names: ["Polygon POL"] },
  { symbol: "AVAX", names: ["Avalanche AVAX"] },
  { symbol: "BCH", names: ["Bitcoin Cash"] },
  { symbol: "TON", names: ["Toncoin"], commonWord: true },
  { symbol: "NEAR", names: ["NEAR Protocol"], commonWord: true },
  { symbol: "ATOM", names: ["Cosmos Hub"], commonWord: true },
  { symbol: "XLM", names: ["Stellar Lumens"] },
  { symbol: "UNI", names: ["Uniswap"], commonWord: true },
  { symbol: "SHIB", names: ["Shiba Inu"] },
  { symbol: "ONE", names: ["Harmony ONE"], commonWord: true },
  { symbol: "GAS", names: ["NeoGas", "Neo GAS"], commonWord: true },
  { symbol: "BEST", names: ["Bitpanda Ecosystem Token"], commonWord: true },
];

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

interface Matcher {
  symbol: string;
  pattern: RegExp;
  /** Characters matched: longer matches claim their span first. */
  weight: number;
  /** Applies to all-capitals headlines too. */
  inCapitals: boolean;
}

/** Builds the matchers of a coin list (exported for tests with their own lists). */
export function buildMatchers(coins: readonly CoinNames[]): Matcher[] {
  const matchers: Matcher[] = [];
  for (const coin of coins) {
    for (const name of coin.names) {
      // Whole words: no letter or digit on either side; a possessive "'s" is fine.
      matchers.push({
        symbol: coin.symbol,
        pattern: new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(name)}(?![\\p{L}\\p{N}])`, "giu"),
        weight: name.length,
        inCapitals: true,
      });
    }
    matchers.push({
      symbol: coin.symbol,
      pattern: new RegExp(`\\$${escapeRegExp(coin.symbol)}(?![\\p{L}\\p{N}])`, "gu"),
      weight: coin.symbol.length + 1,
      inCapitals: true,
    });
    if (!coin.commonWord) {
      matchers.push({
        symbol: coin.symbol,
        pattern: new RegExp(`(?<![\\p{L}\\p{N}$])${escapeRegExp(coin.symbol)}(?![\\p{L}\\p{N}])`, "gu"),
        weight: coin.symbol.length,
        inCapitals: false,
      });
    }
  }
  return matchers.sort((a, b) => b.weight - a.weight);
}

const DEFAULT_MATCHERS = buildMatchers(COIN_NAMES);

/** True when the text has letters and none of them is lower-case. */
function allCapitals(text: string): boolean {
  return /\p{Lu}/u.test(text) && !/\p{Ll}/u.test(text);
}

/** The base codes a headline is about, in order of first mention, at most `max`. */
export function tagCoins(title: string, max = 20, matchers: readonly Matcher[] = DEFAULT_MATCHERS): string[] {
  const capitals = allCapitals(title);
  const claimed: Array<[number, number]> = [];
  const found: Array<{ symbol: string; at: number }> = [];
  for (const m of matchers) {
    if (capitals && !m.inCapitals) continue;
    for (const hit of title.matchAll(m.pattern)) {
      const start = hit.index;
      const end = start + hit[0].length;
      if (claimed.some(([s, e]) => start < e && end > s)) continue;
      claimed.push([start, end]);
      found.push({ symbol: m.symbol, at: start });
    }
  }
  const symbols: string[] = [];
  for (const { symbol } of found.sort((a, b) => a.at - b.at)) if (!symbols.includes(symbol)) symbols.push(symbol);
  return symbols.slice(0, max);
}
