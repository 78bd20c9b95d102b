/**
 * Renders docs/signal-quality.md from the design study and the hold-out. Deterministic: the text
 * depends only on the data and the code (no dates, no timings), so `npm run research` reproduces it
 * byte for byte.
 */
import type { RealTimeframe } from "../../test/support/real-candles.ts";
import type { Metrics } from "./accounting.ts";
import type { TimeframeConfidence } from "./confidence.ts";
import {
  confidenceSection,
  foldByFoldSection,
  holdOutPortfolioSection,
  principledSection,
} from "./confidence-report.ts";
import type { HoldOutRow } from "./hold-out.ts";
import { HOLD_OUT } from "./hold-out.ts";
import { fixed, formatPf, orDash, table } from "./markdown.ts";
import { STUDY_TIMEFRAMES } from "./series.ts";
import type { DesignStudy, TargetStudy } from "./study.ts";
import type { Target, TimeframeSummary } from "./walk-forward.ts";
import { ADDITIONS, FEE, FOLDS, foldScore, MIN_GAIN, median, nameOf, SLIPPAGE } from "./walk-forward.ts";

function targetName(target: Target): string {
  return target === null ? "all timeframes together" : STUDY_TIMEFRAMES[target]!;
}

/** Hold-out summary of one engine and timeframe. */
export type HoldOutSummary = {
  readonly timeframe: RealTimeframe;
  readonly positiveAvg: number;
  readonly medianPf: number;
  readonly medianCompoundedPct: number;
  readonly medianBuyHoldPct: number;
};

/** Per-timeframe summary of one engine's hold-out figures. */
export function holdOutSummary(rows: readonly HoldOutRow[], engine: "ms1" | "ms2"): HoldOutSummary[] {
  return STUDY_TIMEFRAMES.map((timeframe) => {
    const metrics: Metrics[] = rows.filter((r) => r.series.timeframe === timeframe).map((r) => r[engine]);
    return {
      timeframe,
      positiveAvg: metrics.filter((m) => m.avgTradePct !== null && m.avgTradePct > 0).length,
      medianPf: median(metrics.map((m) => m.profitFactor ?? 1)),
      medianCompoundedPct: median(metrics.map((m) => m.compoundedPct)),
      medianBuyHoldPct: median(metrics.map((m) => m.buyHoldPct)),
    };
  });
}

/**
 * The issue's goal on the hold-out: positive average trade on ≥ 9/12 coins at 4h and ≥ 8/12 at 1h, higher median PF at
 * every timeframe.
 */
export function goalChecks(
  ms1: readonly HoldOutSummary[],
  ms2: readonly HoldOutSummary[],
): { label: string; met: boolean }[] {
  const at = (list: readonly HoldOutSummary[], tf: RealTimeframe): HoldOutSummary =>
    list.find((s) => s.timeframe === tf)!;
  return [
    {
      label: `4h: positive average trade on ≥ 9 of 12 coins (MS-2: ${at(ms2, "4h").positiveAvg})`,
      met: at(ms2, "4h").positiveAvg >= 9,
    },
    {
      label: `1h: positive average trade on ≥ 8 of 12 coins (MS-2: ${at(ms2, "1h").positiveAvg})`,
      met: at(ms2, "1h").positiveAvg >= 8,
    },
    ...STUDY_TIMEFRAMES.map((tf) => ({
      label:
        `${tf}: median profit factor above MS-1's (MS-2 ${formatPf(at(ms2, tf).medianPf)} ` +
        `vs MS-1 ${formatPf(at(ms1, tf).medianPf)})`,
      met: at(ms2, tf).medianPf > at(ms1, tf).medianPf,
    })),
  ];
}

function foldCell(summary: TimeframeSummary): string {
  return `${formatPf(summary.medianPf)} (${summary.positiveAvg})`;
}

function designTables(study: DesignStudy): string {
  const parts: string[] = [];
  for (const [i, tf] of STUDY_TIMEFRAMES.entries()) {
    parts.push(`### ${tf}: median profit factor per fold (coins with a positive average trade)\n`);
    parts.push(
      table(
        ["configuration", ...FOLDS.map((f) => f.name), "mean ln PF"],
        study.evaluations.map((e) => [
          nameOf(e.config),
          ...e.folds.map((f) => foldCell(f[i]!)),
          fixed(FOLDS.reduce((s, _, fi) => s + foldScore(e, fi, i), 0) / FOLDS.length, 3),
        ]),
      ),
    );
    parts.push("");
  }
  return parts.join("\n");
}

