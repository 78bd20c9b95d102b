/**
 * Provenance of market data: every candle, signal event and dataset row is either the demo
 * feed's synthetic sample or real (a feeder's push, an import). The two never mix (docs/feeder.md,
 * "Demo data and real data"), and whatever is derived from demo data carries this label where
 * it is shown: pages, alerts, the free endpoints' sources.
 */
export const DEMO_DATA_LABEL = "demo data: synthetic prices";
