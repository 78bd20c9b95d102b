import { describe, expect, it } from "vitest";
import { tagCoins } from "../../../src/feeder/sources/coin-tags.ts";

describe("tagCoins", () => {
  it.each<[string, string[]]>([
    ["Bitcoin tops $100k as ETF inflows grow", ["BTC"]],
    ["BTC and ETH slide; SOL holds", ["BTC", "ETH", "SOL"]],
    ["bitcoin's hashrate and ethereum's gas", ["BTC", "ETH"]],
    // Longer names win: Bitcoin Cash is BCH, not BTC.
    ["Bitcoin Cash forks again", ["BCH"]],
    // Common-word tickers need a name or a cashtag.
    ["The ONE thing GAS stations do BEST", []],
    ["One more link in the chain: near the top", []],
    ["Harmony ONE and $GAS rally", ["ONE", "GAS"]],
    ["Chainlink (LINK) and Polkadot (DOT) partner", ["LINK", "DOT"]],
    ["$LINK breaks out", ["LINK"]],
    // Inside other words nothing matches.
    ["ETHICS board meets; SOLAR output rises; Etherscan adds a page", []],
    // An all-capitals headline: names and cashtags only.
    ["BREAKING: BITCOIN HITS A HIGH AS ETH TRAILS AND $SOL JUMPS", ["BTC", "SOL"]],
    ["Ether, XRP Ledger and Tron", ["ETH", "XRP", "TRX"]],
  ])("%s → %j", (title, expected) => {
    expect(tagCoins(title)).toEqual(expected);
  });

  it("keeps the first `max` coins in order of mention", () => {
    expect(tagCoins("Solana, Cardano and Bitcoin", 2)).toEqual(["SOL", "ADA"]);
  });
});
