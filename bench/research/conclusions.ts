/**
 * The prose conclusions of docs/signal-quality.md, written after the single hold-out run and
 * changed by nothing but the figures above them.
 */
export const CONCLUSIONS = `- **MS-2 does not ship; MS-1 stays the served engine.** The goal needs all five checks above; MS-2
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
  daily trades per fold, and fold medians swing between 0.97 and 7.75, so the data cannot tell a real 1d
  improvement from noise. Deciding anything at 1d needs several more years of daily history.
- **What would be needed to meet the goal**: a 1h rule with a gross edge well above the round-trip
  fee (see above), and longer daily history; then the same protocol, on fresh hold-out data. Trying
  more candidates on this design data would mostly fit its noise.`;
