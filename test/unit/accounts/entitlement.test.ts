/**
 * The entitlement rule as a table: plan × subscription state × surface → admitted, and whether
 * the current signal is shown. The expected table is written out by hand from the product rule
 * (docs/accounts.md, "Who sees what"), not computed, so a change of the rule has to change it.
 * Then the ended-history cutoff: signals shown to everyone else ended at least 24 h ago, and
 * nothing newer than the delay moves the cutoff.
 */
import { describe, expect, it } from "vitest";
import {
  ENDED_SIGNAL_DELAY_MS,
  endedHistoryUntil,
  entitlement,
  mayCallPaidEndpoint,
  PAID_PLANS,
  SURFACES,
  type Surface,
  subscriptionState,
  type Viewer,
  viewerOf,
} from "../../../src/accounts/entitlement.ts";

/** C: admitted and shown the current signal; H: admitted, history and market data only; -: refused. */
type Cell = "C" | "H" | "-";
const COLUMNS: readonly Surface[] = [
  "paid_endpoint",
  "free_endpoints",
  "alerts",
  "test_alert",
  "chart_page",
  "watchlist",
  "track_record",
  "status_page",
];

const TABLE: ReadonlyArray<[string, Viewer, string]> = [
  //                                                              paid free alerts test chart watch track status
  ["signed out", null, /*                                      */ "-    -    -      -    -     -     H     H"],
  ["node, active", { plan: "node", subscription: "active" }, /*   */ "C    H    C      H    C     C     H     H"],
  ["node, lapsed", { plan: "node", subscription: "lapsed" }, /*   */ "-    -    -      -    H     -     H     H"],
  ["node, never subscribed", { plan: "node", subscription: "none" }, "-    -    -      -    H     -     H     H"],
  [
    "founding_seat, active",
    { plan: "founding_seat", subscription: "active" },
    "C    H    C      H    C     C     H     H",
  ],
  [
    "founding_seat, lapsed",
    { plan: "founding_seat", subscription: "lapsed" },
    "-    -    -      -    H     -     H     H",
  ],
  ["basic, active", { plan: "basic", subscription: "active" }, /* */ "-    H    -      -    H     -     H     H"],
  ["basic, lapsed", { plan: "basic", subscription: "lapsed" }, /* */ "-    -    -      -    H     -     H     H"],
  ["free sign-up", { plan: "free", subscription: "none" }, /*     */ "-    -    -      -    H     -     H     H"],
  [
    "free, active (operator-set)",
    { plan: "free", subscription: "active" },
    "-    H    -      -    H     -     H     H",
  ],
];

const cellOf = (e: { admitted: boolean; currentSignal: boolean }): Cell =>
  !e.admitted ? "-" : e.currentSignal ? "C" : "H";

describe("entitlement: plan × subscription × surface", () => {
  it("names every surface in the table", () => {
    expect([...COLUMNS].sort()).toEqual([...SURFACES].sort());
  });

  it.each(TABLE)("%s", (_name, viewer, row) => {
    const expected = row.split(/\s+/);
    expect(COLUMNS.map((surface) => cellOf(entitlement(viewer, surface)))).toEqual(expected);
  });

  it(
    "shows the current signal on exactly the surfaces where it may " +
      "call the paid endpoint, and never where it is not admitted",
    () => {
      for (const [, viewer] of TABLE) {
        for (const surface of SURFACES) {
          const e = entitlement(viewer, surface);
          if (e.currentSignal) {
            expect(e.admitted).toBe(true);
            expect(mayCallPaidEndpoint(viewer)).toBe(true);
          }
        }
      }
    },
  );

  it("the free endpoints, the public pages and the test alert never carry a current signal", () => {
    for (const [, viewer] of TABLE) {
      for (const surface of ["free_endpoints", "track_record", "status_page", "test_alert"] as const)
        expect(entitlement(viewer, surface).currentSignal).toBe(false);
    }
  });

  it("the paid plans are node and founding_seat", () => {
    expect([...PAID_PLANS]).toEqual(["node", "founding_seat"]);
  });
});

describe("subscription state", () => {
  const now = Date.parse("2026-11-15T04:00:00Z");
  it("is active strictly before its end, lapsed from the end on, none when never set", () => {
    expect(subscriptionState(new Date(now + 1), now)).toBe("active");
    expect(subscriptionState(new Date(now), now)).toBe("lapsed");
    expect(subscriptionState(now - 1, now)).toBe("lapsed");
    expect(subscriptionState(null, now)).toBe("none");
    expect(viewerOf({ plan: "node", subscriptionUntil: new Date(now + 1000) }, now)).toEqual({
      plan: "node",
      subscription: "active",
    });
  });
});

describe("endedHistoryUntil: what everyone else sees of a series' signals", () => {
  const H = 3_600_000;
  const now = Date.parse("2026-11-15T04:00:00Z");
  const horizon = now - ENDED_SIGNAL_DELAY_MS;
  /** The in-force times shown with a cutoff. */
  const shown = (times: number[]) => times.filter((t) => t <= endedHistoryUntil(now, times));

  it("is at least 24 hours", () => {
    expect(ENDED_SIGNAL_DELAY_MS).toBeGreaterThanOrEqual(24 * H);
  });

  it("with no signal, or none before the delay: the delay's horizon, showing nothing", () => {
    expect(endedHistoryUntil(now, [])).toBe(horizon);
    expect(shown([horizon + 1, now - H])).toEqual([]);
  });

  it("hides the signal in force at the horizon, even when it has ended since", () => {
    expect(shown([horizon - 10 * H])).toEqual([]);
    expect(shown([horizon - 10 * H, now - H])).toEqual([]);
    expect(shown([horizon - 30 * H, horizon - 10 * H, now - H])).toEqual([horizon - 30 * H]);
    // A signal that came into force exactly at the horizon is in force there.
    expect(shown([horizon - 30 * H, horizon])).toEqual([horizon - 30 * H]);
  });

  it("every signal shown ended at least the delay ago", () => {
    const times = Array.from({ length: 40 }, (_, i) => now - 80 * H + i * 2 * H + (i % 3) * 700);
    const cut = endedHistoryUntil(now, times);
    const visible = times.filter((t) => t <= cut);
    expect(visible.length).toBeGreaterThan(0);
    for (const t of visible) {
      const end = times.find((u) => u > t)!;
      expect(end).toBeLessThanOrEqual(horizon);
    }
  });

  it("no signal newer than the horizon moves the cutoff (nothing recent shows through)", () => {
    const old = [horizon - 50 * H, horizon - 20 * H, horizon - 2 * H];
    const cut = endedHistoryUntil(now, old);
    for (const later of [[horizon + 1], [now - 5 * H, now - H], [now]])
      expect(endedHistoryUntil(now, [...old, ...later])).toBe(cut);
  });
});