function selectionSection(ts: TargetStudy): string {
  const name = targetName(ts.target);
  const lines: string[] = [`### Selection for ${name}\n`];
  lines.push(
    table(
      ["validation fold", "selected on the folds before it", "score on the fold", "MS-1 on the fold", "better"],
      ts.steps.map((s) => [
        FOLDS[s.validation]!.name,
        nameOf(s.selected),
        fixed(s.selectedScore, 3),
        fixed(s.baselineScore, 3),
        s.selectedScore > s.baselineScore ? "yes" : "no",
      ]),
    ),
  );
  lines.push("");
  lines.push(`Greedy rounds on all five folds (mean score ln PF; "folds" = folds improved over the round's base):\n`);
  for (const [r, round] of ts.rounds.entries()) {
    const tried = round.tried
      .map((t) => `${t.config[t.config.length - 1]!.label} ${fixed(t.train, 3)} (${t.foldsBetter}/5)`)
      .join("; ");
    const verdict =
      round.accepted === null ? "none accepted" : `accepted: ${round.accepted[round.accepted.length - 1]!.label}`;
    lines.push(`- round ${r + 1}, base ${nameOf(round.base)} ${fixed(round.baseTrain, 3)}: ${tried}. **${verdict}**.`);
  }
  lines.push("");
  const verdict =
    ts.final.length === 0
      ? "The selection on all five folds is MS-1 itself."
      : ts.adopted
        ? `The selection on all five folds, **${nameOf(ts.final)}**, is adopted: the walk-forward ` +
          `selections beat MS-1 on ${ts.stepsBetter} of ${ts.steps.length} validation folds.`
        : `The selection on all five folds, ${nameOf(ts.final)}, is **not** adopted: the walk-forward ` +
          `selections beat MS-1 on only ${ts.stepsBetter} of ${ts.steps.length} validation folds.`;
  lines.push(verdict);
  return lines.join("\n");
}

function metricCells(a: Metrics, b: Metrics): string[] {
  const pair = (x: string, y: string): string => `${x} / ${y}`;
  return [
    pair(String(a.trades), String(b.trades)),
    pair(orDash(a.winRatePct, 1), orDash(b.winRatePct, 1)),
    pair(orDash(a.avgTradePct, 3), orDash(b.avgTradePct, 3)),
    pair(formatPf(a.profitFactor), formatPf(b.profitFactor)),
    pair(fixed(a.maxDrawdownPct, 1), fixed(b.maxDrawdownPct, 1)),
    pair(fixed(a.compoundedPct, 1), fixed(b.compoundedPct, 1)),
    pair(fixed(a.exposurePct, 1), fixed(b.exposurePct, 1)),
    fixed(a.buyHoldPct, 1),
  ];
}

function holdOutSection(rows: readonly HoldOutRow[], study: DesignStudy): string {
  const ms1 = holdOutSummary(rows, "ms1");
  const ms2 = holdOutSummary(rows, "ms2");
  const checks = goalChecks(ms1, ms2);
  const met = checks.every((c) => c.met);
  const lines: string[] = [];
  lines.push(`## Hold-out ${HOLD_OUT.label} (run once, reported as it came out)\n`);
  lines.push(`MS-2 per timeframe: ${STUDY_TIMEFRAMES.map((tf) => `${tf} = ${nameOf(study.ms2[tf])}`).join("; ")}.\n`);
  lines.push("### Summary\n");
  lines.push(
    table(
      [
        "timeframe",
        "coins with positive avg trade MS-1 / MS-2",
        "median PF MS-1 / MS-2",
        "median compounded % MS-1 / MS-2",
        "median buy-and-hold %",
      ],
      STUDY_TIMEFRAMES.map((tf, i) => [
        tf,
        `${ms1[i]!.positiveAvg} / ${ms2[i]!.positiveAvg}`,
        `${formatPf(ms1[i]!.medianPf)} / ${formatPf(ms2[i]!.medianPf)}`,
        `${fixed(ms1[i]!.medianCompoundedPct, 1)} / ${fixed(ms2[i]!.medianCompoundedPct, 1)}`,
        fixed(ms1[i]!.medianBuyHoldPct, 1),
      ]),
    ),
  );
  lines.push("");
  lines.push("### Goal\n");
  for (const c of checks) lines.push(`- ${c.met ? "met" : "**not met**"}: ${c.label}`);
  lines.push("");
  lines.push(
    met
      ? "**Goal met: MS-2 qualifies to become the served engine.**"
      : "**Goal not met: MS-1 stays the served engine.** MS-2 stays a " +
          "research variant (`MS2_PARAMS` in `src/engine/variants.ts`).",
  );
  lines.push("");
  for (const tf of STUDY_TIMEFRAMES) {
    lines.push(`### ${tf}, per coin (MS-1 / MS-2)\n`);
    lines.push(
      table(
        [
          "coin",
          "trades",
          "win %",
          "avg trade %",
          "profit factor",
          "max drawdown %",
          "compounded %",
          "exposure %",
          "buy-and-hold %",
        ],
        rows.filter((r) => r.series.timeframe === tf).map((r) => [r.series.coin, ...metricCells(r.ms1, r.ms2)]),
      ),
    );
    lines.push("");
  }
  return lines.join("\n");
}

