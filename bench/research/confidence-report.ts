/**
 * The sections of docs/signal-quality.md that state the results' confidence: the fold-by-fold
 * and long/short tables, the deflated Sharpe ratio of every configuration tried, the probability
 * of backtest overfitting, the principled candidates and the hold-out's portfolio view.
 * Deterministic, like the rest of the report.
 */
import type { PerformanceSummary } from "../../src/performance/statistics.ts";
import { summarizeReturns } from "../../src/performance/statistics.ts";
import type { RealTimeframe } from "../../test/support/real-candles.ts";
import { HIGHER_TIMEFRAME, MOMENTUM_WEEKS } from "./candidates.ts";
import type { CandidateResult, TimeframeConfidence, TradeFigures } from "./confidence.ts";
import { CSCV_BLOCKS, FOLDS_TO_BEAT, PERIODS_PER_YEAR } from "./confidence.ts";
import type { HoldOutRow } from "./hold-out.ts";
import { HOLD_OUT } from "./hold-out.ts";
import { fixed, orDash, table } from "./markdown.ts";
import { equalWeight } from "./portfolio.ts";
import { STUDY_TIMEFRAMES } from "./series.ts";
import { FEE, FOLDS, SLIPPAGE } from "./walk-forward.ts";

const pct = (fraction: number, decimals = 1): string => fixed(fraction * 100, decimals);

function tradeCells(f: TradeFigures): string[] {
  return [
    String(f.trades),
    orDash(f.grossPct, 3),
    orDash(f.netPct, 3),
    orDash(f.payoff, 2),
    f.breakEvenFeePct === null ? "none" : fixed(f.breakEvenFeePct, 3),
  ];
}

const TRADE_HEADER = ["trades", "gross per trade %", "net per trade %", "payoff", "break-even fee per side %"];

function foldTable(result: CandidateResult): string {
  return table(
    ["fold", ...TRADE_HEADER],
    [
      ...FOLDS.map((fold, i) => [`${fold.name} (${fold.label})`, ...tradeCells(result.folds[i]!)]),
      ["whole design period", ...tradeCells(result.design)],
    ],
  );
}

const SIDE_HEADER = ["long trades", "long gross %", "long net %", "short trades", "short gross %", "short net %"];

function sideCells(r: CandidateResult): string[] {
  return [
    String(r.longs.trades),
    orDash(r.longs.grossPct, 3),
    orDash(r.longs.netPct, 3),
    String(r.shorts.trades),
    orDash(r.shorts.grossPct, 3),
    orDash(r.shorts.netPct, 3),
  ];
}

function summaryCells(s: PerformanceSummary): string[] {
  return [pct(s.totalReturn), pct(s.annualisedVolatility), fixed(s.sharpeAnnualised), fixed(s.psr, 3)];
}

function headlineTable(tc: TimeframeConfidence): string {
  return table(
    [
      "candidate",
      "trades",
      "net per trade %",
      "compounded %",
      "volatility % a year",
      "Sharpe (a year)",
      "PSR",
      "DSR",
      "max drawdown %",
      "time in market %",
      "win rate % [95% interval]",
    ],
    tc.results.map((r) => [
      r.candidate.name,
      String(r.design.trades),
      orDash(r.design.netPct, 3),
      ...summaryCells(r.summary),
      fixed(r.deflated.dsr, 3),
      pct(r.summary.maxDrawdown),
      pct(r.timeInMarket),
      `${pct(r.wins.rate)} [${pct(r.wins.low)}, ${pct(r.wins.high)}]`,
    ]),
  );
}

