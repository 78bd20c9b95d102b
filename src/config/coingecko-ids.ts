/**
 * Base code → CoinGecko coin id, written out for the coins we serve, because tickers are not
 * unique on CoinGecko (dozens of tokens call themselves "ETH" or "LINK"). A code missing
 * here is looked up in /coins/list and, when several coins share it, resolved by market-cap
 * rank and reported (src/feeder/sources/fundamentals.ts). COINGECKO_IDS adds or overrides
 * entries. Ids checked against CoinGecko's public coin pages.
 */
export const COINGECKO_IDS: Readonly<Record<string, string>> = Object.freeze({
  BTC: "bitcoin",
  ETH: "ethereum",
  SOL: "solana",
  BNB: "binancecoin",
  XRP: "ripple",
  ADA: "cardano",
  DOGE: "dogecoin",
  TRX: "tron",
  DOT: "polkadot",
  LINK: "chainlink",
  LTC: "litecoin",
  // Polygon's MATIC migrated to POL; CoinGecko keeps the old id for MATIC.
  MATIC: "matic-network",
  POL: "polygon-ecosystem-token",
  AVAX: "avalanche-2",
  BCH: "bitcoin-cash",
  TON: "the-open-network",
  NEAR: "near",
  ATOM: "cosmos",
  XLM: "stellar",
  UNI: "uniswap",
});
