/**
 * Alert settings validation, shared by the operator's CLI and the member's account page: a
 * Telegram chat id (a possibly negative integer, or @channelname), the coins (normalised like
 * the API's symbols) and the timeframes (the API's five), with a clear reason when refused.
 */
import { describe, expect, it } from "vitest";
import { AlertSettingsError, MAX_ALERT_SYMBOLS, parseAlertSettings } from "../../../src/alerts/settings.ts";

const valid = { chatId: "123456789", symbols: "BTC", timeframes: "1h" };

/** The error parseAlertSettings throws for this input (fails the test when it does not throw). */
function refusal(input: Partial<typeof valid> & Record<string, unknown>): AlertSettingsError {
  try {
    parseAlertSettings({ ...valid, ...input } as Parameters<typeof parseAlertSettings>[0]);
  } catch (err) {
    expect(err).toBeInstanceOf(AlertSettingsError);
    return err as AlertSettingsError;
  }
  throw new Error(`accepted ${JSON.stringify(input)}`);
}

describe("chat id", () => {
  it.each([
    ["123456789", "123456789"],
    ["-1001234567890", "-1001234567890"], // supergroups and channels have negative ids
    ["-42", "-42"], // basic groups
    ["@signals_channel", "@signals_channel"], // a public channel's username
    ["@abcde", "@abcde"], // shortest username Telegram allows (5)
    [`@a${"b".repeat(31)}`, `@a${"b".repeat(31)}`], // longest (32)
    ["  777  ", "777"], // pasted with spaces
  ])("accepts %j", (chatId, expected) => {
    expect(parseAlertSettings({ ...valid, chatId }).chatId).toBe(expected);
  });

  it.each([
    [""],
    ["   "],
    ["abc"],
    ["0"],
    ["-0"],
    ["007"],
    ["12.5"],
    ["+123"],
    ["1e9"],
    ["123 456"],
    ["1".repeat(21)],
    ["@abcd"], // too short for a username
    [`@a${"b".repeat(32)}`], // too long
    ["@1channel"], // usernames start with a letter
    ["@chan-nel"],
    ["https://t.me/channel"],
  ])("refuses %j and says what a chat id looks like", (chatId) => {
    expect(refusal({ chatId }).message).toMatch(
      /^chat id must be a Telegram chat id \(a number\) or @channelname, got "/,
    );
  });

  it("keeps coins without a chat when none is given (null: the web page before Telegram is connected)", () => {
    expect(parseAlertSettings({ ...valid, chatId: null })).toEqual({
      chatId: null,
      symbols: ["BTC"],
      timeframes: ["1h"],
    });
  });

  it("quotes at most 40 characters of a refused chat id", () => {
    const message = refusal({ chatId: "x".repeat(500) }).message;
    expect(message).toContain(`got "${"x".repeat(40)}"`);
    expect(message).not.toContain("x".repeat(41));
  });
});

describe("symbols", () => {
  it("upper-cases, trims, drops empties and duplicates (first kept)", () => {
    expect(parseAlertSettings({ ...valid, symbols: " btc, eth ,,BTC,sol " }).symbols).toEqual(["BTC", "ETH", "SOL"]);
  });

  it("takes a list, whose items may themselves be comma-separated", () => {
    expect(parseAlertSettings({ ...valid, symbols: ["eth,btc", " xrp ", ""] }).symbols).toEqual(["ETH", "BTC", "XRP"]);
  });

  it("needs at least one coin", () => {
    expect(refusal({ symbols: " , ," }).message).toBe("name at least one coin, e.g. BTC,ETH");
    expect(refusal({ symbols: [] as unknown as string }).message).toBe("name at least one coin, e.g. BTC,ETH");
  });

  it(`accepts ${MAX_ALERT_SYMBOLS} coins and refuses more`, () => {
    const coins = (n: number) => Array.from({ length: n }, (_, i) => `C${i}`);
    expect(parseAlertSettings({ ...valid, symbols: coins(MAX_ALERT_SYMBOLS) }).symbols).toHaveLength(MAX_ALERT_SYMBOLS);
    expect(refusal({ symbols: coins(MAX_ALERT_SYMBOLS + 1) as unknown as string }).message).toBe(
      `at most ${MAX_ALERT_SYMBOLS} coins`,
    );
    // Duplicates do not count twice.
    expect(parseAlertSettings({ ...valid, symbols: [...coins(MAX_ALERT_SYMBOLS), "c0"] }).symbols).toHaveLength(
      MAX_ALERT_SYMBOLS,
    );
  });

  it.each([["BTC-USD"], ["BTC/USDT"], ["ÉTH"], ["A".repeat(16)], ["$BTC"]])("refuses %j, naming it", (symbol) => {
    const message = refusal({ symbols: `ETH,${symbol}` }).message;
    expect(message).toContain("is not a coin code (1 to 15 letters or digits, e.g. BTC)");
    expect(message).toContain(`"${symbol.toUpperCase().slice(0, 20)}"`);
  });
});

describe("timeframes", () => {
  it("keeps the API's timeframes in canonical order, without duplicates", () => {
    expect(parseAlertSettings({ ...valid, timeframes: "1d, 15m,4h,1d" }).timeframes).toEqual(["15m", "4h", "1d"]);
    expect(parseAlertSettings({ ...valid, timeframes: ["1d", "30m,1h"] }).timeframes).toEqual(["30m", "1h", "1d"]);
  });

  it("needs at least one timeframe and lists the choices", () => {
    expect(refusal({ timeframes: "" }).message).toBe("name at least one timeframe among 15m, 30m, 1h, 4h, 1d");
  });

  it.each([["2h"], ["1H"], ["1w"], ["60"]])(
    "refuses %j (no silent 4h as in the API: " + "a setting must mean what it says)",
    (tf) => {
      expect(refusal({ timeframes: `1h,${tf}` }).message).toBe(
        `timeframe must be one of 15m, 30m, 1h, 4h, 1d, got "${tf}"`,
      );
    },
  );
});

describe("a whole setting", () => {
  it("returns exactly the normalised chat, coins and timeframes", () => {
    expect(parseAlertSettings({ chatId: " -100777 ", symbols: "sol,btc", timeframes: "4h,1h" })).toEqual({
      chatId: "-100777",
      symbols: ["SOL", "BTC"],
      timeframes: ["1h", "4h"],
    });
  });
});