function foldSharpeTable(tc: TimeframeConfidence): string {
  const served = tc.results[0]!;
  return table(
    ["candidate", ...FOLDS.map((f) => f.name), `folds above MS-1`, "carried forward"],
    tc.results
      .filter((r) => r.candidate.family !== "selection")
      .map((r) => [
        r.candidate.name,
        ...r.foldSharpes.map((s) => fixed(s * Math.sqrt(PERIODS_PER_YEAR))),
        r === served ? "–" : String(r.foldSharpes.filter((s, i) => s > served.foldSharpes[i]!).length),
        r === served ? "served" : tc.carried.includes(r.candidate.name) ? "**yes**" : "no",
      ]),
  );
}

/** The fold-by-fold and long/short tables of MS-1, right after the pooled before/after-fees table. */
export function foldByFoldSection(confidence: readonly TimeframeConfidence[]): string {
  const parts: string[] = [];
  parts.push(`## MS-1 fold by fold, long and short, after fee and slippage

The pooled table above hides where the result comes from. Per fold (each starting flat), twelve
coins pooled; "net" is after the fee of ${fixed(FEE * 100, 1)}% and a slippage of ${fixed(SLIPPAGE * 100, 2)}% per \
side; the payoff is
the mean net win over the mean net loss; the break-even fee is the fee per side (without
slippage) at which the mean trade is zero, "none" when the mean trade is not positive even
before costs.
`);
  for (const tc of confidence) {
    parts.push(`### ${tc.timeframe}\n`);
    parts.push(foldTable(tc.results[0]!));
    parts.push("");
  }
  parts.push(`### Long and short (whole design period)\n`);
  parts.push(
    table(
      ["timeframe", ...SIDE_HEADER],
      confidence.map((tc) => [tc.timeframe, ...sideCells(tc.results[0]!)]),
    ),
  );
  parts.push("");
  return parts.join("\n");
}

function trialsTable(confidence: readonly TimeframeConfidence[]): string {
  const names = confidence[0]!.trials.map((t) => t.name);
  return table(
    ["configuration", "from", ...confidence.map((tc) => `${tc.timeframe} Sharpe / PSR / DSR`)],
    names.map((name, i) => [
      name,
      confidence[0]!.trials[i]!.study,
      ...confidence.map(
        (tc) =>
          `${fixed(tc.trials[i]!.sharpe * Math.sqrt(PERIODS_PER_YEAR))} / ` +
          `${fixed(tc.trials[i]!.psr, 3)} / ${fixed(tc.trials[i]!.dsr, 3)}`,
      ),
    ]),
  );
}

