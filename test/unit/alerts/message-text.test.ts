/**
 * The words a member reads: every fact the API gives for the signal (coin, timeframe, signal,
 * price, defense, ATR%), when it was confirmed, a link to the coin's chart, the event id that
 * ties the message to the API's signal_id, and the disclaimer. Plain text, one fact per line.
 */
import { describe, expect, it } from "vitest";
import {
  chartUrl,
  DISCLAIMER,
  formatPrice,
  lowBalanceText,
  type SignalAlertFacts,
  signalAlertText,
} from "../../../src/alerts/message-text.ts";

const BASE = "https://signals.example.com";
const OPEN = Date.UTC(2026, 10, 12, 7); // 07:00 UTC; the 1h candle closes 08:00 UTC = 16:00 MYT

const long: SignalAlertFacts = {
  eventId: `BTC-1h-${OPEN}`,
  symbol: "BTC",
  tf: "1h",
  signal: "LONG",
  price: 64210.5,
  defense: 63120,
  atrPct: 0.8412,
  candleOpenTime: OPEN,
};

describe("signal alert text", () => {
  it("states coin, timeframe, signal, price, defense and ATR% on separate lines", () => {
    const lines = signalAlertText(long, BASE).split("\n");
    expect(lines).toEqual([
      "BTC 1h: LONG ▲ (change of character)",
      "Price 64210.5 · Defense 63120 · ATR 0.84%",
      "Confirmed at the 1h close, 2026-11-12 16:00 MYT",
      `${BASE}/charts/BTC?tf=1h`,
      `Signal BTC-1h-${OPEN}`,
      "Educational information, not investment advice.",
    ]);
  });

  it(
    "carries the first 8 characters of the event's hash in the " +
      "signal log when it has one, and is otherwise unchanged",
    () => {
      const hash = "0123456789abcdef".repeat(4);
      const lines = signalAlertText({ ...long, chainHash: hash }, BASE).split("\n");
      expect(lines[4]).toBe(`Signal BTC-1h-${OPEN}`);
      expect(lines[5]).toBe("Log 01234567");
      expect(lines.filter((_, i) => i !== 5)).toEqual(signalAlertText(long, BASE).split("\n"));
      expect(signalAlertText({ ...long, chainHash: null }, BASE)).toBe(signalAlertText(long, BASE));
    },
  );

  it(
    "says first that an event of the demo feed comes from synthetic " +
      "prices, and says nothing of the kind for real data",
    () => {
      const lines = signalAlertText({ ...long, demo: true }, BASE).split("\n");
      expect(lines[0]).toBe("[demo data: synthetic prices, not a market]");
      expect(lines.slice(1)).toEqual(signalAlertText(long, BASE).split("\n"));
      expect(signalAlertText({ ...long, demo: false }, BASE)).not.toMatch(/demo|synthetic/);
    },
  );

  it("links the chart page of the coin and timeframe under PUBLIC_BASE_URL", () => {
    const text = signalAlertText({ ...long, symbol: "ETH", tf: "4h", eventId: "ETH-4h-1" }, "http://127.0.0.1:8080");
    expect(text).toContain("\nhttp://127.0.0.1:8080/charts/ETH?tf=4h\n");
    expect(chartUrl(BASE, "SOL", "1d")).toBe(`${BASE}/charts/SOL?tf=1d`);
  });

  it("carries the event id on its own 'Signal <id>' line (the API's signal_id)", () => {
    const text = signalAlertText(long, BASE);
    expect(/^Signal (\S+)$/m.exec(text)?.[1]).toBe(long.eventId);
  });

  it("always ends with the disclaimer", () => {
    for (const signal of ["LONG", "STRONG_LONG", "SHORT", "STRONG_SHORT", "NONE"]) {
      const text = signalAlertText({ ...long, signal, defense: signal === "NONE" ? null : long.defense }, BASE);
      expect(text.endsWith(`\n${DISCLAIMER}`)).toBe(true);
    }
    expect(DISCLAIMER).toBe("Educational information, not investment advice.");
  });

  it("names each signal with its direction and kind of break", () => {
    const headline = (signal: string) => signalAlertText({ ...long, signal }, BASE).split("\n")[0];
    expect(headline("STRONG_LONG")).toBe("BTC 1h: STRONG LONG ▲ (break with the trend)");
    expect(headline("SHORT")).toBe("BTC 1h: SHORT ▼ (change of character)");
    expect(headline("STRONG_SHORT")).toBe("BTC 1h: STRONG SHORT ▼ (break with the trend)");
  });

  it("says an invalidation (NONE) ended the signal, with no defense line", () => {
    const text = signalAlertText({ ...long, signal: "NONE", defense: null, price: 63000 }, BASE);
    expect(text.split("\n")[0]).toBe("BTC 1h: signal ended (NONE): the close went through the defense");
    expect(text.split("\n")[1]).toBe("Price 63000 · ATR 0.84%");
    expect(text).not.toMatch(/Defense/);
  });

  it("leaves ATR out rather than printing null when it is unknown", () => {
    const text = signalAlertText({ ...long, atrPct: null }, BASE);
    expect(text.split("\n")[1]).toBe("Price 64210.5 · Defense 63120");
    expect(text).not.toMatch(/null|undefined|NaN/);
  });

  it("gives the close time of the candle in MYT for every timeframe", () => {
    const day = Date.UTC(2026, 10, 12); // the 1d candle of 12 Nov closes at 00:00 UTC 13 Nov = 08:00 MYT
    expect(signalAlertText({ ...long, tf: "1d", candleOpenTime: day }, BASE)).toContain(
      "Confirmed at the 1d close, 2026-11-13 08:00 MYT",
    );
    expect(signalAlertText({ ...long, tf: "15m", candleOpenTime: OPEN }, BASE)).toContain(
      "Confirmed at the 15m close, 2026-11-12 15:15 MYT",
    );
  });

  it("renders the same facts to the same text (a retried message is identical)", () => {
    expect(signalAlertText({ ...long }, BASE)).toBe(signalAlertText(long, BASE));
  });
});

describe("formatPrice", () => {
  it("prints enough digits for any coin, without float noise", () => {
    expect(formatPrice(64210.5)).toBe("64210.5");
    expect(formatPrice(0.00001234)).toBe("0.00001234");
    expect(formatPrice(0.1 + 0.2)).toBe("0.3");
    expect(formatPrice(1.23456789012)).toBe("1.2345679");
  });
});

describe("low-balance text", () => {
  it("gives the credits left, the threshold, how to top up and the account page", () => {
    const text = lowBalanceText(1499, 1500, BASE);
    expect(text).toContain("1499 left (below 1500)");
    expect(text).toContain("Token pack");
    expect(text.split("\n").at(-1)).toBe(`${BASE}/account`);
  });
});
