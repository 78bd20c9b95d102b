/** MS-1 market-structure engine: a pure, incremental fold over closed candles (docs/signals.md). */
export type { Arming } from "./arming.ts";
export { computeArming } from "./arming.ts";
export type { Candle } from "./candle.ts";
export { assertValidCandle } from "./candle.ts";
export type { EngineParams } from "./params.ts";
export { DEFAULT_PARAMS, resolveParams } from "./params.ts";
export type { Reading } from "./reading.ts";
export { readClosed, readForming } from "./reading.ts";
export { runSeries } from "./run-series.ts";
export { restoreState, serializeState } from "./serialize.ts";
export type { Signal, Trend } from "./signal.ts";
export { SIGNALS, signalDirection } from "./signal.ts";
export type { EngineState } from "./state.ts";
export { cloneState, createEngineState, ENGINE_STATE_VERSION, ringSize } from "./state.ts";
export { stepClosed } from "./step.ts";
export type { StudiedTimeframe } from "./variants.ts";
export { MS2_PARAMS } from "./variants.ts";