/** The deflated Sharpe ratio of every configuration tried and the probability of backtest overfitting. */
export function confidenceSection(confidence: readonly TimeframeConfidence[]): string {
  const first = confidence[0]!;
  const studyCount = first.trials.filter((t) => t.study === "MS-2 study").length;
  const principledCount = first.trials.length - studyCount;
  const selections = confidence.filter((tc) => tc.selectionDsrAtSelection !== null);
  const selectionSentence = (tc: TimeframeConfidence) =>
    `The MS-2 study's selection at ${tc.timeframe} has a DSR of ${fixed(tc.selectionDsrAtSelection!, 3)} ` +
    `counting only that study's ${studyCount} trials (what it faced when it was chosen) ` +
    `and ${fixed(tc.results[1]!.deflated.dsr, 3)} counting all ${tc.trials.length}.`;
  return `## Statistical confidence of the design-data results

**Configurations tried.** The MS-2 study evaluated ${studyCount} configurations (MS-1 and MS-1 with
additions), each on all three timeframes, for its four selection targets (all timeframes
together, 1h, 4h, 1d); every one of them is a trial at every timeframe, because the selection
saw all of them. The principled candidates below add ${principledCount} (the momentum rule counts once per
look-back), so **${first.trials.length} configurations have been tried per timeframe** on this design data.

**The portfolio.** For each timeframe and configuration, the twelve coins are one equal-weight
portfolio, rebalanced daily: its daily return is the mean of the coins' daily returns, each coin
marked to market at every close (liquidation value after costs), over the whole design period
${FOLDS[0]!.label.slice(0, 10)} – ${FOLDS[FOLDS.length - 1]!.label.slice(-10)}, starting flat, after the fee and the \
slippage.

**Statistics** (\`src/performance/\`): Sharpe ratio = mean / sample standard deviation of the
daily returns, risk-free rate 0, annualised by √${PERIODS_PER_YEAR}. PSR = probability that the true
Sharpe ratio is above 0 (Bailey & López de Prado 2012):
PSR(SR*) = Φ((SR − SR*)·√(n − 1) / √(1 − γ3·SR + ((γ4 − 1)/4)·SR²)), with the per-day SR, n days,
the sample skewness γ3 and kurtosis γ4 (not excess). DSR = PSR(SR*) with SR* the expected
maximum Sharpe ratio of N skill-less trials (Bailey & López de Prado 2014):
SR* = √V·((1 − γ)·Φ⁻¹(1 − 1/N) + γ·Φ⁻¹(1 − 1/(N·e))), V the variance of the N trials' per-day
Sharpe ratios, γ the Euler–Mascheroni constant. N counts configurations, not independent ones:
most share MS-1's trades, so N overstates the effective number of trials and the DSR leans
conservative. The usual bar for both is 0.95.

${selections.map(selectionSentence).join(" ")}

### Every configuration tried (design data, annualised Sharpe / PSR / DSR with N = ${first.trials.length})

${trialsTable(confidence)}

### Probability of backtest overfitting (CSCV)

Bailey, Borwein, López de Prado & Zhu (2015): the design days are cut into ${CSCV_BLOCKS} blocks of
consecutive days; for each of the C(${CSCV_BLOCKS}, ${CSCV_BLOCKS / 2}) = ${first.pbo.study.splits} ways of taking \
half of them as in-sample, the
configuration with the best in-sample Sharpe ratio is ranked out of sample among all of them;
PBO is the share of splits in which it ranks at or below the median. 0.5 is what choosing at
random among equals gives; near 0 means the in-sample best stays good.

${table(
  [
    "timeframe",
    `MS-2 study (${studyCount} configurations)`,
    `principled (MS-1 and ${principledCount} candidates)`,
    `all ${first.trials.length}`,
  ],
  confidence.map((tc) => [
    tc.timeframe,
    fixed(tc.pbo.study.pbo, 3),
    fixed(tc.pbo.principled.pbo, 3),
    fixed(tc.pbo.all.pbo, 3),
  ]),
)}
`;
}

