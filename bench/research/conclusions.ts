/**
 * The prose conclusions of docs/signal-quality.md, written after the single hold-out run and
 * changed by nothing but the figures above them.
 */
export const CONCLUSIONS = `- **MS-2 does not ship; MS-1 stays the served engine.** The goal needs all five checks \
above; MS-2
  meets the two at 4h and none at 1h or 1d. Nothing was changed after the hold-out run.
- **4h**: the one addition the design data supported, a major swing structure (K = 20) that turns
  breaks against its trend into NONE, held up out of sample: 9 of 12 coins with a positive average
  trade instead of 6, median profit factor 1.23 instead of 1.04, median compounded +9.4% instead of
  −6.7%, with about half the exposure. That is one year, a strongly rising one (median buy-and-hold
  +87.6%), and it was better than MS-1 on only 2 of the 3 walk-forward validation folds. It is the
  candidate worth confirming on the next year of data before offering it.
- **1h**: no candidate improved MS-1 consistently across the folds, so MS-2 is MS-1 here, and out
  of sample no coin has a positive average trade (median compounded −68.2%). The reason is in the
  first table: on the design data MS-1's 1h trades earn about +0.11% each before fees, half of the
  0.2% a round trip costs. A 1h signal that pays for itself needs a gross edge several times larger
  per trade, which means far fewer and longer trades than a stop-and-reverse on every 1h swing:
  for example 1h entries only in the direction of the 4h or 1d structure (needs the engine to read
  another timeframe's state, which this fold over one series cannot do in O(1) on its own), or exits
  that are not the next opposite 1h break. Shown honestly, the 1h signal today is a description of
  structure, not a tradeable edge after fees.
- **1d**: MS-1 already has a positive average trade on 11 of 12 coins out of sample (median profit
  factor 2.56), but it trails buy-and-hold (median +61.8% against +85.2%). Its walk-forward selections
  were worse than MS-1 on all three validation folds; with six-month folds a coin makes about six
  daily trades per fold, and fold medians swing between 0.97 and 8.46, so the data cannot tell a real 1d
  improvement from noise. Deciding anything at 1d needs several more years of daily history.
- **What would be needed to meet the goal**: a 1h rule with a gross edge well above the round-trip
  fee (see above), and longer daily history; then the same protocol, on fresh hold-out data. Trying
  more candidates on this design data would mostly fit its noise.`;

/**
 * The prose conclusions of the confidence figures and the principled candidates, written after
 * their single run on the design data and changed by nothing but the figures above them.
 */
export const CONFIDENCE_CONCLUSIONS = `- **Nothing here changes the served engine.** MS-1 stays served at every \
timeframe; the
  principled candidates are research rules, and the only way one of them is ever served is the
  pre-registered judgement on the live record (docs/preregistration.md).
- **How much the served record can be trusted, on the design data after fee and slippage.** 1h:
  portfolio Sharpe −0.66 a year, PSR 0.147: no edge, and none is claimed. 4h: Sharpe 0.43, PSR
  0.760, DSR 0.381: positive but not distinguishable from luck. 1d: Sharpe 1.36, PSR 0.986, DSR
  0.909: the strongest result, still below 0.95 once the 47 configurations tried are counted.
- **The edge sits in one regime.** Fold by fold, MS-1's gross result per trade is +0.756% in F1
  (the bull market of November 2020 – April 2021) and between −0.118% and +0.050% in the four
  later folds at 1h; +4.351% in F1 and between −0.822% and +0.320% later at 4h. Outside F1, every
  portfolio Sharpe ratio at 1h is negative, for MS-1 and for every candidate, and none at 4h is
  above 0.5 a year. Only MS-1 at 1d stays positive in all five folds (0.17 to 0.68 a year outside
  F1), and even there F1 carries most of the result.
- **The long side carries the whole gross edge.** Shorts lose before any cost at every
  timeframe (−0.252%, −0.869% and −2.005% per trade at 1h, 4h and 1d), longs win (+0.474%,
  +2.208%, +30.612%). The engine is symmetric by design and the period rose; the survivorship of
  the twelve coins makes the longs look better still. The pages must show the long/short split,
  not only the pooled figures.
- **MS-2 at 4h, measured as a buyer would.** Its DSR is 0.769 against the 41 configurations of
  its own study (0.750 against all 47), below 0.95; the probability that the MS-2 study's
  selection procedure overfits at 4h is 0.400 (0.747 at 1d, consistent with its walk-forward
  rejection there). Out of sample its equal-weight portfolio earned a Sharpe ratio of 0.77 (PSR
  0.777): a positive, unproven year in which it beat buy-and-hold on no coin. At 1d, 29 of the
  study's 41 configurations show a DSR above 0.95 on the whole design period (its selection, the
  break buffer of 0.25 ATR, 0.977), yet its walk-forward selections never beat MS-1 and the PBO
  is 0.747: a high in-sample DSR at 1d does not survive the choice among them.
- **The principled candidates** improve on MS-1 at 1h and 4h mostly by staying out of the market
  against the trend and by losing less on shorts, not by finding a new edge. At 1h none is
  convincing: the best, 4-week momentum, has a Sharpe ratio of 0.29 (PSR 0.683, DSR 0.257) and
  every candidate is negative on F2–F5. At 4h, (b) higher timeframe holds (Sharpe 1.29, PSR
  0.981, DSR 0.859), 4-week momentum (1.14, 0.972, 0.810) and (a) higher timeframe agrees (0.98,
  0.946, 0.722) all beat MS-1 on at least three folds, but outside F1 their portfolio Sharpe
  ratios stay between −0.65 and +0.49 a year. At 1d, 4-week momentum is the only one of them
  above 0.95 after deflation (Sharpe 1.58, PSR 0.994, DSR 0.953), and it beats MS-1 on only
  three of five folds; (b) lost two whole short stakes (DOT and XRP in August 2021) by holding
  shorts as long as the weekly signal lasted.
  Among the momentum look-backs, 4 weeks is the best at every timeframe and 1 to 3 weeks are
  weaker (at 1d below MS-1): the choice of 4 weeks is itself a selection, counted in N.
- **Carried into the pre-registered hold-out**, by the rule stated above: at 1h (b) and 4-week
  momentum; at 4h (a), (b) and 4-week momentum; at 1d 4-week momentum. One challenger per
  timeframe is registered (the carried candidate with the highest design DSR; see
  docs/preregistration.md): 4-week momentum at 1h and 1d, and (b) higher timeframe holds at 4h.
  Trying further rules on this design data would mostly fit its one bull market.`;