function fillsBullet(confidence: readonly TimeframeConfidence[]): string {
  const at = confidence.map((tc) => `${fixed(tc.fillGap.atSignalsPct, 4)}% at ${tc.timeframe}`).join(", ");
  const abs = confidence.map((tc) => `${fixed(tc.fillGap.meanAbsolutePct, 4)}% at ${tc.timeframe}`).join(", ");
  return `- **Fills** are at the signal candle's close, as on the chart pages; a live record fills at the
  next candle's open instead. On the design data the next open is on average this far from the
  close: ${abs}. At MS-1's signals it is better for the new position by
  ${at}. Both are a small fraction of the slippage allowed per side, so
  filling at the next open would not change the figures after slippage materially.`;
}

/** The whole document. */
export function renderReport(
  study: DesignStudy,
  holdOut: readonly HoldOutRow[],
  conclusions: string,
  confidence: readonly TimeframeConfidence[],
  confidenceConclusions: string,
): string {
  const feePct = fixed(FEE * 100, 1);
  const doc = `# Signal quality: MS-1 measured out of sample, the MS-2 candidates, and how much to trust them

Generated by \`npm run research\` (\`bench/research/\`); do not edit by hand. The run is
deterministic: the same data and code give this file byte for byte
(\`npm run research -- --check\` compares instead of writing).

## Protocol

- **Data**: the twelve real coins (${"`../shared/data/candles`"}), Binance 1h candles from 2020-10-23;
  4h and 1d are built from them in UTC buckets (\`test/support/real-candles.ts\`). 15m and 30m
  cannot be built from 1h data and are not measured.
- **Design data**: candles opening up to and including 2023-06-15 (UTC). The design code path cuts
  the 1h candles there before building 4h and 1d, so no later candle can reach it.
- **Hold-out**: ${HOLD_OUT.label}. A separate code path (\`bench/research/hold-out.ts\`), called
  once after MS-2 was fixed; its figures below are as they came out.
- **Trades** are the chart pages' trades (\`src/track-record/track-record.ts\`, docs/track-record.md): one per
  directional signal event, entered at the confirming close, ended at the first close through its
  own defense, the next opposite signal or the next invalidation (NONE). A signal event is every
  change of the engine's \`signalAt\`, as the market store records them.
- **Backtest**: one position at a time per coin and timeframe (a signal while a position is held
  is skipped; a reversal enters at the previous exit), no leverage, longs and shorts. Each window
  starts flat and sees only its own events and candles: a position still open at its end is closed
  at its last close.
- **Fees**: ${feePct}% per side on the traded notional. A trade's equity multiple is
  \`(1 − f)·(1 + r − f·exit/entry)\` with \`r\` the direction-signed price return.
- **Slippage**: the MS-2 selection and its goal used the fee alone. Every confidence figure
  (fold by fold, portfolio, PSR, DSR, PBO) adds a slippage of ${fixed(SLIPPAGE * 100, 2)}% per side: each fill is that
  much worse than the signal's price (entry E = entry·(1 + d·s), exit X = exit·(1 − d·s) for
  direction d), then the fee is paid on each side's notional:
  \`(1 − f)·(1 + d·(X − E)/E − f·X/E)\`, which is \`(1 − f)²·X/E\` for a long and
  \`(1 − f)·(2 − (1 + f)·X/E)\` for a short (the short's exit fee is on the buy-back, X per unit).
- **Liquidation**: an unleveraged position can lose its stake and no more. A short whose value
  reaches zero at a close (the price about doubled) is closed there with nothing left, as an
  exchange would close it. This rule came with the confidence figures; before it, a 1d MS-1 short
  on DOGE (entered at 0.007416 on 2021-01-27, next close 0.036324) was booked as a loss of 390% of
  its stake, and a 4h MATIC short in F2 (under the break buffer of 1 ATR) as one of 104%. The
  correction changed a few cells of the per-fold tables (1d F1, and 4h F2 of four
  configurations) and the scores derived from them; it changed no selection, no adoption and no
  hold-out figure.
${fillsBullet(confidence)}
- **Figures**: trades; win rate (net result > 0); average net trade; profit factor (sum of net
  gains / sum of net losses, ∞ with no loss, – with no trade); maximum drawdown of the
  mark-to-market equity at every close (liquidation value while in a position); compounded result
  (Π multiples − 1); exposure (share of the window's candle intervals in a position); buy-and-hold
  (buy the first close, sell the last, both fees). Medians over the twelve coins count a coin
  without trades as profit factor 1.
- **Survivorship**: the twelve coins were chosen with hindsight: all of them were still large,
  listed coins when the data set was assembled (it ends in June 2024). Coins that collapsed or
  were delisted during the period (LUNA in May 2022 and FTT in November 2022, for example) are
  not in it. Every figure here is conditional on survival: the long side misses its worst trades
  and the short side its best, and buy-and-hold is flattered most. A live record has no such
  bias, which is one reason the next judgement is on the service's own live record
  (docs/preregistration.md).

## MS-1 on the design data, before and after fees

All trades taken 2020-11-01 – 2023-06-15, twelve coins pooled:

${table(
  ["timeframe", "trades", "avg trade before fees %", "avg trade after fees %", "exposure %"],
  study.ms1GrossNet.map((g) => [
    g.timeframe,
    String(g.trades),
    fixed(g.avgGrossPct, 3),
    fixed(g.avgNetPct, 3),
    fixed(g.exposurePct, 1),
  ]),
)}

${foldByFoldSection(confidence)}
## Walk-forward splits (design data)

${table(
  ["fold", "candles opening"],
  FOLDS.map((f) => [f.name, f.label]),
)}

The engine always runs from the first candle (so each fold starts with the state a live engine would
have); only the fold's window is traded. **Score** of a configuration on a fold and timeframe:
ln(median profit factor over the twelve coins), clamped to ±ln 10. **Anchored walk-forward**: for
validation fold F3, F4 and F5, the selection procedure runs on all folds before it and its choice is
scored on the fold. **Selection procedure** (greedy forward selection): start from MS-1; add the
candidate that raises the mean training score most, if it gains at least ${MIN_GAIN} and improves a
majority of the training folds; repeat until no candidate qualifies (additions of one family
exclude each other). **Adoption**: the selection on all five folds replaces MS-1 for a timeframe
only if the walk-forward selections beat MS-1 on a majority of the validation folds.

A single configuration for all timeframes (mean score over 1h, 4h, 1d) was tried first; it selects
MS-1 (below), so the selection is made per timeframe: the engine takes its parameters per series.

## Candidates

All candidates are engine options (\`src/engine/params.ts\`), off by default, each keeping the
DESIGN §5 properties: pure, incremental, O(1) per candle for fixed parameters. The property tests
of \`test/unit/engine/\` (no look-ahead, incremental = naive batch, forming-then-close = close,
reading invariants, scale and mirror symmetry, state persistence) run against MS-1, MS-2 and all
options at once (\`test/support/engine-variants.ts\`), and the naive batch reference implements each
option on its own. A long-only variant was not tried: it would break the mirror-symmetry property.

${table(
  ["candidate", "family", "why"],
  ADDITIONS.map((a) => [a.label, a.family, a.why]),
)}

## Every configuration tried, per fold

Cells: median profit factor (number of coins, of 12, with a positive average trade), after fees.

${designTables(study)}
## Selection

${[study.global, ...study.perTimeframe].map(selectionSection).join("\n\n")}

${holdOutSection(holdOut, study)}
${holdOutPortfolioSection(holdOut)}
${confidenceSection(confidence)}
${principledSection(confidence)}
## The next hold-out is pre-registered

The hold-out above has been used. The next judgement is made on data that does not exist yet:
the service's own live record, from the date, with the rules, the metric and the protocol
committed beforehand in [docs/preregistration.md](preregistration.md). The served engine changes
only by that protocol.

## Conclusions of the MS-2 study

${conclusions}

## Conclusions of the confidence figures and the principled candidates

${confidenceConclusions}
`;
  return doc;
}