/** The principled candidates on the design folds. */
export function principledSection(confidence: readonly TimeframeConfidence[]): string {
  const parts: string[] = [];
  parts.push(`## Three principled candidates (design folds only)

Three rules with a reason behind them, rather than more parameters, each applied to MS-1's own
signals and reading only what was known at a candle's close (\`bench/research/candidates.ts\`).
They were run on the design data only; the ${HOLD_OUT.label} hold-out has been used
and is not used again for any selection (\`bench/research/hold-out.ts\` never runs them).

- **(a) higher timeframe agrees**: MS-1's position is held only while the next timeframe up
  (${STUDY_TIMEFRAMES.map((tf) => `${tf} → ${HIGHER_TIMEFRAME[tf]}`).join(", ")}; weeks start on Monday, UTC) points \
the same way after its last
  closed candle. A position the rule stops is closed at that close and reopened where the rule
  allows it again while MS-1's trade lasts.
- **(b) higher timeframe holds**: a lower-timeframe break only times the entry, in the direction
  the next timeframe up points to; the position is held as long as that timeframe's signal keeps
  its direction, whatever the lower timeframe does.
- **(c) momentum regime**: longs are held only while the coin's trailing return over L weeks is
  positive, shorts only while it is negative (the return from the close L weeks earlier; no
  position before a coin has L weeks of history). The issue's "1–4 weeks" is tried as
  L = ${MOMENTUM_WEEKS.join(", ")}; each is a trial in the counts above.

**Carried forward** (the rule fixed before these candidates were run): a candidate becomes a
registered candidate of the next hold-out (docs/preregistration.md), never the served engine
directly, when its portfolio Sharpe ratio over the design period is positive and above MS-1's,
and above MS-1's on at least ${FOLDS_TO_BEAT} of the 5 folds; of the momentum look-backs only the one with the
highest design Sharpe ratio can be.

Figures after the fee of ${fixed(FEE * 100, 1)}% and a slippage of ${fixed(SLIPPAGE * 100, 2)}% per side; portfolio \
figures on daily returns
over the whole design period (PSR and DSR as above, N = ${confidence[0]!.trials.length}); the win rate is the share of
trades with a net result above zero, with its Wilson 95% interval.
`);
  for (const tc of confidence) {
    parts.push(`### ${tc.timeframe}\n`);
    parts.push(headlineTable(tc));
    parts.push("");
    const liquidated = tc.results
      .filter((r) => r.liquidated.length > 0)
      .map((r) => `${r.candidate.name}: ${r.liquidated.join(", ")}`);
    const liquidatedText = liquidated.length === 0 ? "none" : liquidated.join("; ");
    parts.push(`Shorts liquidated over the design period (the coin then leaves that portfolio): ${liquidatedText}.\n`);
    parts.push(`Per-fold portfolio Sharpe ratio (annualised), the carry-forward test:\n`);
    parts.push(foldSharpeTable(tc));
    parts.push("");
    parts.push(`Long and short:\n`);
    parts.push(
      table(
        ["candidate", ...SIDE_HEADER],
        tc.results.map((r) => [r.candidate.name, ...sideCells(r)]),
      ),
    );
    parts.push("");
    for (const r of tc.results.slice(1)) {
      parts.push(`${r.candidate.name}, fold by fold:\n`);
      parts.push(foldTable(r));
      parts.push("");
    }
  }
  return parts.join("\n");
}

function holdOutPortfolio(
  rows: readonly HoldOutRow[],
  timeframe: RealTimeframe,
  engine: "ms1Net" | "ms2Net",
): PerformanceSummary {
  return summarizeReturns(
    equalWeight(rows.filter((r) => r.series.timeframe === timeframe).map((r) => r[engine].daily)).returns,
    PERIODS_PER_YEAR,
  );
}

/** The hold-out seen as one equal-weight portfolio after fee and slippage (MS-1 and MS-2 only). */
export function holdOutPortfolioSection(rows: readonly HoldOutRow[]): string {
  const line = (timeframe: RealTimeframe, engine: "ms1Net" | "ms2Net", name: string): string[] => {
    const coins = rows.filter((r) => r.series.timeframe === timeframe).map((r) => r[engine].net);
    const s = holdOutPortfolio(rows, timeframe, engine);
    return [
      `${timeframe} ${name}`,
      ...summaryCells(s),
      pct(s.maxDrawdown),
      String(coins.filter((m) => m.avgTradePct !== null && m.avgTradePct > 0).length),
      String(coins.filter((m) => m.compoundedPct > 0).length),
      String(coins.filter((m) => m.compoundedPct > m.buyHoldPct).length),
    ];
  };
  return `### Portfolio view, after fee and slippage

The same hold-out, each timeframe's twelve coins as one equal-weight portfolio (daily returns,
fee ${fixed(FEE * 100, 1)}% and slippage ${fixed(SLIPPAGE * 100, 2)}% per side), with the per-coin counts after the \
same costs.
No new rule was run on it.

${table(
  [
    "engine",
    "compounded %",
    "volatility % a year",
    "Sharpe (a year)",
    "PSR",
    "max drawdown %",
    "coins with positive avg trade",
    "coins with positive compounded result",
    "coins above buy-and-hold",
  ],
  STUDY_TIMEFRAMES.flatMap((tf) => [line(tf, "ms1Net", "MS-1"), line(tf, "ms2Net", "MS-2")]),
)}
`;
}
